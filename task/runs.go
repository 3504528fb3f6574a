package task

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
)

// runs is the sandbox side of an approved request: the run's check run,
// the approved commit's files written out beside the workspace, the
// repository's dependencies made ready (behind the fence), and what the
// run left out. Flow decides when a run happens; runs carries it out.
type runs struct {
	desk
	remote
	checks interface {
		UpsertCheckRun(ctx context.Context, r pullwright.Repo, cr pullwright.CheckRun) (int64, error)
	}
	runner Runner
	deps   Dependencies
	tools  ToolCaller
	// dir holds one workspace per task (Flow.Dir).
	dir string
	// unisolated is Flow.Unisolated: runs are on the bot's own machine.
	unisolated bool
}

// workdir is task t's workspace under dir.
func workdir(dir string, t *Task) string {
	return filepath.Join(dir, strconv.FormatInt(t.ID, 10))
}

// runTree is where the approved commit's files are written for one run,
// beside the task's workspace.
func (rn runs) runTree(t *Task) string { return workdir(rn.dir, t) + ".run" }

func (rn runs) removeRunTree(ctx context.Context, t *Task) {
	for _, dir := range []string{rn.runTree(t), workdir(rn.dir, t) + ".base"} {
		if err := os.RemoveAll(dir); err != nil {
			rn.log.WarnContext(ctx, "remove the run's files", "task_id", t.ID, "err", err)
		}
	}
}

// leftOutShown is how many of the files a run left out are named.
const leftOutShown = 10

// sandboxMessage is what the agent and the check run may learn of a sandbox
// failure: its kind, not the bot's internals.
func sandboxMessage(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "it did not finish in time"
	}
	if errors.Is(err, pullwright.ErrSetupFiles) {
		// The repository's files are at fault, not the bot: saying
		// which file and why is what lets a maintainer fix it.
		return err.Error()
	}
	return "the sandbox is not working; a maintainer can see the bot's logs"
}

// closeRun completes the run check run, once.
func (rn runs) closeRun(ctx context.Context, t Job, conclusion, title string) error {
	r := t.Request
	if r.RunClosed || r.RunCheckID == 0 {
		return nil
	}
	text := ""
	switch {
	case r.Result != nil && r.Tool != nil:
		// What a server answered may be what only the operator's
		// credentials can read: it goes to the agent, not to a check run
		// anyone who sees the repository can open.
		text = "The tool's answer went to the agent; it is not shown here."
	case r.Result != nil:
		text = "```\n" + tail(r.Result.Output, 60, 60000) + "\n```"
	}
	if _, err := rn.checks.UpsertCheckRun(ctx, t.Repo, pullwright.CheckRun{
		ID: r.RunCheckID, Name: RunCheck, HeadSHA: r.SHA, Status: "completed", Conclusion: conclusion,
		ExternalID: r.ID, DetailsURL: r.CommentURL, Title: title, Summary: RenderRequestSummary(t), Text: text,
	}); err != nil {
		return retryf(err, "completing the run check run failed")
	}
	r.RunClosed = true
	return nil
}

// setupRequest is the setup the run of spec needs: nil when none runs
// (no Dependencies, or no base to compare the run's manifests with). When
// the base's files cannot be written out it gives the request its result
// instead and reports done: neither the setup nor the command runs.
func (rn runs) setupRequest(ctx context.Context, t Job, ws Workspace, spec pullwright.RunSpec) (req *pullwright.SetupRequest, done bool) {
	if rn.deps == nil || t.setupBase() == "" {
		// Without a base nothing says which manifests are trusted, nor
		// was the request shown with their changes: no setup.
		return nil, false
	}
	r := t.Request
	labels := map[string]string{"pullwright.task": strconv.FormatInt(t.ID, 10), "pullwright.request": r.ID, "pullwright.setup": "true"}
	if !t.sharesCaches() {
		// A base other than the default branch fills no shared cache:
		// the setup runs on the run's files into a cache of the task's
		// own, as the request said (approval.Setup.Private).
		setup := rn.settings(t.Task).SetupRequest(t.Repo.FullName(), "", spec, labels, rn.operator().Caps.Images)
		return &setup, false
	}
	// The base's files, which alone may fill a shared cache: the default
	// branch's, or the base of a pull request to it (never its head's,
	// which its author wrote). Removed with the run's files
	// (removeRunTree), like them.
	base := workdir(rn.dir, t.Task) + ".base"
	err := os.RemoveAll(base)
	if err == nil {
		err = rn.exportBase(ctx, t, ws, base)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false // the run's own context check reports it
		}
		// Never a setup on the files to run instead: whether their
		// manifests are the base's is what decides if they may run with
		// network, and that cannot be told now.
		rn.log.ErrorContext(ctx, "export of the base for setup failed", "task_id", t.ID, "request", r.ID, "err", err)
		res := notRun("the repository's setup could not read the base's files to compare the manifests with, so neither it nor the command ran: " +
			UserMessage(Retry("reading the repository failed; asking again may work", err)))
		r.Result = &res
		return nil, true
	}
	setup := rn.settings(t.Task).SetupRequest(t.Repo.FullName(), base, spec, labels, rn.operator().Caps.Images)
	return &setup, false
}

// fetchRequest is the setup request whose allow-list a fetch of spec
// takes: nil when no setup would run (see setupRequest), and never with
// a base, since a fetch fills no shared cache.
func (rn runs) fetchRequest(t Job, spec pullwright.RunSpec) *pullwright.SetupRequest {
	if rn.deps == nil || t.setupBase() == "" {
		return nil
	}
	labels := map[string]string{"pullwright.task": strconv.FormatInt(t.ID, 10), "pullwright.request": t.Request.ID, "pullwright.setup": "true"}
	setup := rn.settings(t.Task).SetupRequest(t.Repo.FullName(), "", spec, labels, rn.operator().Caps.Images)
	return &setup
}

// exportBase writes the files of the task's setupBase into dir.
func (rn runs) exportBase(ctx context.Context, t Job, ws Workspace, dir string) error {
	sha := t.setupBase()
	if sha == "" {
		return errors.New("no base commit")
	}
	// A workspace restored elsewhere (bot action's next run) or a pull
	// request's may not hold the base yet.
	if err := rn.fetch(ctx, t.Task, ws, sha); err != nil {
		return err
	}
	return ws.Export(ctx, sha, dir)
}

// leftOutNote tells the agent (and the run's check) which files of its
// workspace the run did not have, because git ignores them: a test or
// build file the agent wrote there never runs, and it should know why.
func (rn runs) leftOutNote(ctx context.Context, t Job, ws Workspace) string {
	paths, more, err := ws.LeftOut(t.Request.SHA, leftOutShown)
	if err != nil {
		rn.log.WarnContext(ctx, "list the files a run left out", "task_id", t.ID, "err", err)
		return ""
	}
	if len(paths) == 0 {
		return ""
	}
	list := strings.Join(paths, ", ")
	if more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("\n[not part of this run, because git ignores them: %s. A run has the files of the approved commit %s only.]\n", list, words.Short(t.Request.SHA))
}

// execute runs t's approved request on ws's approved commit and records
// its result in the request: the commit's files written out, the
// dependencies made ready, the command in the sandbox, and a note of what
// the run did not get. A failure of the sandbox itself is a result the
// agent is told of, not an error of the step.
func (rn runs) execute(ctx context.Context, t Job, ws Workspace) error {
	r := t.Request
	if r.Shown != nil && r.Shown.Where.Sandbox == rn.unisolated {
		// The bot was restarted with another runner since the request
		// was shown: what was approved is not where it would run.
		res := notRun("the bot's runner changed since the request was shown (" +
			map[bool]string{true: "it was shown to run in a sandbox", false: "it was shown to run without a sandbox"}[r.Shown.Where.Sandbox] +
			"), so what was approved is not where it would run; ask again")
		r.Result = &res
		return nil
	}
	// What runs is the approved commit's tree and nothing else: not
	// the files git ignores in the workspace, which the request did not
	// show, and nothing an earlier run left.
	tree := rn.runTree(t.Task)
	if err := os.RemoveAll(tree); err != nil {
		return retryf(err, "clearing the run's files failed")
	}
	defer rn.removeRunTree(ctx, t.Task)
	if err := ws.Export(ctx, r.SHA, tree); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rn.log.ErrorContext(ctx, "export of the approved commit failed", "task_id", t.ID, "request", r.ID, "sha", r.SHA, "err", err)
		res := notRun(fmt.Sprintf("the files of the approved commit %s could not be written out for the run; a maintainer can see the bot's logs", words.Short(r.SHA)))
		r.Result = &res
		return nil
	}
	if shownKeep, shownFetch := r.Shown != nil && r.Shown.KeepChanges, r.Shown != nil && r.Shown.Fetch != nil; shownKeep != r.KeepChanges || shownFetch != r.Fetch {
		// What runs is what was approved, keeping and network included.
		res := notRun("the request is not the one that was shown for approval (whether its changes are kept, whether it has network), so it did not run; ask again")
		r.Result = &res
		return nil
	}
	spec := rn.settings(t.Task).RunSpec(tree, r.Command, map[string]string{"pullwright.task": strconv.FormatInt(t.ID, 10), "pullwright.request": r.ID})
	spec.KeepChanges = r.KeepChanges
	var setup *pullwright.SetupRequest
	if r.Fetch {
		// A fetch takes the setup's allow-list and runs on the files to
		// run into a cache of its own: no base to write out.
		setup = rn.fetchRequest(t, spec)
	} else {
		var done bool
		if setup, done = rn.setupRequest(ctx, t, ws, spec); done {
			return nil
		}
	}
	// No record is ended here: serve's is made when the request is
	// resolved (Task.record), a step later, once for a step replayed
	// after a crash; the request keeps the Ran (Result, Setup) until then
	// and the record is ended from it by the same Ran.End.
	step := Sandboxed{Runner: rn.runner, Deps: rn.deps,
		Explain: func(err error) string { return UserMessage(Retry(sandboxMessage(err), err)) },
		LeftOut: func() string { return rn.leftOutNote(ctx, t, ws) }}
	run := step.Run
	if r.Fetch {
		run = step.Fetch
	}
	ran, err := run(ctx, spec, setup, nil)
	if err != nil {
		return err
	}
	if ran.Err != nil {
		rn.log.ErrorContext(ctx, "the run failed to start", "task_id", t.ID, "request", r.ID, "err", ran.Err)
	}
	r.Setup, r.Result = ran.Setup, &ran.Result
	return nil
}

// callTool calls the MCP tool of t's approved request, once, with the
// arguments as they were shown, on the server as the operator offers it
// to the repository now: a server or tool withdrawn since the request
// was shown is not called. Its answer is the request's result (exit code
// 0, or 1 when the call failed).
func (rn runs) callTool(ctx context.Context, t Job) error {
	r := t.Request
	c := *r.Tool
	if r.Shown == nil || r.Shown.Tool == nil || *r.Shown.Tool != c {
		res := notRun("the call is not the one that was shown for approval, so it was not made; ask again")
		r.Result = &res
		return nil
	}
	// The operator's file as it is now, not as the task recorded it at
	// its start: a server withdrawn since, or moved from the URL the task
	// started with (whose host the request showed), is not called.
	now, err := rn.operator().ToolServers(t.Repo.FullName(), &policy.Config{MCP: []string{c.Server}})
	was, ok := pullwright.ToolServerNamed(rn.settings(t.Task).MCP, c.Server)
	if err != nil || len(now) != 1 || !ok || now[0].URL != was.URL || !now[0].Offers(c.Tool) || rn.tools == nil {
		res := notRun(fmt.Sprintf("the operator no longer offers the tool %s of the MCP server %s to this repository as the request showed it, so it was not called", c.Tool, c.Server))
		r.Result = &res
		return nil
	}
	start := rn.now()
	text, failed, err := rn.tools.CallTool(ctx, now[0], c)
	if err != nil {
		return retryf(err, "calling the MCP tool %s of %s failed", c.Tool, c.Server)
	}
	res := pullwright.RunResult{Output: text, Duration: rn.now().Sub(start)}
	if failed {
		res.ExitCode = 1
	}
	r.Result = &res
	return nil
}
