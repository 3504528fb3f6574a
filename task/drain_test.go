package task_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

func TestDrainWaitsOutRetriesAndStopsAtAWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := tasktest.NewStore(time.Now)
	st := &scriptStepper{fail: map[task.State][]error{task.Preparing: {task.Retry("clone failed", errors.New("eof")), task.Retry("clone failed", errors.New("eof"))}}}
	p := &task.Pool{Store: s, Steps: st, MaxAttempts: 5, Backoff: func(int) time.Duration { return 20 * time.Millisecond }}
	// A task parked for an answer is nobody's to wait for. It is parked
	// as a worker parks one, before the other task is due.
	parked := fixTask(2)
	if err := s.Record(ctx, task.Delivery{ID: "d2"}, parked); err != nil {
		t.Fatal(err)
	}
	w, err := s.Claim(ctx, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w.State, w.RunAfter = task.AwaitingApproval, time.Now().Add(time.Hour)
	tasktest.Job(w).Request = &task.ExecRequest{ID: fmt.Sprint(w.ID, "-1"), Command: "make", Asked: true}
	if err := s.Save(ctx, w, "w"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, w.ID, "w"); err != nil {
		t.Fatal(err)
	}
	retried := fixTask(1)
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, retried); err != nil {
		t.Fatal(err)
	}
	if err := p.Drain(ctx, s); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, retried.ID)
	if err != nil || got.State != task.Done {
		t.Fatalf("after Drain the retried task is %+v, %v; want done", got, err)
	}
	if still, _ := s.Get(ctx, parked.ID); still.State != task.AwaitingApproval {
		t.Fatalf("the parked task moved to %s", still.State)
	}
}

func TestDrainStopsWithItsContext(t *testing.T) {
	setup, cancelSetup := context.WithTimeout(context.Background(), time.Minute)
	defer cancelSetup()
	s := tasktest.NewStore(time.Now)
	st := &scriptStepper{fail: map[task.State][]error{task.Preparing: {task.Retry("down", nil)}}}
	p := &task.Pool{Store: s, Steps: st, MaxAttempts: 5, Backoff: func(int) time.Duration { return time.Hour }}
	if err := s.Record(setup, task.Delivery{ID: "d1"}, fixTask(1)); err != nil {
		t.Fatal(err)
	}
	// Only Drain gets the short context: a loaded machine may take longer
	// than it to record the delivery, and that is not what is tested.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.Drain(ctx, s); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain = %v, want the context's end", err)
	}
}

// stuckStepper succeeds without ever moving a task on.
type stuckStepper struct{ scriptStepper }

func (s *stuckStepper) Step(context.Context, *task.Task) error { return nil }

func TestDrainGivesUpOnATaskThatNeverMovesOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := tasktest.NewStore(time.Now)
	p := &task.Pool{Store: s, Steps: &stuckStepper{}, MaxDrainClaims: 2}
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, fixTask(1)); err != nil {
		t.Fatal(err)
	}
	err := p.Drain(ctx, s)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Drain = %v (context %v); want it to give up by itself", err, ctx.Err())
	}
}
