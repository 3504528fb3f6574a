package webhook

import (
	"context"
	"testing"

	"github.com/pullwright/pullwright/task"
)

// refusing refuses every task of kind with ErrActive and records the rest.
type refusing struct {
	kind     task.Kind
	recorded []task.Task
}

func (r *refusing) Record(_ context.Context, _ task.Delivery, t *task.Task) error {
	if t != nil && t.Kind == r.kind {
		return task.ErrActive
	}
	if t != nil {
		r.recorded = append(r.recorded, *t)
	}
	return nil
}

// A review refused because one runs is recorded as a busy task that
// remembers it was a review, as a refused fix is recorded as one.
func TestRecordRefusedReviewIsBusy(t *testing.T) {
	for _, kind := range []task.Kind{task.KindFix, task.KindReview} {
		rec := &refusing{kind: kind}
		asked := &task.Task{Kind: kind, Issue: 7, IsPR: true, Instructions: "look at x"}
		got, why, err := Record(context.Background(), rec, task.Delivery{ID: "d"}, asked, string(kind))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if got.Kind != task.KindBusy || why != "already_active" || got.Instructions != "" || len(rec.recorded) != 1 {
			t.Fatalf("%s: recorded %+v (%s), %d tasks", kind, got, why, len(rec.recorded))
		}
		if want := map[task.Kind]task.Kind{task.KindFix: "", task.KindReview: task.KindReview}[kind]; got.Refused != want {
			t.Errorf("%s: busy task refuses %q, want %q", kind, got.Refused, want)
		}
	}
}
