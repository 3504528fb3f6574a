package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/internal/testclock"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// scriptStepper moves fix tasks through the lifecycle and fails on demand.
type scriptStepper struct {
	mu       sync.Mutex
	fail     map[task.State][]error // errors to return, in order, per state
	steps    []task.State
	finished []*task.Task
	block    chan struct{} // when set, task.Working blocks until closed or ctx ends
	// finishFails is how many Finish calls fail before one succeeds.
	finishFails int
	finishCalls int
}

func (s *scriptStepper) Step(ctx context.Context, t *task.Task) error {
	s.mu.Lock()
	s.steps = append(s.steps, t.State)
	if errs := s.fail[t.State]; len(errs) > 0 {
		s.fail[t.State] = errs[1:]
		s.mu.Unlock()
		return errs[0]
	}
	block := s.block
	s.mu.Unlock()
	next := map[task.State]task.State{task.Queued: task.Preparing, task.Preparing: task.Working, task.Working: task.Publishing, task.Publishing: task.Done}[t.State]
	if t.State == task.Working && block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return t.Move(next)
}

func (s *scriptStepper) Finish(_ context.Context, t *task.Task) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishCalls++
	if s.finishCalls <= s.finishFails {
		return task.Retry("GitHub is down", nil)
	}
	s.finished = append(s.finished, t.Clone())
	return nil
}

// storeWithClock is a store whose time moves only when the test moves it.
func storeWithClock() (*tasktest.Store, *testclock.Clock) {
	c := testclock.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	return tasktest.NewStore(c.Now), c
}

func fixTask(issue int) *task.Task {
	return &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: issue, Instructions: "fix it"}
}

func runPool(t *testing.T, p *task.Pool) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// waitFor polls the store until cond holds for the task.
func waitFor(t *testing.T, s task.Store, id int64, cond func(*task.Task) bool) *task.Task {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		tk, err := s.Get(context.Background(), id)
		if err == nil && cond(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d never reached the condition; last %+v (%v)", id, tk, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPoolRunsTaskToDone(t *testing.T) {
	s := tasktest.NewStore(time.Now)
	st := &scriptStepper{fail: map[task.State][]error{}}
	p := &task.Pool{Store: s, Steps: st, Workers: 2, Poll: 5 * time.Millisecond}
	defer runPool(t, p)()
	tk := fixTask(1)
	if err := s.Record(context.Background(), task.Delivery{ID: "d"}, tk); err != nil {
		t.Fatal(err)
	}
	p.Notify()
	waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State == task.Done })
}

func TestPoolRetriesThenFails(t *testing.T) {
	tests := []struct {
		name      string
		errs      []error
		wantState task.State
		wantSteps int // attempts at task.Preparing
		wantError string
	}{
		{"transient errors then success", []error{task.Retry("clone failed", errors.New("eof")), task.Retry("clone failed", errors.New("eof"))}, task.Done, 3, ""},
		{"permanent error fails at once", []error{task.Fatal("budget spent", nil)}, task.Failed, 1, "budget spent"},
		{"attempts run out", []error{task.Retry("a", nil), task.Retry("b", nil), task.Retry("c", nil)}, task.Failed, 3, "c"},
		{"unclassified error hides details", []error{errors.New("secret internal detail"), errors.New("x"), errors.New("y")}, task.Failed, 3, "an internal error stopped the task"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tasktest.NewStore(time.Now)
			st := &scriptStepper{fail: map[task.State][]error{task.Preparing: tc.errs}}
			p := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond, MaxAttempts: 3,
				Backoff: func(int) time.Duration { return time.Millisecond }}
			stop := runPool(t, p)
			tk := fixTask(1)
			if err := s.Record(context.Background(), task.Delivery{ID: "d"}, tk); err != nil {
				t.Fatal(err)
			}
			got := waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State.Terminal() })
			// The worker saves the end before it reports it: stopping the
			// pool waits for the report.
			stop()
			if got.State != tc.wantState || got.Error != tc.wantError {
				t.Fatalf("state %s error %q, want %s %q", got.State, got.Error, tc.wantState, tc.wantError)
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			n := 0
			for _, s := range st.steps {
				if s == task.Preparing {
					n++
				}
			}
			if n != tc.wantSteps {
				t.Fatalf("task.Preparing stepped %d times, want %d", n, tc.wantSteps)
			}
			if tc.wantState == task.Failed && len(st.finished) != 1 {
				t.Fatalf("Finish called %d times, want 1", len(st.finished))
			}
		})
	}
}

func TestPoolCancelStopsWork(t *testing.T) {
	s := tasktest.NewStore(time.Now)
	block := make(chan struct{})
	st := &scriptStepper{fail: map[task.State][]error{}, block: block}
	p := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond}
	defer runPool(t, p)()
	tk := fixTask(1)
	if err := s.Record(context.Background(), task.Delivery{ID: "d"}, tk); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State == task.Working })
	if err := s.RequestCancel(context.Background(), tk.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	close(block)
	got := waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State.Terminal() })
	if got.State != task.Cancelled || got.CancelledBy != "alice" {
		t.Fatalf("got %s by %q, want cancelled by alice", got.State, got.CancelledBy)
	}
}

// A worker that dies mid-task (its process is gone, the lease is not
// renewed) leaves the task to be picked up by another worker.
func TestLeaseExpiryHandsTaskToAnotherWorker(t *testing.T) {
	s, c := storeWithClock()
	tk := fixTask(1)
	if err := s.Record(context.Background(), task.Delivery{ID: "d"}, tk); err != nil {
		t.Fatal(err)
	}
	dead, err := s.Claim(context.Background(), "dead-worker", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	dead.State = task.Preparing
	if err := s.Save(context.Background(), dead, "dead-worker"); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Minute)
	st := &scriptStepper{fail: map[task.State][]error{}}
	p := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond}
	defer runPool(t, p)()
	waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State == task.Done })
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.steps[0] != task.Preparing {
		t.Fatalf("new worker started at %s, want the dead worker's task.Preparing", st.steps[0])
	}
}

type panicStepper struct{ scriptStepper }

func (p *panicStepper) Step(ctx context.Context, t *task.Task) error {
	if t.State == task.Preparing {
		panic("boom")
	}
	return p.scriptStepper.Step(ctx, t)
}

func TestPanicInStepFailsTheTaskNotTheProcess(t *testing.T) {
	s := tasktest.NewStore(time.Now)
	st := &panicStepper{scriptStepper{fail: map[task.State][]error{}}}
	p := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond}
	defer runPool(t, p)()
	tk := fixTask(1)
	if err := s.Record(context.Background(), task.Delivery{ID: "d"}, tk); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State.Terminal() })
	if got.State != task.Failed || got.Error != "the bot hit an internal error" {
		t.Fatalf("got %s %q", got.State, got.Error)
	}
	// The pool still works.
	next := fixTask(2)
	if err := s.Record(context.Background(), task.Delivery{ID: "d2"}, next); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, next.ID, func(t *task.Task) bool { return t.State == task.Failed })
}

// A task whose worker keeps vanishing (it crashes the process) is failed
// after MaxCrashes instead of being claimed forever.
func TestCrashLoopingTaskIsFailed(t *testing.T) {
	ctx := context.Background()
	s, c := storeWithClock()
	tk := fixTask(1)
	if err := s.Record(ctx, task.Delivery{ID: "d"}, tk); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		got, err := s.Claim(ctx, "doomed", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got.Crashes != i {
			t.Fatalf("claim %d: crashes = %d, want %d", i, got.Crashes, i)
		}
		c.Advance(2 * time.Minute) // the worker died holding the lease
	}
	st := &scriptStepper{fail: map[task.State][]error{}}
	p := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond, MaxCrashes: 2}
	defer runPool(t, p)()
	got := waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State.Terminal() })
	if got.State != task.Failed || got.Error != "the task stopped its worker 3 times, so it is not tried again" {
		t.Fatalf("got %s %q", got.State, got.Error)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.steps) != 0 {
		t.Fatalf("a crash-looping task was stepped again: %v", st.steps)
	}
}

// A failed step leaves only its retry count: what it changed in the task
// before failing is not saved.
func TestFailedStepLeavesNoPartialState(t *testing.T) {
	s := tasktest.NewStore(time.Now)
	st := &halfStepper{}
	p := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond, MaxAttempts: 2,
		Backoff: func(int) time.Duration { return time.Hour }}
	defer runPool(t, p)()
	tk := fixTask(1)
	if err := s.Record(context.Background(), task.Delivery{ID: "d"}, tk); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.Attempts == 1 })
	if got.State != task.Queued || tasktest.Job(got).Title != "" {
		t.Fatalf("after a failed step: state %s, title %q; want queued and no title", got.State, tasktest.Job(got).Title)
	}
}

type halfStepper struct{ scriptStepper }

func (h *halfStepper) Step(_ context.Context, t *task.Task) error {
	tasktest.Job(t).Title = "half done"
	t.State = task.Preparing
	return task.Retry("then it broke", nil)
}

// The report of a failed task is tried again when GitHub refuses it.
func TestFinishReportIsRetried(t *testing.T) {
	s := tasktest.NewStore(time.Now)
	st := &scriptStepper{fail: map[task.State][]error{task.Preparing: {task.Fatal("no", nil)}}, finishFails: 2}
	p := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond, Backoff: func(int) time.Duration { return time.Millisecond }}
	stop := runPool(t, p)
	tk := fixTask(1)
	if err := s.Record(context.Background(), task.Delivery{ID: "d"}, tk); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State == task.Failed })
	stop()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finishCalls != 3 || len(st.finished) != 1 {
		t.Fatalf("Finish called %d times, reported %d; want 3 and 1", st.finishCalls, len(st.finished))
	}
}

// finishPanics panics while reporting the end of a task.
type finishPanics struct{ scriptStepper }

func (f *finishPanics) Finish(context.Context, *task.Task) error { panic("boom") }

func TestAPanickingReportDoesNotStopTheProcess(t *testing.T) {
	s := tasktest.NewStore(time.Now)
	st := &finishPanics{scriptStepper{fail: map[task.State][]error{task.Preparing: {task.Fatal("no", nil)}}}}
	p := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond, Backoff: func(int) time.Duration { return time.Millisecond }}
	stop := runPool(t, p)
	defer stop()
	tk := fixTask(1)
	if err := s.Record(context.Background(), task.Delivery{ID: "d"}, tk); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State.Terminal() }); got.State != task.Failed {
		t.Fatalf("task ended %s", got.State)
	}
}

// A failed step leaves the task exactly as it was loaded, whatever the
// step changed before failing and however deep: a pull request's commits
// or its count of deleted threads (shared with the copy the worker kept
// while that copy was one level deep), the request, the settings, the
// record of runs. The stored document after the failure is the one before
// it but for the retry's own fields.
func TestFailedStepRollsBackEveryKindOfChange(t *testing.T) {
	tests := []struct {
		name   string
		change func(*task.Task)
	}{
		{"a pushed commit on the pull request", func(tk *task.Task) {
			j := tasktest.Job(tk)
			j.PushedSHA = "c2"
			j.Pull.Commits = append(j.Pull.Commits, "c2")
		}},
		{"a deleted review thread counted", func(tk *task.Task) { tasktest.Job(tk).Pull.Gone++ }},
		{"a pull request's note", func(tk *task.Task) { tasktest.Job(tk).Pull.Notes[1] = "changed" }},
		{"the request's fields", func(tk *task.Task) {
			r := tasktest.Job(tk).Request
			r.CommentID, r.Shown.Command = 99, "rm -rf /"
		}},
		{"a run's record", func(tk *task.Task) { tasktest.Job(tk).Runs[0].Outcome = "passed" }},
		{"a run recorded", func(tk *task.Task) {
			j := tasktest.Job(tk)
			j.Runs = append(j.Runs, task.RunRecord{Command: "go test ./...", SHA: "c2"})
		}},
		{"the settings", func(tk *task.Task) { tk.Settings.TestCommand = "true" }},
		{"the conversation, in place", func(tk *task.Task) { tasktest.Job(tk).Conversation[0] = 'X' }},
		{"the state and the title", func(tk *task.Task) {
			tk.State = task.Publishing
			tasktest.Job(tk).Title = "half done"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tasktest.NewStore(time.Now)
			st := &changeStepper{change: tc.change}
			p := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond, MaxAttempts: 3,
				Backoff: func(int) time.Duration { return time.Hour }}
			tk := deepTask()
			if err := s.Record(context.Background(), task.Delivery{ID: "d"}, tk); err != nil {
				t.Fatal(err)
			}
			before, err := s.Get(context.Background(), tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			defer runPool(t, p)()
			after := waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.Attempts == 1 })
			if got, want := storedForm(t, after), storedForm(t, before); got != want {
				t.Errorf("the failed step's change was kept:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// deepTask is a fix at work on a pull request, with a field of every kind
// a step changes: slices, maps and pointers nested in the work.
func deepTask() *task.Task {
	tk := fixTask(1)
	tk.State = task.Working
	tk.Settings = &policy.Settings{TestCommand: "go test ./..."}
	return tasktest.WithWork(tk, task.Work{
		Branch: "agent/1-fix", PushedSHA: "c1", Conversation: []byte(`[{"role":"user"}]`),
		Request: &task.ExecRequest{ID: "1-1", Command: "go test ./...", SHA: "c1",
			Shown: &approval.Request{Command: "go test ./..."}},
		Runs: []task.RunRecord{{Command: "go test ./...", SHA: "c1", Outcome: "failed"}},
		Pull: &task.PullWork{Commits: []string{"c1"}, Notes: map[int]string{1: "note"}},
	})
}

// storedForm is a stored task's document without the fields a failed
// step's retry sets (its count, its time, the save's time).
func storedForm(t *testing.T, tk *task.Task) string {
	t.Helper()
	c := *tk
	c.Attempts, c.RunAfter, c.UpdatedAt = 0, time.Time{}, time.Time{}
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// changeStepper changes the task as a step would, then fails.
type changeStepper struct {
	scriptStepper
	change func(*task.Task)
}

func (c *changeStepper) Step(_ context.Context, t *task.Task) error {
	c.change(t)
	return task.Retry("then it broke", nil)
}
