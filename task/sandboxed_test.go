package task_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// The set-up-and-run step serve and bot run share: what runs, with what
// caches, what a person is told when the setup or the sandbox fails, and
// how the record reads each end.
func TestSandboxed(t *testing.T) {
	cache := []pullwright.CacheMount{{Volume: "deps-1", Target: "/deps", ReadOnly: true}}
	failed := &pullwright.SetupRecord{Steps: []string{"npm ci"}, ExitCode: 1, Failed: true, Blocked: []string{"evil.test:443"}, Output: "E403"}
	tests := []struct {
		name      string
		setup     bool
		ready     pullwright.SetupResult
		depsErr   error
		run       []tasktest.Run
		runs      int
		output    string // part of the result's output
		outcome   string
		err       bool // Ran.Err is set
		released  int
		withCache bool
	}{
		{name: "no setup asked", run: []tasktest.Run{{Result: pullwright.RunResult{ExitCode: 1, Output: "FAIL"}}}, runs: 1,
			output: "FAIL", outcome: task.OutcomeFailed},
		{name: "from the cache", setup: true, ready: pullwright.SetupResult{Caches: cache, Env: []string{"X=1"}},
			runs: 1, output: "ok", outcome: task.OutcomePassed, released: 1, withCache: true},
		{name: "the setup failed", setup: true, ready: pullwright.SetupResult{Record: failed},
			output: "not run: the repository's setup failed (exit code 1)", outcome: task.OutcomeSetupFailed, released: 1},
		{name: "the setup could not run", setup: true, depsErr: errors.New("engine gone"),
			output: "not run: the repository's setup (fetching its dependencies) could not run: told: engine gone", outcome: task.OutcomeNotRun, err: true, released: 1},
		{name: "the sandbox failed", run: []tasktest.Run{{Err: errors.New("no such image")}}, runs: 1,
			output: "not run: the sandbox failed to run the command: told: no such image", outcome: task.OutcomeNotRun, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runner := &tasktest.Runner{Script: tt.run}
			deps := &tasktest.Deps{Ready: tt.ready, Err: tt.depsErr}
			spec := pullwright.RunSpec{Dir: t.TempDir(), Command: "npm test"}
			var setup *pullwright.SetupRequest
			if tt.setup {
				setup = &pullwright.SetupRequest{Repo: "o/r", Dir: spec.Dir}
			}
			ran, err := task.Sandboxed{Runner: runner, Deps: deps, Explain: func(err error) string { return "told: " + err.Error() }}.Run(t.Context(), spec, setup)
			if err != nil {
				t.Fatal(err)
			}
			if len(runner.Specs) != tt.runs || !strings.Contains(ran.Result.Output, tt.output) || (ran.Err != nil) != tt.err || deps.Released != tt.released {
				t.Fatalf("ran %d times, result %+v, err %v, released %d", len(runner.Specs), ran.Result, ran.Err, deps.Released)
			}
			rec := task.RunRecord{}
			rec.Ended(ran.Result, ran.Setup != nil && ran.Setup.Failed)
			if rec.Outcome != tt.outcome {
				t.Errorf("recorded as %q, want %q", rec.Outcome, tt.outcome)
			}
			if why, ok := task.NotStarted(ran.Result); ok != (tt.runs == 0 || tt.err) || (ok && why == "") {
				t.Errorf("NotStarted = %q, %v", why, ok)
			}
			if tt.withCache && (len(runner.Specs[0].Caches) != 1 || runner.Specs[0].Env[0] != "X=1") {
				t.Errorf("the run got caches %+v, env %v", runner.Specs[0].Caches, runner.Specs[0].Env)
			}
		})
	}
}
