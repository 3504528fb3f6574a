package task_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
	"github.com/pullwright/pullwright/webhook"
)

// parkedReview is a pull request world whose review of pull request 7
// waits for an answer to its request to run a command.
func parkedReview(t *testing.T) (*world, *task.Task) {
	t.Helper()
	w, _ := pullWorld(t, false, map[string]string{"feature.go": "package feature\n"})
	w.gh.Diffs[7] = "diff --git a/feature.go b/feature.go\n--- a/feature.go\n+++ b/feature.go\n@@ -0,0 +1 @@\n+package feature\n"
	w.agent.Script = []tasktest.Turn{
		pending("go test ./...", nil),
		{Progress: task.Progress{Finished: true, Review: &pullwright.ReviewDraft{Summary: "The tests pass."}}},
	}
	rv := w.reviewPull("", "alice")
	w.drain()
	return w, w.want(rv.ID, task.AwaitingApproval)
}

// TestCommandsBesideAReview: /agent status and /agent cancel see a running
// review as they see a fix, while a bare /approve still answers fixes
// only: a review's request is answered by its id or its button.
func TestCommandsBesideAReview(t *testing.T) {
	t.Run("status", func(t *testing.T) {
		w, rv := parkedReview(t)
		st := w.ask(&task.Task{Kind: task.KindStatus, Issue: 7, IsPR: true, CommentID: 80, Requester: person("mallory")})
		w.drain()
		w.want(st.ID, task.Done)
		if r := w.reply(st); !strings.HasPrefix(r, fmt.Sprintf("Task %d: ", rv.ID)) || !strings.Contains(r, "Waiting for approval") {
			t.Errorf("status reply %q, want task %d waiting", r, rv.ID)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		w, rv := parkedReview(t)
		c := w.ask(&task.Task{Kind: task.KindCancel, Issue: 7, IsPR: true, CommentID: 80, Requester: person("bob")})
		w.drain()
		w.want(c.ID, task.Done)
		if r, want := w.reply(c), fmt.Sprintf("Cancelling task %d;", rv.ID); !strings.Contains(r, want) {
			t.Errorf("cancel reply %q, want %q", r, want)
		}
		if got := w.want(rv.ID, task.Cancelled); got.CancelledBy != "bob" {
			t.Errorf("cancelled by %q", got.CancelledBy)
		}
	})
	t.Run("cancel takes the fix first", func(t *testing.T) {
		w, rv := parkedReview(t)
		fix := w.fixPull("rename x", nil)
		c := w.ask(&task.Task{Kind: task.KindCancel, Issue: 7, IsPR: true, CommentID: 80, Requester: person("bob")})
		// Stepped alone: a drain would run the fix first.
		if err := w.flow.Step(w.ctx, c); err != nil || c.State != task.Done {
			t.Fatalf("cancel: %v, %s", err, c.State)
		}
		if r, want := w.reply(c), fmt.Sprintf("Cancelling task %d;", fix.ID); !strings.Contains(r, want) {
			t.Errorf("cancel reply %q, want %q", r, want)
		}
		if got := w.get(rv.ID); got.CancelledBy != "" {
			t.Errorf("the review was cancelled too, by %q", got.CancelledBy)
		}
		if r, want := w.reply(c), fmt.Sprintf("Task %d, a review, is running too", rv.ID); !strings.Contains(r, want) {
			t.Errorf("cancel reply %q, want %q", r, want)
		}
	})
	t.Run("status shows both that run", func(t *testing.T) {
		w, rv := parkedReview(t)
		fix := w.fixPull("rename x", nil)
		st := w.ask(&task.Task{Kind: task.KindStatus, Issue: 7, IsPR: true, CommentID: 80, Requester: person("mallory")})
		if err := w.flow.Step(w.ctx, st); err != nil || st.State != task.Done {
			t.Fatalf("status: %v, %s", err, st.State)
		}
		r := w.reply(st)
		if !strings.Contains(r, fmt.Sprintf("Task %d: ", fix.ID)) || !strings.Contains(r, fmt.Sprintf("Task %d: ", rv.ID)) {
			t.Errorf("status reply %q, want fix %d and review %d", r, fix.ID, rv.ID)
		}
	})
	t.Run("a bare approve leaves the review waiting", func(t *testing.T) {
		w, rv := parkedReview(t)
		a := w.ask(&task.Task{Kind: task.KindApprove, Issue: 7, IsPR: true, CommentID: 80, Requester: person("maint")})
		w.drain()
		w.want(a.ID, task.Done)
		if got := w.want(rv.ID, task.AwaitingApproval); tasktest.Job(got).Request.Answer != nil {
			t.Errorf("the review's request was answered: %+v", tasktest.Job(got).Request.Answer)
		}
		if len(w.runner.Specs) != 0 {
			t.Errorf("%d commands ran", len(w.runner.Specs))
		}
	})
}

// TestSecondReviewWhileOneRuns: a review asked while another runs on the
// pull request is answered as a second fix is, with a link to the review.
func TestSecondReviewWhileOneRuns(t *testing.T) {
	w, rv := parkedReview(t)
	second := &task.Task{Kind: task.KindReview, State: task.Queued, Repo: w.repo, Issue: 7, IsPR: true, CommentID: 81,
		Requester: person("bob"), AskedAt: w.clock.Now().UTC()}
	got, why, err := webhook.Record(w.ctx, w.store, task.Delivery{ID: "second-review", Event: "issue_comment"}, second, "review")
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != task.KindBusy || why != "already_active" {
		t.Fatalf("recorded a %s task (%s), want a busy one", got.Kind, why)
	}
	w.drain()
	w.want(got.ID, task.Done)
	r := w.reply(got)
	for _, want := range []string{fmt.Sprintf("@bob [task %d](", rv.ID), "is already working on this issue (✋ Waiting for approval)"} {
		if !strings.Contains(r, want) {
			t.Errorf("reply %q, want %q", r, want)
		}
	}
	if len(w.gh.Reviews[7]) != 0 {
		t.Errorf("reviews posted: %+v", w.gh.Reviews[7])
	}
}

// A busy review whose review has ended meanwhile says to ask for a review.
func TestBusyReviewAfterTheEnd(t *testing.T) {
	w, _ := pullWorld(t, false, nil)
	b := w.ask(&task.Task{Kind: task.KindBusy, Refused: task.KindReview, Issue: 7, IsPR: true, CommentID: 81, Requester: person("bob")})
	w.drain()
	w.want(b.ID, task.Done)
	if r, want := w.reply(b), "has just ended; ask again with `/agent review`."; !strings.Contains(r, want) {
		t.Errorf("reply %q, want %q", r, want)
	}
}
