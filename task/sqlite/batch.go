package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pullwright/pullwright/task"
)

// recordBatches commits concurrent Records together: a group commit.
//
// SQLite writes one transaction at a time, and each costs a BEGIN, its
// pages appended to the WAL, and a COMMIT, whatever it holds. Deliveries
// come in bursts (a label on ten issues, a CI run's check suites), and
// with eight senders each delivery waited for the seven before it to
// commit one by one: eight senders did less than one
// (docs/benchmarks.md). Here, whoever gets the write connection next takes every
// Record queued by then and commits them in one transaction, each in a
// savepoint, so a duplicate or a second fix on one issue is refused alone.
// No Record is answered before the commit that holds it, so "committed
// before the 2xx" holds for each. The leader is one of the waiting
// callers: there is no goroutine of the store's own.
type recordBatches struct {
	mu      sync.Mutex
	pending []*recordCall
}

// maxBatch bounds one transaction; the rest wait for the next.
const maxBatch = 128

// batchTimeout bounds a batch's transaction, which runs under no single
// caller's context: one caller giving up must not fail the others.
const batchTimeout = 30 * time.Second

type recordCall struct {
	d    task.Delivery
	t    *task.Task
	id   int64
	err  error
	done chan struct{}
}

func (b *recordBatches) record(ctx context.Context, s *Store, d task.Delivery, t *task.Task) error {
	c := &recordCall{d: d, t: t, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.mu.Unlock()
	for {
		select {
		case <-c.done:
			return c.finish()
		case s.write.turn <- struct{}{}:
			// A leader that had the turn before may have committed c and
			// handed the turn on before c saw done.
			select {
			case <-c.done:
				<-s.write.turn
				return c.finish()
			default:
			}
			b.leadInTurn(s)
			// Done, unless the batch was full before c: then c waits for
			// the next turn like any other.
		case <-ctx.Done():
			if b.withdraw(c) {
				return fmt.Errorf("record delivery %s: wait to write: %w", d.ID, context.Cause(ctx))
			}
			// A leader took it: its outcome is decided, and the caller
			// must know it, or a committed delivery would be answered 503.
			<-c.done
			return c.finish()
		}
	}
}

// finish hands the caller the task's id and the outcome.
func (c *recordCall) finish() error {
	if c.err == nil && c.t != nil {
		c.t.ID = c.id
	}
	return c.err
}

// withdraw takes c out of the queue if no leader has taken it yet.
func (b *recordBatches) withdraw(c *recordCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, p := range b.pending {
		if p == c {
			b.pending = append(b.pending[:i], b.pending[i+1:]...)
			return true
		}
	}
	return false
}

// take removes up to maxBatch queued calls.
func (b *recordBatches) take() []*recordCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.pending), maxBatch)
	calls := b.pending[:n:n]
	b.pending = b.pending[n:]
	return calls
}

// leadInTurn commits the queued calls in one transaction and gives the
// write turn back, which the caller took. Every call it takes is done when
// it returns, and the turn is given back, even if the batch panics: a
// panic held in the turn would stop every write of the process.
func (b *recordBatches) leadInTurn(s *Store) {
	defer func() { <-s.write.turn }()
	calls := b.take()
	if len(calls) == 0 {
		return
	}
	var err error
	defer func() {
		if r := recover(); r != nil {
			// Nothing was committed: the commit is the batch's last act.
			err = fmt.Errorf("record %d deliveries: panic: %v", len(calls), r)
			for _, c := range calls {
				c.err = err
			}
		}
		for _, c := range calls {
			if err != nil && c.err == nil {
				c.err = err
			}
			close(c.done)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	err = s.recordBatch(ctx, calls)
}

// recordBatch writes calls in one transaction, each in a savepoint, and
// commits. An error of one call is that call's (c.err); the returned
// error, of the transaction itself, is every call's.
func (s *Store) recordBatch(ctx context.Context, calls []*recordCall) error {
	tx, err := s.write.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record %d deliveries: begin: %w", len(calls), err)
	}
	defer tx.Rollback()
	for _, c := range calls {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT record`); err != nil {
			return fmt.Errorf("record delivery %s: savepoint: %w", c.d.ID, err)
		}
		c.id, c.err = s.recordIn(ctx, tx, c.d, c.t)
		if c.err != nil {
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO record`); err != nil {
				return errors.Join(c.err, fmt.Errorf("record delivery %s: roll back: %w", c.d.ID, err))
			}
		}
		if _, err := tx.ExecContext(ctx, `RELEASE record`); err != nil {
			return fmt.Errorf("record delivery %s: release savepoint: %w", c.d.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record %d deliveries: commit: %w", len(calls), err)
	}
	return nil
}
