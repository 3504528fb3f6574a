package task

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/pullwright/pullwright"
)

// Bounds of what a fix on a pull request reads of it.
const (
	// maxPullDiff is the most of a pull request's diff the agent is given;
	// it reads files for the rest.
	maxPullDiff = 64 << 10
	// maxThreads is the most review threads one task addresses.
	maxThreads = 30
	// maxRebases is how often a task moves its commit onto a person's new
	// push before it gives up: someone pushing that often is working on
	// the branch, and the bot should step aside.
	maxRebases = 5
)

// pullRef is the ref of a pull request's head in its base repository,
// which also holds the commits of a pull request from a fork.
func pullRef(number int) string { return fmt.Sprintf("refs/pull/%d/head", number) }

// startRef is what a task's work starts from: the default branch for an
// issue, the pull request's branch or head ref for a pull request.
func (t *Task) startRef() string {
	switch {
	case t.Pull == nil:
		return t.Repo.DefaultBranch
	case t.Pull.Mode == PushToHead:
		return t.Pull.Info.HeadRef
	}
	return pullRef(t.Issue)
}

// onHead reports whether the task pushes onto a branch that existed before
// it: a pull request's own branch.
func (t *Task) onHead() bool { return t.Pull != nil && t.Pull.Mode == PushToHead }

// forkCode reports whether the task works on code from a fork, which
// nobody with write access wrote.
func (t *Task) forkCode() bool { return t.Pull != nil && t.Pull.Info.Fork }

// deliveryMode decides how a fix delivers its commits to a pull request,
// and says why for the status comment. The bot never pushes to a fork,
// even one whose author allows edits by maintainers: its token would then
// write to a repository nobody here controls.
func deliveryMode(info pullwright.Pull, defaultBranch string) (mode, why string) {
	switch {
	case !info.Fork && info.HeadRef == defaultBranch:
		// Commits on the default branch skip every review: never there.
		return PullInBase, fmt.Sprintf("its branch %s is this repository's default branch, which the bot never pushes to, so the change is on a branch of its own, in a new pull request that builds on this one", code(info.HeadRef))
	case !info.Fork:
		return PushToHead, ""
	case info.HeadRepo == "":
		return PullInBase, "the fork this pull request came from was deleted, so the change is on a branch of this repository, in a new pull request that builds on this one"
	case info.MaintainerCanModify:
		return PullToFork, fmt.Sprintf("this pull request comes from the fork %s, which the bot never pushes to; its author allows edits by maintainers, so the change is proposed as a pull request against %s",
			code(info.HeadRepo), code(info.HeadRepo+":"+info.HeadRef))
	}
	return PullInBase, fmt.Sprintf("this pull request comes from the fork `%s`, which the bot never pushes to, and its author does not allow edits by maintainers, so the change is on a branch of this repository, in a new pull request that builds on this one",
		info.HeadRepo)
}

// answeredRE finds the marker of a reply that reports work done in a review
// thread (publishPull's), not one that says a task failed or was cancelled.
// The marker ends the reply, where the bot puts it: one inside the text is
// quoted from somewhere (a fork's file name, a failure) and tags nothing.
var answeredRE = regexp.MustCompile(`<!-- pullwright:task-[0-9]+-(?:review|thread-[0-9]+) -->\s*$`)

// checkForkStart refuses a fork's code that is not what was asked about,
// or that the protected paths forbid here, before the agent sees it. The
// workspace holds the clone of the pull request's head, at t.BaseSHA.
func (f *Flow) checkForkStart(ctx context.Context, t *Task, ws Workspace) error {
	if head := t.Pull.Info.HeadSHA; head != "" && t.BaseSHA != head {
		// The fork pushed between the request and the clone: what would
		// run is not what was asked about.
		return Fatal(fmt.Sprintf("the fork pushed %s while the task started (it was at %s when asked), and fork code is only worked on as it was when asked. Look at the new commits and ask again",
			short(t.BaseSHA), short(head)), nil)
	}
	return f.checkForkPaths(ctx, t, ws, t.BaseSHA)
}

// checkForkPaths refuses to push commit sha, which holds a fork's code,
// when its tree differs on a path the repository protects from both the
// default branch's tip and that of the branch the pull request merges into.
// A push here runs workflows from the pushed branch's own files with this
// repository's secrets: a fork's workflow, or an older copy of one this
// repository has since fixed, would run as this repository's own. So whole
// trees are compared, not only what the fork's commits changed, and before
// every push of the fork's code: a branch may fix a workflow meanwhile.
func (f *Flow) checkForkPaths(ctx context.Context, t *Task, ws Workspace, sha string) error {
	if err := f.pulls().checkForkSeen(ctx, t); err != nil {
		return err
	}
	s := f.desk().settings(t)
	token, err := f.remote().token(ctx, t)
	if err != nil {
		return err
	}
	trusted := []string{t.Repo.DefaultBranch}
	if b := t.Pull.Info.BaseRef; b != "" && b != t.Repo.DefaultBranch {
		trusted = append(trusted, b)
	}
	gctx, cancel := f.remote().gitCtx(ctx)
	defer cancel()
	// bad keeps the protected paths that differ from every trusted tree.
	var bad map[string]string
	for _, branch := range trusted {
		tip, err := ws.FetchBranch(gctx, token, branch)
		if err != nil {
			return retryf(err, "fetching branch %s failed", branch)
		}
		paths, err := ws.ChangedPaths(tip, sha)
		if err != nil {
			return retryf(err, "comparing the pull request's code with %s failed", branch)
		}
		differ := map[string]string{}
		for _, p := range paths {
			if g, ok := s.ProtectsFromForks(p); ok && (bad == nil || bad[p] != "") {
				differ[p] = g
			}
		}
		bad = differ
	}
	if len(bad) == 0 {
		return nil
	}
	var list []string
	for _, p := range slices.Sorted(maps.Keys(bad)) {
		list = append(list, fmt.Sprintf("%s (protected by %s)", code(p), code(bad[p])))
	}
	if len(list) > 5 {
		list = append(list[:5], fmt.Sprintf("and %d more", len(list)-5))
	}
	return Fatal(fmt.Sprintf("pull request #%d comes from the fork `%s`, and its commits would go on a branch of this repository, where workflows run on a push with this repository's secrets; "+
		"its files differ from `%s` on paths this repository protects: %s. So nothing more was pushed. If the fork only lags behind, updating it from `%s` clears this; otherwise a maintainer makes the change by hand",
		t.Issue, t.Pull.Info.HeadRepo, strings.Join(trusted, "` and `"), strings.Join(list, ", "), t.Pull.Info.BaseRef), nil)
}

// rebase moves the task's unpushed commit onto a branch a person pushed to
// while the agent worked, when their commits leave the files the agent
// changed alone: the agent's files are whole-file contents, so laying them
// on the new head is the same change. When the person changed those files
// too, the bot stops, keeping its commit on a branch of its own: it never
// force-pushes over a person's work, and never merges it on a guess.
func (f *Flow) rebase(ctx context.Context, t *Task, ws Workspace, token string) error {
	gctx, cancel := f.remote().gitCtx(ctx)
	defer cancel()
	head, err := f.Workspaces.RemoteHead(gctx, t.Repo.CloneURL, token, t.Branch)
	if err != nil {
		return retryf(err, "reading branch %s failed", t.Branch)
	}
	if head == "" {
		return Fatal(fmt.Sprintf("branch `%s` was deleted while the agent worked, so nothing was pushed", t.Branch), nil)
	}
	from := t.PushedSHA
	if from == "" {
		from = t.BaseSHA
	}
	// The person's commits are on t.Branch, which need not be the ref the
	// workspace was cloned from (an issue's default branch, a fork's pull
	// request head): follow that branch's history from now on.
	if err := ws.Track(t.Branch); err != nil {
		return retryf(err, "following branch %s failed", t.Branch)
	}
	err = ws.Fetch(gctx, token, head)
	if errors.Is(err, pullwright.ErrBaseGone) {
		// The new head is not in the history the workspace follows (the
		// branch was rewritten, or the task cloned another ref).
		return f.keepAside(ctx, t, ws, token, head, "the new commits could not be followed from the commit the agent built on")
	}
	if err != nil {
		return retryf(err, "fetching branch %s failed", t.Branch)
	}
	local, err := ws.Head()
	if err != nil {
		return retryf(err, "reading the workspace failed")
	}
	in, err := ws.Contains(gctx, token, head, local)
	if err != nil {
		return retryf(err, "reading the history of branch %s failed", t.Branch)
	}
	if in {
		// An earlier try pushed this commit and did not live to record
		// it; someone has pushed on top of it since. It is there: record
		// it, and build on it as before.
		f.Logger.InfoContext(ctx, "the branch already has the bot's commit", "task_id", t.ID, "branch", t.Branch, "commit", local, "head", head)
		if err := pushed(t, ws, local, from); err != nil {
			return err
		}
		// Work on from the branch as it is now, as after a rebase: a
		// request is then bound to, and runs on, what the branch holds.
		if err := ws.ResetTo(gctx, token, head); err != nil {
			return retryf(err, "moving to the new head %s failed", short(head))
		}
		t.PushedSHA, t.HeadSHA = head, head
		t.Steps = append(t.Steps, fmt.Sprintf("someone pushed %s to %s on top of the agent's commit %s", short(head), t.Branch, short(local)))
		return nil
	}
	paths := make([]string, 0, len(t.Files))
	for _, fs := range t.Files {
		paths = append(paths, fs.Path)
	}
	touched, err := ws.Touched(from, head, paths)
	if err != nil {
		return retryf(err, "comparing branch %s with the agent's change failed", t.Branch)
	}
	if len(touched) > 0 {
		return f.keepAside(ctx, t, ws, token, head, "those commits change "+listPaths(touched)+", which the agent changed too")
	}
	if len(t.Rebased) >= maxRebases {
		return f.keepAside(ctx, t, ws, token, head, fmt.Sprintf("the agent already moved its work onto new pushes %d times", len(t.Rebased)))
	}
	if err := ws.ResetTo(gctx, token, head); err != nil {
		return retryf(err, "moving to the new head %s failed", short(head))
	}
	if err := syncFiles(ws, t.Files); err != nil {
		return retryf(err, "laying the agent's change on %s failed", short(head))
	}
	f.Logger.InfoContext(ctx, "rebased onto a person's push", "task_id", t.ID, "branch", t.Branch, "from", from, "onto", head)
	// The saved files are relative to the new head now, which the remote
	// has: the next checkpoint commits on it and pushes a fast-forward.
	t.PushedSHA, t.HeadSHA = head, ""
	t.Rebased = append(t.Rebased, head)
	t.Steps = append(t.Steps, fmt.Sprintf("someone pushed %s to %s; the agent's change was moved on top of it", short(head), t.Branch))
	return nil
}

// keepAside pushes the task's commit to a branch of its own and stops the
// task, saying why it did not go onto t.Branch.
func (f *Flow) keepAside(ctx context.Context, t *Task, ws Workspace, token, head, why string) error {
	aside := fmt.Sprintf("%s-pullwright-%d", t.Branch, t.ID)
	msg := fmt.Sprintf("someone pushed to `%s` while the agent worked (it is now at %s), and %s. The bot never force-pushes over a person's work, so it stopped", t.Branch, short(head), why)
	gctx, cancel := f.remote().gitCtx(ctx)
	defer cancel()
	if err := ws.CreateBranch(aside); err != nil {
		return Fatal(msg+"; its change could not be kept on a branch of its own, so ask again to start from the new head", err)
	}
	err := ws.Push(gctx, token, aside)
	if err != nil && !errors.Is(err, pullwright.ErrPushRejected) {
		return retryf(err, "pushing branch %s failed", aside)
	}
	if err != nil {
		return Fatal(msg+fmt.Sprintf("; branch `%s` for its change exists already, so it was not pushed either", aside), err)
	}
	return Fatal(msg+fmt.Sprintf(": its change is on branch `%s`, to merge by hand or drop. Ask again to start from the new head", aside), pullwright.ErrPushRejected)
}

func listPaths(paths []string) string {
	if len(paths) > 5 {
		return fmt.Sprintf("%s and %d more", listPaths(paths[:5]), len(paths)-5)
	}
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = code(p)
	}
	return strings.Join(quoted, ", ")
}

// addStats adds the changes of one pushed commit to the task's total.
func addStats(total []pullwright.FileStat, more []pullwright.FileStat) []pullwright.FileStat {
	for _, m := range more {
		i := slices.IndexFunc(total, func(s pullwright.FileStat) bool { return s.Path == m.Path })
		if i < 0 {
			total = append(total, m)
			continue
		}
		total[i].Added += m.Added
		total[i].Deleted += m.Deleted
	}
	return total
}

// publishPull delivers a finished fix to its pull request, one sub-step
// per call after the final commit is pushed: open the follow-up pull
// request (unless the commits went onto the branch itself), answer the
// review threads, then report.
func (f *Flow) publishPull(ctx context.Context, t *Task) error {
	p := t.Pull
	switch {
	case p.Mode == PullToFork && t.PRURL == "":
		return f.pulls().openForkPull(ctx, t)
	case p.Mode == PullInBase && (t.PRNumber == 0 || t.Draft):
		_, err := f.openPullRequest(ctx, t)
		return err
	case t.Review != nil && !p.ReviewReplied:
		if err := f.pulls().replyInThread(ctx, t, t.Review.Root(), marker(t, "review"), f.reviewReply(t, "")); err != nil {
			return retryf(err, "replying in the review thread failed")
		}
		p.ReviewReplied = true
		return nil
	case p.Replied < len(p.Threads):
		th := p.Threads[p.Replied]
		if err := f.pulls().replyInThread(ctx, t, th.Root, marker(t, fmt.Sprintf("thread-%d", p.Replied+1)), f.reviewReply(t, p.Notes[p.Replied+1])); err != nil {
			return retryf(err, "replying in review thread %d failed", p.Replied+1)
		}
		p.Replied++
		return nil
	}
	return f.done(ctx, t, renderPullDone(t))
}

// reviewReply is the answer posted in a review thread once the work is
// pushed; note is the agent's own word on that thread, if it gave one.
func (f *Flow) reviewReply(t *Task, note string) string {
	var b strings.Builder
	switch {
	case strings.TrimSpace(note) != "":
		b.WriteString(defang(clip(note, 1000)))
	case strings.TrimSpace(t.Summary) != "":
		b.WriteString(defang(clip(oneLine(t.Summary), 600)))
	default:
		b.WriteString(defang(oneLine(t.Title)))
	}
	b.WriteString("\n\n")
	b.WriteString(whereItWent(t))
	return b.String()
}

// whereItWent says where the task's commits are, in a sentence.
func whereItWent(t *Task) string {
	p := t.Pull
	commits := ""
	if n := len(p.Commits); n > 0 {
		commits = fmt.Sprintf(" (%s, last %s)", plural(n, "commit", "commits"), short(p.Commits[n-1]))
	}
	switch p.Mode {
	case PushToHead:
		return fmt.Sprintf("Pushed to `%s`%s.", t.Branch, commits)
	case PullToFork:
		return fmt.Sprintf("Proposed to the fork in %s, from branch `%s`%s.", t.PRURL, t.Branch, commits)
	}
	return fmt.Sprintf("In %s, from branch `%s`%s.", t.PRURL, t.Branch, commits)
}

// renderPullDone is the comment that reports a finished fix on a pull request.
func renderPullDone(t *Task) string {
	p := t.Pull
	var b strings.Builder
	fmt.Fprintf(&b, "@%s done: **%s**\n\n", t.Requester.Login, defang(oneLine(t.Title)))
	switch p.Mode {
	case PushToHead:
		fmt.Fprintf(&b, "I pushed %s to this pull request's branch `%s`", plural(len(p.Commits), "commit", "commits"), t.Branch)
		if n := len(p.Commits); n > 0 {
			fmt.Fprintf(&b, ", up to %s", p.Commits[n-1])
		}
		b.WriteString(".")
		if n := len(t.Rebased); n > 0 {
			fmt.Fprintf(&b, " Someone pushed to the branch while I worked; my change was moved on top of their commits (%s), never forced over them.", plural(n, "time", "times"))
		}
	case PullToFork:
		fmt.Fprintf(&b, "I opened %s against %s: %s.", t.PRURL, code(p.Info.HeadRepo+":"+p.Info.HeadRef), defang(p.Why))
	default:
		fmt.Fprintf(&b, "I opened %s, which holds this pull request's commits and mine: %s.", t.PRURL, defang(p.Why))
	}
	b.WriteString("\n")
	if n := len(p.Threads); n > 0 {
		fmt.Fprintf(&b, "\nI answered %s.\n", plural(n-min(p.Gone, n), "review thread", "review threads"))
	}
	if p.Gone > 0 {
		fmt.Fprintf(&b, "\n%s deleted before I could answer there.\n", plural(p.Gone, "review thread was", "review threads were"))
	}
	if len(t.ChangedFiles) > 0 {
		b.WriteString("\n**Files changed**\n\n")
		for _, f := range t.ChangedFiles {
			fmt.Fprintf(&b, "- %s (+%d −%d)\n", code(f.Path), f.Added, f.Deleted)
		}
	}
	return b.String()
}
