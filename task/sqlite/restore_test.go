package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

func TestRestoreKeepsTheTaskAndItsRequest(t *testing.T) {
	ctx := context.Background()
	s, c := openTestStore(t)
	deadline := c.Now().Add(time.Hour)
	saved := fixTask(3)
	saved.ID, saved.State, saved.RunAfter = 900001, task.AwaitingApproval, deadline
	tasktest.Job(saved).Request = &task.ExecRequest{ID: "900001-2", Command: "make test", Asked: true, ParkedAt: c.Now(), Deadline: deadline}
	if err := s.Restore(ctx, saved); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, 900001)
	if err != nil || got.State != task.AwaitingApproval || tasktest.Job(got).Request.ID != "900001-2" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if a, err := s.Active(ctx, saved.IssueKey()); err != nil || a.ID != saved.ID {
		t.Fatalf("Active = %+v, %v; the restored task must be the issue's", a, err)
	}
	// It waits for a person: nothing is due, and Drain has nothing to wait for.
	if _, ok, err := s.NextDue(ctx); ok || err != nil {
		t.Fatalf("NextDue = %v, %v; want none", ok, err)
	}
	// A second fix on the issue is refused, as for any active task.
	if err := s.Record(ctx, task.Delivery{ID: "d2"}, fixTask(3)); !errors.Is(err, task.ErrActive) {
		t.Fatalf("Record of a second fix = %v", err)
	}
	again := *saved
	if err := s.Restore(ctx, &again); err == nil {
		t.Fatal("restoring the same task twice succeeded")
	}
	// An answer makes it due at once.
	if err := s.Answer(ctx, saved.ID, "900001-2", task.Answer{Verdict: task.Approved, By: "o", At: c.Now()}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.Claim(ctx, "w", time.Minute)
	if err != nil || claimed.ID != saved.ID || tasktest.Job(claimed).Request.Answer == nil {
		t.Fatalf("Claim after the answer = %+v, %v", claimed, err)
	}
}

func TestStartIDsAtAndNextDue(t *testing.T) {
	ctx := context.Background()
	s, c := openTestStore(t)
	if err := s.StartIDsAt(ctx, 5000); err != nil {
		t.Fatal(err)
	}
	first := fixTask(1)
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, first); err != nil {
		t.Fatal(err)
	}
	if first.ID != 5001 {
		t.Fatalf("first id = %d, want 5001", first.ID)
	}
	// Lower starts never move ids back.
	if err := s.StartIDsAt(ctx, 10); err != nil {
		t.Fatal(err)
	}
	second := fixTask(2)
	second.RunAfter = c.Now().Add(30 * time.Second) // a retry's back-off
	if err := s.Record(ctx, task.Delivery{ID: "d2"}, second); err != nil || second.ID != 5002 {
		t.Fatalf("second = %d, %v", second.ID, err)
	}
	at, ok, err := s.NextDue(ctx)
	if err != nil || !ok || !at.Equal(first.RunAfter.Truncate(time.Millisecond)) {
		t.Fatalf("NextDue = %v, %v, %v; want the first task's %v", at, ok, err, first.RunAfter)
	}
}
