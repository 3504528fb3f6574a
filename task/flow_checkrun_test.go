package task_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// Parking a request costs the same calls however many check runs its
// commit already holds: its check runs are created as first tries, with
// no look for an earlier one.
func TestParkingCostsTheSameCallsWhateverTheCommitHolds(t *testing.T) {
	var first map[string]int
	for _, held := range []int{0, 100, 1000} {
		t.Run(fmt.Sprint(held, " runs held"), func(t *testing.T) {
			w := newWorld(t)
			w.gh.HeldRuns = held
			w.agent.Script = []tasktest.Turn{pending("go test ./...", map[string]string{"README.md": "# widget\n\nNo typo.\n"})}
			fix := w.fix("fix the typo")
			w.drain()
			got := w.want(fix.ID, task.AwaitingApproval)
			if tasktest.Job(got).Request.CheckRunID == 0 {
				t.Fatal("parked without an approval check run")
			}
			if n := w.gh.Asked["FindCheckRun"]; n != 0 {
				t.Errorf("parking looked for a check run %d times, want 0", n)
			}
			if first == nil {
				first = maps.Clone(w.gh.Asked)
			} else if !maps.Equal(w.gh.Asked, first) {
				t.Errorf("calls %v, want %v as with no runs held", w.gh.Asked, first)
			}
		})
	}
}

// A create whose answer never came back (the same, to the task, as the
// bot stopping between create and save) is retried by a later claim, which
// finds the run it made instead of making a second one.
func TestAReplayedCheckRunCreateFindsItsRun(t *testing.T) {
	w := newWorld(t)
	w.gh.HeldRuns = 100
	w.gh.LoseCheckRunCreates = 1
	w.agent.Script = []tasktest.Turn{pending("go test ./...", map[string]string{"README.md": "# widget\n\nNo typo.\n"})}
	fix := w.fix("fix the typo")
	w.drain()
	got := w.want(fix.ID, task.AwaitingApproval)
	r := tasktest.Job(got).Request
	var ours []int64
	for id, cr := range w.gh.CheckRuns {
		if cr.Name == task.ApprovalCheck && cr.ExternalID == r.ID {
			ours = append(ours, id)
		}
	}
	if len(ours) != 1 || ours[0] != r.CheckRunID {
		t.Fatalf("approval check runs of request %s: %v, the task keeps %d; want exactly that one", r.ID, ours, r.CheckRunID)
	}
	if n := w.gh.Asked["FindCheckRun"]; n != 1 {
		t.Errorf("looked for the check run %d times, want once (the replay)", n)
	}
	if w.gh.LoseCheckRunCreates != 0 {
		t.Error("no create was lost: the test did not replay")
	}
}
