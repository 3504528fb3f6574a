package task

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/inert"
	"github.com/pullwright/pullwright/internal/words"
)

// Bounds of what a fix on a pull request reads of it.
const (
	// maxPullDiff is the most of a pull request's diff the agent is given;
	// it reads files for the rest.
	maxPullDiff = 64 << 10
	// maxThreads is the most review threads one task addresses.
	maxThreads = 30
)

// pullRef is the ref of a pull request's head in its base repository,
// which also holds the commits of a pull request from a fork.
func pullRef(number int) string { return fmt.Sprintf("refs/pull/%d/head", number) }

// startRef is what a task's work starts from: the default branch for an
// issue, the pull request's branch or head ref for a pull request.
func (t Job) startRef() string {
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
func (t Job) onHead() bool { return t.Pull != nil && t.Pull.Mode == PushToHead }

// forkCode reports whether the task works on code from a fork, which
// nobody with write access wrote.
func (t Job) forkCode() bool { return t.Pull != nil && t.Pull.Info.Fork }

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
// thread (deliver's), not one that says a task failed or was cancelled.
// The marker ends the reply, where the bot puts it: one inside the text is
// quoted from somewhere (a fork's file name, a failure) and tags nothing.
var answeredRE = regexp.MustCompile(`<!-- pullwright:task-[0-9]+-(?:review|thread-[0-9]+) -->\s*$`)

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

// deliver carries a finished fix to its pull request, one sub-step per
// call once the final commit is pushed and any pull request of the bot's
// own is open (Flow.publish): propose the commits to the fork, then
// answer the review comment that asked and the review threads addressed.
// It reports whether it did a sub-step; when it did none, only the report
// is left.
func (pw pulls) deliver(ctx context.Context, t Job) (acted bool, err error) {
	p := t.Pull
	switch {
	case p.Mode == PullToFork && t.PRURL == "":
		return true, pw.openForkPull(ctx, t)
	case t.Review != nil && !p.ReviewReplied:
		if err := pw.replyInThread(ctx, t, t.Review.Root(), marker(t.Task, "review"), reviewReply(t, "")); err != nil {
			return true, retryf(err, "replying in the review thread failed")
		}
		p.ReviewReplied = true
		return true, nil
	case p.Replied < len(p.Threads):
		th := p.Threads[p.Replied]
		if err := pw.replyInThread(ctx, t, th.Root, marker(t.Task, fmt.Sprintf("thread-%d", p.Replied+1)), reviewReply(t, p.Notes[p.Replied+1])); err != nil {
			return true, retryf(err, "replying in review thread %d failed", p.Replied+1)
		}
		p.Replied++
		return true, nil
	}
	return false, nil
}

// reviewReply is the answer posted in a review thread once the work is
// pushed; note is the agent's own word on that thread, if it gave one.
func reviewReply(t Job, note string) string {
	var b strings.Builder
	switch {
	case strings.TrimSpace(note) != "":
		b.WriteString(inert.Markdown(clip(note, 1000), hosts(t.Task)))
	case strings.TrimSpace(t.Summary) != "":
		b.WriteString(line(t.Task, clip(oneLine(t.Summary), 600)))
	default:
		b.WriteString(line(t.Task, t.Title))
	}
	b.WriteString("\n\n")
	b.WriteString(whereItWent(t))
	return b.String()
}

// whereItWent says where the task's commits are, in a sentence.
func whereItWent(t Job) string {
	p := t.Pull
	commits := ""
	if n := len(p.Commits); n > 0 {
		commits = fmt.Sprintf(" (%s, last %s)", words.Count(n, "commit", "commits"), words.Short(p.Commits[n-1]))
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
func renderPullDone(t Job) string {
	p := t.Pull
	var b strings.Builder
	fmt.Fprintf(&b, "@%s done: **%s**\n\n", t.Requester.Login, line(t.Task, t.Title))
	switch p.Mode {
	case PushToHead:
		fmt.Fprintf(&b, "I pushed %s to this pull request's branch `%s`", words.Count(len(p.Commits), "commit", "commits"), t.Branch)
		if n := len(p.Commits); n > 0 {
			fmt.Fprintf(&b, ", up to %s", p.Commits[n-1])
		}
		b.WriteString(".")
		if n := len(t.Rebased); n > 0 {
			fmt.Fprintf(&b, " Someone pushed to the branch while I worked; my change was moved on top of their commits (%s), never forced over them.", words.Count(n, "time", "times"))
		}
	case PullToFork:
		fmt.Fprintf(&b, "I opened %s against %s: %s.", t.PRURL, code(p.Info.HeadRepo+":"+p.Info.HeadRef), line(t.Task, p.Why))
	default:
		fmt.Fprintf(&b, "I opened %s, which holds this pull request's commits and mine: %s.", t.PRURL, line(t.Task, p.Why))
	}
	b.WriteString("\n")
	if n := len(p.Threads); n > 0 {
		fmt.Fprintf(&b, "\nI answered %s.\n", words.Count(n-min(p.Gone, n), "review thread", "review threads"))
	}
	if p.Gone > 0 {
		fmt.Fprintf(&b, "\n%s deleted before I could answer there.\n", words.Count(p.Gone, "review thread was", "review threads were"))
	}
	if len(t.ChangedFiles) > 0 {
		b.WriteString("\n**Files changed**\n\n")
		for _, f := range t.ChangedFiles {
			fmt.Fprintf(&b, "- %s (+%d −%d)\n", code(f.Path), f.Added, f.Deleted)
		}
	}
	if p.Mode == PushToHead {
		// No pull request of the bot's carries the record: the report does.
		b.WriteString("\n" + RenderVerification(t))
	}
	return b.String()
}
