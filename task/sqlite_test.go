package task

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
)

// clock is a settable time source shared by the store under test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func openTestStore(t *testing.T) (*SQLite, *clock) {
	t.Helper()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := &clock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	s.now = c.Now
	return s, c
}

func fixTask(issue int) *Task {
	return &Task{Kind: KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: issue, Instructions: "fix it"}
}

func TestRecord(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)

	first := fixTask(1)
	if err := s.Record(ctx, Delivery{ID: "d1", Event: "issue_comment", Action: "created"}, first); err != nil {
		t.Fatalf("record: %v", err)
	}
	if first.ID == 0 || first.State != Queued || first.DeliveryID != "d1" {
		t.Fatalf("recorded task = %+v", first)
	}

	tests := []struct {
		name string
		d    Delivery
		t    *Task
		want error
	}{
		{"redelivery", Delivery{ID: "d1", Event: "issue_comment"}, fixTask(2), ErrDuplicate},
		{"second fix on a busy issue", Delivery{ID: "d2", Event: "issue_comment"}, fixTask(1), ErrActive},
		{"fix on another issue", Delivery{ID: "d3", Event: "issue_comment"}, fixTask(2), nil},
		{"reply on a busy issue", Delivery{ID: "d4", Event: "issue_comment"}, &Task{Kind: KindReply, Repo: first.Repo, Issue: 1, Reply: "hi"}, nil},
		{"ignored delivery", Delivery{ID: "d5", Event: "ping"}, nil, nil},
		{"ignored redelivery", Delivery{ID: "d5", Event: "ping"}, nil, ErrDuplicate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Record(ctx, tc.d, tc.t)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Record = %v, want %v", err, tc.want)
			}
		})
	}

	// A refused fix wrote nothing: d2 can still be recorded as something else.
	if err := s.Record(ctx, Delivery{ID: "d2", Event: "issue_comment"}, nil); err != nil {
		t.Fatalf("d2 after refusal: %v", err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM tasks`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("tasks = %d (%v), want 3", n, err)
	}
}

func TestClaimLeaseAndSave(t *testing.T) {
	ctx := context.Background()
	s, c := openTestStore(t)
	tk := fixTask(1)
	if err := s.Record(ctx, Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}

	got, err := s.Claim(ctx, "w1", time.Minute)
	if err != nil || got.ID != tk.ID {
		t.Fatalf("claim = %v, %v", got, err)
	}
	if _, err := s.Claim(ctx, "w2", time.Minute); !errors.Is(err, ErrNoTask) {
		t.Fatalf("second claim while leased = %v, want ErrNoTask", err)
	}
	got.State = Preparing
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatalf("save by owner: %v", err)
	}
	if err := s.Save(ctx, got, "w2"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("save by stranger = %v, want ErrLeaseLost", err)
	}

	// The worker dies: once its lease runs out another worker takes over.
	c.Add(2 * time.Minute)
	again, err := s.Claim(ctx, "w2", time.Minute)
	if err != nil || again.ID != tk.ID || again.State != Preparing {
		t.Fatalf("reclaim = %+v, %v", again, err)
	}
	if err := s.Renew(ctx, tk.ID, "w1", time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renew by the dead worker = %v, want ErrLeaseLost", err)
	}
	if err := s.Save(ctx, got, "w1"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("save by the dead worker = %v, want ErrLeaseLost", err)
	}

	// Released and not due: nobody claims it until run_after.
	again.RunAfter = c.Now().Add(time.Hour)
	if err := s.Save(ctx, again, "w2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, tk.ID, "w2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "w3", time.Minute); !errors.Is(err, ErrNoTask) {
		t.Fatalf("claim before due = %v", err)
	}
	c.Add(time.Hour)
	if _, err := s.Claim(ctx, "w3", time.Minute); err != nil {
		t.Fatalf("claim when due: %v", err)
	}
}

// A task waiting for approval is a row, not a claim: it is due at its
// deadline, or at once when answered or cancelled.
func TestAwaitingApprovalIsDueOnlyWhenAnsweredCancelledOrLate(t *testing.T) {
	ctx := context.Background()
	park := func(t *testing.T, s *SQLite, c *clock) *Task {
		t.Helper()
		tk := fixTask(1)
		if err := s.Record(ctx, Delivery{ID: "d1"}, tk); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Claim(ctx, "w1", time.Minute)
		got.State = AwaitingApproval
		got.Request = &ExecRequest{ID: fmt.Sprint(got.ID, "-1"), Command: "go test ./...", Asked: true}
		got.RunAfter = c.Now().Add(24 * time.Hour)
		if err := s.Save(ctx, got, "w1"); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, got.ID, "w1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Claim(ctx, "w1", time.Minute); !errors.Is(err, ErrNoTask) {
			t.Fatalf("waiting task claimed: %v", err)
		}
		return got
	}
	t.Run("cancelled", func(t *testing.T) {
		s, c := openTestStore(t)
		got := park(t, s, c)
		if err := s.RequestCancel(ctx, got.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		if err := s.RequestCancel(ctx, got.ID, "bob"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second cancel = %v, want ErrNotFound", err)
		}
		cl, err := s.Claim(ctx, "w1", time.Minute)
		if err != nil || cl.CancelledBy != "alice" {
			t.Fatalf("claim after cancel = %+v, %v", cl, err)
		}
	})
	t.Run("answered", func(t *testing.T) {
		s, c := openTestStore(t)
		got := park(t, s, c)
		if err := s.Answer(ctx, got.ID, got.Request.ID, Answer{Verdict: Approved, By: "alice"}); err != nil {
			t.Fatal(err)
		}
		cl, err := s.Claim(ctx, "w1", time.Minute)
		if err != nil || cl.Request.Answer == nil || cl.Request.Answer.By != "alice" {
			t.Fatalf("claim after answer = %+v, %v", cl, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		s, c := openTestStore(t)
		got := park(t, s, c)
		c.Add(25 * time.Hour)
		cl, err := s.Claim(ctx, "w1", time.Minute)
		if err != nil || cl.ID != got.ID || cl.Request.Answer != nil {
			t.Fatalf("claim after the deadline = %+v, %v", cl, err)
		}
	})
}

func TestAnswerIsACompareAndSwap(t *testing.T) {
	ctx := context.Background()
	s, c := openTestStore(t)
	tk := fixTask(1)
	if err := s.Record(ctx, Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Claim(ctx, "w1", time.Minute)
	got.Request = &ExecRequest{ID: "1-1", Command: "make"}
	// Not waiting yet: nothing can be answered.
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Answer(ctx, got.ID, "1-1", Answer{Verdict: Approved}); !errors.Is(err, ErrAnswered) {
		t.Fatalf("answer before waiting = %v", err)
	}
	got.State = AwaitingApproval
	got.RunAfter = c.Now().Add(time.Hour)
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	s.Release(ctx, got.ID, "w1")

	// Many answers at once: exactly one wins.
	var wins, losses int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			err := s.Answer(ctx, got.ID, "1-1", Answer{Verdict: Approved, By: fmt.Sprint("user", i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, ErrAnswered):
				losses++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || losses != 15 {
		t.Fatalf("wins %d, losses %d; want 1 and 15", wins, losses)
	}
	if err := s.Answer(ctx, got.ID, "1-2", Answer{Verdict: Rejected}); !errors.Is(err, ErrAnswered) {
		t.Fatalf("answer to another request id = %v", err)
	}
}

// A worker that held a waiting task with no answer (woken at the deadline)
// must not erase an answer given meanwhile.
func TestSaveKeepsAnAnswerGivenMeanwhile(t *testing.T) {
	ctx := context.Background()
	s, c := openTestStore(t)
	tk := fixTask(1)
	if err := s.Record(ctx, Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Claim(ctx, "w1", time.Minute)
	got.State = AwaitingApproval
	got.Request = &ExecRequest{ID: "1-1", Command: "make"}
	got.RunAfter = c.Now()
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Answer(ctx, got.ID, "1-1", Answer{Verdict: Approved, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	got.RunAfter = c.Now().Add(time.Hour) // the worker's stale plan: park until the deadline
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if got.Request.Answer == nil || got.Request.Answer.By != "alice" {
		t.Fatalf("Save did not hand back the answer: %+v", got.Request.Answer)
	}
	stored, _ := s.Get(ctx, got.ID)
	if stored.Request.Answer == nil || stored.RunAfter.After(c.Now()) {
		t.Fatalf("stored answer %+v, run after %v; want the answer kept and the task due", stored.Request.Answer, stored.RunAfter)
	}
	// A new request starts with no answer.
	got.Request = &ExecRequest{ID: "1-2", Command: "make test"}
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if stored, _ := s.Get(ctx, got.ID); stored.Request.Answer != nil {
		t.Fatalf("new request inherited an answer: %+v", stored.Request.Answer)
	}
}

func TestSaveSeesCancelFromElsewhere(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	tk := fixTask(1)
	if err := s.Record(ctx, Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Claim(ctx, "w1", time.Minute)
	if err := s.RequestCancel(ctx, got.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	got.State = Preparing
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if got.CancelledBy != "alice" {
		t.Fatalf("CancelledBy after save = %q", got.CancelledBy)
	}
	// Saving does not erase the cancel.
	stored, _ := s.Get(ctx, got.ID)
	if stored.CancelledBy != "alice" || stored.State != Preparing {
		t.Fatalf("stored = %+v", stored)
	}
}

func TestActiveAndLatest(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	tk := fixTask(7)
	if _, err := s.Active(ctx, tk.IssueKey()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("active on empty store = %v", err)
	}
	if err := s.Record(ctx, Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Active(ctx, tk.IssueKey()); err != nil || a.ID != tk.ID {
		t.Fatalf("active = %v, %v", a, err)
	}
	got, _ := s.Claim(ctx, "w", time.Minute)
	got.State = Failed
	if err := s.Save(ctx, got, "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Active(ctx, tk.IssueKey()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("active after failure = %v", err)
	}
	if l, err := s.Latest(ctx, tk.IssueKey()); err != nil || l.State != Failed {
		t.Fatalf("latest = %v, %v", l, err)
	}
	// The finished task no longer blocks a new one.
	if err := s.Record(ctx, Delivery{ID: "d2"}, fixTask(7)); err != nil {
		t.Fatalf("new fix after failure: %v", err)
	}
}

func TestConcurrentClaimsTakeEachTaskOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	const n = 40
	for i := range n {
		if err := s.Record(ctx, Delivery{ID: fmt.Sprint("d", i)}, fixTask(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu   sync.Mutex
		seen = map[int64]string{}
		wg   sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			owner := fmt.Sprint("w", w)
			for {
				tk, err := s.Claim(ctx, owner, time.Hour)
				if errors.Is(err, ErrNoTask) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, dup := seen[tk.ID]; dup {
					t.Errorf("task %d claimed by %s and %s", tk.ID, prev, owner)
				}
				seen[tk.ID] = owner
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d tasks, want %d", len(seen), n)
	}
}

func TestCanMove(t *testing.T) {
	tests := []struct {
		from, to State
		want     bool
	}{
		{Queued, Preparing, true},
		{Queued, Working, false},
		{Preparing, Working, true},
		{Working, Publishing, true},
		{Working, AwaitingApproval, true},
		{AwaitingApproval, Running, true},
		{AwaitingApproval, Working, true},
		{Running, Working, true},
		{Publishing, Done, true},
		{Working, Failed, true},
		{AwaitingApproval, Cancelled, true},
		{Done, Failed, false},
		{Failed, Queued, false},
		{Publishing, Working, false},
	}
	for _, tc := range tests {
		if got := CanMove(tc.from, tc.to); got != tc.want {
			t.Errorf("CanMove(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestCountsOnlyUnfinishedTasks(t *testing.T) {
	ctx := context.Background()
	s, c := openTestStore(t)
	if got, err := s.Counts(ctx); err != nil || len(got) != 0 {
		t.Fatalf("counts of an empty store = %v, %v", got, err)
	}
	for i := 1; i <= 4; i++ {
		if err := s.Record(ctx, Delivery{ID: fmt.Sprintf("d%d", i)}, fixTask(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Claims take the oldest due task: 1, 2 and 3 move on (and are not due
	// again), 4 stays queued.
	for _, to := range []State{Working, AwaitingApproval, Done} {
		tk, err := s.Claim(ctx, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		tk.State, tk.RunAfter = to, c.Now().Add(time.Hour)
		if to == AwaitingApproval {
			tk.Request = &ExecRequest{ID: fmt.Sprintf("%d-1", tk.ID), Command: "make test"}
		}
		if err := s.Save(ctx, tk, "w"); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, tk.ID, "w"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[State]int{Queued: 1, Working: 1, AwaitingApproval: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts = %v, want %v", got, want)
	}

	s.Close()
	if _, err := s.Counts(ctx); err == nil {
		t.Fatal("counts on a closed store succeeded")
	}
}
