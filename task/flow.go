package task

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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
	// Tools calls the MCP tools of approved requests; nil refuses them
	// (the agent is offered none that need approval without it).
	Tools ToolCaller
	// Pictures fetches the pictures an issue shows, for a model that
	// takes images; nil fetches none, and the agent is told so.
	Pictures Pictures
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
	// ConsoleURL is where people reach the console (BOT_PUBLIC_URL), or ""
	// when it is off: the status comment then links to the task's page.
	ConsoleURL string
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

func (f *Flow) now() time.Time { return f.desk().now() }

// desk is what f's rooms share.
func (f *Flow) desk() desk {
	return desk{gh: f.GitHub, command: f.Command, op: f.Operator, clock: f.Now, log: f.Logger, console: strings.TrimRight(f.ConsoleURL, "/")}
}

func (f *Flow) commands() commands { return commands{desk: f.desk(), store: f.Store} }

func (f *Flow) pulls() pulls {
	return pulls{desk: f.desk(), remote: f.remote(), gh: f.GitHub, heads: f.Store}
}

func (f *Flow) answers() answers {
	return answers{desk: f.desk(), store: f.Store, remote: f.remote(), heads: f.Workspaces, comments: f.GitHub}
}

func (f *Flow) remote() remote { return remote{tokens: f.GitHub, timeout: f.GitTimeout} }

func (f *Flow) requests() requests {
	return requests{
		desk: f.desk(), gh: f.GitHub, answers: f.Store, agent: f.Agent,
		checkouts: f.checkouts(), runs: f.runs(),
		timeout: f.ApprovalTimeout, unisolated: f.Unisolated, setups: f.Deps != nil,
	}
}

func (f *Flow) runs() runs {
	return runs{desk: f.desk(), remote: f.remote(), checks: f.GitHub, runner: f.Runner, deps: f.Deps, tools: f.Tools, dir: f.Dir, unisolated: f.Unisolated}
}

func (f *Flow) checkouts() checkouts {
	return checkouts{remote: f.remote(), spaces: f.Workspaces, dir: f.Dir, log: f.Logger}
}

// Step performs the next step of t.
func (f *Flow) Step(ctx context.Context, t *Task) error {
	switch t.Kind {
	case KindReply:
		return f.desk().reply(ctx, t, t.Reply)
	case KindStatus:
		return f.commands().status(ctx, t)
	case KindCancel:
		return f.commands().cancelRequest(ctx, t)
	case KindBusy:
		return f.commands().busy(ctx, t)
	case KindApprove, KindReject:
		return f.answers().answer(ctx, t)
	case KindFix:
		j, _ := t.Job()
		return f.fix(ctx, j)
	case KindReview:
		j, _ := t.Job()
		return f.review(ctx, j)
	case KindTrigger:
		return f.trigger(ctx, t)
	}
	return Fatal(fmt.Sprintf("unknown task kind %q", t.Kind), nil)
}

func (f *Flow) fix(ctx context.Context, t Job) error {
	switch t.State {
	case Queued:
		return f.acknowledge(ctx, t)
	case Preparing:
		return f.prepare(ctx, t)
	case Working:
		if r := t.Request; r != nil && !r.Asked {
			if r.SHA == "" {
				// The request is bound to the work as it is now: push it.
				return f.checkpointRequest(ctx, t)
			}
			return f.requests().ask(ctx, t)
		}
		return f.work(ctx, t)
	case AwaitingApproval:
		return f.requests().await(ctx, t)
	case Running:
		return f.requests().run(ctx, t)
	case Publishing:
		return f.publish(ctx, t)
	}
	return Fatal(fmt.Sprintf("a fix task cannot continue from state %s", t.State), nil)
}

// published reports whether the task pushed its final commit: from there
// on the pull request follows, and stopping would leave it half made.
func (t Job) published() bool {
	return t.State == Publishing && t.Final
}

// Finish reports the end of a fix task that failed or was cancelled: a
// pending request's check run is closed and the status comment says why.
// Other kinds have nothing to report.
func (f *Flow) Finish(ctx context.Context, tk *Task) error {
	t, ok := tk.Job()
	if !ok {
		return nil
	}
	f.cleanup(ctx, t)
	if r := t.Request; r != nil {
		conclusion, title := "cancelled", "Cancelled"
		if t.State == Failed {
			conclusion, title = "neutral", "The task failed"
		}
		if err := f.requests().closeApproval(ctx, t, conclusion, title); err != nil {
			return err
		}
		if err := f.runs().closeRun(ctx, t, conclusion, title); err != nil {
			return err
		}
	}
	if t.Review != nil && t.Pull != nil && !t.Pull.ReviewReplied {
		// Whoever asked on the line looks for the answer there.
		what := "was cancelled"
		if t.State == Failed {
			what = "failed: " + line(t.Task, t.Error)
		}
		body := fmt.Sprintf("Task %d %s", t.ID, what)
		if t.StatusCommentURL != "" {
			body += fmt.Sprintf(" ([status](%s))", t.StatusCommentURL)
		}
		if err := f.pulls().replyInThread(ctx, t, t.Review.Root(), marker(t.Task, "review-ended"), body); err != nil {
			return retryf(err, "replying in the review thread failed")
		}
		t.Pull.ReviewReplied = true
	}
	return f.desk().updateStatus(ctx, t)
}
