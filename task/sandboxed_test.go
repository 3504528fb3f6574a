package task_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// The set-up-run-and-record step serve and bot run share: what runs,
// with what caches, what a person is told when the setup or the sandbox
// fails, what the run left out, and how the record it ends reads each end.
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
		output    string // part of the result's output, and of the record's
		outcome   task.RunOutcome
		err       bool // Ran.Err is set
		released  int
		withCache bool
	}{
		{name: "no setup asked", run: []tasktest.Run{{Result: pullwright.RunResult{ExitCode: 1, Output: "FAIL"}}}, runs: 1,
			output: "FAIL\n[left out]", outcome: task.OutcomeFailed},
		{name: "from the cache", setup: true, ready: pullwright.SetupResult{Caches: cache, Env: []string{"X=1"}},
			runs: 1, output: "ok\n\n[left out]", outcome: task.OutcomePassed, released: 1, withCache: true},
		{name: "the setup failed", setup: true, ready: pullwright.SetupResult{Record: failed},
			output: "not run: the repository's setup failed (exit code 1)", outcome: task.OutcomeSetupFailed, released: 1},
		{name: "the setup could not run", setup: true, depsErr: errors.New("engine gone"),
			output: "not run: the repository's setup (fetching its dependencies) could not run: told: engine gone", outcome: task.OutcomeNotRun, err: true, released: 1},
		{name: "the sandbox failed", run: []tasktest.Run{{Err: errors.New("no such image")}}, runs: 1,
			output: "not run: the sandbox failed to run the command: told: no such image", outcome: task.OutcomeNotRun, err: true},
		{name: "the sandbox did not start it", run: []tasktest.Run{{Result: pullwright.RunResult{ExitCode: -1, NotStarted: true,
			Output: "not run: image x is not available"}}}, runs: 1, output: "not run: image x is not available", outcome: task.OutcomeNotRun},
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
			rec := task.RunRecord{RequestID: "1", Verdict: task.Approved}
			step := task.Sandboxed{Runner: runner, Deps: deps, Explain: func(err error) string { return "told: " + err.Error() },
				LeftOut: func() string { return "\n[left out]\n" }}
			ran, err := step.Run(t.Context(), spec, setup, &rec)
			if err != nil {
				t.Fatal(err)
			}
			if len(runner.Specs) != tt.runs || !strings.Contains(ran.Result.Output, tt.output) || (ran.Err != nil) != tt.err || deps.Released != tt.released {
				t.Fatalf("ran %d times, result %+v, err %v, released %d", len(runner.Specs), ran.Result, ran.Err, deps.Released)
			}
			if rec.Outcome != tt.outcome || ran.Outcome() != tt.outcome || !strings.Contains(rec.Output, tt.output) || rec.ExitCode != ran.Result.ExitCode {
				t.Errorf("recorded as %+v, want outcome %q", rec, tt.outcome)
			}
			why, ok := task.NotStarted(ran.Result)
			if ok != (tt.outcome == task.OutcomeNotRun || tt.outcome == task.OutcomeSetupFailed) || (ok && why == "") {
				t.Errorf("NotStarted = %q, %v", why, ok)
			}
			if ok && strings.Contains(ran.Result.Output, "[left out]") {
				t.Errorf("a command that never started is said to have left files out: %q", ran.Result.Output)
			}
			if tt.withCache && (len(runner.Specs[0].Caches) != 1 || runner.Specs[0].Env[0] != "X=1") {
				t.Errorf("the run got caches %+v, env %v", runner.Specs[0].Caches, runner.Specs[0].Env)
			}
		})
	}
}

// A step that cannot be handed its files ends the record as Run ends one
// whose command never started: bot run's and serve's alike.
func TestUnstarted(t *testing.T) {
	rec := task.RunRecord{RequestID: "1", Verdict: task.Approved}
	ran := task.Unstarted("the workspace's files could not be written out", &rec)
	why, ok := task.NotStarted(ran.Result)
	if !ok || why != "the workspace's files could not be written out" {
		t.Errorf("NotStarted = %q, %v", why, ok)
	}
	if rec.Outcome != task.OutcomeNotRun || rec.ExitCode != -1 || rec.Output != "not run: the workspace's files could not be written out" {
		t.Errorf("recorded as %+v", rec)
	}
}

// Run gives up with ctx, and leaves the record as it was: nothing ran.
func TestSandboxedStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rec := task.RunRecord{RequestID: "1", Verdict: task.Approved}
	deps := &tasktest.Deps{Err: context.Canceled}
	_, err := task.Sandboxed{Runner: &tasktest.Runner{}, Deps: deps}.Run(ctx, pullwright.RunSpec{Dir: t.TempDir()}, &pullwright.SetupRequest{Repo: "o/r"}, &rec)
	if !errors.Is(err, context.Canceled) || rec.Outcome != "" {
		t.Errorf("Run = %v, record %+v", err, rec)
	}
}
