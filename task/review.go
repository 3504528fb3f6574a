package task

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/review"
	"github.com/pullwright/pullwright/untrusted"
)

// ReviewWork is what a review task (KindReview) keeps: the head it reviews,
// the head an earlier review saw, the lines its comments may go on, the
// agent's draft, and the review once posted.
//
// Since equal to Head (and no URL) is a review asked again on the head
// reviewed before: it ends done, having nothing to review.
type ReviewWork struct {
	Head  string                  `json:"head"`
	Since string                  `json:"since,omitempty"`
	Lines []pullwright.LineRange  `json:"lines,omitempty"`
	Draft *pullwright.ReviewDraft `json:"draft,omitempty"`
	// URL is the posted review's address; Inline and Moved count its line
	// comments and those moved into its body (not on the diff's lines).
	// Refused tells that GitHub refused the review with its line
	// comments, so all of them went into its body; LeftOut counts those
	// the body had no room for.
	URL     string `json:"url,omitempty"`
	Inline  int    `json:"inline,omitempty"`
	Moved   int    `json:"moved,omitempty"`
	Refused bool   `json:"refused,omitempty"`
	LeftOut int    `json:"left_out,omitempty"`
	// OutOfBudget is set when the agent finished the review on its last
	// turn, and why (Progress.OutOfBudget): the review says so.
	OutOfBudget string `json:"out_of_budget,omitempty"`
}

// reviewGitHub is what the review room asks of GitHub beyond the desk.
type reviewGitHub interface {
	Issue(ctx context.Context, r pullwright.Repo, number int) (pullwright.Issue, error)
	PullRequestDiff(ctx context.Context, r pullwright.Repo, number, max int) (diff string, truncated bool, err error)
	// BotReviews lists the bot's reviews of a pull request, oldest first.
	BotReviews(ctx context.Context, r pullwright.Repo, pr int) ([]pullwright.PostedReview, error)
	// PostReview posts one review (event COMMENT), its body tagged with
	// marker.
	PostReview(ctx context.Context, r pullwright.Repo, pr int, marker string, rv pullwright.NewReview) (pullwright.PostedReview, error)
}

// reviews is the room of a review: it reads the pull request as a fix
// does, starts the agent in its review mode on the diff (or on what
// changed since the bot's last review), and posts the one review. It
// pushes nothing; a request to run goes the fix's way (Flow.review).
type reviews struct {
	desk
	gh        reviewGitHub
	agent     Agent
	checkouts checkouts
	remote    remote
	// cleanup removes the task's workspace once it is done.
	cleanup func(context.Context, Job)
}

func (f *Flow) reviews() reviews {
	return reviews{desk: f.desk(), gh: f.GitHub, agent: f.Agent, checkouts: f.checkouts(), remote: f.remote(), cleanup: f.cleanup}
}

// review moves a review task: its own steps where a review differs from a
// fix (prepare, a turn, post), and the fix's elsewhere: acknowledge (rules,
// permission, pull request and fork checks, rate) and a run's request,
// approval and run, which push nothing since the workspace has no change.
func (f *Flow) review(ctx context.Context, t Job) error {
	switch t.State {
	case Preparing:
		return f.reviews().prepare(ctx, t)
	case Publishing:
		return f.reviews().post(ctx, t)
	case Working:
		if t.Request == nil || t.Request.Asked {
			return f.reviews().work(ctx, t)
		}
	}
	return f.fix(ctx, t)
}

// reviewMarker tags a review task's review; reviewOf tells such a marker.
func reviewMarker(t *Task) string { return marker(t, "review") }

func isReviewMarker(key string) bool {
	return strings.HasPrefix(key, "task-") && strings.HasSuffix(key, "-review")
}

// prepare clones the pull request's head, finds the head the bot last
// reviewed, works out the diff under review and where comments may go,
// and starts the agent.
func (rw reviews) prepare(ctx context.Context, t Job) error {
	issue, err := rw.gh.Issue(ctx, t.Repo, t.Issue)
	if err != nil {
		return retryf(err, "reading pull request #%d failed", t.Issue)
	}
	t.IssueTitle = issue.Title
	ws, err := rw.checkouts.clone(ctx, t, t.startRef())
	if err != nil {
		return err
	}
	head, err := ws.Head()
	if err != nil {
		return retryf(err, "reading the cloned commit failed")
	}
	t.BaseSHA = head
	// A local branch only: nothing is pushed from it.
	t.Branch = fmt.Sprintf("pullwright/review-%d", t.ID)
	if err := ws.CreateBranch(t.Branch); err != nil {
		return retryf(err, "creating branch %s failed", t.Branch)
	}
	since, err := rw.lastReviewed(ctx, t.Task)
	if err != nil {
		return err
	}
	if since == head {
		return rw.reviewed(ctx, t, head)
	}
	prDiff, cut, err := rw.gh.PullRequestDiff(ctx, t.Repo, t.Issue, maxPullDiff)
	if err != nil {
		return retryf(err, "reading the diff of #%d failed", t.Issue)
	}
	scope := &pullwright.ReviewScope{Focus: t.Instructions, Head: head, Diff: prDiff, Cut: cut, Lines: review.Ranges(prDiff)}
	if since != "" {
		if err := rw.remote.fetch(ctx, t.Task, ws, since); err != nil {
			if !errors.Is(err, pullwright.ErrGone) {
				return retryf(err, "fetching %s, the head reviewed before, failed", words.Short(since))
			}
			// A force-push took the old head away: review the whole.
			rw.log.InfoContext(ctx, "the head reviewed before is gone; reviewing the whole pull request", "task_id", t.ID, "since", since)
			since = ""
		}
	}
	if since != "" {
		paths, err := ws.ChangedPaths(since, head)
		if err != nil {
			return retryf(err, "reading the change since %s failed", words.Short(since))
		}
		changed, err := ws.DiffOf(since, paths...)
		if err != nil {
			return retryf(err, "reading the change since %s failed", words.Short(since))
		}
		scope.Since, scope.Diff, scope.Cut = since, changed, false
		// Only the lines the push added or changed, and only where the
		// pull request's diff has them: GitHub takes comments there.
		scope.Lines = review.Intersect(scope.Lines, review.Added(changed))
	}
	settings := rw.settings(t.Task)
	guide, err := readGuidance(ctx, rw.remote, t, ws, settings.InstructionFiles())
	if err != nil {
		return err
	}
	info := t.Pull.Info
	conv, err := rw.agent.Start(pullwright.Brief{
		Repo:         t.Repo.FullName(),
		Issue:        t.Issue,
		Title:        untrusted.Visible(issue.Title),
		Body:         untrusted.Visible(issue.Body),
		Instructions: untrusted.Visible(t.Instructions),
		Requester:    t.Requester.Login,
		Limits:       limits(settings),
		TestCommand:  settings.TestCommand,
		Pull:         &pullwright.PullBrief{Number: t.Issue, Author: info.Author, HeadRef: info.HeadRef, BaseRef: info.BaseRef, Fork: info.Fork},
		Guidance:     guide,
		Reviewing:    scope,
	})
	if err != nil {
		return Fatal("starting the agent failed", err)
	}
	t.Conversation = conv
	t.Reviewing = &ReviewWork{Head: head, Since: scope.Since, Lines: scope.Lines}
	if err := t.Move(Working); err != nil {
		return err
	}
	return rw.updateStatus(ctx, t)
}

// reviewedAlready ends t, before it is admitted, when the pull request's
// head is the one the bot last reviewed: there is nothing to review.
func (rw reviews) reviewedAlready(ctx context.Context, t Job) (bool, error) {
	if t.Pull == nil || t.Pull.Info.HeadSHA == "" {
		return false, nil
	}
	since, err := rw.lastReviewed(ctx, t.Task)
	if err != nil || since != t.Pull.Info.HeadSHA {
		return false, err
	}
	return true, rw.reviewed(ctx, t, since)
}

// reviewed ends t, which has nothing to review: the bot reviewed head
// already. The status says so; the workspace, if one was cloned, goes.
func (rw reviews) reviewed(ctx context.Context, t Job, head string) error {
	t.Reviewing = &ReviewWork{Head: head, Since: head}
	if err := t.Move(Done); err != nil {
		return err
	}
	rw.cleanup(ctx, t)
	return rw.updateStatus(ctx, t)
}

// lastReviewed is the head of the bot's newest review task's review of
// the pull request, "" when there is none.
func (rw reviews) lastReviewed(ctx context.Context, t *Task) (string, error) {
	all, err := rw.gh.BotReviews(ctx, t.Repo, t.Issue)
	if err != nil {
		return "", retryf(err, "reading the reviews of #%d failed", t.Issue)
	}
	for i := len(all) - 1; i >= 0; i-- {
		if r := all[i]; isReviewMarker(r.Marker) && r.Marker != reviewMarker(t) && r.CommitID != "" {
			return r.CommitID, nil
		}
	}
	return "", nil
}

// work runs one turn of the agent; a finished review goes to posting.
func (rw reviews) work(ctx context.Context, t Job) error {
	if limit := rw.settings(t.Task).MaxWallTime; limit > 0 && !t.CreatedAt.IsZero() {
		if used := rw.now().Sub(t.CreatedAt) - t.Waited; used >= limit {
			return Fatal(fmt.Sprintf("the review used its wall-time budget (%s of %s, not counting waits for approval)", used, limit), nil)
		}
	}
	ws, err := rw.checkouts.workspace(ctx, t)
	if err != nil {
		return err
	}
	p, err := rw.agent.Turn(ctx, t.Repo.FullName(), t.Conversation, ws.Dir())
	if err != nil {
		return err
	}
	t.Conversation = p.Conversation
	t.Turns, t.Tokens, t.TokensEstimated, t.Spend = p.Turns, p.Tokens, p.TokensEstimated, p.Spend
	t.Plan, t.Steps = p.Plan, p.Steps
	now := rw.now().UTC().Truncate(1e9)
	switch {
	case p.Pending != nil:
		t.RequestSeq++
		t.Request = &ExecRequest{
			ID: fmt.Sprintf("%d-%d", t.ID, t.RequestSeq), Command: p.Pending.Command, Reason: p.Pending.Reason, Tool: p.Pending.Tool, AskedAt: now,
		}
		t.CommitAt = now
	case p.Finished:
		if p.Review == nil {
			return Fatal("the agent finished without a review", nil)
		}
		t.Reviewing.Draft = p.Review
		t.Reviewing.OutOfBudget = p.OutOfBudget
		if err := t.Move(Publishing); err != nil {
			return err
		}
	}
	return rw.updateStatus(ctx, t)
}

// post posts the one review, unless an earlier try did (found again by its
// marker), and ends the task with a link to it.
func (rw reviews) post(ctx context.Context, t Job) error {
	w := t.Reviewing
	if w.URL == "" {
		all, err := rw.gh.BotReviews(ctx, t.Repo, t.Issue)
		if err != nil {
			return retryf(err, "reading the reviews of #%d failed", t.Issue)
		}
		for _, r := range all {
			if r.Marker == reviewMarker(t.Task) {
				w.URL = r.URL
			}
		}
	}
	if w.URL == "" {
		intro := reviewIntro(t.Task)
		rv := review.Place(*w.Draft, w.Lines, w.Head, intro, hosts(t.Task))
		posted, err := rw.gh.PostReview(ctx, t.Repo, t.Issue, reviewMarker(t.Task), rv)
		refused := false
		if errors.Is(err, pullwright.ErrInvalid) && len(rv.Comments) > 0 {
			// GitHub refuses a review whole when it will not take one of
			// its line comments (a line it counts otherwise than Ranges):
			// post it once more with every comment in its body.
			rw.log.WarnContext(ctx, "GitHub refused the review's line comments; posting them in its body", "task_id", t.ID, "err", err)
			refused = true
			rv = review.Place(*w.Draft, nil, w.Head, intro+" "+refusedNote, hosts(t.Task))
			posted, err = rw.gh.PostReview(ctx, t.Repo, t.Issue, reviewMarker(t.Task), rv)
		}
		if errors.Is(err, pullwright.ErrInvalid) {
			return Fatal(fmt.Sprintf("GitHub refused the review of #%d", t.Issue), err)
		}
		if err != nil {
			return retryf(err, "posting the review of #%d failed", t.Issue)
		}
		w.URL, w.Inline, w.Moved, w.Refused, w.LeftOut = posted.URL, len(rv.Comments), len(w.Draft.Comments)-len(rv.Comments)-rv.LeftOut, refused, rv.LeftOut
	}
	if err := t.Move(Done); err != nil {
		return err
	}
	rw.cleanup(ctx, t)
	return rw.updateStatus(ctx, t)
}

// refusedNote ends the intro of a review posted again with its line
// comments in its body.
const refusedNote = "GitHub did not take this review's comments on their lines, so all of them are in this body, below."

// reviewIntro opens the review's body: what was reviewed, at whose
// request.
func reviewIntro(t *Task) string {
	w := t.Reviewing
	var b strings.Builder
	if w.Since != "" {
		fmt.Fprintf(&b, "Review of the changes since %s, the head I reviewed before, to %s: comments only on what changed.", words.Short(w.Since), words.Short(w.Head))
	} else {
		fmt.Fprintf(&b, "Review of %s.", words.Short(w.Head))
	}
	fmt.Fprintf(&b, " Asked by @%s", t.Requester.Login)
	if f := strings.TrimSpace(t.Instructions); f != "" {
		fmt.Fprintf(&b, ", looking at: %s", untrusted.OneLine(f, 200))
	}
	b.WriteString(".")
	if w.OutOfBudget != "" {
		fmt.Fprintf(&b, " This review ended when the agent used up its budget (%s), so it may not cover the whole change.", w.OutOfBudget)
	}
	return b.String()
}
