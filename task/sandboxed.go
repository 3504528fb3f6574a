package task

import (
	"context"
	"fmt"
	"strings"

	"github.com/pullwright/pullwright"
)

// Sandboxed is the set-up-and-run step of an approved request, one for
// every way the bot runs: serve and the Action (runs.execute) and bot run
// (localrun). The repository's dependencies are made ready behind the
// fence when a setup is asked for, then the command runs on them. Asking
// (approval.Request, rendered by each surface), writing the approved
// files out and recording (RunRecord.Ended) are the caller's.
type Sandboxed struct {
	Runner Runner
	// Deps makes the dependencies ready; nil when no setup runs (the
	// local runner, a bot without the fence's forwarder).
	Deps Dependencies
	// Explain is what a person and the agent may learn of a failure of
	// the setup or of the sandbox itself (not of the command): serve
	// keeps its internals to its logs, bot run tells its own user.
	Explain func(error) string
	// SetUp, if set, is told what a setup that ran did, before the
	// command starts (bot run shows it as it goes).
	SetUp func(*pullwright.SetupRecord)
}

// Ran is what Sandboxed.Run did.
type Ran struct {
	// Result is the command's, or, when it did not run, why ("not run:
	// …", exit code -1).
	Result pullwright.RunResult
	// Setup is the setup that ran before it, if one did.
	Setup *pullwright.SetupRecord
	// Err is the failure of the setup or of the sandbox itself, for the
	// log; Result says what may be told of it.
	Err error
}

// notRunPrefix begins the output of a command that never started
// (RunResult.NotStarted), for the people and the agent who read it.
const notRunPrefix = "not run:"

// notRun is the result of a command that never started, and why.
func notRun(why string) pullwright.RunResult {
	return pullwright.RunResult{ExitCode: -1, Output: notRunPrefix + " " + why, NotStarted: true}
}

// Run sets up, when setup is not nil and there are Deps, and runs spec.
// Its error is only ctx's.
func (s Sandboxed) Run(ctx context.Context, spec pullwright.RunSpec, setup *pullwright.SetupRequest) (Ran, error) {
	var ran Ran
	if setup != nil && s.Deps != nil {
		ready, err := s.Deps.Prepare(ctx, *setup)
		if ready.Release != nil {
			// Only once the command ended: the cache stays held, and a
			// private one in place, until then.
			defer ready.Release(context.WithoutCancel(ctx))
		}
		if err != nil {
			if ctx.Err() != nil {
				return ran, ctx.Err()
			}
			ran.Result = notRun("the repository's setup (fetching its dependencies) could not run: " + s.explain(err))
			ran.Err = fmt.Errorf("setup: %w", err)
			return ran, nil
		}
		ran.Setup = ready.Record
		if ready.Record != nil && s.SetUp != nil {
			s.SetUp(ready.Record)
		}
		if r := ready.Record; r != nil && r.Failed {
			ran.Result = pullwright.RunResult{ExitCode: -1, Output: setupFailure(r), NotStarted: true}
			return ran, nil
		}
		spec.Caches, spec.Env, spec.Links = ready.Caches, ready.Env, ready.Links
	}
	res, err := s.Runner.Run(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return ran, ctx.Err()
		}
		ran.Result = notRun("the sandbox failed to run the command: " + s.explain(err))
		ran.Err = fmt.Errorf("sandbox: %w", err)
		return ran, nil
	}
	ran.Result = res
	return ran, nil
}

func (s Sandboxed) explain(err error) string {
	if s.Explain == nil {
		return err.Error()
	}
	return s.Explain(err)
}

// NotStarted reads a result whose command never started
// (RunResult.NotStarted), and says why.
func NotStarted(res pullwright.RunResult) (string, bool) {
	if !res.NotStarted {
		return "", false
	}
	return strings.TrimSpace(strings.TrimPrefix(res.Output, notRunPrefix)), true
}
