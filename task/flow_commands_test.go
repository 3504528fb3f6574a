package task_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

func TestCommandsBesideAFix(t *testing.T) {
	cases := []struct {
		name string
		// running is true when a fix waits for an answer on the issue.
		running bool
		kind    task.Kind
		login   string
		reply   string
		// fix is the state of the waiting fix afterwards.
		fix task.State
	}{
		{"status without a task", false, task.KindStatus, "mallory", "No task has run on this issue yet. Start one with `/agent fix <instructions>`.", ""},
		{"status of a waiting task", true, task.KindStatus, "mallory", "Task 1: **✋ Waiting for approval**: request `1-1` asks to run `go test ./...`", task.AwaitingApproval},
		{"busy", true, task.KindBusy, "bob", "is already working on this issue", task.AwaitingApproval},
		{"busy after the end", false, task.KindBusy, "bob", "has just ended", ""},
		{"cancel by a reader", true, task.KindCancel, "mallory", "@mallory sorry:", task.AwaitingApproval},
		{"cancel without a task", false, task.KindCancel, "bob", "There is no running task on this issue to cancel.", ""},
		{"cancel", true, task.KindCancel, "bob", "Cancelling task 1; it stops before its next step.", task.Cancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w *world
			var fix *task.Task
			if c.running {
				w, fix = parked(t, "")
			} else {
				w = newWorld(t)
			}
			cmd := w.ask(&task.Task{Kind: c.kind, Issue: 1, CommentID: 20, Requester: person(c.login)})
			w.drain()
			w.want(cmd.ID, task.Done)
			if r := w.reply(cmd); !strings.Contains(r, c.reply) {
				t.Errorf("reply %q, want %q", r, c.reply)
			}
			if fix == nil {
				return
			}
			got := w.want(fix.ID, c.fix)
			if c.fix != task.Cancelled {
				return
			}
			if got.CancelledBy != "bob" {
				t.Errorf("cancelled by %q", got.CancelledBy)
			}
			if ch := w.gh.CheckRuns[tasktest.Job(fix).Request.CheckRunID]; ch.Conclusion != "cancelled" {
				t.Errorf("approval check %+v", ch)
			}
			if st := w.status(fix); !strings.Contains(st.Text(), "ancel") {
				t.Errorf("status comment %q", st.Text())
			}
			if len(w.runner.Specs) != 0 {
				t.Error("a cancelled task ran its command")
			}
		})
	}
}

func TestReplyAndUnknownKinds(t *testing.T) {
	w := newWorld(t)
	r := w.ask(&task.Task{Kind: task.KindReply, Issue: 1, Reply: "Usage: /agent fix …"})
	odd := w.ask(&task.Task{Kind: "dance", Issue: 1})
	w.drain()
	w.want(r.ID, task.Done)
	if got := w.reply(r); got != "Usage: /agent fix …" {
		t.Errorf("reply %q", got)
	}
	if got := w.want(odd.ID, task.Failed); !strings.Contains(got.Error, `unknown task kind "dance"`) {
		t.Errorf("error %q", got.Error)
	}
}

// A cancel asked while the task works is taken before its next step, and
// a task that has pushed its final commit is not cancelled any more.
func TestCancelAfterTheFinalPush(t *testing.T) {
	w := newWorld(t)
	w.agent.Script = []tasktest.Turn{finish("Fix", map[string]string{"README.md": "fixed\n"})}
	fix := w.fix("")
	// Work it up to publishing by hand, saving as a worker does.
	claimed, err := w.store.Claim(w.ctx, "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for !(claimed.State == task.Publishing && tasktest.Job(claimed).Final) {
		if err := w.flow.Step(w.ctx, claimed); err != nil {
			t.Fatal(err)
		}
		if err := w.store.Save(w.ctx, claimed, "me"); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.store.Release(w.ctx, claimed.ID, "me"); err != nil {
		t.Fatal(err)
	}
	// The cancel is stepped before the fix, which a drain would finish first.
	cancel := w.ask(&task.Task{Kind: task.KindCancel, Issue: 1, Requester: person("bob")})
	if err := w.flow.Step(w.ctx, cancel); err != nil || cancel.State != task.Done {
		t.Fatalf("cancel: %v, %s", err, cancel.State)
	}
	if r := w.reply(cancel); !strings.Contains(r, "has already pushed its final commit") {
		t.Errorf("reply %q", r)
	}
	w.drain()
	if got := w.want(fix.ID, task.Done); got.CancelledBy != "" {
		t.Errorf("cancelled by %q", got.CancelledBy)
	}
}
