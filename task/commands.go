package task

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pullwright/pullwright/policy"
)

// commands are the tasks that answer a command with one reply: status,
// cancel, a fix asked while another runs (busy), and a prepared reply
// (help, a parse error). None of them works on code.
type commands struct {
	desk
	store commandStore
}

// commandStore is what commands read and write of the store.
type commandStore interface {
	activeFinder
	Newest(ctx context.Context, issueKey string, active bool, kinds ...Kind) (*Task, error)
	RequestCancel(ctx context.Context, id int64, by string) error
}

// activeFinder finds the running fix task of a conversation.
type activeFinder interface {
	Active(ctx context.Context, issueKey string) (*Task, error)
}

// activeTask is the running fix task of the conversation t was asked on:
// the issue, or the pull request a task opened.
func activeTask(ctx context.Context, s activeFinder, t *Task) (*Task, error) {
	a, err := s.Active(ctx, t.IssueKey())
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, retryf(err, "reading the issue's task failed")
	}
	return a, err
}

// runningTask is the task /agent cancel stops on the conversation t was
// asked on: its running fix, or else its running review. A bare /approve
// answers fixes only (activeTask): a review's request is answered by id.
func runningTask(ctx context.Context, s commandStore, t *Task) (*Task, error) {
	a, err := activeTask(ctx, s, t)
	if !errors.Is(err, ErrNotFound) {
		return a, err
	}
	a, err = s.Newest(ctx, t.IssueKey(), true, KindReview)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, retryf(err, "reading the issue's task failed")
	}
	return a, err
}

// status answers with the conversation's running fix and running review,
// a line each, or, when none runs, with its newest fix or review: a
// review that ended after a fix began must not hide the fix still running.
func (c commands) status(ctx context.Context, t *Task) error {
	var lines []string
	for _, kind := range []Kind{KindFix, KindReview} {
		running, err := c.store.Newest(ctx, t.IssueKey(), true, kind)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return retryf(err, "reading the issue's task failed")
		}
		if j, ok := running.Job(); ok {
			lines = append(lines, StatusLine(j))
		}
	}
	if len(lines) > 0 {
		return c.reply(ctx, t, strings.Join(lines, "\n\n"))
	}
	latest, err := c.store.Newest(ctx, t.IssueKey(), false, KindFix, KindReview)
	if errors.Is(err, ErrNotFound) {
		return c.reply(ctx, t, fmt.Sprintf("No task has run on this issue yet. Start one with `%s fix <instructions>`.", c.command))
	}
	if err != nil {
		return retryf(err, "reading the issue's task failed")
	}
	j, ok := latest.Job()
	if !ok {
		return Fatal(fmt.Sprintf("task %d of kind %s has no status line", latest.ID, latest.Kind), nil)
	}
	return c.reply(ctx, t, StatusLine(j))
}

// busy answers a fix asked while another task runs on the issue, or a
// review asked while another runs on the pull request (t.Refused).
func (c commands) busy(ctx context.Context, t *Task) error {
	var (
		active *Task
		err    error
		again  = fmt.Sprintf("`%s fix <instructions>`", c.command)
	)
	if t.Refused == KindReview {
		again = fmt.Sprintf("`%s review`", c.command)
		active, err = c.store.Newest(ctx, t.IssueKey(), true, KindReview)
		if err != nil && !errors.Is(err, ErrNotFound) {
			err = retryf(err, "reading the pull request's review failed")
		}
	} else {
		active, err = activeTask(ctx, c.store, t)
	}
	if errors.Is(err, ErrNotFound) {
		return c.reply(ctx, t, fmt.Sprintf("The task that was running here has just ended; ask again with %s.", again))
	}
	if err != nil {
		return err
	}
	where := fmt.Sprintf("task %d", active.ID)
	if active.StatusCommentURL != "" {
		where = fmt.Sprintf("[task %d](%s)", active.ID, active.StatusCommentURL)
	}
	return c.reply(ctx, t, fmt.Sprintf("@%s %s is already working on this issue (%s). Use `%s status` to follow it, or `%s cancel` to stop it before asking again.",
		t.Requester.Login, where, stateOf(active), c.command, c.command))
}

// unlabeled cancels the issue's running fix when the repository's label
// is removed, as "/agent cancel" by whoever removed it, with the same
// rules. It is silent when there is nothing to cancel: taking the label
// off an issue whose task has ended is tidying, not a request.
func (c commands) unlabeled(ctx context.Context, t *Task) error {
	active, err := activeTask(ctx, c.store, t)
	if errors.Is(err, ErrNotFound) {
		return t.Move(Done)
	}
	if err != nil {
		return err
	}
	if !t.AskedAt.IsZero() && active.AskedAt.After(t.AskedAt) {
		// Asked after the label came off, on GitHub's clock: the removal,
		// however late its delivery, was not about this task.
		return t.Move(Done)
	}
	return c.cancelRequest(ctx, t)
}

func (c commands) cancelRequest(ctx context.Context, t *Task) error {
	// Whoever may start a task here, or answer its requests, may stop one.
	rules := []policy.Who{{}}
	if active, err := runningTask(ctx, c.store, t); err == nil {
		s := c.settings(active)
		rules = []policy.Who{s.Trigger, s.Approve.Who}
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	var why string
	for i, rule := range rules {
		ok, w, err := c.admits(ctx, t.Repo, rule, t.Requester.Login, "cancelling a task")
		if err != nil {
			return err
		}
		if ok {
			break
		}
		if i == 0 {
			why = w
		}
		if i == len(rules)-1 {
			return c.refuse(ctx, t, why)
		}
	}
	active, err := runningTask(ctx, c.store, t)
	if errors.Is(err, ErrNotFound) {
		return c.reply(ctx, t, "There is no running task on this issue to cancel.")
	}
	if err != nil {
		return err
	}
	if j, ok := active.Job(); ok && j.published() {
		if j.onHead() {
			// Its commits went onto a pull request that is not the bot's
			// to close: what is left is replies, and they tell where.
			return c.reply(ctx, t, fmt.Sprintf("Task %d has already pushed its final commit to `%s`, this pull request's branch, and is only posting its replies; revert its commits on the branch if you do not want them.", active.ID, j.Branch))
		}
		return c.reply(ctx, t, fmt.Sprintf("Task %d has already pushed its final commit to `%s` and is finishing the pull request; close the pull request instead.", active.ID, j.Branch))
	}
	err = c.store.RequestCancel(ctx, active.ID, t.Requester.Login)
	if errors.Is(err, ErrNotFound) {
		return c.reply(ctx, t, fmt.Sprintf("Task %d is already finished or being cancelled.", active.ID))
	}
	if err != nil {
		return retryf(err, "cancelling task %d failed", active.ID)
	}
	msg := fmt.Sprintf("Cancelling task %d; it stops before its next step.", active.ID)
	if active.Kind == KindFix {
		// A review may run beside the fix; say so, since this answer
		// stopped the fix alone.
		if rv, err := c.store.Newest(ctx, t.IssueKey(), true, KindReview); err == nil {
			msg += fmt.Sprintf(" Task %d, a review, is running too; `%s cancel` again stops it once this one has stopped.", rv.ID, c.command)
		}
	}
	return c.reply(ctx, t, msg)
}
