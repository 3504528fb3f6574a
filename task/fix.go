package task

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/untrusted"

	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/tracing"
	"go.opentelemetry.io/otel/attribute"
)

// acknowledge reads the repository's rules, checks who asked against them
// and the installation's rate, reacts to the comment and posts the status
// comment that the rest of the task edits in place.
func (f *Flow) acknowledge(ctx context.Context, t Job) error {
	if t.Settings == nil {
		s, err := f.loadSettings(ctx, t.Task)
		if Permanent(err) {
			// A broken file is reported only to someone the default rule
			// admits; anyone else gets the usual refusal.
			ok, why, aerr := f.desk().admits(ctx, t.Repo, policy.Who{}, t.Requester.Login, "asking me for changes")
			if aerr != nil {
				return aerr
			}
			if !ok {
				return f.desk().refuse(ctx, t.Task, why)
			}
			return err
		}
		if err != nil {
			return err
		}
		t.Settings = &s
	}
	ok, why, err := f.desk().admits(ctx, t.Repo, t.Settings.Trigger, t.Requester.Login, "asking me for changes")
	if err != nil {
		return err
	}
	if !ok {
		return f.desk().refuse(ctx, t.Task, why)
	}
	if t.IsPR {
		ended, err := f.pulls().admitPull(ctx, t)
		if err != nil || ended {
			return err
		}
	}
	if t.Kind == KindReview {
		// Asked again on a head it reviewed: said before the rates count
		// it, since nothing will run (prepare checks again on the clone).
		if done, err := f.reviews().reviewedAlready(ctx, t); err != nil || done {
			return err
		}
	}
	why, err = f.admitRate(ctx, t.Task)
	if err != nil {
		return err
	}
	if why != "" {
		f.Logger.InfoContext(ctx, "task refused: rate limit", "task_id", t.ID, "installation_id", t.Repo.InstallationID, "why", why)
		return f.desk().reply(ctx, t.Task, fmt.Sprintf("@%s sorry, I can't start on this now: %s. Please ask again a little later.", t.Requester.Login, why))
	}
	f.desk().react(ctx, t.Task, "eyes")
	if err := t.Move(Preparing); err != nil {
		return err
	}
	return f.desk().updateStatus(ctx, t)
}

// prepare reads the issue or pull request, clones where the work starts
// (the default branch, or the pull request's head), names the branch the
// work goes to, reads the repository's instructions for agents from the
// default branch and starts the agent's conversation.
func (f *Flow) prepare(ctx context.Context, t Job) error {
	what := "issue"
	if t.Pull != nil {
		what = "pull request"
	}
	issue, err := f.GitHub.Issue(ctx, t.Repo, t.Issue)
	if err != nil {
		return retryf(err, "reading %s #%d failed", what, t.Issue)
	}
	t.IssueTitle = issue.Title
	ws, err := f.checkouts().clone(ctx, t, t.startRef())
	if err != nil {
		return err
	}
	base, err := ws.Head()
	if err != nil {
		return retryf(err, "reading the cloned commit failed")
	}
	t.BaseSHA = base
	if t.forkCode() {
		if err := f.pulls().checkForkStart(ctx, t, ws); err != nil {
			return err
		}
	}
	settings := f.desk().settings(t.Task)
	if t.onHead() {
		t.Branch = t.Pull.Info.HeadRef
	} else {
		branch, err := f.checkouts().freeBranch(ctx, t.Task, f.BranchName(settings.BranchPrefix, t.Issue, issue.Title))
		if err != nil {
			return err
		}
		t.Branch = branch
	}
	// Two pull requests may share a head branch, or a person may open one
	// from another task's branch: one task at a time pushes to a branch.
	holder, err := f.Store.HoldBranch(ctx, t.Task)
	if err != nil {
		return retryf(err, "recording the work branch failed")
	}
	if holder != nil {
		return Fatal(fmt.Sprintf("task %d, asked on #%d, is working on branch %s now; ask again when it has ended", holder.ID, holder.Issue, code(t.Branch)), nil)
	}
	if err := ws.CreateBranch(t.Branch); err != nil {
		return retryf(err, "creating branch %s failed", t.Branch)
	}
	var pull *pullwright.PullBrief
	if t.Pull != nil {
		if pull, err = f.pulls().pullBrief(ctx, t); err != nil {
			return err
		}
	}
	guide, err := readGuidance(ctx, f.remote(), t, ws, settings.InstructionFiles())
	if err != nil {
		return err
	}
	comments, unheard := f.desk().heard(ctx, t.Task, issue.Comments, map[string]bool{})
	t.Unheard = unheard
	lim := limits(settings)
	pics, leftOut, err := f.pictures(ctx, t, lim.Profile.Images, settings.Model, issue)
	if err != nil {
		return err
	}
	t.Pictured = nil
	if n := len(pics) + len(leftOut); n > 0 {
		t.Pictured = &Pictured{Given: len(pics), LeftOut: len(leftOut)}
	}
	conv, err := f.Agent.Start(pullwright.Brief{
		Repo:          t.Repo.FullName(),
		Issue:         t.Issue,
		Title:         untrusted.Visible(issue.Title),
		Body:          untrusted.Visible(issue.Body),
		Comments:      comments,
		Instructions:  untrusted.Visible(t.Instructions),
		Mode:          string(t.Mode),
		Requester:     t.Requester.Login,
		Limits:        lim,
		Base:          t.BaseSHA,
		TestCommand:   settings.TestCommand,
		Pull:          pull,
		Guidance:      guide,
		Images:        pics,
		ImagesLeftOut: leftOut,
	})
	if err != nil {
		return Fatal("starting the agent failed", err)
	}
	t.Conversation = conv
	if err := t.Move(Working); err != nil {
		return err
	}
	return f.desk().updateStatus(ctx, t)
}

// work runs one turn of the agent, unless a budget is spent: then the
// work so far is pushed and the task stops.
func (f *Flow) work(ctx context.Context, t Job) error {
	if t.Stop != "" {
		return f.stop(ctx, t)
	}
	if limit := f.desk().settings(t.Task).MaxWallTime; limit > 0 && !t.CreatedAt.IsZero() {
		if used := f.now().Sub(t.CreatedAt) - t.Waited; used >= limit {
			t.CommitAt = f.now().UTC().Truncate(time.Second)
			if t.reopened() {
				return t.Move(Publishing) // as for a spent budget, below
			}
			// As a spent turn or token budget: the work so far is a
			// draft, with the account of what was done and what is left.
			if err := t.outOfBudget(fmt.Sprintf("the task used its wall-time budget (%s of %s, not counting waits for approval)",
				used.Round(time.Second), limit)); err != nil {
				return err
			}
			return f.desk().updateStatus(ctx, t)
		}
	}
	ws, err := f.checkouts().workspace(ctx, t)
	if err != nil {
		return err
	}
	p, err := f.Agent.Turn(ctx, t.Repo.FullName(), t.Conversation, ws.Dir())
	if errors.Is(err, ErrBudget) && t.reopened() {
		// The agent had finished once; the repository's required command
		// failed and it went on, until its budget ran out. Its finished
		// work is still a pull request: a draft, saying why.
		f.Logger.InfoContext(ctx, "the agent ran out of budget after the required command failed; publishing as a draft",
			"task_id", t.ID, "err", err)
		t.CommitAt = f.now().UTC().Truncate(time.Second)
		return t.Move(Publishing)
	}
	if errors.Is(err, ErrBudget) {
		// The agent did not finish: its work so far becomes a draft, with
		// the bot's account of what it did and what is left.
		t.CommitAt = f.now().UTC().Truncate(time.Second)
		if err := t.outOfBudget(UserMessage(err)); err != nil {
			return err
		}
		return f.desk().updateStatus(ctx, t)
	}
	if err != nil {
		return err
	}
	t.Conversation = p.Conversation
	t.Turns, t.Tokens, t.TokensEstimated, t.Spend = p.Turns, p.Tokens, p.TokensEstimated, p.Spend
	t.Plan, t.Steps = p.Plan, p.Steps
	files, err := snapshot(ws)
	if err != nil {
		return retryf(err, "saving the agent's changes failed")
	}
	t.Files = files
	now := f.now().UTC().Truncate(time.Second)
	s := f.desk().settings(t.Task)
	switch {
	case p.Pending != nil && ((s.MaxTurns > 0 && p.Turns >= s.MaxTurns) || (s.MaxTokens > 0 && p.Tokens >= s.MaxTokens)):
		// The agent could never read the result: asking a maintainer to
		// approve it would waste their time and a sandbox run.
		t.Stop = fmt.Sprintf("the agent used up its budget (%d of %d turns, %d of %d tokens) with a request to run %s that it could not have used",
			p.Turns, s.MaxTurns, p.Tokens, s.MaxTokens, code(oneLine(p.Pending.Command)))
		t.CommitAt = now
	case p.Pending != nil:
		t.RequestSeq++
		t.Request = &ExecRequest{
			ID:      fmt.Sprintf("%d-%d", t.ID, t.RequestSeq),
			Command: p.Pending.Command,
			Reason:  p.Pending.Reason,
			Tool:    p.Pending.Tool,
			AskedAt: now,
			// A call of a tool changes no file of the workspace.
			KeepChanges: (p.Pending.KeepChanges || p.Pending.Network) && p.Pending.Tool == nil,
			Fetch:       p.Pending.Network && p.Pending.Tool == nil,
		}
		t.CommitAt = now
	case p.Finished:
		t.Title, t.Summary = p.Title, p.Summary
		if p.OutOfBudget != "" {
			// It finished on its last turn, when it could do nothing
			// else: a draft, saying why.
			t.OutOfBudget = "the agent used up its budget (" + p.OutOfBudget + ")"
		}
		if t.Pull != nil {
			t.Pull.Notes = p.Replies
		}
		t.CommitAt = now
		if err := t.Move(Publishing); err != nil {
			return err
		}
	}
	return f.desk().updateStatus(ctx, t)
}

// checkpoint brings the remote branch up to date with the workspace:
// commit the changes (local, and the same commit however often it is made)
// and push them. It reports done when the remote already has everything.
func (f *Flow) checkpoint(ctx context.Context, t Job) (done bool, err error) {
	if t.Kind == KindReview {
		// A review commits and pushes nothing, whatever its workspace
		// holds (a change the revert of its files could not undo, such
		// as a submodule's): its run is bound to the head under review.
		return true, nil
	}
	ws, err := f.checkouts().workspace(ctx, t)
	if err != nil {
		return false, err
	}
	changes, err := ws.Changes()
	if err != nil {
		return false, retryf(err, "reading the workspace failed")
	}
	head, err := ws.Head()
	if err != nil {
		return false, retryf(err, "reading the workspace failed")
	}
	if len(changes) > 0 {
		if bad := protectedChanges(f.desk().settings(t.Task), ws.Dir(), changes); len(bad) > 0 {
			return false, Fatal("the change touches paths this repository protects, so nothing was pushed: "+strings.Join(bad, ", "), nil)
		}
		if head, err = f.makeCommit(ctx, t, ws); err != nil {
			return false, err
		}
		t.HeadSHA = head
	}
	rebuiltFrom := t.PushedSHA
	if rebuiltFrom == "" {
		rebuiltFrom = t.BaseSHA
	}
	if t.HeadSHA == "" && head != rebuiltFrom {
		// An earlier try committed but did not live to record it.
		t.HeadSHA = head
	}
	if t.HeadSHA == "" || head == t.PushedSHA {
		return true, nil
	}
	if t.forkCode() {
		if err := f.pulls().checkForkPaths(ctx, t, ws, head); err != nil {
			return false, err
		}
	}
	token, err := f.remote().token(ctx, t.Task)
	if err != nil {
		return false, err
	}
	gctx, cancel := f.remote().gitCtx(ctx)
	defer cancel()
	gctx, span := tracing.Start(gctx, "git push")
	err = ws.Push(gctx, token, t.Branch)
	if errors.Is(err, pullwright.ErrPushRejected) {
		span.SetAttributes(attribute.Bool("pullwright.push.rejected", true))
	}
	tracing.End(span, err)
	if errors.Is(err, pullwright.ErrPushRejected) {
		// A person pushed to the branch meanwhile: never force over it.
		return false, f.checkouts().rebase(ctx, t, ws, token)
	}
	if err != nil {
		return false, retryf(err, "pushing branch %s failed", t.Branch)
	}
	return false, pushed(t, ws, head, rebuiltFrom)
}

// checkpointRequest pushes the work the agent's request would run, one
// sub-step per call, and binds the request to the commit that holds it.
func (f *Flow) checkpointRequest(ctx context.Context, t Job) error {
	done, err := f.checkpoint(ctx, t)
	if err != nil || !done {
		return err
	}
	r := t.Request
	r.SHA = t.PushedSHA
	if r.SHA == "" {
		r.SHA = t.BaseSHA // nothing changed yet: the request is on the base
	}
	return nil
}

// pushed records that the remote branch has head, the workspace's commit
// on from.
func pushed(t Job, ws Workspace, head, from string) error {
	if t.Pull != nil {
		// Each push is one commit on from; summing them keeps a person's
		// commits, rebased onto, out of the bot's account.
		stats, err := ws.DiffStat(from)
		if err != nil {
			return retryf(err, "reading the pushed change failed")
		}
		t.Pull.Stats = addStats(t.Pull.Stats, stats)
		t.Pull.Commits = append(t.Pull.Commits, head)
	}
	t.HeadSHA, t.PushedSHA = head, head
	// The remote has every change now; the saved files were relative to
	// the previous push.
	t.Files = nil
	return nil
}

// makeCommit commits the workspace's changes for t, dated t.CommitAt, so
// that making it twice gives the same commit.
func (f *Flow) makeCommit(ctx context.Context, t Job, ws Workspace) (string, error) {
	bot, err := f.GitHub.Identity(ctx)
	if err != nil {
		return "", retryf(err, "reading the app's identity failed")
	}
	requester := pullwright.Identity{
		Login: t.Requester.Login,
		Name:  t.Requester.Login,
		Email: fmt.Sprintf("%d+%s@users.noreply.github.com", t.Requester.ID, t.Requester.Login),
	}
	when := t.CommitAt
	if when.IsZero() {
		when = t.CreatedAt.UTC().Truncate(time.Second)
	}
	msg := CommitMessage(t)
	switch {
	case t.Stop != "":
		msg = StopMessage(t)
	case t.State == Working && t.Request != nil:
		msg = CheckpointMessage(t)
	}
	sha, err := ws.CommitAllAt(when, msg, bot, requester)
	if err != nil {
		return "", retryf(err, "committing the change failed")
	}
	return sha, nil
}

// publish commits, pushes, opens the pull request (or makes the draft
// ready) and reports, one idempotent sub-step per call.
func (f *Flow) publish(ctx context.Context, t Job) error {
	if !t.Final {
		done, err := f.checkpoint(ctx, t)
		if err != nil || !done {
			return err
		}
		if t.HeadSHA == "" && t.OutOfBudget != "" {
			return Fatal(t.OutOfBudget+" before it changed any file, so there is nothing to propose", pullwright.ErrNoChanges)
		}
		if t.HeadSHA == "" {
			return Fatal("the agent finished without changing any file, so there is nothing to propose", pullwright.ErrNoChanges)
		}
		t.Final = true
		return nil
	}
	if t.ChangedFiles == nil && t.Pull != nil {
		t.ChangedFiles = append(make([]pullwright.FileStat, 0, len(t.Pull.Stats)), t.Pull.Stats...)
		return nil
	}
	if t.ChangedFiles == nil {
		stats, err := f.checkouts().diffStat(ctx, t)
		if err != nil {
			return retryf(err, "reading the change failed")
		}
		t.ChangedFiles = append(make([]pullwright.FileStat, 0, len(stats)), stats...)
		return nil
	}
	if t.Mode == ModeRefactor && !t.APIChecked {
		changes, err := f.checkouts().apiChanges(ctx, t)
		if err != nil {
			return err
		}
		t.APIChanges, t.APIChecked = changes, true
		return nil
	}
	if t.Pull == nil || t.Pull.Mode == PullInBase {
		// The bot's own pull request: the fix's, or one that builds on
		// the pull request asked on.
		if f.requirePassing(t) {
			return nil
		}
		if acted, err := f.openPullRequest(ctx, t); acted || err != nil {
			return err
		}
	}
	if t.Pull != nil {
		if acted, err := f.pulls().deliver(ctx, t); acted || err != nil {
			return err
		}
		return f.done(ctx, t, renderPullDone(t))
	}
	if t.OutOfBudget != "" {
		return f.done(ctx, t, fmt.Sprintf("@%s the pull request stays a draft: %s before the work was done. %s **%s**", t.Requester.Login, defang(t.OutOfBudget), t.PRURL, line(t.Task, t.Title)))
	}
	if why := f.unmet(t); why != "" {
		return f.done(ctx, t, fmt.Sprintf("@%s the pull request stays a draft: %s. %s **%s**", t.Requester.Login, why, t.PRURL, line(t.Task, t.Title)))
	}
	return f.done(ctx, t, fmt.Sprintf("@%s the pull request is ready: %s **%s**", t.Requester.Login, t.PRURL, line(t.Task, t.Title)))
}

// requirePassing asks for the repository's required command
// (require_passing) on the final commit, as an execution request of the
// bot's own that goes through the approval rules like the agent's, unless
// a run of it passed there or the bot already asked for it there. It
// reports whether it asked.
func (f *Flow) requirePassing(t Job) bool {
	cmd := f.desk().settings(t.Task).RequirePassing
	if cmd == "" || t.HeadSHA == "" || t.OutOfBudget != "" {
		// A task out of budget is a draft whatever the command says, and
		// its agent could not go on if it failed.
		return false
	}
	passedOrAsked := func(r RunRecord) bool { return r.Outcome == OutcomePassed || r.Required }
	if _, ok := recordOn(t.Runs, cmd, t.HeadSHA, passedOrAsked); ok {
		return false
	}
	now := f.now().UTC().Truncate(time.Second)
	t.RequestSeq++
	t.Request = &ExecRequest{
		ID:       fmt.Sprintf("%d-%d", t.ID, t.RequestSeq),
		Command:  cmd,
		Reason:   "The repository requires this command to pass on the final commit before the pull request is ready for review (require_passing in .github/pullwright.yml).",
		AskedAt:  now,
		Required: true,
	}
	t.CommitAt = now
	return t.Move(Working) == nil
}

// reopened reports whether the agent works again after it had finished,
// because the repository's required command failed (resolveRequired).
func (t Job) reopened() bool {
	for _, r := range t.Runs {
		if r.Required && ranAndFailed(r.Outcome) {
			return t.Title != ""
		}
	}
	return false
}

// unmet says why the repository's required command does not yet allow the
// pull request to be ready for review, or "" when it does (or there is
// none).
func (f *Flow) unmet(t Job) string {
	return t.unmet(f.desk().settings(t.Task).RequirePassing)
}

// unmet says why required (the repository's require_passing) has not
// passed on t's head, or "" when it has or there is none.
func (t Job) unmet(cmd string) string {
	if cmd == "" || t.HeadSHA == "" {
		return ""
	}
	shown := code(oneLine(cmd))
	if r, ok := recordOn(t.Runs, cmd, t.HeadSHA, nil); ok {
		if r.Outcome == OutcomePassed {
			return ""
		}
		return fmt.Sprintf("the repository requires %s to pass on the final commit %s, and it did not (%s)", shown, words.Short(t.HeadSHA), briefResult(r))
	}
	return fmt.Sprintf("the repository requires %s to pass on the final commit %s, and it has not run there", shown, words.Short(t.HeadSHA))
}

// openPullRequest opens the task's pull request from t.Branch into
// t.prBase(), or, when it opened a draft while it worked, gives the draft
// its final title and body and makes it ready for review. It reports
// whether it did either: one sub-step of publishing.
func (f *Flow) openPullRequest(ctx context.Context, t Job) (acted bool, err error) {
	// A repository's required command that has not passed on the final
	// commit keeps the pull request a draft.
	ready := f.unmet(t) == "" && t.OutOfBudget == ""
	switch {
	case t.PRNumber == 0:
		pctx, span := tracing.Start(ctx, "open pull request", attribute.Bool("pullwright.pull.draft", !ready))
		pr, err := f.GitHub.OpenPullRequest(pctx, t.Repo, pullwright.NewPullRequest{
			Title: prTitle(t),
			Body:  RenderPullRequest(t),
			Head:  t.Branch,
			Base:  t.prBase(),
			Draft: !ready,
		})
		tracing.End(span, err)
		if err != nil {
			return true, retryf(err, "opening the pull request failed")
		}
		t.PRNumber, t.PRURL = pr.Number, pr.URL
		t.Draft, t.PRFinal = !ready, true
		return true, nil
	case t.Draft && !t.PRFinal:
		if err := f.GitHub.UpdatePullRequest(ctx, t.Repo, t.PRNumber, prTitle(t), RenderPullRequest(t)); err != nil {
			return true, retryf(err, "updating the pull request failed")
		}
		if ready {
			if err := f.GitHub.MarkReadyForReview(ctx, t.Repo, t.PRNumber); err != nil {
				return true, retryf(err, "marking the pull request ready for review failed")
			}
			t.Draft = false
		}
		t.PRFinal = true
		return true, nil
	}
	return false, nil
}

// done posts the report of a finished task and ends it.
func (f *Flow) done(ctx context.Context, t Job, report string) error {
	if _, err := f.GitHub.UpsertComment(ctx, t.Repo, t.Issue, marker(t.Task, "done"), 0, report); err != nil {
		return retryf(err, "posting the result failed")
	}
	if err := t.Move(Done); err != nil {
		return err
	}
	if err := f.desk().updateStatus(ctx, t); err != nil {
		return err
	}
	f.cleanup(ctx, t)
	return nil
}

// stop ends a task whose budget is spent: the work so far is committed and
// pushed, so nothing the agent did is lost, and the task fails saying why
// and where the work is.
func (f *Flow) stop(ctx context.Context, t Job) error {
	done, err := f.checkpoint(ctx, t)
	if err != nil || !done {
		return err
	}
	msg := "stopped: " + t.Stop + "."
	switch {
	case t.PRURL != "":
		msg += fmt.Sprintf(" The work so far is on branch `%s` and in the draft pull request %s.", t.Branch, t.PRURL)
	case t.PushedSHA != "":
		msg += fmt.Sprintf(" The work so far is on branch `%s`.", t.Branch)
	default:
		msg += " No file had been changed yet."
	}
	return Fatal(msg, nil)
}

func (f *Flow) cleanup(ctx context.Context, t Job) {
	if t.Workdir == "" {
		return
	}
	if err := os.RemoveAll(t.Workdir); err != nil {
		f.Logger.WarnContext(ctx, "remove workspace", "task_id", t.ID, "err", err)
	}
	f.runs().removeRunTree(ctx, t.Task)
}

// limits are the agent's rules for a task: the repository's settings,
// already within the operator's caps.
func limits(s policy.Settings) pullwright.Limits {
	return pullwright.Limits{
		MaxTurns: s.MaxTurns, MaxTokens: s.MaxTokens, MaxCostUSD: s.MaxCostUSD,
		PriceInput: s.Price.Input, PriceOutput: s.Price.Output, PriceCachedInput: s.Price.CachedInput, Priced: s.Priced,
		Model: s.Model, Profile: s.Profile, Protected: s.Protected, ToolServers: s.MCP,
	}
}
