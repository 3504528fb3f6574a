package localrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/deps"
	"github.com/pullwright/pullwright/inert"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/task"
)

// outputTail is how many lines of a command's output are shown.
const outputTail = 10

// leftOutShown is how many of the files a run left out are named.
const leftOutShown = 10

// run is one bot run between the clone and the report.
type run struct {
	o        Options
	d        *display
	log      *slog.Logger
	src      *checkout
	settings policy.Settings
	// guidance is the repository's instruction files, as a task gets them.
	guidance pullwright.Guidance
	agent    *agent.Agent
	sb       *sandbox
	ask      *asker
	model    string
	// image is the sandbox image of every command, checked before the
	// agent started (Docker only).
	image  string
	branch string
	who    string // the local user, as the agent is told
	ws     *repo.Workspace
	// base holds the workspace (base/work) and each run's files (base/run).
	base string
	st   *agent.State
	res  *Result
	// runs is the record of the execution requests, as bot serve keeps
	// it: what the final report and the commit message say was verified.
	runs []task.RunRecord
	// finalTree is the tree of the work as saved, which the record's
	// keys are compared with.
	finalTree string
	// failure is why the run could not go on (the model endpoint failed,
	// the input could not be read); the work so far is saved anyway.
	failure error
}

func (r *run) banner(notes []string, drift string) {
	d, s := r.d, r.settings
	d.printf("Pullwright: %s, branch %s at %s\n", r.src.top, r.src.branch, words.Short(r.src.head))
	d.printf("  model %s at %s\n", r.model, endpoint(r.o.BaseURL))
	// Who lets a command run: the person at the terminal, or, without
	// one, the --yes-to list alone.
	who := "after your approval"
	switch {
	case !r.ask.interactive:
		who = "only when on the --yes-to list: the input is not a terminal, so nobody is asked and every other command is rejected"
	case len(r.o.YesTo) > 0:
		who = "after your approval, or without asking when on the --yes-to list"
	}
	if r.o.Runner == RunnerLocal {
		d.printf("  commands run %s, %s\n", r.sb.where, who)
	} else {
		d.printf("  commands run %s (image %s, network %s), %s\n", r.sb.where, r.image, s.Sandbox.Network, who)
		switch {
		case r.sb.noSetup != "":
			d.printf("  note: %s\n", r.sb.noSetup)
		case r.sb.setup != nil:
			d.printf("  the repository's setup fetches its dependencies before a command, once per set of manifests,\n" +
				"  with network only to the hosts the image's package managers name and those allowed (--fence-host)\n")
		}
	}
	if len(r.o.YesTo) > 0 {
		d.printf("  run without asking (--yes-to): %s\n", strings.Join(quoteAll(r.o.YesTo), ", "))
		switch {
		case r.o.YesToSetup:
			d.printf("  --yes-to-setup: the list also approves a command whose setup first installs dependency manifests\n" +
				"  the agent changed, with network through the fence; what was approved is printed\n")
		case !r.ask.interactive && r.sb.setup != nil && r.sb.where != whereLocal:
			d.printf("  a listed command whose setup would install manifests the agent changed is rejected (--yes-to-setup lets the list approve it)\n")
		}
	}
	d.printf("  budget: %d turns, %s tokens\n", s.MaxTurns, pullwright.Thousands(s.MaxTokens))
	d.printf("  the work goes to the new branch %s; your branch and files are left alone\n", r.branch)
	for _, n := range notes {
		d.printf("  note: %s\n", n)
	}
	if drift != "" {
		d.printf("warning: %s\n", drift)
	}
	if paths, err := r.src.uncommitted(); err != nil {
		d.printf("warning: could not check %s for uncommitted changes: %v\n", r.src.top, err)
	} else if len(paths) > 0 {
		slices.Sort(paths)
		list := strings.Join(quoteAll(paths[:min(len(paths), 5)]), ", ")
		if len(paths) > 5 {
			list += fmt.Sprintf(" and %d more", len(paths)-5)
		}
		d.printf("warning: %d uncommitted %s (%s) will NOT be seen by the agent: it starts from the last commit, %s\n",
			len(paths), words.Plural(len(paths), "change", "changes"), list, words.Short(r.src.head))
	}
	d.printf("\n")
}

// work runs the agent until it finishes, stops or fails, recording how in
// r.res and r.failure.
func (r *run) work(ctx context.Context) {
	s := r.settings
	brief := pullwright.Brief{
		Repo:         filepath.Base(r.src.top),
		Title:        "(none: a local run of bot run)",
		Body:         "There is no issue: the maintainer's request above is the whole task.",
		Instructions: r.o.Instructions,
		Requester:    r.who,
		TestCommand:  s.TestCommand,
		Guidance:     r.guidance,
		Base:         r.src.head,
		Limits: pullwright.Limits{
			MaxTurns: s.MaxTurns, MaxTokens: s.MaxTokens,
			Model: r.model, Profile: s.Profile, Protected: s.Protected,
		},
	}
	// The price is the model's the run calls, which the flag may choose
	// over the repository's.
	price, priced := r.o.Prices[r.model]
	brief.Limits.PriceInput, brief.Limits.PriceOutput, brief.Limits.PriceCachedInput = price.Input, price.Output, price.CachedInput
	brief.Limits.Priced = priced
	r.st = r.agent.Start(brief)
	start := time.Now()
	var waited time.Duration // answering questions does not count against the wall time
	shownSteps := 0
	var shownPlan []pullwright.PlanItem
	for {
		if ctx.Err() != nil {
			r.res.Stopped = "interrupted"
			return
		}
		if s.MaxWallTime > 0 {
			if used := time.Since(start) - waited; used >= s.MaxWallTime {
				r.res.Stopped = fmt.Sprintf("the run used its wall-time budget (%s of %s, not counting your answers)",
					used.Round(time.Second), s.MaxWallTime)
				return
			}
		}
		r.status("waiting for the model")
		err := r.agent.Turn(ctx, r.st, r.ws.Dir())
		r.res.Turns, r.res.Tokens, r.res.Spend = r.st.Turns, r.st.Tokens(), r.agent.Spent(r.st)
		for _, step := range r.st.Steps[shownSteps:] {
			r.d.printf("  %s\n", words.Clip(oneLine(step), 200))
		}
		shownSteps = len(r.st.Steps)
		if !slices.Equal(shownPlan, r.st.Plan) {
			shownPlan = slices.Clone(r.st.Plan)
			r.d.printf("%s", planText(shownPlan))
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			r.res.Stopped = "interrupted"
			return
		case errors.Is(err, agent.ErrBudget):
			r.res.Stopped = "the agent used up its budget (" + strings.TrimPrefix(err.Error(), agent.ErrBudget.Error()+": ") + ")"
			r.res.OutOfBudget = r.res.Stopped
			r.res.Summary = task.BudgetSummary(r.res.Stopped, r.st.Plan, r.st.Steps)
			return
		default:
			r.failure = fmt.Errorf("the model endpoint %s failed: %w", endpoint(r.o.BaseURL), err)
			r.res.Stopped = "the model endpoint failed"
			return
		}
		switch {
		case r.st.Finish != nil:
			r.res.Finished = true
			r.res.Title, r.res.Summary = r.st.Finish.Title, r.st.Finish.Summary
			if why := r.st.Finish.OutOfBudget; why != "" {
				r.res.OutOfBudget = "the agent used up its budget (" + why + ")"
			}
			return
		case r.st.Pending != nil:
			if r.st.Turns >= s.MaxTurns || r.st.Tokens() >= s.MaxTokens {
				r.res.Stopped = fmt.Sprintf("the agent used up its budget (%d of %d turns, %s of %s tokens) with a request to run `%s` it could not have used",
					r.st.Turns, s.MaxTurns, pullwright.Thousands(r.st.Tokens()), pullwright.Thousands(s.MaxTokens), oneLine(r.st.Pending.Command))
				return
			}
			if r.st.Pending.Tool != nil {
				// bot run offers no MCP server, so none can be asked for;
				// a call must never reach the shell as a command line.
				if err := r.agent.Resolve(r.st, agent.NotCalled("bot run offers no MCP tools that need approval")); err != nil {
					r.failure = err
					r.res.Stopped = "the run failed"
					return
				}
				continue
			}
			asked := time.Now()
			result, err := r.request(ctx, *r.st.Pending)
			waited += time.Since(asked)
			if err != nil {
				if ctx.Err() != nil {
					r.res.Stopped = "interrupted"
				} else {
					r.failure = err
					r.res.Stopped = "the run failed"
				}
				return
			}
			if err := r.agent.Resolve(r.st, result); err != nil {
				r.failure = err
				r.res.Stopped = "the run failed"
				return
			}
		}
	}
}

func (r *run) status(what string) {
	s := r.settings
	// What is happening first: the line is cut to the terminal's width,
	// and the spend can be long.
	r.d.status(fmt.Sprintf("%d/%d turns · %s · %s", r.st.Turns, s.MaxTurns, what, r.agent.Spent(r.st)))
}

// request answers one execution request, running it if approved, records
// how it ended in r.runs, and returns the tool result for the agent. The
// time the answer took is not the agent's.
func (r *run) request(ctx context.Context, req agent.Request) (string, error) {
	cmd := oneLine(req.Command)
	// The files that run are the ones shown: the workspace's state as a
	// commit would hold it, taken now. Files git ignores are not part of it.
	tree, err := r.ws.Current()
	if err != nil {
		r.d.printf("  `%s` could not run: the workspace could not be read: %v\n", words.Clip(cmd, 120), err)
		return fmt.Sprintf("error: the workspace could not be read, so the command did not run: %v", err), nil
	}
	// The record is keyed by the tree, which the final commit is checked
	// against: bot run commits once, at the end.
	rec := task.RunRecord{
		RequestID: strconv.Itoa(len(r.runs) + 1), Command: req.Command, Reason: req.Reason,
		SHA: tree.Hash(), AskedAt: time.Now(), By: r.who,
	}
	if req.Network && (r.sb.setup == nil || r.sb.where == whereLocal) {
		// Only the fence gives a command network: not asked, not run.
		why := task.NoFence
		rec.Verdict, rec.Outcome, rec.Why, rec.By = task.Rejected, task.OutcomeRejected, why, "pullwright"
		r.runs = append(r.runs, rec)
		r.d.printf("  `%s` was not asked: %s\n", words.Clip(cmd, 120), why)
		return agent.Rejected("pullwright", why), nil
	}
	q := question{shown: r.show(req, tree), where: r.sb.where}
	v, err := r.ask.decide(ctx, q)
	if err != nil {
		return "", fmt.Errorf("read your answer: %w", err)
	}
	// The record names who answered: the person, or the list.
	rec.By = cmp.Or(v.by, r.who)
	if !v.approved {
		rec.Verdict, rec.Outcome, rec.Why = task.Rejected, task.OutcomeRejected, v.how
		r.runs = append(r.runs, rec)
		if v.by != "" {
			r.d.printf("  rejected `%s` (by %s): %s\n", words.Clip(cmd, 120), v.by, oneLine(v.how))
			// The bot's rule refused it, as for a command that needs a
			// fence it does not have: no person saw it.
			return agent.Rejected("pullwright", v.how), nil
		}
		r.d.printf("  rejected `%s`: %s\n", words.Clip(cmd, 120), cmp.Or(oneLine(v.how), "no reason given"))
		return agent.Rejected(r.who, v.how), nil
	}
	rec.Verdict = task.Approved
	if v.how != "approved" {
		r.d.printf("  running `%s` (%s)\n", words.Clip(cmd, 120), v.how)
	}
	r.status("running " + cmd)
	s := r.settings
	dir := filepath.Join(r.base, "run")
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("clear the run's files: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := tree.Export(ctx, dir); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		ran := task.Unstarted(fmt.Sprintf("the workspace's files could not be written out for the run: %v", err), &rec)
		return r.notRun(rec, ran), nil
	}
	// The sandbox's runner labels what it makes with this process
	// (process.go).
	spec := s.RunSpec(dir, req.Command, nil)
	spec.Image, spec.KeepChanges = r.image, req.KeepChanges
	// The same step as serve's: the setup, when one runs, then the
	// command, then the record of how it ended, told as it goes.
	step := task.Sandboxed{Runner: r.sb.r, SetUp: func(s *pullwright.SetupRecord) {
		r.showSetup(s)
		if !s.Failed {
			r.status("running " + cmd)
		}
	}, LeftOut: func() string { return r.leftOut(tree) }}
	var setup *pullwright.SetupRequest
	if r.sb.setup != nil {
		// A fetch runs on the files to run into a cache of its own: it
		// needs no base.
		base, err := "", error(nil)
		if !req.Network {
			base, err = r.headFiles(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			ran := task.Unstarted(fmt.Sprintf("HEAD's files could not be written out for the repository's setup: %v", err), &rec)
			return r.notRun(rec, ran), nil
		}
		// The user's own image is theirs to trust, as it was before
		// bot run shared serve's step.
		req := s.SetupRequest("local:"+r.src.top, base, spec,
			map[string]string{"pullwright.setup": "true"}, []string{s.Sandbox.Image})
		setup, step.Deps = &req, r.sb.setup
		r.status("setting up the repository's dependencies")
	}
	run := step.Run
	if req.Network {
		run = step.Fetch
	}
	ran, err := run(ctx, spec, setup, &rec)
	if err != nil {
		return "", err
	}
	if _, ok := task.NotStarted(ran.Result); ok {
		return r.notRun(rec, ran), nil
	}
	res := ran.Result
	var kept *agent.Kept
	if req.KeepChanges {
		// What the command changed becomes the agent's change in the
		// workspace, under its file tools' rules, as serve keeps it.
		k, err := agent.KeepChanges(r.st, r.ws.Dir(), res.Changes, res.KeptNote)
		if err != nil {
			return "", err
		}
		kept, rec.Kept, rec.KeptNote = &k, k.Files, k.Summary()
	}
	r.runs = append(r.runs, rec)
	output := agent.RanOutput(res)
	how := fmt.Sprintf("exit code %d after %s", res.ExitCode, res.Duration.Round(time.Millisecond))
	if res.TimedOut {
		how = fmt.Sprintf("timed out after %s", res.Duration.Round(time.Second))
	}
	r.d.printf("  ran `%s`: %s\n%s", words.Clip(cmd, 120), how, tail(output, outputTail))
	result := agent.Ran(res)
	if kept != nil {
		r.d.printf("%s\n", indent(safe(kept.Text()), "  "))
		result = agent.WithKept(result, *kept)
	}
	return result, nil
}

// notRun keeps rec, which the step ended with ran, for an approved
// command that never started (it could not run, or its setup failed),
// says why at the terminal, and returns the same sentence as the agent's
// result.
func (r *run) notRun(rec task.RunRecord, ran task.Ran) string {
	r.runs = append(r.runs, rec)
	why, _ := task.NotStarted(ran.Result)
	why = strings.TrimRight(strings.TrimSpace(why), ".")
	// The terminal gets the first line (a failed setup's steps and
	// output were shown just before); the agent gets all of it.
	first, _, _ := strings.Cut(why, "\n")
	r.d.printf("  `%s` could not run: %s.\n", words.Clip(oneLine(rec.Command), 120), words.Clip(oneLine(strings.TrimRight(first, ".")), 300))
	return fmt.Sprintf("error: the command did not run: %s.", why)
}

// leftOut notes the workspace's files a run of tree did not have,
// because git ignores them: a test the agent wrote there never runs, and
// it should know why.
func (r *run) leftOut(tree *repo.Tree) string {
	left, more, err := r.ws.LeftOutOf(tree, leftOutShown)
	if err != nil || len(left) == 0 {
		return ""
	}
	list := strings.Join(left, ", ")
	if more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("\n[not part of this run, because git ignores them: %s. A run has the files a commit of the workspace would hold only.]\n", list)
}

// show is the request as the person is asked to approve it: the value
// serve's request comment shows, built by the same builder (task.Shown)
// from what bot run knows: the workspace's tree, its changes against
// HEAD, where it runs, and, when the repository's setup runs first, the
// manifests the agent changed. Bot run's user reads why a comparison
// failed (task.Shown.Detailed).
func (r *run) show(req agent.Request, tree *repo.Tree) approval.Request {
	return r.facts(req, tree).Request()
}

// facts are what bot run knows of req when it asks.
func (r *run) facts(req agent.Request, tree *repo.Tree) task.Shown {
	s := task.Shown{ID: strconv.Itoa(len(r.runs) + 1), Command: req.Command, Reason: req.Reason, Commit: tree.Hash(),
		Where:    approval.Where{Local: true, Sandbox: r.sb.where != whereLocal},
		Detailed: true, KeepChanges: req.KeepChanges}
	if s.Where.Sandbox {
		s.Where.Image, s.Where.Network = r.image, r.settings.Sandbox.Network == "bridge"
	}
	if req.Network {
		// The user's own image is theirs to trust: its toolchains' hosts
		// count, as for bot run's setup.
		s.Fetch = &approval.Fetch{Hosts: r.settings.SetupHosts(), Toolchains: r.settings.ToolchainHosts()}
	}
	setup := s.Where.Sandbox && r.sb.setup != nil
	if setup {
		s.SetupBase = "HEAD"
	}
	stats, err := r.ws.DiffStatOf(r.src.head, tree)
	if err != nil {
		err = fmt.Errorf("the diff against HEAD failed: %w", err)
		s.FilesUnknown = err.Error()
		if setup {
			s.Manifests.Err = err
		}
		return s
	}
	s.Files = stats
	if !setup {
		return s
	}
	// The working tree's own plan knows the paths its files make
	// manifests (a build backend's directory). When it cannot be read,
	// the manifests any tree has are shown, or, with none changed, the
	// manifests are unknown, as when the diff failed.
	plan, err := deps.ManifestsOf(os.DirFS(r.ws.Dir()))
	if err != nil {
		s.Manifests.Err = fmt.Errorf("the files' setup could not be planned: %w", err)
	}
	var paths []string
	for _, st := range stats {
		if plan.ManifestsChanged([]string{st.Path}) {
			s.Manifests.Files, paths = append(s.Manifests.Files, st), append(paths, st.Path)
		}
	}
	if len(paths) > 0 {
		// With manifests named, only the diff's own failure is told:
		// in its place (Detailed).
		s.Manifests.Err = nil
		if diff, err := r.ws.DiffOfTree(r.src.head, tree, paths...); err != nil {
			s.Manifests.Err = err
		} else {
			s.Manifests.Diff = headLines(diff, manifestDiffLines)
		}
	}
	return s
}

// manifestDiffLines bounds the manifests' diff in a question: a
// lockfile's can be long, and the user has the files.
const manifestDiffLines = 200

// headLines is the first n lines of s, with a note of how many more.
func headLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("[… %d more lines]\n", len(lines)-n)
}

// headFiles writes HEAD's files out once, beside the runs: they alone may
// fill the repository's shared cache (pullwright.SetupRequest.Base).
func (r *run) headFiles(ctx context.Context) (string, error) {
	base := filepath.Join(r.base, "head")
	if _, err := os.Stat(base); err == nil {
		return base, nil
	}
	head, err := r.ws.CommitTree(r.src.head)
	if err == nil {
		err = head.Export(ctx, base)
	}
	if err != nil {
		os.RemoveAll(base)
		return "", err
	}
	return base, nil
}

// showSetup tells what the repository's setup did, if one ran.
func (r *run) showSetup(s *pullwright.SetupRecord) {
	if s == nil {
		return
	}
	how := fmt.Sprintf("done in %s", s.Duration.Round(100*time.Millisecond))
	if s.Failed {
		how = fmt.Sprintf("FAILED (exit code %d) after %s", s.ExitCode, s.Duration.Round(100*time.Millisecond))
	}
	r.d.printf("  setup %s: %s\n", how, safe(strings.Join(s.Steps, "; ")))
	if len(s.Reached) > 0 {
		r.d.printf("    reached %s\n", safe(strings.Join(s.Reached, ", ")))
	}
	if len(s.Blocked) > 0 {
		r.d.printf("    blocked %s\n", safe(strings.Join(s.Blocked, ", ")))
	}
	if s.Failed {
		r.d.printf("%s", tail(s.Output, outputTail))
	}
}

// tail is the last n lines of output, indented, made safe to print.
func tail(output string, n int) string {
	if strings.TrimRight(output, "\n") == "" {
		return ""
	}
	lines, cut := words.LastLines(output, n)
	prefix := ""
	if cut > 0 {
		prefix = fmt.Sprintf("    │ (%d lines before)\n", cut)
	}
	for i, l := range lines {
		lines[i] = words.Clip(safe(l), 200)
	}
	return prefix + indent(strings.Join(lines, "\n"), "    │ ")
}

func planText(items []pullwright.PlanItem) string {
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("  plan:\n")
	for _, it := range items {
		mark := "[ ]"
		switch it.Status {
		case "done":
			mark = "[x]"
		case "in_progress":
			mark = "[>]"
		}
		fmt.Fprintf(&b, "    %s %s\n", mark, words.Clip(oneLine(it.Title), 100))
	}
	return b.String()
}

// save commits the work, if any, and pushes it into the user's repository
// as the new branch. It runs even when ctx is done. The record of runs is
// read for the files it commits, and the commit message says what the
// record shows of them.
func (r *run) save(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	r.d.status("saving the work")
	r.res.Runs, r.res.Final = r.runs, r.src.head
	changes, err := r.ws.Changes()
	if err != nil {
		return fmt.Errorf("read the workspace: %w", err)
	}
	tree, err := r.ws.Current()
	if err != nil {
		return fmt.Errorf("read the workspace: %w", err)
	}
	r.finalTree = tree.Hash()
	v := task.Verify(r.runs, r.finalTree)
	if len(changes) == 0 {
		r.res.Verification = v
		return nil
	}
	sha, err := r.ws.CommitAll(r.commitMessage(v), r.src.identity())
	if err != nil {
		return err
	}
	// The message speaks of the files the record was read for; a commit
	// that holds others must not reach the user's repository with it.
	if got, err := r.ws.CommitTree(sha); err != nil || got.Hash() != tree.Hash() {
		return fmt.Errorf("check commit %s: it does not hold the files the record of runs was read for (%v)", words.Short(sha), err)
	}
	r.res.Final, r.res.Verification = sha, v
	if stats, err := r.ws.DiffStat(r.src.head); err == nil {
		r.res.Files = stats
	}
	if err := r.ws.Push(ctx, "", r.branch); err != nil {
		return fmt.Errorf("create branch %s in %s: %w%s", r.branch, r.src.top, err, gitHint(err))
	}
	r.res.Branch = r.branch
	r.res.Commits = append(r.res.Commits, sha)
	return nil
}

// title is the work's one-line title: the agent's, unless it claims what
// the record does not show ("… tests pass"), then the instructions'.
func (r *run) title(v task.Verification) string {
	title := oneLine(r.res.Title)
	if title == "" || v.Unbacked(title) != "" {
		title = oneLine(r.o.Instructions)
	}
	return title
}

// commitMessage says what the record v shows of the commit's files; the
// agent's summary comes after it, as the agent's words. A commit message
// is plain text, but GitHub links its mentions and closes the issues its
// closing keywords name once it reaches the default branch: the agent's
// words are defanged (inert.Defang), as in every pull request.
func (r *run) commitMessage(v task.Verification) string {
	instr := strings.TrimSpace(r.o.Instructions)
	var b strings.Builder
	if r.res.Finished {
		b.WriteString(inert.Defang(words.Clip(r.title(v), 72)) + "\n")
	} else {
		b.WriteString(words.Clip("WIP: "+oneLine(instr), 72) + "\n")
		b.WriteString("\nThe work so far: the run stopped before the agent finished (" + r.res.Stopped + ").\n")
		if s := strings.TrimSpace(r.res.Summary); r.res.OutOfBudget != "" && s != "" {
			b.WriteString("\n" + inert.Defang(s) + "\n")
		}
	}
	b.WriteString("\n" + v.Text("this commit"))
	if s := strings.TrimSpace(r.res.Summary); r.res.Finished && s != "" {
		b.WriteString("\nThe agent's summary, in its own words (Pullwright did not check them):\n\n" + indent(inert.Defang(s), "    "))
		if claim := v.Unbacked(s); claim != "" {
			fmt.Fprintf(&b, "\nThe record of runs above does not back the summary's %q.\n", inert.Defang(oneLine(claim)))
		}
	}
	b.WriteString("\nMade with Pullwright (bot run) from these instructions:\n\n" + indent(instr, "    "))
	return b.String()
}

// finalCommit names the commit the work ended on, for a sentence.
func finalCommit(res *Result) string {
	if res.Branch == "" {
		return "the commit you started from, " + words.Short(res.Final)
	}
	return "the final commit " + words.Short(res.Final)
}

// report prints the outcome on Stdout. It ends with the verification,
// from the record of runs: what ran, on which files, and whether the
// final commit is verified.
func (r *run) report() {
	r.d.done()
	res, w := r.res, r.o.Stdout
	v := res.Verification
	fmt.Fprintln(w)
	switch {
	case res.Finished && res.OutOfBudget != "":
		fmt.Fprintf(w, "Out of budget: %s; it finished on its last turn: %s\n", res.OutOfBudget, r.title(v))
	case res.Finished && v.Verified:
		fmt.Fprintf(w, "Done: %s\n", r.title(v))
	case res.Finished:
		fmt.Fprintf(w, "Done, not verified: %s\n", r.title(v))
	default:
		fmt.Fprintf(w, "Stopped: %s.\n", res.Stopped)
	}
	if s := strings.TrimSpace(res.Summary); res.Finished && s != "" {
		fmt.Fprintf(w, "\nThe agent's summary, in its own words:\n%s", indent(safe(s), "  "))
	}
	if s := strings.TrimSpace(res.Summary); !res.Finished && res.OutOfBudget != "" && s != "" {
		fmt.Fprintf(w, "\nWhat the agent did, and what is left:\n%s", indent(safe(s), "  "))
	}
	fmt.Fprintf(w, "(%d %s, %s)\n\n", res.Turns, words.Plural(res.Turns, "turn", "turns"), res.Spend)
	if res.Branch == "" {
		fmt.Fprintf(w, "The agent changed no file, so no branch was created. %s is as it was.\n", r.src.top)
	} else {
		fmt.Fprintf(w, "New branch %s in %s:\n", res.Branch, r.src.top)
		for _, c := range res.Commits {
			fmt.Fprintf(w, "  commit %s\n", c)
		}
		fmt.Fprint(w, indent(diffStat(res.Files), " "))
		fmt.Fprintf(w, "\nYour branch %s and your working tree were not touched. To look at the work:\n", r.src.branch)
		fmt.Fprintf(w, "  git diff %s...%s\n", r.src.branch, res.Branch)
		fmt.Fprintf(w, "  git switch %s\n", res.Branch)
	}
	fmt.Fprintf(w, "\n%s", r.verification())
}

// verification is the report's last part: every request and how it
// ended, then what the record shows of the final commit.
func (r *run) verification() string {
	res := r.res
	v := res.Verification
	commit := finalCommit(res)
	var b strings.Builder
	b.WriteString("Verification:\n")
	for _, rec := range res.Runs {
		where := "on earlier files"
		if rec.SHA == r.finalTree {
			where = "on the files of " + commit
		}
		fmt.Fprintf(&b, "  %s. `%s` %s: %s\n", rec.RequestID, words.Clip(oneLine(rec.Command), 120), where, safe(rec.Describe()))
	}
	b.WriteString(safe(v.Text(commit)))
	if claim := v.Unbacked(res.Summary); res.Finished && claim != "" {
		fmt.Fprintf(&b, "The agent's summary says %q, but the record does not show it.\n", oneLine(claim))
	}
	return b.String()
}

// endpoint names the model endpoint without any credentials in its URL.
func endpoint(baseURL string) string {
	if baseURL == "" {
		return "OpenAI"
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return "(an unreadable URL)"
	}
	u.User = nil
	return u.String()
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = "`" + words.Clip(oneLine(s), 80) + "`"
	}
	return out
}

// guidanceNote is the banner's line of the instruction files the agent
// gets, and of those it does not; "" when none were found.
func guidanceNote(g pullwright.Guidance, from string) string {
	var used, left []string
	for _, f := range g.Files {
		switch {
		case f.Skipped != "":
			left = append(left, fmt.Sprintf("%s (%s)", f.Path, f.Skipped))
		case f.Cut:
			used = append(used, f.Path+" (cut short)")
		default:
			used = append(used, f.Path)
		}
	}
	if g.More > 0 {
		left = append(left, fmt.Sprintf("%d more deeper in the tree", g.More))
	}
	if len(used) == 0 && len(left) == 0 {
		return ""
	}
	line := fmt.Sprintf("repository instructions from %s: ", from)
	if len(used) == 0 {
		line += "none given"
	} else {
		line += strings.Join(used, ", ")
	}
	if len(left) > 0 {
		line += "; left out: " + strings.Join(left, ", ")
	}
	return line
}
