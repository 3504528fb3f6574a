package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/pullwright/pullwright/policy"
)

// Flow moves a task one step along its lifecycle. Each call of Step does one
// side effect at most and records in t what it did, so that the worker can
// save t after every step and a crash repeats at most the last step, which
// is written to be idempotent.
type Flow struct {
	Store      Store
	GitHub     GitHub
	Agent      Agent
	Workspaces Workspaces
	Runner     Runner
	// Deps makes a repository's dependencies ready before an approved
	// run; nil runs commands without any (the local runner, or a bot
	// that cannot fence a setup).
	Deps Dependencies
	// Dir holds one workspace per task.
	Dir string
	// BranchName names the work branch of an issue, under prefix.
	BranchName func(prefix string, issue int, title string) string
	// Command is the comment command word, for the help lines we print.
	Command string
	// GitTimeout bounds one clone, fetch or push (default 5m), so a git
	// server that accepts connections and never answers fails the step
	// instead of holding it for the whole step timeout.
	GitTimeout time.Duration
	// ApprovalTimeout is how long an execution request waits for an
	// answer before it counts as rejected (default 24h).
	ApprovalTimeout time.Duration
	// Unisolated is true when approved commands run on the bot's machine
	// (BOT_RUNNER=local): request comments must not promise a sandbox.
	Unisolated bool
	// Operator is the operator's configuration: caps, defaults, rates
	// (nil: the built-in policy.DefaultOperator).
	Operator *policy.Operator
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

func (f *Flow) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Flow) gitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := f.GitTimeout
	if d <= 0 {
		d = 5 * time.Minute
	}
	return context.WithTimeout(ctx, d)
}

// Step performs the next step of t.
func (f *Flow) Step(ctx context.Context, t *Task) error {
	switch t.Kind {
	case KindReply:
		return f.reply(ctx, t, t.Reply)
	case KindStatus:
		return f.status(ctx, t)
	case KindCancel:
		return f.cancelRequest(ctx, t)
	case KindBusy:
		return f.busy(ctx, t)
	case KindApprove, KindReject:
		return f.answer(ctx, t)
	case KindFix:
		return f.fix(ctx, t)
	}
	return Fatal(fmt.Sprintf("unknown task kind %q", t.Kind), nil)
}

func (f *Flow) fix(ctx context.Context, t *Task) error {
	switch t.State {
	case Queued:
		return f.acknowledge(ctx, t)
	case Preparing:
		return f.prepare(ctx, t)
	case Working:
		if t.Request != nil && !t.Request.Asked {
			return f.ask(ctx, t)
		}
		return f.work(ctx, t)
	case AwaitingApproval:
		return f.await(ctx, t)
	case Running:
		return f.run(ctx, t)
	case Publishing:
		return f.publish(ctx, t)
	}
	return Fatal(fmt.Sprintf("a fix task cannot continue from state %s", t.State), nil)
}

func marker(t *Task, what string) string { return fmt.Sprintf("task-%d-%s", t.ID, what) }

func (f *Flow) reply(ctx context.Context, t *Task, body string) error {
	return f.replyOn(ctx, t, t.Issue, body)
}

// replyOn posts t's one reply on issue, and ends t.
func (f *Flow) replyOn(ctx context.Context, t *Task, issue int, body string) error {
	if _, err := f.GitHub.UpsertComment(ctx, t.Repo, issue, marker(t, "reply"), 0, body); err != nil {
		return retryf(err, "posting a reply on #%d failed", issue)
	}
	return t.Move(Done)
}

func (f *Flow) refuse(ctx context.Context, t *Task, why string) error {
	return f.reply(ctx, t, fmt.Sprintf("@%s sorry: %s.", t.Requester.Login, why))
}

// activeTask is the running fix task of the conversation t was asked on:
// the issue, or the pull request a task opened.
func (f *Flow) activeTask(ctx context.Context, t *Task) (*Task, error) {
	a, err := f.Store.Active(ctx, t.IssueKey())
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, retryf(err, "reading the issue's task failed")
	}
	return a, err
}

func (f *Flow) status(ctx context.Context, t *Task) error {
	latest, err := f.Store.Latest(ctx, t.IssueKey())
	if errors.Is(err, ErrNotFound) {
		return f.reply(ctx, t, fmt.Sprintf("No task has run on this issue yet. Start one with `%s fix <instructions>`.", f.Command))
	}
	if err != nil {
		return retryf(err, "reading the issue's task failed")
	}
	return f.reply(ctx, t, StatusLine(latest))
}

// busy answers a fix asked while another task runs on the issue.
func (f *Flow) busy(ctx context.Context, t *Task) error {
	active, err := f.activeTask(ctx, t)
	if errors.Is(err, ErrNotFound) {
		return f.reply(ctx, t, fmt.Sprintf("The task that was running here has just ended; ask again with `%s fix <instructions>`.", f.Command))
	}
	if err != nil {
		return err
	}
	where := fmt.Sprintf("task %d", active.ID)
	if active.StatusCommentURL != "" {
		where = fmt.Sprintf("[task %d](%s)", active.ID, active.StatusCommentURL)
	}
	return f.reply(ctx, t, fmt.Sprintf("@%s %s is already working on this issue (%s). Use `%s status` to follow it, or `%s cancel` to stop it before asking again.",
		t.Requester.Login, where, stateOf(active), f.Command, f.Command))
}

func (f *Flow) cancelRequest(ctx context.Context, t *Task) error {
	// Whoever may start a task here, or answer its requests, may stop one.
	rules := []policy.Who{{}}
	if active, err := f.activeTask(ctx, t); err == nil {
		s := f.settings(active)
		rules = []policy.Who{s.Trigger, s.Approve.Who}
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	var why string
	for i, rule := range rules {
		ok, w, err := f.admits(ctx, t.Repo, rule, t.Requester.Login, "cancelling a task")
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
			return f.refuse(ctx, t, why)
		}
	}
	active, err := f.activeTask(ctx, t)
	if errors.Is(err, ErrNotFound) {
		return f.reply(ctx, t, "There is no running task on this issue to cancel.")
	}
	if err != nil {
		return err
	}
	if active.published() {
		if active.onHead() {
			// Its commits went onto a pull request that is not the bot's
			// to close: what is left is replies, and they tell where.
			return f.reply(ctx, t, fmt.Sprintf("Task %d has already pushed its final commit to `%s`, this pull request's branch, and is only posting its replies; revert its commits on the branch if you do not want them.", active.ID, active.Branch))
		}
		return f.reply(ctx, t, fmt.Sprintf("Task %d has already pushed its final commit to `%s` and is finishing the pull request; close the pull request instead.", active.ID, active.Branch))
	}
	err = f.Store.RequestCancel(ctx, active.ID, t.Requester.Login)
	if errors.Is(err, ErrNotFound) {
		return f.reply(ctx, t, fmt.Sprintf("Task %d is already finished or being cancelled.", active.ID))
	}
	if err != nil {
		return retryf(err, "cancelling task %d failed", active.ID)
	}
	return f.reply(ctx, t, fmt.Sprintf("Cancelling task %d; it stops before its next step.", active.ID))
}

// published reports whether the task pushed its final commit: from there
// on the pull request follows, and stopping would leave it half made.
func (t *Task) published() bool {
	return t.State == Publishing && t.Final
}

func (f *Flow) updateStatus(ctx context.Context, t *Task) error {
	p, err := f.GitHub.UpsertComment(ctx, t.Repo, t.Issue, marker(t, "status"), t.StatusCommentID, RenderStatus(t, f.Command))
	if err != nil {
		return retryf(err, "updating the status comment failed")
	}
	t.StatusCommentID, t.StatusCommentURL = p.ID, p.URL
	return nil
}

// Finish reports the end of a fix task that failed or was cancelled: a
// pending request's check run is closed and the status comment says why.
// Other kinds have nothing to report.
func (f *Flow) Finish(ctx context.Context, t *Task) error {
	f.cleanup(ctx, t)
	if t.Kind != KindFix {
		return nil
	}
	if r := t.Request; r != nil {
		conclusion, title := "cancelled", "Cancelled"
		if t.State == Failed {
			conclusion, title = "neutral", "The task failed"
		}
		if err := f.closeApproval(ctx, t, conclusion, title); err != nil {
			return err
		}
		if err := f.closeRun(ctx, t, conclusion, title); err != nil {
			return err
		}
	}
	if t.Review != nil && t.Pull != nil && !t.Pull.ReviewReplied {
		// Whoever asked on the line looks for the answer there.
		what := "was cancelled"
		if t.State == Failed {
			what = "failed: " + defang(t.Error)
		}
		body := fmt.Sprintf("Task %d %s", t.ID, what)
		if t.StatusCommentURL != "" {
			body += fmt.Sprintf(" ([status](%s))", t.StatusCommentURL)
		}
		if err := f.replyInThread(ctx, t, t.Review.Root(), marker(t, "review-ended"), body); err != nil {
			return retryf(err, "replying in the review thread failed")
		}
		t.Pull.ReviewReplied = true
	}
	return f.updateStatus(ctx, t)
}
