package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// Records sent at once while the write connection is busy are committed
// together, and each gets its own answer: the duplicate and the second fix
// on an issue are refused alone, the rest are stored with their ids.
func TestConcurrentRecordsAnswerEachAlone(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "bot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fix := func(issue int) *task.Task {
		return &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: issue, Instructions: "fix it"}
	}
	// Hold the write turn so that every Record below queues behind it.
	release, err := s.write.wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		delivery string
		task     *task.Task
		want     error
	}
	calls := []call{
		{"d1", fix(1), nil},
		{"d1", fix(2), task.ErrDuplicate}, // the same delivery again
		{"d3", fix(3), nil},
		{"d4", fix(3), task.ErrActive}, // a second fix on issue 3
		{"d5", nil, nil},               // a delivery with no task
	}
	for i := range 40 {
		calls = append(calls, call{fmt.Sprint("bulk", i), fix(100 + i), nil})
	}
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			// The duplicate and the second fix come after the first of each.
			if c.want != nil {
				time.Sleep(50 * time.Millisecond)
			}
			errs[i] = s.Record(ctx, task.Delivery{ID: c.delivery}, c.task)
		})
	}
	time.Sleep(200 * time.Millisecond)
	release()
	wg.Wait()
	ids := map[int64]bool{}
	for i, c := range calls {
		if !errors.Is(errs[i], c.want) || (c.want == nil && errs[i] != nil) {
			t.Errorf("Record(%s) = %v, want %v", c.delivery, errs[i], c.want)
			continue
		}
		if c.want != nil || c.task == nil {
			continue
		}
		if ids[c.task.ID] || c.task.ID == 0 {
			t.Errorf("Record(%s) gave id %d, given before or zero", c.delivery, c.task.ID)
		}
		ids[c.task.ID] = true
		got, err := s.Get(ctx, c.task.ID)
		if err != nil || got.Issue != c.task.Issue {
			t.Errorf("task %d of %s: %+v, %v", c.task.ID, c.delivery, got, err)
		}
	}
}

// A Record whose context ends while it waits in the queue is withdrawn and
// writes nothing.
func TestRecordGivenUpWhileWaitingWritesNothing(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "bot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release, err := s.write.wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err = s.Record(short, task.Delivery{ID: "d1"}, &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: 1})
	release()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Record = %v, want the deadline", err)
	}
	// The same delivery again is new: nothing of the first was written.
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, nil); err != nil {
		t.Fatalf("Record again = %v", err)
	}
}
