package task

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// defaultDrainClaims bounds how often Drain takes up one task. A task that
// retries a failing step is taken up once per try (MaxAttempts), and one
// that waits comes back once per answer.
const defaultDrainClaims = 20

// Due is what Drain needs besides the store: when the next task that waits
// on time alone (a retry's back-off), not on a person, is due.
type Due interface {
	NextDue(ctx context.Context) (at time.Time, ok bool, err error)
}

// Drain works tasks one at a time until every task has ended or waits for a
// person (an answer to its execution request). It is the one-shot mode of a
// GitHub Actions step: no process outlives the run to pick a task up later,
// so retries are waited for here, while a request that waits for
// "/approve" ends the run and the next run takes it up.
func (p *Pool) Drain(ctx context.Context, due Due) error {
	p.init()
	owner := p.id + "-drain"
	claims := map[int64]int{}
	limit := p.MaxDrainClaims
	if limit <= 0 {
		limit = defaultDrainClaims
	}
	for {
		t, err := p.Store.Claim(ctx, owner, p.Lease)
		switch {
		case err == nil:
			// A task given back without moving on (a step that succeeds
			// and changes nothing, a save that keeps failing) would be
			// claimed again at once, for ever: the run stops instead.
			if claims[t.ID]++; claims[t.ID] > limit {
				if rerr := p.Store.Release(context.WithoutCancel(ctx), t.ID, owner); rerr != nil {
					p.Logger.ErrorContext(ctx, "release task", "task_id", t.ID, "err", rerr)
				}
				return fmt.Errorf("drain tasks: task %d was taken up %d times without ending or waiting", t.ID, limit)
			}
			p.work(ctx, owner, t)
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("drain tasks: %w", err)
			}
			continue
		case errors.Is(err, ErrNoTask):
		case ctx.Err() != nil:
			return fmt.Errorf("drain tasks: %w", ctx.Err())
		default:
			return fmt.Errorf("drain tasks: %w", err)
		}
		at, ok, err := due.NextDue(ctx)
		if err != nil {
			return fmt.Errorf("drain tasks: %w", err)
		}
		if !ok {
			return nil
		}
		timer := time.NewTimer(max(time.Until(at), time.Millisecond))
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("drain tasks: %w", ctx.Err())
		case <-timer.C:
		}
	}
}
