package tasktest

import (
	"context"
	"errors"
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
	// Fetched and FetchRecord answer Fetch; Fetches are its calls.
	Fetched     pullwright.RunResult
	FetchRecord *pullwright.SetupRecord
	Fetches     []Fetch
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

// Fetch records the request and the spec (in Fetches) and answers
// Fetched, with its record, or Err. Like the real one, it refuses a spec
// that does not keep its changes.
func (d *Deps) Fetch(ctx context.Context, r pullwright.SetupRequest, spec pullwright.RunSpec) (pullwright.RunResult, *pullwright.SetupRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Fetches = append(d.Fetches, Fetch{Request: r, Spec: spec})
	if !spec.KeepChanges {
		return pullwright.RunResult{}, nil, errors.New("a fetch keeps its changes")
	}
	if d.Err != nil {
		return pullwright.RunResult{}, nil, d.Err
	}
	return d.Fetched, d.FetchRecord, nil
}

// Fetch is one call of Deps.Fetch.
type Fetch struct {
	Request pullwright.SetupRequest
	Spec    pullwright.RunSpec
}
