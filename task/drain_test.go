package task

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDrainWaitsOutRetriesAndStopsAtAWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, _ := openTestStore(t)
	s.now = time.Now
	st := &scriptStepper{fail: map[State][]error{Preparing: {Retry("clone failed", errors.New("eof")), Retry("clone failed", errors.New("eof"))}}}
	p := &Pool{Store: s, Steps: st, MaxAttempts: 5, Backoff: func(int) time.Duration { return 20 * time.Millisecond }}
	retried := fixTask(1)
	if err := s.Record(ctx, Delivery{ID: "d1"}, retried); err != nil {
		t.Fatal(err)
	}
	// A task parked for an answer is nobody's to wait for.
	parked := fixTask(2)
	parked.ID, parked.State, parked.RunAfter = 777, AwaitingApproval, time.Now().Add(time.Hour)
	parked.Request = &ExecRequest{ID: "777-1", Command: "make", Asked: true}
	if err := s.Restore(ctx, parked); err != nil {
		t.Fatal(err)
	}
	if err := p.Drain(ctx, s); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, retried.ID)
	if err != nil || got.State != Done {
		t.Fatalf("after Drain the retried task is %+v, %v; want done", got, err)
	}
	if still, _ := s.Get(ctx, 777); still.State != AwaitingApproval {
		t.Fatalf("the parked task moved to %s", still.State)
	}
}

func TestDrainStopsWithItsContext(t *testing.T) {
	setup, cancelSetup := context.WithTimeout(context.Background(), time.Minute)
	defer cancelSetup()
	s, _ := openTestStore(t)
	s.now = time.Now
	st := &scriptStepper{fail: map[State][]error{Preparing: {Retry("down", nil)}}}
	p := &Pool{Store: s, Steps: st, MaxAttempts: 5, Backoff: func(int) time.Duration { return time.Hour }}
	if err := s.Record(setup, Delivery{ID: "d1"}, fixTask(1)); err != nil {
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

func (s *stuckStepper) Step(context.Context, *Task) error { return nil }

func TestDrainGivesUpOnATaskThatNeverMovesOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, _ := openTestStore(t)
	s.now = time.Now
	p := &Pool{Store: s, Steps: &stuckStepper{}, MaxDrainClaims: 2}
	if err := s.Record(ctx, Delivery{ID: "d1"}, fixTask(1)); err != nil {
		t.Fatal(err)
	}
	err := p.Drain(ctx, s)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Drain = %v (context %v); want it to give up by itself", err, ctx.Err())
	}
}
