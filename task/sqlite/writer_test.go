package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pullwright/pullwright/task"
)

// A write whose context ends while it waits for its turn gives up, writes
// nothing, and leaves the turn to the others.
func TestWriteWaitEndsWithItsContext(t *testing.T) {
	s := open(t)
	release, err := s.write.wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, fixTask(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Record while another write holds the turn, context cancelled: %v, want context.Canceled", err)
	}
	release()
	if err := s.Record(context.Background(), task.Delivery{ID: "d1"}, fixTask(1)); err != nil {
		t.Fatalf("Record after the turn came free: %v (the cancelled one must have written nothing)", err)
	}
}

// Concurrent writers of one process all get through, each exactly once,
// and reads go on beside them.
func TestConcurrentWritersAndReaders(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				n := w*each + i + 1
				tk := fixTask(n)
				if err := s.Record(ctx, task.Delivery{ID: fmt.Sprintf("d%d", n)}, tk); err != nil {
					errs <- err
					continue
				}
				if _, err := s.Get(ctx, tk.ID); err != nil {
					errs <- err
				}
			}
		})
		wg.Go(func() {
			for range each {
				if _, err := s.Counts(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	counts, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts[task.Queued] != writers*each {
		t.Fatalf("queued tasks: %d, want %d", counts[task.Queued], writers*each)
	}
}

// The read connections refuse writes, so a write sent down the read path
// fails in the tests instead of becoming a second writer.
func TestReadConnectionsRefuseWrites(t *testing.T) {
	s := open(t)
	if _, err := s.read.ExecContext(context.Background(), `DELETE FROM tasks`); err == nil {
		t.Fatal("a write through the read pool succeeded")
	}
}
