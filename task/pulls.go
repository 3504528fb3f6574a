package task

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/untrusted"
)

// pulls is the part of a fix on a pull request that speaks with the pull
// request itself: whether the bot may work on it (its state, a fork's
// author and code, before the work and before each push), the review
// threads it is to address, the brief the agent gets of it, and, once the
// commits are pushed, how they reach it (delivery.go). The commits and
// pushes themselves are Flow's and checkouts'.
type pulls struct {
	desk
	remote
	gh    pullGitHub
	heads pullHeads
}

// pullGitHub is what pulls reads and writes on GitHub.
type pullGitHub interface {
	Identity(ctx context.Context) (pullwright.Identity, error)
	PullRequest(ctx context.Context, r pullwright.Repo, number int) (pullwright.Pull, error)
	PullRequestDiff(ctx context.Context, r pullwright.Repo, number, max int) (diff string, truncated bool, err error)
	ReviewThreads(ctx context.Context, r pullwright.Repo, number int) ([]pullwright.ReviewThread, error)
	ReplyInThread(ctx context.Context, r pullwright.Repo, pr int, rootID int64, marker, body string) (int64, error)
	OpenPullRequest(ctx context.Context, r pullwright.Repo, pr pullwright.NewPullRequest) (pullwright.PullRequest, error)
	// What failed on the pull request's head (checks.go).
	FailingChecks(ctx context.Context, r pullwright.Repo, sha string) ([]pullwright.CheckFailure, error)
	CheckAnnotations(ctx context.Context, r pullwright.Repo, checkRunID int64, max int) ([]pullwright.CheckAnnotation, error)
	JobLogTail(ctx context.Context, r pullwright.Repo, jobID int64, max int) (tail string, cut bool, err error)
}

// pullHeads is what pulls reads of the store: where deliveries said a
// pull request's head went, on GitHub's clock.
type pullHeads interface {
	PullHeadsAround(ctx context.Context, pullKey, sha string, at time.Time) (HeadsAround, error)
}

// admitPull reads the pull request a fix was asked on and decides how the
// commits will reach it. A closed pull request, or a request to address
// review comments when none is open, ends the task with a reply (ended).
func (pw pulls) admitPull(ctx context.Context, t Job) (ended bool, err error) {
	if t.Pull == nil {
		info, err := pw.gh.PullRequest(ctx, t.Repo, t.Issue)
		if err != nil {
			return false, retryf(err, "reading pull request #%d failed", t.Issue)
		}
		if info.State != "open" {
			what := "closed"
			if info.Merged {
				what = "merged"
			}
			return true, pw.reply(ctx, t.Task, fmt.Sprintf("@%s pull request #%d is %s, so I won't change it. Reopen it, or ask on an issue.", t.Requester.Login, t.Issue, what))
		}
		if info.Fork {
			if ended, err := pw.admitFork(ctx, t.Task, info); err != nil || ended {
				return ended, err
			}
		}
		mode, why := deliveryMode(info, t.Repo.DefaultBranch)
		t.Pull = &PullWork{Info: info, Mode: mode, Why: why}
	}
	if t.Kind == KindFix && strings.TrimSpace(t.Instructions) == "" && t.Review == nil && t.Pull.Threads == nil {
		threads, err := pw.openThreads(ctx, t.Task)
		if err != nil {
			return false, err
		}
		if len(threads) == 0 {
			// Failing checks are something to address too; the brief
			// reads them in full (pullBrief).
			var fails []pullwright.CheckFailure
			if head := t.Pull.Info.HeadSHA; head != "" {
				fails, err = pw.gh.FailingChecks(ctx, t.Repo, head)
			}
			if err != nil {
				return false, retryf(err, "reading the checks of #%d failed", t.Issue)
			}
			if len(fails) > 0 {
				return false, nil
			}
			return true, pw.reply(ctx, t.Task, fmt.Sprintf("@%s this pull request has no unresolved review comments by people with write access and no failing checks, so there is nothing to address. Say what to change with `%s fix <instructions>`.",
				t.Requester.Login, pw.command))
		}
		t.Pull.Threads = threads
	}
	return false, nil
}

// admitFork decides whether the requester alone may have a fork's code
// worked on. Its commits will go on a branch here, where workflows run them
// with this repository's secrets: asking for that is approving code to
// run, so it takes who may approve, and, where approvals take a second
// person, it is not one person's to ask. A review comment asked on an
// older commit than the fork's head is refused too: the head is code the
// requester has not seen.
func (pw pulls) admitFork(ctx context.Context, t *Task, info pullwright.Pull) (ended bool, err error) {
	rule := pw.settings(t).Approve
	if rule.ExcludeRequester {
		return true, pw.refuse(ctx, t, "this repository has a second person approve what runs (`approve.exclude_requester`), and working on a pull request from a fork would put its code in this repository's workflows on one person's word. A maintainer can bring its commits in by hand after review")
	}
	ok, why, err := pw.admits(ctx, t.Repo, rule.Who, t.Requester.Login, "working on a pull request from a fork, whose code then runs in this repository's workflows,")
	if err != nil {
		return false, err
	}
	if !ok {
		return true, pw.refuse(ctx, t, why)
	}
	if r := t.Review; r != nil && r.CommitID != "" && info.HeadSHA != "" && r.CommitID != info.HeadSHA {
		return true, pw.refuse(ctx, t, fmt.Sprintf("the fork pushed %s since your comment on %s, and I only work on fork code you have seen. Look at the new commits and ask again",
			words.Short(info.HeadSHA), words.Short(r.CommitID)))
	}
	return false, nil
}

// openThreads are the review threads a fix without instructions addresses:
// not resolved, not outdated, started by someone with write access, and
// not last answered by a task that did the work.
func (pw pulls) openThreads(ctx context.Context, t *Task) ([]ThreadRef, error) {
	all, err := pw.gh.ReviewThreads(ctx, t.Repo, t.Issue)
	if err != nil {
		return nil, retryf(err, "reading the review comments of #%d failed", t.Issue)
	}
	bot, err := pw.gh.Identity(ctx)
	if err != nil {
		return nil, retryf(err, "reading the app's identity failed")
	}
	writers := map[string]bool{}
	var out []ThreadRef
	for _, th := range all {
		if th.Resolved || th.Outdated || len(th.Comments) == 0 {
			continue
		}
		root, last := th.Comments[0], th.Comments[len(th.Comments)-1]
		// Only the bot's own report answers a thread: anyone can paste
		// its marker.
		answered := strings.EqualFold(last.Author, bot.Login) && answeredRE.MatchString(last.Body)
		if answered || !pw.writerCached(ctx, t, writers, pullwright.Comment{Author: root.Author, AuthorType: root.AuthorType}) {
			continue
		}
		out = append(out, ThreadRef{Root: root.ID, Author: root.Author, Path: root.Path, Line: root.Line,
			Body: clip(untrusted.Visible(root.Body), 300), URL: root.URL})
		if len(out) == maxThreads {
			break
		}
	}
	return out, nil
}

// checkForkSeen refuses a fork's code that came to the pull request's head
// after the comment that asked for work on it: its asker had not seen it.
// A review comment names its commit, which admitFork and checkForkStart
// compare. A comment in the conversation names none, so what the
// pull_request deliveries (opened, reopened, synchronize) told of the head
// is compared with the comment's time, all by GitHub's clock, whatever
// order the deliveries came in: the cloned commit must be the latest head
// from before the comment, if one is on record, and no delivery may say the
// head came to it at the comment's time or later (a force-push back to an
// older commit, a reopening that brings a head: refusing those costs a
// second request). A delivery may arrive only after the clone, which is
// why this runs again before every push.
func (pw pulls) checkForkSeen(ctx context.Context, t Job) error {
	if t.Review != nil && t.Review.CommitID == t.BaseSHA {
		return nil
	}
	if t.AskedAt.IsZero() {
		pw.log.WarnContext(ctx, "fork code without the time it was asked for: only the head at the start is checked", "task_id", t.ID)
		return nil
	}
	heads, err := pw.heads.PullHeadsAround(ctx, PullKey(t.Repo, t.Issue), t.BaseSHA, t.AskedAt)
	if err != nil {
		return retryf(err, "reading what GitHub told of the pull request's head failed")
	}
	asked := t.AskedAt.UTC().Format(time.RFC3339)
	switch {
	case heads.Since:
		return Fatal(fmt.Sprintf("GitHub says the fork's head came to %s at or after %s, when you asked, and fork code is only worked on as it was when asked. Look at the new commits and ask again",
			words.Short(t.BaseSHA), asked), nil)
	case len(heads.Before) > 1:
		return Fatal(fmt.Sprintf("GitHub gave the fork's head several commits in the same second before %s, when you asked, so which one you saw is not known. Look at the commits and ask again", asked), nil)
	case len(heads.Before) == 1 && heads.Before[0] != t.BaseSHA:
		return Fatal(fmt.Sprintf("when you asked (%s), this pull request's head was %s; the fork has pushed since (the task found %s), and fork code is only worked on as it was when asked. Look at the new commits and ask again",
			asked, words.Short(heads.Before[0]), words.Short(t.BaseSHA)), nil)
	}
	return nil
}

// pullBrief gathers what the agent is told of the pull request beyond its
// conversation: the diff, the line comment it was asked in, the threads to
// address. Only writers' review comments are passed on.
func (pw pulls) pullBrief(ctx context.Context, t Job) (*pullwright.PullBrief, error) {
	info := t.Pull.Info
	b := &pullwright.PullBrief{Number: t.Issue, Author: info.Author, HeadRef: info.HeadRef, BaseRef: info.BaseRef, Fork: info.Fork}
	diff, cut, err := pw.gh.PullRequestDiff(ctx, t.Repo, t.Issue, maxPullDiff)
	if err != nil {
		// The agent can still read the files; the diff is a convenience.
		pw.log.WarnContext(ctx, "pull request diff", "task_id", t.ID, "pr", t.Issue, "err", err)
		diff, cut = "", true
	}
	b.Diff, b.DiffTruncated = diff, cut
	// The checks of the commit the agent starts from, which is the head
	// the pull request had when the task cloned it.
	b.CheckedSHA = cmp.Or(t.BaseSHA, info.HeadSHA)
	b.Checks, b.MoreChecks, err = pw.failingChecks(ctx, t.Task, b.CheckedSHA)
	if err != nil {
		return nil, retryf(err, "reading the checks of #%d failed", t.Issue)
	}
	r := t.Review
	if r == nil && len(t.Pull.Threads) == 0 {
		return b, nil
	}
	all, err := pw.gh.ReviewThreads(ctx, t.Repo, t.Issue)
	if err != nil {
		return nil, retryf(err, "reading the review comments of #%d failed", t.Issue)
	}
	byRoot := make(map[int64]pullwright.ReviewThread, len(all))
	for _, th := range all {
		if len(th.Comments) > 0 {
			byRoot[th.Comments[0].ID] = th
		}
	}
	writers := map[string]bool{}
	heard := func(cs []pullwright.ReviewComment, skip int64) []pullwright.Comment {
		var in []pullwright.Comment
		for _, c := range cs {
			if c.ID != skip {
				in = append(in, pullwright.Comment{Author: c.Author, AuthorType: c.AuthorType, Body: c.Body})
			}
		}
		out, _ := pw.heard(ctx, t.Task, in, writers)
		return out
	}
	if r != nil {
		b.Review = &pullwright.ReviewBrief{
			Path: r.Path, StartLine: r.StartLine, Line: r.Line, Side: r.Side, DiffHunk: r.DiffHunk,
			Author: t.Requester.Login, Comment: untrusted.Visible(r.Body),
		}
		if th, ok := byRoot[r.Root()]; ok {
			b.Review.Thread = heard(th.Comments, r.CommentID)
		}
	}
	for _, ref := range t.Pull.Threads {
		th, ok := byRoot[ref.Root]
		if !ok {
			// Deleted since: still listed, so thread numbers match the
			// checklist the status comment shows.
			b.Checklist = append(b.Checklist, pullwright.ThreadBrief{Path: ref.Path, Line: ref.Line,
				Comments: []pullwright.Comment{{Author: ref.Author, Body: ref.Body}}})
			continue
		}
		root := th.Comments[0]
		b.Checklist = append(b.Checklist, pullwright.ThreadBrief{Path: root.Path, Line: root.Line, DiffHunk: root.DiffHunk, Comments: heard(th.Comments, 0)})
	}
	return b, nil
}

// replyInThread posts t's reply in the review thread of root. A thread
// deleted since is counted in Pull.Gone and is no error: the work is pushed,
// and there is nowhere left to answer.
func (pw pulls) replyInThread(ctx context.Context, t Job, root int64, mk, body string) error {
	_, err := pw.gh.ReplyInThread(ctx, t.Repo, t.Issue, root, mk, body)
	if errors.Is(err, pullwright.ErrGone) {
		pw.log.WarnContext(ctx, "review thread deleted; its reply is not posted", "task_id", t.ID, "root", root, "err", err)
		t.Pull.Gone++
		return nil
	}
	return err
}

// openForkPull proposes the change to the fork's branch. An installation
// rarely covers the fork, so GitHub may refuse: then the change goes into
// a pull request in this repository instead, and the reason is kept.
func (pw pulls) openForkPull(ctx context.Context, t Job) error {
	p := t.Pull
	owner, name, _ := strings.Cut(p.Info.HeadRepo, "/")
	fork := pullwright.Repo{InstallationID: t.Repo.InstallationID, Owner: owner, Name: name}
	pr, err := pw.gh.OpenPullRequest(ctx, fork, pullwright.NewPullRequest{
		Title: prTitle(t), Body: RenderPullRequest(t), Head: t.Repo.Owner + ":" + t.Branch, Base: p.Info.HeadRef,
	})
	if errors.Is(err, pullwright.ErrNotPermitted) {
		pw.log.InfoContext(ctx, "pull request against the fork refused; opening one here", "task_id", t.ID, "fork", p.Info.HeadRepo, "err", err)
		p.ForkPRFailed = "GitHub refused to open a pull request in the fork for this app"
		p.Mode = PullInBase
		p.Why = fmt.Sprintf("this pull request comes from the fork `%s`, which the bot never pushes to; %s, so the change is on a branch of this repository, in a new pull request that builds on this one",
			p.Info.HeadRepo, p.ForkPRFailed)
		return nil
	}
	if err != nil {
		return retryf(err, "opening the pull request against the fork failed")
	}
	t.PRURL = pr.URL
	return nil
}

// checkForkStart refuses a fork's code that is not what was asked about,
// or that the protected paths forbid here, before the agent sees it. The
// workspace holds the clone of the pull request's head, at t.BaseSHA.
func (pw pulls) checkForkStart(ctx context.Context, t Job, ws Workspace) error {
	if head := t.Pull.Info.HeadSHA; head != "" && t.BaseSHA != head {
		// The fork pushed between the request and the clone: what would
		// run is not what was asked about.
		return Fatal(fmt.Sprintf("the fork pushed %s while the task started (it was at %s when asked), and fork code is only worked on as it was when asked. Look at the new commits and ask again",
			words.Short(t.BaseSHA), words.Short(head)), nil)
	}
	return pw.checkForkPaths(ctx, t, ws, t.BaseSHA)
}

// checkForkPaths refuses to push commit sha, which holds a fork's code,
// when its tree differs on a path the repository protects from both the
// default branch's tip and that of the branch the pull request merges into.
// A push here runs workflows from the pushed branch's own files with this
// repository's secrets: a fork's workflow, or an older copy of one this
// repository has since fixed, would run as this repository's own. So whole
// trees are compared, not only what the fork's commits changed, and before
// every push of the fork's code: a branch may fix a workflow meanwhile.
func (pw pulls) checkForkPaths(ctx context.Context, t Job, ws Workspace, sha string) error {
	if err := pw.checkForkSeen(ctx, t); err != nil {
		return err
	}
	s := pw.settings(t.Task)
	token, err := pw.token(ctx, t.Task)
	if err != nil {
		return err
	}
	trusted := []string{t.Repo.DefaultBranch}
	if b := t.Pull.Info.BaseRef; b != "" && b != t.Repo.DefaultBranch {
		trusted = append(trusted, b)
	}
	gctx, cancel := pw.gitCtx(ctx)
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
