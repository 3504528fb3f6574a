// Package tasktest holds stateful fakes of task's ports (ports.go), so that
// task's logic is tested on its own floor: GitHub, Workspaces and
// Workspace, Agent, Runner and Dependencies. Each fake answers as the real
// implementation (ghapp against GitHub, repo over git) does, and records
// what it was asked, so tests assert on outcomes rather than on call
// sequences.
//
// Import rule: none of app, ghapp, repo, agent or runner.
package tasktest

import (
	"sync"
)

// faults are errors a test asks a fake to return, by method name, each
// once and in order.
type faults struct {
	mu   sync.Mutex
	errs map[string][]error
}

// FailNext makes the next call of method return err (several calls queue).
func (f *faults) FailNext(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = map[string][]error{}
	}
	f.errs[method] = append(f.errs[method], err)
}

// take returns the error queued for method, if any.
func (f *faults) take(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.errs[method]
	if len(q) == 0 {
		return nil
	}
	f.errs[method] = q[1:]
	return q[0]
}
