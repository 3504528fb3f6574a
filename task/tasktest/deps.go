package tasktest

import (
	"context"
	"sync"

	"github.com/pullwright/pullwright"
)

// Deps is a fake of task.Dependencies: it records each request, answers
// Ready (or Err), and counts the releases of what it answered.
type Deps struct {
	mu       sync.Mutex
	Ready    pullwright.SetupResult
	Err      error
	Requests []pullwright.SetupRequest
	// Released counts the calls of the answer's Release.
	Released int
}

func (d *Deps) Prepare(ctx context.Context, r pullwright.SetupRequest) (pullwright.SetupResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Requests = append(d.Requests, r)
	ready := d.Ready
	ready.Release = func(context.Context) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.Released++
	}
	return ready, d.Err
}
