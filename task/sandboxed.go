package task

import (
	"context"
	"fmt"
	"strings"

	"github.com/pullwright/pullwright"

	"github.com/pullwright/pullwright/tracing"
	"go.opentelemetry.io/otel/attribute"
)

// Sandboxed is the set-up-run-and-record step of an approved request,
// one for every way the bot runs: serve and the Action (runs.execute) and
// bot run (localrun). The repository's dependencies are made ready behind
// the fence when a setup is asked for, then the command runs on them, and
// how it ended is kept in the record of runs (Ran.End). Asking (the value
// task.Shown builds, which each surface renders) and writing the approved
// files out are the caller's.
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
	// LeftOut, if set, notes what the run's files did not hold (the
	// files git ignores in the workspace): the note ends a started
	// command's output, which the agent, the run's check and the record
	// all read.
	LeftOut func() string
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

// End keeps how the step ended in rec: the command's exit code, duration
// and the end of its output, and its outcome as every record of runs
// reads a Ran (Outcome). It is the one ending of a record, whoever ran
// the step: Run ends the record it is given (bot run's), and serve ends
// its record from the Ran its request kept when it resolves the request
// (Task.record), a step later.
func (ran Ran) End(rec *RunRecord) {
	res := ran.Result
	rec.ExitCode, rec.Duration = res.ExitCode, res.Duration
	rec.Output = tailBytes(res.Output, maxRecordOutput)
	rec.Outcome = ran.Outcome()
}

// Outcome sums up how the step ended (one of the Outcome… constants).
func (ran Ran) Outcome() RunOutcome {
	return OutcomeOf(ran.Result, ran.Setup != nil && ran.Setup.Failed)
}

// Unstarted is the step for an approved command that could not be handed
// to it (its files, or the base's, could not be written out): it never
// started, for the reason why, and rec, when given, is ended as Run ends
// the record of a command that never started.
func Unstarted(why string, rec *RunRecord) Ran {
	ran := Ran{Result: notRun(why)}
	if rec != nil {
		ran.End(rec)
	}
	return ran
}

// notRunPrefix begins the output of a command that never started
// (RunResult.NotStarted), for the people and the agent who read it.
const notRunPrefix = "not run:"

// notRun is the result of a command that never started, and why.
func notRun(why string) pullwright.RunResult {
	return pullwright.RunResult{ExitCode: -1, Output: notRunPrefix + " " + why, NotStarted: true}
}

// Run sets up, when setup is not nil and there are Deps, runs spec, and
// ends rec, when given, with what it did (Ran.End). Its error is only
// ctx's, and then rec is left as it was.
func (s Sandboxed) Run(ctx context.Context, spec pullwright.RunSpec, setup *pullwright.SetupRequest, rec *RunRecord) (Ran, error) {
	ran, err := s.run(ctx, spec, setup)
	if err == nil && rec != nil {
		ran.End(rec)
	}
	return ran, err
}

func (s Sandboxed) run(ctx context.Context, spec pullwright.RunSpec, setup *pullwright.SetupRequest) (Ran, error) {
	var ran Ran
	if setup != nil && s.Deps != nil {
		sctx, span := tracing.Start(ctx, "setup", attribute.String("pullwright.setup.image", setup.Image))
		ready, err := s.Deps.Prepare(sctx, *setup)
		span.SetAttributes(attribute.Bool("pullwright.setup.private", ready.Private), attribute.Bool("pullwright.setup.ran", ready.Record != nil))
		if r := ready.Record; r != nil {
			span.SetAttributes(attribute.Int("pullwright.fence.reached", len(r.Reached)), attribute.Int("pullwright.fence.blocked", len(r.Blocked)),
				attribute.Bool("pullwright.setup.failed", r.Failed))
		}
		tracing.End(span, err)
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
		spec.Caches, spec.Env, spec.Links, spec.Prepare = ready.Caches, ready.Env, ready.Links, ready.Prepare
	}
	rctx, span := tracing.Start(ctx, "sandbox run", attribute.String("pullwright.sandbox.image", spec.Image))
	res, err := s.Runner.Run(rctx, spec)
	span.SetAttributes(attribute.Int("process.exit.code", res.ExitCode), attribute.Bool("pullwright.sandbox.timed_out", res.TimedOut),
		attribute.Bool("pullwright.sandbox.oom_killed", res.OOMKilled), attribute.Bool("pullwright.sandbox.not_started", res.NotStarted))
	tracing.End(span, err)
	if err != nil {
		if ctx.Err() != nil {
			return ran, ctx.Err()
		}
		ran.Result = notRun("the sandbox failed to run the command: " + s.explain(err))
		ran.Err = fmt.Errorf("sandbox: %w", err)
		return ran, nil
	}
	if s.LeftOut != nil && !res.NotStarted {
		res.Output += s.LeftOut()
	}
	ran.Result = res
	return ran, nil
}

// NoFence is what the agent is told of a request for network where there
// is no fence to give it: serve refuses it unshown, bot run does not ask.
const NoFence = "there is no network fence here for an approved command (commands run without a sandbox, or without the fence's forwarder), " +
	"so a command cannot have network; change the dependency manifests and ask for the command without network: the repository's setup fetches what they name before it runs"

// Fetch runs spec, an approved dependency command, with the setup's
// network through the fence (Dependencies.Fetch) in place of a setup and
// the command, keeping its changes, and ends rec, when given, as Run
// does. Without Deps or a setup request (no fence here, no base to take
// the allow-list from) it never starts, and says why. Its error is only
// ctx's.
func (s Sandboxed) Fetch(ctx context.Context, spec pullwright.RunSpec, setup *pullwright.SetupRequest, rec *RunRecord) (Ran, error) {
	var ran Ran
	if s.Deps == nil || setup == nil {
		ran = Unstarted("this bot has no network fence for an approved command (it runs commands without a sandbox, or without the fence's forwarder), so a command that asks for network cannot run here", rec)
		return ran, nil
	}
	spec.KeepChanges = true
	fctx, span := tracing.Start(ctx, "fetch", attribute.String("pullwright.sandbox.image", spec.Image))
	res, record, err := s.Deps.Fetch(fctx, *setup, spec)
	if record != nil {
		span.SetAttributes(attribute.Int("pullwright.fence.reached", len(record.Reached)), attribute.Int("pullwright.fence.blocked", len(record.Blocked)))
	}
	tracing.End(span, err)
	if err != nil {
		if ctx.Err() != nil {
			return ran, ctx.Err()
		}
		ran.Result = notRun("the sandbox failed to run the command with the setup's network: " + s.explain(err))
		ran.Err = fmt.Errorf("fetch: %w", err)
	} else {
		// What the fence let through is the record's, as a setup's is;
		// how the command ended is its result, not a setup's failure.
		if record != nil {
			r := *record
			r.Failed = false
			ran.Setup = &r
			if s.SetUp != nil {
				s.SetUp(&r)
			}
		}
		ran.Result = res
	}
	if rec != nil {
		ran.End(rec)
	}
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
