// Package storetest is the behaviour every task.Store must have, as a test
// suite each implementation runs against itself (Run). It knows no database:
// it speaks task.Store alone, so what it checks holds for all of them.
//
// Import rule: none of task/sqlite, task/postgres or task/internal/sqlstore.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/testclock"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// Open makes a new, empty store whose clock is now. The suite moves the
// clock to run out leases and deadlines, so the store must read no other.
// The suite closes the store when t ends, sometimes after closing it itself.
type Open func(t *testing.T, now func() time.Time) task.Store

// Run runs the suite, each test on a store of its own.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		run  func(t *testing.T, open opener)
	}{
		{"Record", testRecord},
		{"ClaimLeaseAndSave", testClaimLeaseAndSave},
		{"AwaitingApprovalIsDueOnlyWhenAnsweredCancelledOrLate", testAwaitingApprovalIsDue},
		{"AnswerIsACompareAndSwap", testAnswerIsACompareAndSwap},
		{"SaveKeepsAnAnswerGivenMeanwhile", testSaveKeepsAnAnswerGivenMeanwhile},
		{"RequestShownDatesAnUndatedWaitingRequestOnce", testRequestShown},
		{"SaveSeesCancelFromElsewhere", testSaveSeesCancelFromElsewhere},
		{"ActiveAndLatest", testActiveAndLatest},
		{"ConcurrentClaimsTakeEachTaskOnce", testConcurrentClaimsTakeEachTaskOnce},
		{"CountsOnlyUnfinishedTasks", testCountsOnlyUnfinishedTasks},
		{"HoldBranch", testHoldBranch},
		{"PullHeadsAround", testPullHeadsAround},
		{"AdmitCountsAdmittedTasksOfTheInstallation", testUsage},
		{"AdmitIsAtomic", testAdmitIsAtomic},
		{"AdmitCountsReviews", testAdmitCountsReviews},
		{"OneActiveReviewPerPullRequest", testOneActiveReviewPerPull},
		{"NewestOfKinds", testNewest},
		{"NextDueSkipsTasksWaitingForAPerson", testNextDue},
		{"ListPagesFixTasksNewestFirst", testList},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, func(t *testing.T) (task.Store, *testclock.Clock) {
				t.Helper()
				c := testclock.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
				s := open(t, c.Now)
				t.Cleanup(func() { s.Close() })
				return s, c
			})
		})
	}
}

// opener gives a test a new store and the clock it reads.
type opener func(t *testing.T) (task.Store, *testclock.Clock)

func reviewTask(issue int) *task.Task {
	return &task.Task{Kind: task.KindReview, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: issue, IsPR: true}
}

func fixTask(issue int) *task.Task {
	return &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: issue, Instructions: "fix it"}
}

// mustRecord records tk from a delivery of id.
func mustRecord(t *testing.T, s task.Store, id string, tk *task.Task) {
	t.Helper()
	if err := s.Record(context.Background(), task.Delivery{ID: id}, tk); err != nil {
		t.Fatal(err)
	}
}

// claimFirst records a fix of issue 1 and claims it as w1.
func claimFirst(t *testing.T, s task.Store) *task.Task {
	t.Helper()
	tk := fixTask(1)
	mustRecord(t, s, "d1", tk)
	got, err := s.Claim(context.Background(), "w1", time.Minute)
	if err != nil || got.ID != tk.ID {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	return got
}

// saveAndRelease saves tk as owner and gives up owner's lease.
func saveAndRelease(t *testing.T, s task.Store, tk *task.Task, owner string) {
	t.Helper()
	if err := s.Save(context.Background(), tk, owner); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(context.Background(), tk.ID, owner); err != nil {
		t.Fatal(err)
	}
}

func testRecord(t *testing.T, open opener) {
	ctx := context.Background()
	s, _ := open(t)

	first := fixTask(1)
	if err := s.Record(ctx, task.Delivery{ID: "d1", Event: "issue_comment", Action: "created"}, first); err != nil {
		t.Fatalf("record: %v", err)
	}
	if first.ID == 0 || first.State != task.Queued || first.DeliveryID != "d1" {
		t.Fatalf("recorded task = %+v", first)
	}

	tests := []struct {
		name string
		d    task.Delivery
		t    *task.Task
		want error
	}{
		{"redelivery", task.Delivery{ID: "d1", Event: "issue_comment"}, fixTask(2), task.ErrDuplicate},
		{"second fix on a busy issue", task.Delivery{ID: "d2", Event: "issue_comment"}, fixTask(1), task.ErrActive},
		{"fix on another issue", task.Delivery{ID: "d3", Event: "issue_comment"}, fixTask(2), nil},
		{"reply on a busy issue", task.Delivery{ID: "d4", Event: "issue_comment"}, &task.Task{Kind: task.KindReply, Repo: first.Repo, Issue: 1, Reply: "hi"}, nil},
		{"ignored delivery", task.Delivery{ID: "d5", Event: "ping"}, nil, nil},
		{"ignored redelivery", task.Delivery{ID: "d5", Event: "ping"}, nil, task.ErrDuplicate},
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
	if err := s.Record(ctx, task.Delivery{ID: "d2", Event: "issue_comment"}, nil); err != nil {
		t.Fatalf("d2 after refusal: %v", err)
	}
	// None of the three tasks has moved on, so Counts sees them all.
	if n, err := s.Counts(ctx); err != nil || n[task.Queued] != 3 {
		t.Fatalf("tasks = %d (%v), want 3", n[task.Queued], err)
	}
}

func testClaimLeaseAndSave(t *testing.T, open opener) {
	ctx := context.Background()
	s, c := open(t)
	got := claimFirst(t, s)
	if _, err := s.Claim(ctx, "w2", time.Minute); !errors.Is(err, task.ErrNoTask) {
		t.Fatalf("second claim while leased = %v, want ErrNoTask", err)
	}
	got.State = task.Preparing
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatalf("save by owner: %v", err)
	}
	if err := s.Save(ctx, got, "w2"); !errors.Is(err, task.ErrLeaseLost) {
		t.Fatalf("save by stranger = %v, want ErrLeaseLost", err)
	}

	// The worker dies: once its lease runs out another worker takes over.
	c.Advance(2 * time.Minute)
	again, err := s.Claim(ctx, "w2", time.Minute)
	if err != nil || again.ID != got.ID || again.State != task.Preparing {
		t.Fatalf("reclaim = %+v, %v", again, err)
	}
	if err := s.Renew(ctx, got.ID, "w1", time.Minute); !errors.Is(err, task.ErrLeaseLost) {
		t.Fatalf("renew by the dead worker = %v, want ErrLeaseLost", err)
	}
	if err := s.Save(ctx, got, "w1"); !errors.Is(err, task.ErrLeaseLost) {
		t.Fatalf("save by the dead worker = %v, want ErrLeaseLost", err)
	}

	// Released and not due: nobody claims it until run_after.
	again.RunAfter = c.Now().Add(time.Hour)
	saveAndRelease(t, s, again, "w2")
	if _, err := s.Claim(ctx, "w3", time.Minute); !errors.Is(err, task.ErrNoTask) {
		t.Fatalf("claim before due = %v", err)
	}
	c.Advance(time.Hour)
	if _, err := s.Claim(ctx, "w3", time.Minute); err != nil {
		t.Fatalf("claim when due: %v", err)
	}
}

// A task waiting for approval is a row, not a claim: it is due at its
// deadline, or at once when answered or cancelled.
func testAwaitingApprovalIsDue(t *testing.T, open opener) {
	ctx := context.Background()
	park := func(t *testing.T, s task.Store, c *testclock.Clock) *task.Task {
		t.Helper()
		got := claimFirst(t, s)
		got.State = task.AwaitingApproval
		tasktest.Job(got).Request = &task.ExecRequest{ID: fmt.Sprint(got.ID, "-1"), Command: "go test ./...", Asked: true}
		got.RunAfter = c.Now().Add(24 * time.Hour)
		saveAndRelease(t, s, got, "w1")
		if _, err := s.Claim(ctx, "w1", time.Minute); !errors.Is(err, task.ErrNoTask) {
			t.Fatalf("waiting task claimed: %v", err)
		}
		return got
	}
	t.Run("cancelled", func(t *testing.T) {
		s, c := open(t)
		got := park(t, s, c)
		if err := s.RequestCancel(ctx, got.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		if err := s.RequestCancel(ctx, got.ID, "bob"); !errors.Is(err, task.ErrNotFound) {
			t.Fatalf("second cancel = %v, want ErrNotFound", err)
		}
		cl, err := s.Claim(ctx, "w1", time.Minute)
		if err != nil || cl.CancelledBy != "alice" {
			t.Fatalf("claim after cancel = %+v, %v", cl, err)
		}
	})
	t.Run("answered", func(t *testing.T) {
		s, c := open(t)
		got := park(t, s, c)
		if err := s.Answer(ctx, got.ID, tasktest.Job(got).Request.ID, task.Answer{Verdict: task.Approved, By: "alice"}); err != nil {
			t.Fatal(err)
		}
		cl, err := s.Claim(ctx, "w1", time.Minute)
		if err != nil || tasktest.Job(cl).Request.Answer == nil || tasktest.Job(cl).Request.Answer.By != "alice" {
			t.Fatalf("claim after answer = %+v, %v", cl, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		s, c := open(t)
		got := park(t, s, c)
		c.Advance(25 * time.Hour)
		cl, err := s.Claim(ctx, "w1", time.Minute)
		if err != nil || cl.ID != got.ID || tasktest.Job(cl).Request.Answer != nil {
			t.Fatalf("claim after the deadline = %+v, %v", cl, err)
		}
	})
}

func testAnswerIsACompareAndSwap(t *testing.T, open opener) {
	ctx := context.Background()
	s, c := open(t)
	got := claimFirst(t, s)
	tasktest.Job(got).Request = &task.ExecRequest{ID: "1-1", Command: "make"}
	// Not waiting yet: nothing can be answered.
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Answer(ctx, got.ID, "1-1", task.Answer{Verdict: task.Approved}); !errors.Is(err, task.ErrAnswered) {
		t.Fatalf("answer before waiting = %v", err)
	}
	got.State = task.AwaitingApproval
	got.RunAfter = c.Now().Add(time.Hour)
	saveAndRelease(t, s, got, "w1")

	// Many answers at once: exactly one wins.
	var wins, losses int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			err := s.Answer(ctx, got.ID, "1-1", task.Answer{Verdict: task.Approved, By: fmt.Sprint("user", i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, task.ErrAnswered):
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
	if err := s.Answer(ctx, got.ID, "1-2", task.Answer{Verdict: task.Rejected}); !errors.Is(err, task.ErrAnswered) {
		t.Fatalf("answer to another request id = %v", err)
	}
}

// A request an older release asked without GitHub's time gets it once,
// while it waits unanswered, and keeps it; nothing else of the task moves.
func testRequestShown(t *testing.T, open opener) {
	ctx := context.Background()
	s, c := open(t)
	got := claimFirst(t, s)
	tasktest.Job(got).Request = &task.ExecRequest{ID: "1-1", Command: "make", CommentID: 7}
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 23, 11, 59, 30, 0, time.UTC)
	if err := s.RequestShown(ctx, got.ID, "1-1", at); !errors.Is(err, task.ErrAnswered) {
		t.Fatalf("dating a request not waiting yet = %v", err)
	}
	got.State = task.AwaitingApproval
	got.RunAfter = c.Now().Add(time.Hour)
	saveAndRelease(t, s, got, "w1")

	for _, tc := range []struct {
		id   string
		at   time.Time
		want error
	}{
		{"1-2", at, task.ErrAnswered},                  // not the request that waits
		{"1-1", at, nil},                               // the first time
		{"1-1", at.Add(time.Minute), task.ErrAnswered}, // dated already
	} {
		if err := s.RequestShown(ctx, got.ID, tc.id, tc.at); !errors.Is(err, tc.want) {
			t.Fatalf("RequestShown(%s, %s) = %v, want %v", tc.id, tc.at, err, tc.want)
		}
	}
	back, err := s.Get(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	r := tasktest.Job(back).Request
	if r == nil || !r.ShownAt.Equal(at) || r.CommentID != 7 || r.Command != "make" || back.State != task.AwaitingApproval || !back.RunAfter.Equal(got.RunAfter) {
		t.Fatalf("after RequestShown the store holds %+v, request %+v", back, r)
	}
	if _, err := s.Claim(ctx, "w2", time.Minute); !errors.Is(err, task.ErrNoTask) {
		t.Fatalf("a dated request made its task due: %v", err)
	}

	// Answered: no time is written any more.
	got2 := fixTask(2)
	mustRecord(t, s, "d-2", got2)
	claimed, err := s.Claim(ctx, "w1", time.Minute)
	if err != nil || claimed.ID != got2.ID {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}
	claimed.State, claimed.RunAfter = task.AwaitingApproval, c.Now().Add(time.Hour)
	tasktest.Job(claimed).Request = &task.ExecRequest{ID: fmt.Sprintf("%d-1", claimed.ID), Command: "make"}
	saveAndRelease(t, s, claimed, "w1")
	if err := s.Answer(ctx, claimed.ID, tasktest.Job(claimed).Request.ID, task.Answer{Verdict: task.Approved, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestShown(ctx, claimed.ID, tasktest.Job(claimed).Request.ID, at); !errors.Is(err, task.ErrAnswered) {
		t.Fatalf("dating an answered request = %v", err)
	}
}

// A worker that held a waiting task with no answer (woken at the deadline)
// must not erase an answer given meanwhile.
func testSaveKeepsAnAnswerGivenMeanwhile(t *testing.T, open opener) {
	ctx := context.Background()
	s, c := open(t)
	got := claimFirst(t, s)
	got.State = task.AwaitingApproval
	tasktest.Job(got).Request = &task.ExecRequest{ID: "1-1", Command: "make"}
	got.RunAfter = c.Now()
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Answer(ctx, got.ID, "1-1", task.Answer{Verdict: task.Approved, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	got.RunAfter = c.Now().Add(time.Hour) // the worker's stale plan: park until the deadline
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if tasktest.Job(got).Request.Answer == nil || tasktest.Job(got).Request.Answer.By != "alice" {
		t.Fatalf("Save did not hand back the answer: %+v", tasktest.Job(got).Request.Answer)
	}
	stored, _ := s.Get(ctx, got.ID)
	if tasktest.Job(stored).Request.Answer == nil || stored.RunAfter.After(c.Now()) {
		t.Fatalf("stored answer %+v, run after %v; want the answer kept and the task due", tasktest.Job(stored).Request.Answer, stored.RunAfter)
	}
	// A new request starts with no answer.
	tasktest.Job(got).Request = &task.ExecRequest{ID: "1-2", Command: "make test"}
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if stored, _ := s.Get(ctx, got.ID); tasktest.Job(stored).Request.Answer != nil {
		t.Fatalf("new request inherited an answer: %+v", tasktest.Job(stored).Request.Answer)
	}
}

func testSaveSeesCancelFromElsewhere(t *testing.T, open opener) {
	ctx := context.Background()
	s, _ := open(t)
	got := claimFirst(t, s)
	if err := s.RequestCancel(ctx, got.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	got.State = task.Preparing
	if err := s.Save(ctx, got, "w1"); err != nil {
		t.Fatal(err)
	}
	if got.CancelledBy != "alice" {
		t.Fatalf("CancelledBy after save = %q", got.CancelledBy)
	}
	// Saving does not erase the cancel.
	stored, _ := s.Get(ctx, got.ID)
	if stored.CancelledBy != "alice" || stored.State != task.Preparing {
		t.Fatalf("stored = %+v", stored)
	}
}

func testActiveAndLatest(t *testing.T, open opener) {
	ctx := context.Background()
	s, _ := open(t)
	tk := fixTask(7)
	if _, err := s.Active(ctx, tk.IssueKey()); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("active on empty store = %v", err)
	}
	mustRecord(t, s, "d1", tk)
	if a, err := s.Active(ctx, tk.IssueKey()); err != nil || a.ID != tk.ID {
		t.Fatalf("active = %v, %v", a, err)
	}
	got, _ := s.Claim(ctx, "w", time.Minute)
	got.State = task.Failed
	if err := s.Save(ctx, got, "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Active(ctx, tk.IssueKey()); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("active after failure = %v", err)
	}
	if l, err := s.Latest(ctx, tk.IssueKey()); err != nil || l.State != task.Failed {
		t.Fatalf("latest = %v, %v", l, err)
	}
	// The finished task no longer blocks a new one.
	if err := s.Record(ctx, task.Delivery{ID: "d2"}, fixTask(7)); err != nil {
		t.Fatalf("new fix after failure: %v", err)
	}
}

func testConcurrentClaimsTakeEachTaskOnce(t *testing.T, open opener) {
	ctx := context.Background()
	s, _ := open(t)
	const n = 40
	for i := range n {
		mustRecord(t, s, fmt.Sprint("d", i), fixTask(i+1))
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
				if errors.Is(err, task.ErrNoTask) {
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

func testCountsOnlyUnfinishedTasks(t *testing.T, open opener) {
	ctx := context.Background()
	s, c := open(t)
	if got, err := s.Counts(ctx); err != nil || len(got) != 0 {
		t.Fatalf("counts of an empty store = %v, %v", got, err)
	}
	for i := 1; i <= 4; i++ {
		mustRecord(t, s, fmt.Sprintf("d%d", i), fixTask(i))
	}
	// Claims take the oldest due task: 1, 2 and 3 move on (and are not due
	// again), 4 stays queued.
	for _, to := range []task.State{task.Working, task.AwaitingApproval, task.Done} {
		tk, err := s.Claim(ctx, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		tk.State, tk.RunAfter = to, c.Now().Add(time.Hour)
		if to == task.AwaitingApproval {
			tasktest.Job(tk).Request = &task.ExecRequest{ID: fmt.Sprintf("%d-1", tk.ID), Command: "make test"}
		}
		saveAndRelease(t, s, tk, "w")
	}
	got, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[task.State]int{task.Queued: 1, task.Working: 1, task.AwaitingApproval: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts = %v, want %v", got, want)
	}

	s.Close()
	if _, err := s.Counts(ctx); err == nil {
		t.Fatal("counts on a closed store succeeded")
	}
}

func testHoldBranch(t *testing.T, open opener) {
	ctx := context.Background()
	s, c := open(t)
	record := func(id string, issue int, branch string) *task.Task {
		t.Helper()
		tk := fixTask(issue)
		mustRecord(t, s, id, tk)
		tasktest.Job(tk).Branch = branch
		return tk
	}
	first := record("d1", 1, "feature")
	second := record("d2", 2, "feature")
	other := record("d3", 3, "feature")
	other.Repo.Name = "elsewhere"
	upper := record("d4", 4, "feature")
	upper.Repo.Owner = "O" // the same repository as first's, spelt otherwise

	steps := []struct {
		name       string
		t          *task.Task
		wantHolder int64
	}{
		{"free branch", first, 0},
		{"the holder again", first, 0},
		{"held by another task", second, first.ID},
		{"same name in another repository", other, 0},
		{"the owner's name in another case", upper, first.ID},
	}
	for _, st := range steps {
		holder, err := s.HoldBranch(ctx, st.t)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := int64(0); holder != nil {
			got = holder.ID
			if got != st.wantHolder {
				t.Fatalf("%s: held by %d, want %d", st.name, got, st.wantHolder)
			}
		} else if st.wantHolder != 0 {
			t.Fatalf("%s: held, want held by %d", st.name, st.wantHolder)
		}
	}

	// The branch is free again once its task ends.
	got, err := s.Claim(ctx, "w", time.Minute)
	if err != nil || got.ID != first.ID {
		t.Fatalf("claim = %v, %v", got, err)
	}
	got.State = task.Failed
	if err := s.Save(ctx, got, "w"); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	if holder, err := s.HoldBranch(ctx, second); err != nil || holder != nil {
		t.Fatalf("after the holder ended: %v, %v", holder, err)
	}
	// Save leaves the hold alone.
	if holder, err := s.HoldBranch(ctx, upper); err != nil || holder == nil || holder.ID != second.ID {
		t.Fatalf("hold of a held branch after saves = %v, %v; want task %d", holder, err, second.ID)
	}
}

func testPullHeadsAround(t *testing.T, open opener) {
	ctx := context.Background()
	s, _ := open(t)
	const key = "o/r#2"
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	at := func(m int) time.Time { return time.Date(2026, 11, 23, 12, m, 0, 0, time.UTC) }
	n := 0
	record := func(key, sha string, m int) {
		t.Helper()
		n++
		if err := s.Record(ctx, task.Delivery{ID: fmt.Sprint("d", n), Event: "pull_request", Head: &task.HeadPush{PullKey: key, SHA: sha, At: at(m)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Received out of GitHub's order, and one pull request apart.
	record(key, b, 5)
	record(key, a, 1)
	record(key, c, 5)
	record(key, a, 8)
	record("o/r#3", c, 2)
	tests := []struct {
		sha  string
		at   int
		want task.HeadsAround
	}{
		{a, 0, task.HeadsAround{Since: true}},                      // nothing before; a came at 1 and 8
		{a, 3, task.HeadsAround{Before: []string{a}, Since: true}}, // a again at 8
		{b, 3, task.HeadsAround{Before: []string{a}, Since: true}}, // b came at 5
		{b, 7, task.HeadsAround{Before: []string{b, c}}},           // two heads in one second
		{c, 5, task.HeadsAround{Before: []string{a}, Since: true}}, // the same second counts as since
		{b, 9, task.HeadsAround{Before: []string{a}}},              // the latest by GitHub's clock, not by receipt
	}
	for _, tc := range tests {
		got, err := s.PullHeadsAround(ctx, key, tc.sha, at(tc.at))
		if err != nil || !slices.Equal(got.Before, tc.want.Before) || got.Since != tc.want.Since {
			t.Errorf("PullHeadsAround(%s, %d) = %+v, %v; want %+v", tc.sha[:1], tc.at, got, err, tc.want)
		}
	}
	// A redelivery is a duplicate and adds nothing.
	if err := s.Record(ctx, task.Delivery{ID: "d1", Head: &task.HeadPush{PullKey: key, SHA: b, At: at(9)}}, nil); !errors.Is(err, task.ErrDuplicate) {
		t.Fatalf("redelivery = %v", err)
	}
	if got, _ := s.PullHeadsAround(ctx, key, b, at(9)); got.Since {
		t.Fatal("a duplicate delivery was recorded")
	}
}

func testUsage(t *testing.T, open opener) {
	ctx := context.Background()
	s, clk := open(t)
	record := func(id string, tk *task.Task, admitted bool) *task.Task {
		t.Helper()
		if admitted {
			tk.AdmittedMS = clk.Now().UnixMilli()
		}
		mustRecord(t, s, id, tk)
		return tk
	}
	old := record("old", fixTask(1), true) // admitted two hours ago, still running
	clk.Advance(time.Hour)
	record("refused", fixTask(2), false) // refused requests never count
	done := record("done", fixTask(3), true)
	clk.Advance(30 * time.Minute)
	recent := record("recent", fixTask(4), true)
	other := fixTask(5)
	other.Repo.InstallationID = 11 // its key starts "11/": not installation 1's
	record("other", other, true)
	record("reply", &task.Task{Kind: task.KindReply, Repo: fixTask(0).Repo, Issue: 6}, true)
	clk.Advance(30 * time.Minute)

	// The done task is over: it counts for the hour, not as running.
	if err := claimAndMove(ctx, s, done.ID, task.Done); err != nil {
		t.Fatal(err)
	}
	since := clk.Now().Add(-time.Hour) // recent is inside the hour, done on its edge
	tests := []struct {
		except              int64
		wantActive, wantNew int
	}{
		{0, 2, 2},
		{old.ID, 1, 2},
		{recent.ID, 1, 1},
	}
	for _, tt := range tests {
		// A task that does not fit is counted and left as it was.
		probe := &task.Task{ID: tt.except, Repo: fixTask(0).Repo}
		active, started, ok, err := s.Admit(ctx, probe, since, clk.Now(), func(int, int) bool { return false })
		if err != nil || ok || probe.AdmittedMS != 0 {
			t.Fatalf("Admit that does not fit = %v, %v, AdmittedMS %d", ok, err, probe.AdmittedMS)
		}
		if active != tt.wantActive || started != tt.wantNew {
			t.Errorf("Admit(task %d) counted %d active, %d new; want %d, %d", tt.except, active, started, tt.wantActive, tt.wantNew)
		}
	}
}

// testAdmitIsAtomic admits ten tasks of one installation at once with room
// for three: exactly three are admitted, and the mark is stored.
func testAdmitIsAtomic(t *testing.T, open opener) {
	ctx := context.Background()
	s, clk := open(t)
	var tasks []*task.Task
	for i := range 10 {
		tk := fixTask(i + 1)
		mustRecord(t, s, fmt.Sprint("d", i), tk)
		tasks = append(tasks, tk)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted []int64
	)
	for _, tk := range tasks {
		wg.Go(func() {
			_, _, ok, err := s.Admit(ctx, tk, clk.Now().Add(-time.Hour), clk.Now(), func(active, _ int) bool { return active < 3 })
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				admitted = append(admitted, tk.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(admitted) != 3 {
		t.Fatalf("admitted %d tasks with room for 3: %v", len(admitted), admitted)
	}
	for _, id := range admitted {
		got, err := s.Get(ctx, id)
		if err != nil || got.AdmittedMS != clk.Now().UnixMilli() {
			t.Errorf("task %d after Admit: AdmittedMS %d (%v), want %d", id, got.AdmittedMS, err, clk.Now().UnixMilli())
		}
	}
}

// claimAndMove puts task id in state to, as a worker would; it leases the
// tasks due before it on the way.
func claimAndMove(ctx context.Context, s task.Store, id int64, to task.State) error {
	for {
		tk, err := s.Claim(ctx, "test", time.Minute)
		if err != nil {
			return err
		}
		if tk.ID != id {
			continue // leased now, so the next claim finds the next task
		}
		tk.State = to
		return s.Save(ctx, tk, "test")
	}
}

// Pool.Drain waits for NextDue, so a store that has it (task.Due) must
// leave out a task that waits for a person, and count it again once
// answered.
func testNextDue(t *testing.T, open opener) {
	ctx := context.Background()
	s, c := open(t)
	due, ok := s.(task.Due)
	if !ok {
		t.Skipf("%T is not a task.Due", s)
	}
	next := func(want time.Time) {
		t.Helper()
		at, ok, err := due.NextDue(ctx)
		if err != nil || ok != !want.IsZero() || !at.Equal(want) {
			t.Fatalf("NextDue = %v, %v, %v; want %v", at, ok, err, want)
		}
	}
	next(time.Time{})
	first, second := fixTask(1), fixTask(2)
	second.RunAfter = c.Now().Add(30 * time.Second) // a retry's back-off
	for i, tk := range []*task.Task{first, second} {
		mustRecord(t, s, fmt.Sprint("d", i), tk)
	}
	next(first.RunAfter)

	got, err := s.Claim(ctx, "w", time.Minute)
	if err != nil || got.ID != first.ID {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	got.State, got.RunAfter = task.AwaitingApproval, c.Now().Add(time.Hour)
	tasktest.Job(got).Request = &task.ExecRequest{ID: fmt.Sprint(got.ID, "-1"), Command: "make", Asked: true}
	saveAndRelease(t, s, got, "w")
	next(second.RunAfter)

	c.Advance(time.Second)
	if err := s.Answer(ctx, got.ID, tasktest.Job(got).Request.ID, task.Answer{Verdict: task.Approved, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	next(c.Now())
}

func testList(t *testing.T, open opener) {
	ctx := context.Background()
	s, _ := open(t)
	l, ok := s.(task.Lister)
	if !ok {
		t.Fatalf("%T does not implement task.Lister", s)
	}
	if got, err := l.List(ctx, task.ListQuery{}); err != nil || len(got) != 0 {
		t.Fatalf("list of an empty store = %v, %v", got, err)
	}
	// Five fixes over two repositories (one named in another case), one
	// of them done, and a reply, which is no fix and never listed.
	ids := map[string]int64{}
	for i, r := range []struct {
		name, owner, repo string
		state             task.State
		kind              task.Kind
	}{
		// A review is a person's work too (its runs are asked for, its
		// model calls cost): listed like a fix.
		{"r1", "o", "d", task.Done, task.KindReview},
		{"a1", "o", "a", "", ""},
		{"b1", "o", "b", "", ""},
		{"a2", "O", "A", task.Done, ""},
		{"a3", "o", "a", "", ""},
		{"b2", "o", "b", "", ""},
	} {
		kind := task.KindFix
		if r.kind != "" {
			kind = r.kind
		}
		tk := &task.Task{Kind: kind, State: r.state, Repo: pullwright.Repo{InstallationID: 1, Owner: r.owner, Name: r.repo}, Issue: i + 1,
			Instructions: "fix " + r.name}
		if j, ok := tk.Job(); ok {
			*j.Work = task.Work{Conversation: []byte(`{"big":true}`), Files: []task.FileSnapshot{{Path: "f", Content: []byte("x")}}}
		}
		mustRecord(t, s, "d-"+r.name, tk)
		ids[r.name] = tk.ID
	}
	mustRecord(t, s, "d-reply", &task.Task{Kind: task.KindReply, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "a"}, Issue: 9, Reply: "hi"})

	names := func(ts []*task.Task) []string {
		var out []string
		for _, tk := range ts {
			for n, id := range ids {
				if id == tk.ID {
					out = append(out, n)
				}
			}
		}
		return out
	}
	tests := []struct {
		name string
		q    func() task.ListQuery
		want []string
	}{
		{"all, newest first", func() task.ListQuery { return task.ListQuery{} }, []string{"b2", "a3", "a2", "b1", "a1", "r1"}},
		{"one repository, its name in any case", func() task.ListQuery { return task.ListQuery{Repo: "O/a"} }, []string{"a3", "a2", "a1"}},
		{"one state", func() task.ListQuery { return task.ListQuery{State: task.Done} }, []string{"a2", "r1"}},
		{"repository and state", func() task.ListQuery { return task.ListQuery{Repo: "o/b", State: task.Queued} }, []string{"b2", "b1"}},
		{"a page", func() task.ListQuery { return task.ListQuery{Limit: 2} }, []string{"b2", "a3"}},
		{"the page after", func() task.ListQuery { return task.ListQuery{Limit: 2, Before: ids["a3"]} }, []string{"a2", "b1"}},
		{"the last page", func() task.ListQuery { return task.ListQuery{Limit: 2, Before: ids["b1"]} }, []string{"a1", "r1"}},
		{"no such repository", func() task.ListQuery { return task.ListQuery{Repo: "o/c"} }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.List(ctx, tc.q())
			if err != nil {
				t.Fatal(err)
			}
			if n := names(got); !slices.Equal(n, tc.want) {
				t.Fatalf("listed %v, want %v", n, tc.want)
			}
			for _, tk := range got {
				if j, ok := tk.Job(); ok && (j.Conversation != nil || j.Files != nil) {
					t.Errorf("task %d listed with its conversation or files", tk.ID)
				}
				if (tk.Kind != task.KindFix && tk.Kind != task.KindReview) || tk.Repo.InstallationID != 1 || !strings.HasPrefix(tk.Instructions, "fix ") {
					t.Errorf("task %d listed as %+v", tk.ID, tk)
				}
			}
		})
	}
	// Get still reads the whole task.
	if full, err := s.Get(ctx, ids["a1"]); err != nil || len(tasktest.Job(full).Conversation) == 0 || len(tasktest.Job(full).Files) != 1 {
		t.Fatalf("get after list = %+v, %v", full, err)
	}
}

// testAdmitCountsReviews: a review runs the agent as a fix does, so it
// counts against the installation's rates as one, running and in the hour.
func testAdmitCountsReviews(t *testing.T, open opener) {
	ctx := context.Background()
	s, clk := open(t)
	record := func(id string, tk *task.Task) *task.Task {
		t.Helper()
		tk.AdmittedMS = clk.Now().UnixMilli()
		mustRecord(t, s, id, tk)
		return tk
	}
	record("fix", fixTask(1))
	record("review", reviewTask(2))
	done := record("done review", reviewTask(3))
	if err := claimAndMove(ctx, s, done.ID, task.Done); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	probe := &task.Task{Kind: task.KindReview, Repo: fixTask(0).Repo}
	active, started, ok, err := s.Admit(ctx, probe, clk.Now().Add(-time.Hour), clk.Now(), func(active, started int) bool { return active < 2 && started < 3 })
	if err != nil {
		t.Fatal(err)
	}
	if active != 2 || started != 3 || ok {
		t.Fatalf("Admit counted %d running, %d in the hour, admitted %v; want 2, 3, refused", active, started, ok)
	}
}

// testOneActiveReviewPerPull: a second review of a pull request while one
// is active is refused as a second fix is; a fix and a review do not
// refuse each other, and an ended review refuses nothing.
func testOneActiveReviewPerPull(t *testing.T, open opener) {
	ctx := context.Background()
	s, _ := open(t)
	first := reviewTask(5)
	mustRecord(t, s, "d1", first)
	if err := s.Record(ctx, task.Delivery{ID: "d2"}, reviewTask(5)); !errors.Is(err, task.ErrActive) {
		t.Fatalf("second review of a pull request = %v, want ErrActive", err)
	}
	// Refused, d2 wrote nothing.
	if err := s.Record(ctx, task.Delivery{ID: "d2"}, nil); err != nil {
		t.Fatalf("d2 after refusal: %v", err)
	}
	mustRecord(t, s, "d3", reviewTask(6))
	mustRecord(t, s, "d4", fixTask(5))
	if err := s.Record(ctx, task.Delivery{ID: "d5"}, reviewTask(6)); !errors.Is(err, task.ErrActive) {
		t.Fatalf("second review beside a fix = %v, want ErrActive", err)
	}
	if err := claimAndMove(ctx, s, first.ID, task.Cancelled); err != nil {
		t.Fatal(err)
	}
	mustRecord(t, s, "d6", reviewTask(5))
}

// testNewest: Newest finds the kinds asked for; Active and Latest still
// find fixes only, which is what a bare /approve answers.
func testNewest(t *testing.T, open opener) {
	ctx := context.Background()
	s, _ := open(t)
	fix, review := fixTask(7), reviewTask(7)
	key := fix.IssueKey()
	mustRecord(t, s, "d1", review)
	if _, err := s.Active(ctx, key); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("Active with only a review = %v, want ErrNotFound", err)
	}
	if _, err := s.Latest(ctx, key); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("Latest with only a review = %v, want ErrNotFound", err)
	}
	mustRecord(t, s, "d2", fix)
	tests := []struct {
		active bool
		kinds  []task.Kind
		want   int64
	}{
		{true, []task.Kind{task.KindFix}, fix.ID},
		{true, []task.Kind{task.KindReview}, review.ID},
		{true, []task.Kind{task.KindFix, task.KindReview}, fix.ID},
		{false, []task.Kind{task.KindReview}, review.ID},
		{true, []task.Kind{task.KindStatus}, 0},
		{true, nil, 0},
	}
	for _, tt := range tests {
		got, err := s.Newest(ctx, key, tt.active, tt.kinds...)
		switch {
		case tt.want == 0 && !errors.Is(err, task.ErrNotFound):
			t.Errorf("Newest(%v, %v) = %v, %v; want ErrNotFound", tt.active, tt.kinds, got, err)
		case tt.want != 0 && (err != nil || got.ID != tt.want):
			t.Errorf("Newest(%v, %v) = %v, %v; want task %d", tt.active, tt.kinds, got, err, tt.want)
		}
	}
	// The fix ends: the review is the only active task, the fix the newest.
	if err := claimAndMove(ctx, s, fix.ID, task.Done); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Newest(ctx, key, true, task.KindFix, task.KindReview); err != nil || got.ID != review.ID {
		t.Fatalf("active fix or review after the fix ended = %v, %v; want the review %d", got, err, review.ID)
	}
	if got, err := s.Newest(ctx, key, false, task.KindFix, task.KindReview); err != nil || got.ID != fix.ID || got.State != task.Done {
		t.Fatalf("newest fix or review = %v, %v; want the ended fix %d", got, err, fix.ID)
	}
}
