package task

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
)

// answers are the tasks that answer an execution request (KindApprove,
// KindReject, from a comment or a check run's button): who may answer,
// which request an answer is for, whether it still matches its commit, and
// the compare-and-swap that records it. The task that asked resumes from
// the store; an answer never runs anything itself.
type answers struct {
	desk
	store answerStore
	// remote and heads read where the request's branch is now (stale).
	remote
	heads interface {
		RemoteHead(ctx context.Context, url, token, branch string) (string, error)
	}
	// comments reads back the comments of a request asked without
	// GitHub's time of them (shownOnGitHub).
	comments interface {
		ReadComment(ctx context.Context, r pullwright.Repo, id int64) (pullwright.Comment, error)
	}
}

// answerStore is what answers read and write of the store.
type answerStore interface {
	activeFinder
	Get(ctx context.Context, id int64) (*Task, error)
	Answer(ctx context.Context, id int64, requestID string, a Answer) error
	RequestShown(ctx context.Context, id int64, requestID string, at time.Time) error
}

// answer handles "/approve", "/reject" and the check run's buttons, in
// three steps: find the request it is for (requestTarget), check who
// answers (admit), and record it once (record). Every refusal is a reply
// where the answer was given.
func (an answers) answer(ctx context.Context, t *Task) error {
	verb := "approve"
	if t.Kind == KindReject {
		verb = "reject"
	}
	found, err := an.requestTarget(ctx, t)
	if errors.Is(err, ErrNotFound) && t.Answering.RequestID != "" && t.Issue != 0 {
		// An id that names nothing here: answer about the request that waits.
		found, err = activeTask(ctx, an.store, t)
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	// Only a task that works asks: target.Task is nil when none was found
	// or what was found does not work, which is told there is no request.
	var target Job
	if found != nil {
		target, _ = found.Job()
	}
	// Replies go where the answer was given; a button has no comment, so
	// its reply goes to the issue of the task it names.
	where := t.Issue
	if where == 0 && found != nil {
		where = found.Issue
	}
	if where == 0 {
		// A button for a task we do not know: nowhere to answer.
		an.log.WarnContext(ctx, "answer for an unknown request", "request", t.Answering.RequestID, "by", t.Requester.Login)
		return t.Move(Done)
	}
	ok, why, err := an.admit(ctx, t, found, verb)
	if err != nil {
		return err
	}
	if !ok {
		return an.replyOn(ctx, t, where, fmt.Sprintf("@%s sorry: %s.", t.Requester.Login, why))
	}
	if target.Task == nil || target.Request == nil {
		return an.replyOn(ctx, t, where, fmt.Sprintf("@%s there is no execution request waiting for an answer here.", t.Requester.Login))
	}
	r := target.Request
	if a := r.Answer; a != nil && a.Via == t.DeliveryID && t.DeliveryID != "" {
		return an.answered(ctx, t) // this very answer won before a crash
	}
	if target.State != AwaitingApproval {
		if target.State == Working && r.CommentID != 0 && !r.Asked {
			// Shown, but not parked yet: try again in a moment.
			return Retry(fmt.Sprintf("request %s is still being posted", r.ID), nil)
		}
		return an.replyOn(ctx, t, where, fmt.Sprintf("@%s there is no execution request waiting for an answer here.", t.Requester.Login))
	}
	if t.Answering.Run == 0 && r.ShownAt.IsZero() {
		if err := an.shownOnGitHub(ctx, target); err != nil {
			return err
		}
	}
	source := answerSource(t)
	if why := refusal(t, target, source, verb); why != "" {
		return an.replyOn(ctx, t, where, why)
	}
	if verb == "approve" {
		stale, err := an.stale(ctx, target)
		if err != nil {
			return err
		}
		if stale != "" {
			return an.replyOn(ctx, t, where, fmt.Sprintf("@%s request `%s` is stale: %s. It was not approved; `%s cancel` and ask again, or wait for it to time out.",
				t.Requester.Login, r.ID, stale, an.command))
		}
	}
	return an.record(ctx, t, target, where, source, verb)
}

// shownOnGitHub dates target's waiting request that a release from before
// the clock rule asked without GitHub's time (ExecRequest.ShownAt): the
// comments that show it, whose ids the request kept, are read back from
// GitHub, and the newest write of them is the request's time: an edit's
// (updated_at) when one came after, since a release that asked again
// under the same comment showed the request only from then. It is saved, so
// the next answer need not ask again. A comment GitHub no longer has leaves
// the time unknown (the newest might be the one gone), and the answer is
// refused as without it.
func (an answers) shownOnGitHub(ctx context.Context, target Job) error {
	r := target.Request
	var at time.Time
	for _, id := range []int64{r.CommentID, r.PRCommentID} {
		if id == 0 {
			continue
		}
		c, err := an.comments.ReadComment(ctx, target.Repo, id)
		if errors.Is(err, pullwright.ErrGone) {
			an.log.WarnContext(ctx, "a comment of an undated request is gone", "task_id", target.ID, "request", r.ID, "comment_id", id)
			return nil
		}
		if err != nil {
			return retryf(err, "reading the comment of request %s failed", r.ID)
		}
		for _, t := range []time.Time{c.CreatedAt, c.UpdatedAt} {
			if t.After(at) {
				at = t
			}
		}
	}
	if at.IsZero() {
		return nil
	}
	err := an.store.RequestShown(ctx, target.ID, r.ID, at.UTC())
	if err != nil && !errors.Is(err, ErrAnswered) {
		return retryf(err, "saving the time of request %s failed", r.ID)
	}
	// Answered or moved on meanwhile: the checks below say so from the
	// copy read, and the store's compare-and-swap refuses a late answer.
	r.shown(at)
	an.log.InfoContext(ctx, "request dated from its comment on GitHub", "task_id", target.ID, "request", r.ID, "shown_at", r.ShownAt)
	return nil
}

// admit reports whether the author of answer task t may answer target's
// request (verb: approve or reject), and why not. The rules are those of
// the task answered; without one, the defaults.
func (an answers) admit(ctx context.Context, t, target *Task, verb string) (ok bool, why string, err error) {
	rule := policy.Approvers{}
	var requester policy.Account
	if target != nil {
		rule, requester = an.settings(target).Approve, policy.Account{Login: target.Requester.Login, ID: target.Requester.ID}
	}
	role, err := an.gh.Permission(ctx, t.Repo, t.Requester.Login)
	if err != nil {
		return false, "", retryf(err, "checking @%s's permission failed", t.Requester.Login)
	}
	member := an.member(ctx, t.Repo, t.Requester.Login)
	if verb == "approve" {
		ok, why, err = rule.AdmitsAnswer(role, policy.Account{Login: t.Requester.Login, ID: t.Requester.ID}, requester, t.Repo.Owner, member)
	} else {
		// Refusing to run something is safe whoever does it, as long as the
		// rule admits them: the requester may reject their own task's request.
		ok, err = rule.Admits(role, t.Requester.Login, t.Repo.Owner, member)
		why = rule.Refusal(role, "rejecting commands")
	}
	if err != nil {
		return false, "", retryf(err, "checking @%s's team membership failed", t.Requester.Login)
	}
	return ok, why, nil
}

// record answers target's waiting request with t's verdict, through the
// store's compare-and-swap: of two answers at once, one wins and the other
// is told the request was answered.
func (an answers) record(ctx context.Context, t *Task, target Job, where int, source, verb string) error {
	r := target.Request
	a := Answer{Verdict: Approved, By: t.Requester.Login, Via: t.DeliveryID, Source: source, At: an.now()}
	if verb == "reject" {
		a.Verdict, a.Reason = Rejected, strings.TrimSpace(t.Instructions)
	}
	err := an.store.Answer(ctx, target.ID, r.ID, a)
	if errors.Is(err, ErrAnswered) {
		return an.replyOn(ctx, t, where, fmt.Sprintf("@%s request `%s` was already answered.", t.Requester.Login, r.ID))
	}
	if err != nil {
		return retryf(err, "recording the answer failed")
	}
	an.log.InfoContext(ctx, "request answered", "task_id", target.ID, "request", r.ID, "verdict", a.Verdict, "by", a.By)
	return an.answered(ctx, t)
}

// refusal is why answer task t (from source, by verb) does not answer
// target's waiting request, or "" when it may.
func refusal(t *Task, target Job, source, verb string) string {
	r := target.Request
	switch {
	case t.Answering.RequestID != "" && t.Answering.RequestID != r.ID:
		return fmt.Sprintf("@%s request `%s` is not the one waiting; the current request is `%s`: %s.",
			t.Requester.Login, t.Answering.RequestID, r.ID, code(oneLine(r.Command)))
	case slices.Contains(target.Answers, source):
		// An Action re-run, or a redelivery under a new id: this comment
		// or button already answered one of the task's requests.
		return fmt.Sprintf("@%s that answer was already used for an earlier request, so it does not answer request `%s` (%s); answer it anew if you mean it.",
			t.Requester.Login, r.ID, code(oneLine(r.Command)))
	case t.Answering.Run == 0 && (t.AskedAt.IsZero() || r.ShownAt.IsZero()):
		// Order is judged on GitHub's clock alone; without both times
		// there is no order to judge.
		return fmt.Sprintf("@%s GitHub's time of your comment or of request `%s` is not known, so your answer cannot be matched to it; answer again, or use the buttons of the **%s** check run.",
			t.Requester.Login, r.ID, ApprovalCheck)
	case t.Answering.Run == 0 && !t.AskedAt.After(r.ShownAt):
		// Written before this request was shown (GitHub's clock, in whole
		// seconds; the same second counts as before): it was about an
		// earlier request, however late it reached the bot.
		return fmt.Sprintf("@%s your answer was written before request `%s` (%s) was shown, so it does not answer it; answer it with `/%s %s` if you mean it.",
			t.Requester.Login, r.ID, code(oneLine(r.Command)), verb, r.ID)
	case r.Answer != nil:
		return fmt.Sprintf("@%s request `%s` was already answered (%s by @%s).", t.Requester.Login, r.ID, r.Answer.Verdict, r.Answer.By)
	case t.Answering.Run != 0 && r.CheckRunID != 0 && t.Answering.Run != r.CheckRunID:
		return fmt.Sprintf("@%s that button is not on the approval check run of request `%s`, so it does not answer it; use the one the bot posted, or `/%s %s`.",
			t.Requester.Login, r.ID, verb, r.ID)
	case t.Answering.SHA != "" && t.Answering.SHA != r.SHA:
		return fmt.Sprintf("@%s that button belongs to an older commit; the current request is `%s` on %s.", t.Requester.Login, r.ID, words.Short(r.SHA))
	case t.Answering.Digest != "" && (r.Shown == nil || !r.Shown.Matches(t.Answering.Digest)):
		// The console and the API name the value they showed: an answer
		// to anything else is not an answer to this request.
		return fmt.Sprintf("@%s the request changed since you read it, so your answer does not answer request `%s` (%s); read it again and answer that.",
			t.Requester.Login, r.ID, code(oneLine(r.Command)))
	case verb == "approve" && t.Answering.RequestID == "" && t.Answering.Run == 0 && t.Answering.Digest == "" && !bareAnswers(r):
		// Between a person reading a request and their bare "/approve"
		// reaching GitHub, the request may have been answered and another
		// asked: a bare approval names nothing, so only a task's first
		// request takes one. (A rejection runs nothing, and takes none.)
		return fmt.Sprintf("@%s this task has asked more than one request, so `/approve` alone could answer one you did not read; approve request `%s` (%s) with `/approve %s`, or with the buttons of its **%s** check run.",
			t.Requester.Login, r.ID, code(oneLine(r.Command)), r.ID, ApprovalCheck)
	case target.CancelledBy != "":
		return fmt.Sprintf("@%s task %d is being cancelled; its request was not answered.", t.Requester.Login, target.ID)
	}
	return ""
}

// bareAnswers reports whether a comment that names no request may approve
// r: only the first request of its task.
func bareAnswers(r *ExecRequest) bool { return strings.HasSuffix(r.ID, "-1") }

// bareTaken reports whether a bare /approve or /reject can answer r, a
// request of a task of kind: a fix's first. A review's never is: a bare
// answer finds the conversation's fix (Store.Active), and on a pull
// request that is the one its request comment is about.
func bareTaken(kind Kind, r *ExecRequest) bool { return kind != KindReview && bareAnswers(r) }

// answerSource names what gave answer task t: its comment (issue and
// review comments have ids of their own), or the button press's delivery.
func answerSource(t *Task) string {
	switch {
	case t.Review != nil:
		return fmt.Sprintf("review comment %d", t.Review.CommentID)
	case t.CommentID != 0:
		return fmt.Sprintf("comment %d", t.CommentID)
	case t.Answering.Run != 0:
		return "button " + t.DeliveryID
	}
	return "delivery " + t.DeliveryID
}

// answered acknowledges an answer that was recorded.
func (an answers) answered(ctx context.Context, t *Task) error {
	an.react(ctx, t, "+1")
	return t.Move(Done)
}

// requestTarget finds the task an answer is for: the one its request id
// names, or the active task of the issue or pull request it was given on.
func (an answers) requestTarget(ctx context.Context, t *Task) (*Task, error) {
	if t.Answering.RequestID == "" {
		return activeTask(ctx, an.store, t)
	}
	idPart, _, ok := strings.Cut(t.Answering.RequestID, "-")
	id, err := strconv.ParseInt(idPart, 10, 64)
	if !ok || err != nil {
		return nil, ErrNotFound
	}
	target, err := an.store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, retryf(err, "reading task %d failed", id)
	}
	// An id only names a task of the same installation and repository, and,
	// when given in a comment, of that issue or the task's pull request.
	if target.Repo.InstallationID != t.Repo.InstallationID || !strings.EqualFold(target.Repo.FullName(), t.Repo.FullName()) {
		return nil, ErrNotFound
	}
	pr := 0
	if j, ok := target.Job(); ok {
		pr = j.PRNumber
	}
	if t.Issue != 0 && target.Issue != t.Issue && (pr == 0 || pr != t.Issue) {
		return nil, ErrNotFound
	}
	return target, nil
}

// stale says why a request no longer matches its branch, or "" if it does:
// an approval covers the exact commit it was asked on, so a push by anyone
// after the request voids it.
func (an answers) stale(ctx context.Context, t Job) (string, error) {
	if t.Kind == KindReview || (t.PushedSHA == "" && !t.onHead()) {
		// Nothing pushed to a branch of the task's own (a review pushes
		// nothing at all): the request is on the commit it started from,
		// which is what runs.
		return "", nil
	}
	token, err := an.token(ctx, t.Task)
	if err != nil {
		return "", err
	}
	gctx, cancel := an.gitCtx(ctx)
	defer cancel()
	head, err := an.heads.RemoteHead(gctx, t.Repo.CloneURL, token, t.Branch)
	if err != nil {
		return "", retryf(err, "reading branch %s failed", t.Branch)
	}
	if head != t.Request.SHA {
		if head == "" {
			return fmt.Sprintf("branch `%s` was deleted", t.Branch), nil
		}
		return fmt.Sprintf("branch `%s` moved from %s to %s after the request", t.Branch, words.Short(t.Request.SHA), words.Short(head)), nil
	}
	return "", nil
}
