package task

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pullwright/pullwright/tracing"
)

// Stepper advances a task; Flow is the production one.
type Stepper interface {
	Step(ctx context.Context, t *Task) error
	// Finish reports a failed or cancelled task on GitHub.
	Finish(ctx context.Context, t *Task) error
}

// Pool runs workers that claim tasks from the store and step them until
// they finish, wait for a person, or hit an error worth retrying later.
type Pool struct {
	Store  Store
	Steps  Stepper
	Logger *slog.Logger
	// Workers is how many tasks run at once (default 4).
	Workers int
	// Lease is how long a claim lasts without renewal (default 2m); a task
	// whose worker died is picked up again once it runs out.
	Lease time.Duration
	// Poll is how often an idle worker looks for due tasks (default 2s);
	// Notify wakes one sooner.
	Poll time.Duration
	// StepTimeout bounds one step (default 15m).
	StepTimeout time.Duration
	// MaxAttempts is how often a failing step is tried (default 5).
	MaxAttempts int
	// Backoff is the wait before retry n (1-based); default 5s·2ⁿ⁻¹ up to 10m.
	Backoff func(n int) time.Duration
	// MaxCrashes is how often a task may be found with its worker gone
	// (its lease expired) before it is failed instead of tried again, so a
	// task that kills the process cannot crash-loop the bot (default 3).
	MaxCrashes int
	// MaxDrainClaims is how often Drain takes up one task before it gives
	// up on a task that never ends or waits (default 20).
	MaxDrainClaims int
	// Observe, when set, is told of every step a worker takes (for metrics).
	Observe func(StepResult)
	// Tracer traces tasks (package tracing): one trace per task, its root
	// saved with the task, a span per step under it. Nil traces nothing.
	Tracer trace.Tracer

	once sync.Once
	wake chan struct{}
	id   string
}

func (p *Pool) init() {
	p.once.Do(func() {
		if p.Workers <= 0 {
			p.Workers = 4
		}
		if p.Lease <= 0 {
			p.Lease = 2 * time.Minute
		}
		if p.Poll <= 0 {
			p.Poll = 2 * time.Second
		}
		if p.StepTimeout <= 0 {
			p.StepTimeout = 15 * time.Minute
		}
		if p.MaxAttempts <= 0 {
			p.MaxAttempts = 5
		}
		if p.MaxCrashes <= 0 {
			p.MaxCrashes = 3
		}
		if p.Backoff == nil {
			p.Backoff = func(n int) time.Duration {
				d := 5 * time.Second << (n - 1)
				if d <= 0 || d > 10*time.Minute {
					d = 10 * time.Minute
				}
				return d
			}
		}
		if p.Logger == nil {
			p.Logger = slog.New(slog.DiscardHandler)
		}
		p.wake = make(chan struct{}, 1)
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		p.id = host + "-" + hex.EncodeToString(b[:])
	})
}

// finishTries is how often the report of a failed or cancelled task is tried.
const finishTries = 3

// maxStepsPerClaim bounds the steps one claim of a task may take. A whole
// fix with its turns takes far fewer between two waits.
const maxStepsPerClaim = 500

// StepResult describes one step, for Pool.Observe.
type StepResult struct {
	Kind     Kind
	From, To State
	Err      error
	Duration time.Duration
	// Answer is set on the step that took the answer to an execution
	// request (the task left AwaitingApproval), and Waited is how long the
	// request waited for it: from being shown to being answered. A request
	// an auto_approve rule answered waited for nobody, and sets neither.
	Answer *Answer
	Waited time.Duration
}

// answered fills in r.Answer and r.Waited when the step took t out of the
// wait for an answer.
func (r *StepResult) answered(t *Task) {
	j, ok := t.Job()
	if !ok || r.Err != nil || r.From != AwaitingApproval || r.To == AwaitingApproval {
		return
	}
	req := j.Request
	if req == nil || req.Answer == nil || req.Auto != "" || req.ParkedAt.IsZero() {
		return
	}
	a := *req.Answer
	r.Answer, r.Waited = &a, max(a.At.Sub(req.ParkedAt), 0)
}

func (p *Pool) observe(r StepResult) {
	if p.Observe != nil {
		p.Observe(r)
	}
}

// Notify tells an idle worker that a task may be due now. It never blocks.
func (p *Pool) Notify() {
	p.init()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run starts the workers and returns when ctx is done and all of them have
// stopped. A task being worked on when ctx ends is released unfinished and
// continues at the next start.
func (p *Pool) Run(ctx context.Context) error {
	p.init()
	// The id prefixes every lease owner of this process, so a lease in the
	// database names the replica holding it.
	p.Logger.InfoContext(ctx, "workers started", "pool", p.id, "workers", p.Workers)
	if q, ok := p.Store.(Queue); ok {
		return q.Serve(ctx, QueueConfig{
			Workers: p.Workers, Lease: p.Lease, Poll: p.Poll, Owner: p.id,
			Logger: p.Logger, Work: p.work,
		})
	}
	var wg sync.WaitGroup
	for i := range p.Workers {
		owner := fmt.Sprintf("%s-%d", p.id, i)
		wg.Go(func() { p.loop(ctx, owner) })
	}
	wg.Wait()
	return nil
}

func (p *Pool) loop(ctx context.Context, owner string) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		t, err := p.Store.Claim(ctx, owner, p.Lease)
		switch {
		case err == nil:
			p.work(ctx, owner, t)
			continue
		case errors.Is(err, ErrNoTask):
		case ctx.Err() != nil:
			return
		default:
			p.Logger.ErrorContext(ctx, "claim task", "err", err)
		}
		timer.Reset(p.Poll)
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-timer.C:
		}
	}
}

// work steps one claimed task while the lease holds.
func (p *Pool) work(ctx context.Context, owner string, t *Task) {
	log := p.Logger.With("task_id", t.ID, "kind", t.Kind, "repo", t.Repo.FullName(), "issue", t.Issue, "worker", owner)
	ctx, stop := context.WithCancelCause(ctx)

	// Bookkeeping outlives a shutdown: saving what happened and releasing
	// the lease use their own short deadline.
	detached := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	}
	defer func() {
		c, cancel := detached()
		defer cancel()
		if err := p.Store.Release(c, t.ID, owner); err != nil && !errors.Is(err, ErrLeaseLost) {
			log.ErrorContext(c, "release task", "err", err)
		}
	}()
	var hb sync.WaitGroup
	id := t.ID
	hb.Go(func() { p.heartbeat(ctx, stop, owner, id) })
	defer hb.Wait()
	defer stop(nil)

	if t.Crashes > p.MaxCrashes {
		from := t.State
		t.Error = fmt.Sprintf("the task stopped its worker %d times, so it is not tried again", t.Crashes)
		t.State = Failed
		p.finish(ctx, log, owner, t, from)
		return
	}
	if p.startTrace(ctx, t) {
		// Saved before any step: a first step cut short by a kill or a
		// shutdown must not leave the next claim to start a second trace.
		c, cancel := detached()
		err := p.Store.Save(c, t, owner)
		cancel()
		if err != nil {
			log.ErrorContext(ctx, "save the task's trace", "err", err)
			return
		}
	}
	for steps := 0; !t.State.Terminal(); steps++ {
		if steps == maxStepsPerClaim {
			// Insurance against a step that succeeds without moving the
			// task on: give the worker back instead of spinning on it.
			log.ErrorContext(ctx, "task made no end after many steps; releasing it", "steps", steps, "state", t.State)
			return
		}
		// Once the branch is pushed the pull request follows: stopping
		// then would leave a branch nobody reports on.
		if j, ok := t.Job(); t.CancelledBy != "" && !(ok && j.published()) {
			from := t.State
			t.State = Cancelled
			p.finish(ctx, log, owner, t, from)
			return
		}
		from := t.State
		// A failed step leaves no trace in the task but its retry count:
		// what it half did is redone, idempotently, by the next try.
		before, err := t.snapshot()
		if err != nil {
			log.ErrorContext(ctx, "keep the task before its step", "state", from, "err", err)
			return
		}
		began := time.Now()
		err = p.step(ctx, t)
		res := StepResult{Kind: t.Kind, From: from, To: t.State, Err: err, Duration: time.Since(began)}
		res.answered(t)
		p.observe(res)
		if err != nil {
			if ctx.Err() != nil {
				log.InfoContext(ctx, "step interrupted", "state", from, "cause", context.Cause(ctx))
				return
			}
			restored, rerr := before.restore()
			if rerr != nil {
				// The store's codec did not read back what it wrote: the
				// step cannot be undone, so it is not tried again (a retry
				// from here would repeat what it half did, on every claim).
				log.ErrorContext(ctx, "put the task back as it was before its step; failing it", "state", from, "err", rerr, "step_err", err)
				t.Error = UserMessage(Fatal("the task could not be put back as it was before a failed step", rerr))
				t.State = Failed
				p.finish(ctx, log, owner, t, from)
				return
			}
			*t = *restored
			t.Attempts++
			if Permanent(err) || t.Attempts >= p.MaxAttempts {
				log.ErrorContext(ctx, "task failed", "state", from, "attempts", t.Attempts, "err", err)
				t.Error = UserMessage(err)
				t.State = Failed
				p.finish(ctx, log, owner, t, from)
				return
			}
			wait := p.Backoff(t.Attempts)
			log.WarnContext(ctx, "step failed, will retry", "state", from, "attempt", t.Attempts, "retry_in", wait, "err", err)
			t.RunAfter = time.Now().Add(wait)
			c, cancel := detached()
			if err := p.Store.Save(c, t, owner); err != nil {
				log.ErrorContext(c, "save task after failure", "err", err)
			}
			cancel()
			return
		}
		t.Attempts = 0
		// The step's effects happened: record them even if we are shutting down.
		c, cancel := detached()
		err = p.Store.Save(c, t, owner)
		cancel()
		if err != nil {
			log.ErrorContext(ctx, "save task", "state", t.State, "err", err)
			return
		}
		t.savedIn = t.Claim
		if t.State != from {
			log.InfoContext(ctx, "task moved", "from", from, "to", t.State)
		}
		if t.State == AwaitingApproval {
			return
		}
	}
}

// firstTry reports whether the step now running is its first try: this
// worker saved an earlier step in this same claim, so the task is as this
// worker left it. A failed or interrupted step ends its claim, so a step
// tried before (whose check run may exist though its id was never saved:
// a crash between create and save, or an answer lost on the way back) is
// always retried by a later claim, starting from the store. Creating a
// check run says so (pullwright.CheckRun.FirstTry): only a retry looks for
// a run by its request's id first, which is what keeps parking a request
// from costing GitHub calls that grow with the runs its commit holds. A
// task read from an older release's document has no step saved in this
// claim, so it looks.
func (t *Task) firstTry() bool { return t.Claim > 0 && t.savedIn == t.Claim }

// step runs one step under the step timeout. A panic in it fails the task
// instead of the process.
func (p *Pool) step(ctx context.Context, t *Task) (err error) {
	ctx, cancel := context.WithTimeout(ctx, p.StepTimeout)
	defer cancel()
	ctx, span := p.tracer().Start(tracing.Resume(ctx, t.Trace), "step "+string(t.State), trace.WithAttributes(taskAttrs(t)...))
	defer func() {
		span.SetAttributes(attribute.String("pullwright.task.state_after", string(t.State)))
		kind := "retry"
		if Permanent(err) {
			kind = "permanent"
		}
		tracing.EndAs(span, err, kind)
	}()
	defer func() {
		if r := recover(); r != nil {
			p.Logger.ErrorContext(ctx, "step panicked", "task_id", t.ID, "state", t.State, "panic", r, "stack", string(debug.Stack()))
			err = Fatal("the bot hit an internal error", fmt.Errorf("panic: %v", r))
		}
	}()
	return p.Steps.Step(ctx, t)
}

// finish records a failed or cancelled task and tells the issue.
func (p *Pool) finish(ctx context.Context, log *slog.Logger, owner string, t *Task, from State) {
	p.observe(StepResult{Kind: t.Kind, From: from, To: t.State})
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := p.Store.Save(c, t, owner); err != nil {
		log.ErrorContext(c, "save finished task", "state", t.State, "err", err)
		return
	}
	// The task is saved as ended and no worker will claim it again, so the
	// report gets a few tries of its own before it is given up.
	var err error
	for try := 1; ; try++ {
		if err = p.report(c, t); err == nil || try == finishTries {
			break
		}
		wait := p.Backoff(try)
		log.WarnContext(c, "report finished task, will retry", "state", t.State, "attempt", try, "retry_in", wait, "err", err)
		select {
		case <-c.Done():
		case <-time.After(wait):
		}
		if c.Err() != nil {
			break
		}
	}
	if err != nil {
		log.ErrorContext(c, "report finished task: giving up; the issue does not show the end", "state", t.State, "err", err)
		return
	}
	// Finish may have learnt the status comment's id.
	if err := p.Store.Save(c, t, owner); err != nil {
		log.ErrorContext(c, "save finished task", "state", t.State, "err", err)
	}
	log.InfoContext(c, "task ended", "state", t.State, "error", t.Error)
}

// report runs Steps.Finish; a panic in it fails the report, not the
// process, as a panic in a step fails the task.
func (p *Pool) report(ctx context.Context, t *Task) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.Logger.ErrorContext(ctx, "report panicked", "task_id", t.ID, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("report task %d: panic: %v", t.ID, r)
		}
	}()
	return p.Steps.Finish(ctx, t)
}

// heartbeat renews the lease until ctx ends; when the lease is lost it stops
// the work so two workers never step one task.
func (p *Pool) heartbeat(ctx context.Context, stop context.CancelCauseFunc, owner string, id int64) {
	tick := time.NewTicker(p.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c, cancel := context.WithTimeout(ctx, p.Lease/3)
			err := p.Store.Renew(c, id, owner, p.Lease)
			cancel()
			if errors.Is(err, ErrLeaseLost) {
				stop(err)
				return
			}
			if err != nil && ctx.Err() == nil {
				p.Logger.WarnContext(ctx, "renew lease", "task_id", id, "err", err)
			}
		}
	}
}

func (p *Pool) tracer() trace.Tracer {
	if p.Tracer == nil {
		return noop.NewTracerProvider().Tracer(tracing.Name)
	}
	return p.Tracer
}

// startTrace gives a task that has none its trace (the webhook starts
// one for each delivery it records, the console's API does not): a root
// span from the task's creation to its first claim (the wait for a
// worker), whose context the caller saves with the task before any
// step, so that every step, retried or resumed elsewhere, is its child.
func (p *Pool) startTrace(ctx context.Context, t *Task) (started bool) {
	if t.Trace != "" || p.Tracer == nil {
		return false
	}
	start := t.CreatedAt
	if start.IsZero() {
		start = time.Now()
	}
	c, root := p.Tracer.Start(context.WithoutCancel(ctx), "task "+string(t.Kind), trace.WithTimestamp(start),
		trace.WithNewRoot(), trace.WithAttributes(taskAttrs(t)...))
	t.Trace = tracing.Parent(c)
	root.End()
	return t.Trace != ""
}

// taskAttrs describe t on its spans: ids and names only, never what
// anyone wrote.
func taskAttrs(t *Task) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.Int64("pullwright.task.id", t.ID),
		attribute.String("pullwright.task.kind", string(t.Kind)),
		attribute.String("pullwright.task.state", string(t.State)),
	}
	if t.Repo.Owner != "" {
		attrs = append(attrs, attribute.String("vcs.repository.name", t.Repo.Owner+"/"+t.Repo.Name))
	}
	if t.Issue > 0 {
		attrs = append(attrs, attribute.Int("pullwright.issue", t.Issue))
	}
	return attrs
}
