package task_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// parked is a world whose fix task waits for an answer to its first
// request, and will finish on its next turn.
func parked(t *testing.T, config string) (*world, *task.Task) {
	t.Helper()
	w := newWorld(t)
	if config != "" {
		w.gh.SetFile("main", ".github/pullwright.yml", config)
	}
	w.agent.Script = []tasktest.Turn{
		pending("go test ./...", map[string]string{"README.md": "# widget\n\nNo typo.\n"}),
		finish("Fix the README typo", nil),
	}
	fix := w.fix("fix the typo")
	w.drain()
	got := w.want(fix.ID, task.AwaitingApproval)
	w.clock.Advance(time.Minute)
	return w, got
}

func TestAnswers(t *testing.T) {
	// says is an answer of kind by login in comment 12, naming requestID.
	says := func(kind task.Kind, login, requestID string) func(*world, *task.Task) *task.Task {
		return func(w *world, _ *task.Task) *task.Task { return w.answer(kind, login, 12, requestID) }
	}
	cases := []struct {
		name   string
		config string
		// answer gives the answer to fix's request.
		answer func(w *world, fix *task.Task) *task.Task
		// state is where fix is after the answer; reply, when set, is
		// part of the answer's reply.
		state task.State
		reply string
		check func(t *testing.T, w *world, fix *task.Task)
	}{
		{
			name: "a maintainer approves",
			answer: func(w *world, fix *task.Task) *task.Task {
				return w.answer(task.KindApprove, "maint", 12, tasktest.Job(fix).Request.ID)
			},
			state: task.Done,
			check: func(t *testing.T, w *world, fix *task.Task) {
				if len(w.runner.Specs) != 1 {
					t.Errorf("runs: %d", len(w.runner.Specs))
				}
			},
		},
		{
			name:   "a writer rejects with a reason",
			answer: says(task.KindReject, "bob", ""),
			state:  task.Done,
			check: func(t *testing.T, w *world, fix *task.Task) {
				if len(w.runner.Specs) != 0 {
					t.Errorf("a rejected command ran")
				}
				if o := w.agent.Outcomes; len(o) != 1 || o[0].Verdict != task.Rejected || o[0].By != "bob" {
					t.Errorf("the agent heard %+v", o)
				}
				if c := w.gh.CheckRuns[tasktest.Job(fix).Request.CheckRunID]; c.Conclusion != "neutral" || !strings.Contains(c.Title, "Rejected by @bob") {
					t.Errorf("approval check %+v", c)
				}
			},
		},
		{
			name: "the button of the approval check run",
			answer: func(w *world, fix *task.Task) *task.Task {
				return w.ask(&task.Task{Kind: task.KindApprove, Requester: person("maint"),
					Answering: task.AnswerRef{RequestID: tasktest.Job(fix).Request.ID, Run: tasktest.Job(fix).Request.CheckRunID, SHA: tasktest.Job(fix).Request.SHA}})
			},
			state: task.Done,
		},
		{
			name: "the console's approval of the value it showed",
			answer: func(w *world, fix *task.Task) *task.Task {
				return w.ask(&task.Task{Kind: task.KindApprove, Requester: person("maint"),
					Answering: task.AnswerRef{RequestID: tasktest.Job(fix).Request.ID, Run: tasktest.Job(fix).Request.CheckRunID, SHA: tasktest.Job(fix).Request.SHA, Digest: tasktest.Job(fix).Request.Shown.Digest}})
			},
			state: task.Done,
		},
		{
			name: "the console's approval of another value",
			answer: func(w *world, fix *task.Task) *task.Task {
				return w.ask(&task.Task{Kind: task.KindApprove, Requester: person("maint"),
					Answering: task.AnswerRef{RequestID: tasktest.Job(fix).Request.ID, Run: tasktest.Job(fix).Request.CheckRunID, SHA: tasktest.Job(fix).Request.SHA, Digest: strings.Repeat("0", 64)}})
			},
			state: task.AwaitingApproval,
			reply: "the request changed since you read it",
		},
		{
			name: "a button on another check run",
			answer: func(w *world, fix *task.Task) *task.Task {
				return w.ask(&task.Task{Kind: task.KindApprove, Requester: person("maint"),
					Answering: task.AnswerRef{RequestID: tasktest.Job(fix).Request.ID, Run: 1, SHA: tasktest.Job(fix).Request.SHA}})
			},
			state: task.AwaitingApproval,
			reply: "that button is not on the approval check run",
		},
		{
			name: "a button on an older commit",
			answer: func(w *world, fix *task.Task) *task.Task {
				return w.ask(&task.Task{Kind: task.KindApprove, Requester: person("maint"),
					Answering: task.AnswerRef{RequestID: tasktest.Job(fix).Request.ID, Run: tasktest.Job(fix).Request.CheckRunID, SHA: w.base}})
			},
			state: task.AwaitingApproval,
			reply: "that button belongs to an older commit",
		},
		{
			name:   "a reader may not approve",
			answer: says(task.KindApprove, "mallory", ""),
			state:  task.AwaitingApproval,
			reply:  "@mallory sorry:",
		},
		{
			name:   "the requester may not approve where a second person must",
			config: "approve:\n  exclude_requester: true\n",
			answer: says(task.KindApprove, "alice", ""),
			state:  task.AwaitingApproval,
			reply:  "the requester of a task may not approve",
		},
		{
			name:   "the requester may still reject",
			config: "approve:\n  exclude_requester: true\n",
			answer: says(task.KindReject, "alice", ""),
			state:  task.Done,
		},
		{
			name: "a comment GitHub dates in the second the request was shown",
			answer: func(w *world, fix *task.Task) *task.Task {
				return w.ask(&task.Task{Kind: task.KindApprove, Issue: 1, CommentID: 12, Requester: person("maint"), AskedAt: tasktest.Job(fix).Request.ShownAt})
			},
			state: task.AwaitingApproval,
			reply: "your answer was written before request",
		},
		{
			name:   "another request's id",
			answer: says(task.KindApprove, "maint", "1-9"),
			state:  task.AwaitingApproval,
			reply:  "request `1-9` is not the one waiting",
		},
		{
			name:   "an id of no task answers about the one waiting",
			answer: says(task.KindApprove, "maint", "99-1"),
			state:  task.AwaitingApproval,
			reply:  "request `99-1` is not the one waiting",
		},
		{
			name: "a push after the request makes it stale",
			answer: func(w *world, fix *task.Task) *task.Task {
				w.ws.Commit(cloneURL, tasktest.Job(fix).Branch, map[string]string{"other.txt": "a person's\n"}, "a person's push")
				return w.answer(task.KindApprove, "maint", 12, "")
			},
			state: task.AwaitingApproval,
			reply: "is stale: branch `agent/1-fix-the-typo` moved from",
		},
		{
			name: "a deleted branch makes it stale",
			answer: func(w *world, fix *task.Task) *task.Task {
				w.ws.SetRef(cloneURL, tasktest.Job(fix).Branch, "")
				return w.answer(task.KindApprove, "maint", 12, "")
			},
			state: task.AwaitingApproval,
			reply: "was deleted",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, fix := parked(t, c.config)
			a := c.answer(w, fix)
			w.drain()
			w.want(a.ID, task.Done)
			got := w.want(fix.ID, c.state)
			if c.reply != "" {
				if r := w.reply(a); !strings.Contains(r, c.reply) {
					t.Errorf("reply %q does not say %q", r, c.reply)
				}
				if tasktest.Job(got).Request.Answer != nil || len(w.runner.Specs) != 0 {
					t.Errorf("a refused answer answered: %+v, %d runs", tasktest.Job(got).Request.Answer, len(w.runner.Specs))
				}
			}
			if c.check != nil {
				c.check(t, w, got)
			}
		})
	}
}

func TestAnAnswerCountsOnce(t *testing.T) {
	w, fix := parked(t, "")
	// The agent asks a second time, and a redelivery of the first answer's
	// comment (a new delivery id, the same comment) must not answer it.
	w.agent.Script = []tasktest.Turn{pending("make lint", nil), finish("Done", nil)}
	w.answer(task.KindApprove, "maint", 12, "")
	w.drain()
	second := w.want(fix.ID, task.AwaitingApproval)
	if tasktest.Job(second).Request.ID == tasktest.Job(fix).Request.ID || len(tasktest.Job(second).Answers) != 1 {
		t.Fatalf("second request %+v, answers %v", tasktest.Job(second).Request, tasktest.Job(second).Answers)
	}
	w.clock.Advance(time.Minute)
	again := w.answer(task.KindApprove, "maint", 12, "")
	w.drain()
	if r := w.reply(again); !strings.Contains(r, "already used for an earlier request") {
		t.Errorf("reply %q", r)
	}
	w.want(fix.ID, task.AwaitingApproval)
	// A bare approval of a later request answers nothing: it could have
	// been meant for the one before.
	bare := w.answer(task.KindApprove, "maint", 15, "")
	w.drain()
	if r := w.reply(bare); !strings.Contains(r, "with `/approve "+tasktest.Job(second).Request.ID+"`") {
		t.Errorf("a bare approval of the second request: reply %q", r)
	}
	// A second approval of the same request loses to the first.
	w.answer(task.KindApprove, "maint", 13, tasktest.Job(second).Request.ID)
	late := w.answer(task.KindApprove, "bob", 14, tasktest.Job(second).Request.ID)
	w.drain()
	if r := w.reply(late); !strings.Contains(r, "no execution request waiting") && !strings.Contains(r, "already answered") {
		t.Errorf("late approval's reply %q", r)
	}
	w.want(fix.ID, task.Done)
	if len(w.runner.Specs) != 2 {
		t.Errorf("%d runs, want one per request", len(w.runner.Specs))
	}
}

func TestARequestTimesOut(t *testing.T) {
	w, fix := parked(t, "")
	// Woken before the deadline (a restart), it parks again.
	if err := w.flow.Step(w.ctx, fix); err != nil || fix.State != task.AwaitingApproval || !fix.RunAfter.Equal(tasktest.Job(fix).Request.Deadline) {
		t.Fatalf("early wake: %v, %s, run after %s (deadline %s)", err, fix.State, fix.RunAfter, tasktest.Job(fix).Request.Deadline)
	}
	w.clock.Advance(25 * time.Hour)
	if err := w.flow.Step(w.ctx, fix); err != nil {
		t.Fatal(err)
	}
	if fix.State != task.Working || tasktest.Job(fix).Request.Answer.Verdict != task.TimedOut {
		t.Fatalf("after the deadline: %s, %+v", fix.State, tasktest.Job(fix).Request.Answer)
	}
	if o := w.agent.Outcomes; len(o) != 1 || o[0].Verdict != task.TimedOut {
		t.Errorf("the agent heard %+v", o)
	}
	note := w.gh.Comment(1, "task-1-request-"+tasktest.Job(fix).Request.ID+"-timeout")
	if note == nil || !strings.Contains(note.Text(), "got no answer within 24h0m0s") {
		t.Errorf("timeout note: %+v", note)
	}
	if c := w.gh.CheckRuns[tasktest.Job(fix).Request.CheckRunID]; c.Conclusion != "timed_out" {
		t.Errorf("approval check %+v", c)
	}
	// The timeout is in the store: an approval now is too late.
	late := w.answer(task.KindApprove, "maint", 12, "")
	w.drain()
	// Whether the timed-out task moved on first or not, it does not run.
	if r := w.reply(late); !strings.Contains(r, "already answered (timed_out") && !strings.Contains(r, "no execution request waiting") {
		t.Errorf("late approval's reply %q", r)
	}
	if len(w.runner.Specs) != 0 {
		t.Error("a timed-out request ran")
	}
}

func TestRequestsAnsweredWithoutAsking(t *testing.T) {
	cases := []struct {
		name, config, command string
		verdict               task.Verdict
		by                    string
		runs                  int
	}{
		{"auto_approve runs a listed command", "auto_approve:\n  - command: go test ./...\n", "go test ./...", task.Approved, "auto_approve", 1},
		{"a command that would show otherwise is refused unshown", "", "echo \x1b[2Jhidden", task.Rejected, "pullwright", 0},
		{"an unlisted command is asked", "auto_approve:\n  - command: go vet ./...\n", "go test ./...", "", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			if c.config != "" {
				w.gh.SetFile("main", ".github/pullwright.yml", c.config)
			}
			w.agent.Script = []tasktest.Turn{
				pending(c.command, map[string]string{"README.md": "new\n"}),
				finish("Done", nil),
			}
			fix := w.fix("")
			w.drain()
			if c.verdict == "" {
				got := w.want(fix.ID, task.AwaitingApproval)
				if tasktest.Job(got).Request.CommentID == 0 {
					t.Error("the request was not shown")
				}
				return
			}
			got := w.want(fix.ID, task.Done)
			if len(w.runner.Specs) != c.runs {
				t.Errorf("runs %d, want %d", len(w.runner.Specs), c.runs)
			}
			if o := w.agent.Outcomes; len(o) != 1 || o[0].Verdict != c.verdict || o[0].By != c.by {
				t.Errorf("the agent heard %+v", o)
			}
			if w.gh.Comment(1, "task-1-request-"+tasktest.Job(got).Request.ID) != nil {
				t.Error("a request answered without asking was shown as a question")
			}
		})
	}
}

func TestAnswerWithNothingWaiting(t *testing.T) {
	w := newWorld(t)
	a := w.answer(task.KindApprove, "maint", 12, "")
	w.drain()
	if r := w.reply(a); !strings.Contains(r, "there is no execution request waiting") {
		t.Errorf("reply %q", r)
	}
	// A button naming an unknown task has nowhere to answer.
	b := w.ask(&task.Task{Kind: task.KindReject, Requester: task.Person{Login: "maint"}, Answering: task.AnswerRef{RequestID: "42-1", Run: 5}})
	w.drain()
	w.want(b.ID, task.Done)
	if len(w.gh.Comments) != 1 {
		t.Errorf("comments: %d", len(w.gh.Comments))
	}
	// A button naming a task that never asks (a status answer) is told,
	// on that task's issue, that nothing waits.
	st := w.ask(&task.Task{Kind: task.KindStatus, Issue: 1, CommentID: 13, Requester: person("maint")})
	w.drain()
	c := w.ask(&task.Task{Kind: task.KindApprove, Requester: person("maint"), Answering: task.AnswerRef{RequestID: fmt.Sprintf("%d-1", st.ID), Run: 5}})
	w.drain()
	if r := w.reply(c); !strings.Contains(r, "there is no execution request waiting") {
		t.Errorf("reply to a button naming a status answer: %q", r)
	}
}

// A request is one value: built once before anything shows it, sealed with
// its digest, and shown whole by the comment and the check run, whose
// texts are renderings of it and nothing else.
func TestARequestIsOneValue(t *testing.T) {
	w, fix := parked(t, "auto_approve:\n  - command: make lint\n")
	shown := tasktest.Job(fix).Request.Shown
	if shown == nil || !shown.Sealed() || shown.Command != "go test ./..." || shown.Commit != tasktest.Job(fix).Request.SHA {
		t.Fatalf("the request as shown = %+v", shown)
	}
	comment := w.gh.Comment(fix.Issue, fmt.Sprintf("task-%d-request-%s", fix.ID, tasktest.Job(fix).Request.ID))
	if comment == nil {
		for _, c := range w.gh.CommentsOn(fix.Issue) {
			t.Logf("comment %q", c.Marker)
		}
		t.Fatal("no request comment")
	}
	if !strings.Contains(comment.Body, task.RenderRequest(*shown)) {
		t.Errorf("the comment is not the value's rendering:\n%s", comment.Body)
	}
	summary := w.gh.CheckRuns[tasktest.Job(fix).Request.CheckRunID].Summary
	for _, s := range shown.Sentences() {
		plain := approval.PlainText(s)
		if !strings.Contains(approval.Text(*shown), plain) {
			t.Errorf("the terminal's text lacks %q", plain)
		}
		// The Markdown differs by its markup only.
		words := strings.Fields(strings.NewReplacer("`", "", "*", "").Replace(plain))
		for _, body := range []string{comment.Body, summary} {
			if !strings.Contains(strings.NewReplacer("`", "", "*", "").Replace(body), strings.Join(words, " ")) {
				t.Errorf("a surface lacks the sentence %q:\n%s", plain, body)
			}
		}
	}
	if !strings.Contains(comment.Body, shown.ShortDigest()) || !strings.Contains(summary, shown.ShortDigest()) {
		t.Errorf("the digest %s is not on both surfaces", shown.ShortDigest())
	}
}

// A request shown to run in the sandbox does not run on the bot's own
// machine because the bot came back with BOT_RUNNER=local meanwhile: the
// approval was of the request as shown.
func TestARunGoesWhereTheRequestSaid(t *testing.T) {
	w, fix := parked(t, "")
	if !tasktest.Job(fix).Request.Shown.Where.Sandbox {
		t.Fatalf("the request was shown to run without a sandbox: %+v", tasktest.Job(fix).Request.Shown.Where)
	}
	w.flow.Unisolated = true
	w.answer(task.KindApprove, "maint", 12, tasktest.Job(fix).Request.ID)
	w.drain()
	if len(w.runner.Specs) != 0 {
		t.Fatalf("the command ran: %+v", w.runner.Specs)
	}
	got, err := w.store.Get(t.Context(), fix.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasktest.Job(got).Runs) != 1 || tasktest.Job(got).Runs[0].Outcome != task.OutcomeNotRun || !strings.Contains(tasktest.Job(got).Runs[0].Output, "runner changed since the request was shown") {
		t.Fatalf("the record = %+v", tasktest.Job(got).Runs)
	}
}
