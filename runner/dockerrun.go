package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
)

// run is one command's life in its own container, once Run has chosen the
// image and the limits; see Run. Each step is a method below. The defers
// are what makes clean-up happen on every path, panics included: they undo
// the steps in reverse, so the container goes last, after everything that
// still uses it.
func (d *Docker) run(ctx context.Context, log *slog.Logger, s pullwright.RunSpec, image string, lim limits) (pullwright.RunResult, error) {
	res := pullwright.RunResult{ExitCode: -1}
	var ph phases
	ph.begin = time.Now()
	created, err := d.createContainer(ctx, s, image, lim)
	if err != nil {
		return res, err
	}
	log = log.With("container", shortID(created.ID))
	defer d.discard(log, created.ID, len(s.Caches) > 0)
	d.warnOnce(log, created.Warnings)

	r, err := d.attach(ctx, log, created.ID, s, lim)
	if err != nil {
		return res, err
	}
	defer r.close()
	ph.created = time.Now()
	if err := r.startContainer(ctx); err != nil {
		return res, err
	}
	ph.started = time.Now()
	if err := r.copyWorkspace(ctx); err != nil {
		return r.notRun(ctx, err)
	}
	ph.copied = time.Now()
	stopForwarder, err := r.provision(ctx)
	if err != nil {
		return res, err
	}
	ph.provisioned = time.Now()
	r.phases = &ph
	// After the wait below: the command's connections end with it.
	defer stopForwarder()

	start, err := r.goAhead()
	if err != nil {
		return res, err
	}
	ex := r.waitForExit(ctx)
	res.Duration = time.Since(start)
	r.drainOutput()
	state, err := r.finalState(ctx, ex.err)
	if err != nil {
		return res, err
	}
	res, err = r.result(ctx, res, state, ex)
	if err != nil {
		return res, err
	}
	return res, keep(ctx, s, &res, d.keptEntries(ctx, created.ID))
}

// createContainer exists to tell a cancelled run from an engine that
// refused: the caller wraps the first as ctx's error, which callers test
// for, and the second as a failed create.
func (d *Docker) createContainer(ctx context.Context, s pullwright.RunSpec, image string, lim limits) (client.ContainerCreateResult, error) {
	created, err := d.cli.ContainerCreate(ctx, d.containerConfig(s, image, lim))
	if err != nil {
		if ctx.Err() != nil {
			return created, fmt.Errorf("run: %w", ctx.Err())
		}
		return created, fmt.Errorf("create container: %w", err)
	}
	return created, nil
}

// warnOnce logs the engine's create warnings (e.g. a limit the host cannot
// apply) once per runner, not once per run: they repeat for every
// container of the same configuration and would drown the log.
func (d *Docker) warnOnce(log *slog.Logger, warnings []string) {
	for _, w := range warnings {
		if _, seen := d.warned.LoadOrStore(w, true); !seen {
			log.Warn("runner: Docker warning", "warning", w)
		}
	}
}

// dockerRun is what the steps of one run share once its container exists,
// so that each step needs only its own arguments.
type dockerRun struct {
	d   *Docker
	log *slog.Logger
	s   pullwright.RunSpec
	lim limits
	id  string

	// streamCtx outlives the run's context: after a timeout or cancel the
	// attach and the wait are still needed to see the container end.
	streamCtx    context.Context
	cancelStream context.CancelFunc
	attached     client.ContainerAttachResult
	out          *boundedOutput
	noSpace      *phraseSpotter
	copied       chan struct{} // closed when the output stream has ended
	phases       *phases
}

// phases are when each step before the command ended, for the log: what
// a run costs besides its command has names (the engine's create and
// start, the workspace's copy, the caches, CA bundle and forwarder).
type phases struct {
	begin, created, started, copied, provisioned time.Time
}

// attrs are the steps' durations, in milliseconds, as log attributes.
func (p *phases) attrs() []any {
	if p == nil {
		return nil
	}
	ms := func(from, to time.Time) int64 { return to.Sub(from).Milliseconds() }
	return []any{"create_ms", ms(p.begin, p.created), "start_ms", ms(p.created, p.started),
		"copy_ms", ms(p.started, p.copied), "provision_ms", ms(p.copied, p.provisioned)}
}

// attach connects to the container before it starts, so that no output is
// missed, and so that stdin can carry the go-ahead later. The output is
// read from here on, into the bounded buffer the result is made of.
func (d *Docker) attach(ctx context.Context, log *slog.Logger, id string, s pullwright.RunSpec, lim limits) (*dockerRun, error) {
	r := &dockerRun{d: d, log: log, s: s, lim: lim, id: id,
		out:     newBoundedOutput(s.MaxOutput),
		noSpace: newPhraseSpotter(noSpaceMessage),
		copied:  make(chan struct{}),
	}
	r.streamCtx, r.cancelStream = context.WithCancel(context.WithoutCancel(ctx))
	var err error
	r.attached, err = d.cli.ContainerAttach(r.streamCtx, id, client.ContainerAttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		r.cancelStream()
		return nil, fmt.Errorf("attach to container: %w", err)
	}
	go func() {
		defer close(r.copied)
		// One writer for both streams keeps them in the order the daemon
		// saw them; neither writer ever fails.
		w := io.MultiWriter(r.out, r.noSpace)
		_, _ = stdcopy.StdCopy(w, w, r.attached.Reader)
	}()
	return r, nil
}

// close is attach's undoing, for every way out of run: the reader goroutine
// must be gone before the output is dropped, and the stream's context is
// no longer needed.
func (r *dockerRun) close() {
	r.attached.Close()
	<-r.copied
	r.cancelStream()
}

// startContainer starts the container before the copy, not after: the
// engine writes into the volume only while it is mounted for a running
// container (before the start, it would be lost at unmount), and the entry
// point waits for the go-ahead meanwhile.
func (r *dockerRun) startContainer(ctx context.Context) error {
	if _, err := r.d.cli.ContainerStart(ctx, r.id, client.ContainerStartOptions{}); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("run: %w", ctx.Err())
		}
		return fmt.Errorf("start container: %w", err)
	}
	return nil
}

// copyWorkspace puts the copy of s.Dir in place before the command may
// look at it. If it fails, stdin closes without the go-ahead, so the
// command never runs on a partial workspace.
func (r *dockerRun) copyWorkspace(ctx context.Context) error {
	if err := r.d.copyIn(ctx, r.id, r.s.Dir, r.lim.disk, r.s.Links); err != nil {
		_ = r.attached.CloseWrite()
		return err
	}
	return nil
}

// notRun is Run's answer to a failed copy. A workspace too big for its
// volume is the agent's to see, as a normal Result, not the bot's error;
// a cancel is reported as ctx's error, as everywhere in run.
func (r *dockerRun) notRun(ctx context.Context, err error) (pullwright.RunResult, error) {
	res := pullwright.RunResult{ExitCode: -1}
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("run: %w", ctx.Err())
	case errors.Is(err, errWorkspaceTooBig):
		r.log.Warn("runner: the workspace does not fit in the sandbox", "disk", r.lim.disk, "err", err)
		res.NotStarted = true
		res.Output = fmt.Sprintf("not run: the workspace is larger than the %s the sandbox's %s holds\n",
			formatBytes(r.lim.disk), SandboxWorkdir)
		return res, nil
	}
	return res, err
}

// provision adds what the command finds beside the workspace: the caches
// it mounts, the operator's CA bundle and, for a fenced run, the forwarder
// that carries its connections (for a run given the bot's binary, the
// same binary, not started). Like the copy, any of them failing closes
// stdin without the go-ahead. stop ends the forwarder; call it after the
// command has ended (it does nothing for a run without a route).
func (r *dockerRun) provision(ctx context.Context) (stop func(), err error) {
	fail := func(err error) (func(), error) {
		_ = r.attached.CloseWrite()
		return nil, err
	}
	if err := r.d.prepareCaches(ctx, r.id, r.s.Caches); err != nil {
		return fail(err)
	}
	if err := r.d.copyCABundle(ctx, r.id); err != nil {
		return fail(err)
	}
	if r.s.KeepChanges {
		if err := r.d.makeKeepDir(ctx, r.id); err != nil {
			return fail(err)
		}
	}
	if r.s.Route == nil && !r.s.Bot {
		return func() {}, nil
	}
	if err := r.d.copyForwarder(ctx, r.id); err != nil {
		return fail(err)
	}
	if r.s.Route == nil {
		return func() {}, nil
	}
	stop, err = r.d.startForwarder(ctx, r.log, r.id, r.s.Route)
	if err != nil {
		return fail(err)
	}
	return stop, nil
}

// goAhead lets the command run, now that everything is in place, and
// returns when it did: Spec.Timeout and Result.Duration count from here,
// not from the create, so the copy costs the command none of its time.
func (r *dockerRun) goAhead() (time.Time, error) {
	r.log.Info("runner: start", "command", loggedCommand(r.s.Command), "timeout", r.s.Timeout,
		"network", r.lim.network, "memory", r.lim.memory, "nano_cpus", r.lim.nanoCPUs, "disk", r.lim.disk)
	if _, err := r.attached.Conn.Write([]byte("\n")); err != nil {
		return time.Time{}, fmt.Errorf("start command: %w", err)
	}
	// End of stdin for the command too: one that reads it must not hang.
	if err := r.attached.CloseWrite(); err != nil {
		return time.Time{}, fmt.Errorf("start command: %w", err)
	}
	start := time.Now()
	if r.d.onStarted != nil {
		r.d.onStarted()
	}
	return start, nil
}

// exit is how the wait for the command ended.
type exit struct {
	killed    bool  // by the runner: on timeout or cancel
	cancelled bool  // the run's context was done
	err       error // the wait failed
}

// waitForExit is where Spec.Timeout and a cancel take effect: the command
// gets until either, then is killed, and the wait goes on (bounded) so
// that the result describes a container that has really stopped.
func (r *dockerRun) waitForExit(ctx context.Context) exit {
	// Asked now, while the command runs, not on the way to the go-ahead:
	// until the go-ahead the container could only be running (its entry
	// point waits for it), and "not running" is answered at once for one
	// that has already ended, so no exit is missed.
	wait := r.d.cli.ContainerWait(r.streamCtx, r.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	timer := time.NewTimer(r.s.Timeout)
	defer timer.Stop()
	var ex exit
	select {
	case <-wait.Result:
	case ex.err = <-wait.Error:
	case <-timer.C:
		ex.killed = true
	case <-ctx.Done():
		ex.killed, ex.cancelled = true, true
	}
	if ex.killed {
		r.kill(ctx)
		select {
		case <-wait.Result:
		case ex.err = <-wait.Error:
		case <-time.After(cleanupTimeout):
			ex.err = errors.New("container did not stop after SIGKILL")
		}
	}
	return ex
}

// kill runs on a fresh context because it is needed most when the run's
// own context is done. A container already gone is what kill was for.
func (r *dockerRun) kill(ctx context.Context) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := r.d.cli.ContainerKill(kctx, r.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !cerrdefs.IsNotFound(err) {
		r.log.Warn("runner: kill container", "err", err)
	}
}

// drainOutput waits for the last of the output: the stream ends when the
// container's last process is gone, and the daemon may need a moment to
// flush it. A stream that never ends (a process left behind) is cut.
func (r *dockerRun) drainOutput() {
	select {
	case <-r.copied:
	case <-time.After(defaultWaitDelay):
		r.attached.Close()
		<-r.copied
	}
}

// finalState asks the engine how the container ended, the one source for
// the exit code and an OOM kill; the wait's answer does not say the
// latter. A container that cannot be shown to have stopped is an error,
// with the wait's own error if it had one.
func (r *dockerRun) finalState(ctx context.Context, waitErr error) (*container.State, error) {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	inspect, inspectErr := r.d.cli.ContainerInspect(ictx, r.id, client.ContainerInspectOptions{})
	cancel()
	var state *container.State
	if inspectErr == nil && inspect.Container.State != nil {
		state = inspect.Container.State
	}
	if state == nil || state.Running {
		if waitErr == nil {
			waitErr = inspectErr
		}
		if waitErr == nil {
			waitErr = errors.New("container still running")
		}
		return nil, fmt.Errorf("wait for container: %w", waitErr)
	}
	return state, nil
}

// result turns how the command ended into what the agent reads: the
// output ends with a note for every way the sandbox, not the command,
// ended it, so a timeout or a full disk is not mistaken for a failing
// test. A cancelled run is also returned as ctx's error, for the caller.
func (r *dockerRun) result(ctx context.Context, res pullwright.RunResult, state *container.State, ex exit) (pullwright.RunResult, error) {
	res.OOMKilled = state.OOMKilled
	res.TimedOut = ex.killed && !ex.cancelled
	if !ex.killed {
		res.ExitCode = state.ExitCode
	}
	r.addNotes(ctx, res, ex.cancelled)
	res.Output, res.Truncated = r.out.String()

	r.log.Info("runner: end", append([]any{"command", loggedCommand(r.s.Command), "exit_code", res.ExitCode,
		"duration", res.Duration, "timed_out", res.TimedOut, "oom_killed", res.OOMKilled,
		"out_of_space", r.noSpace.seen, "cancelled", ex.cancelled, "output_bytes", r.out.total, "truncated", res.Truncated},
		r.phases.attrs()...)...)
	if ex.cancelled {
		return res, fmt.Errorf("run %q: %w", r.s.Command, ctx.Err())
	}
	return res, nil
}

// addNotes appends the notes result promises, each naming the limit that
// was hit, so the agent can tell what to change.
func (r *dockerRun) addNotes(ctx context.Context, res pullwright.RunResult, cancelled bool) {
	switch {
	case cancelled:
		r.out.ensureNewline()
		fmt.Fprintf(r.out, "[cancelled: %v]\n", ctx.Err())
	case res.TimedOut:
		r.out.ensureNewline()
		fmt.Fprintf(r.out, "[timed out after %s]\n", r.s.Timeout)
	}
	if res.OOMKilled {
		r.out.ensureNewline()
		fmt.Fprintf(r.out, "[killed: out of memory (the sandbox's limit is %s)]\n", formatBytes(r.lim.memory))
	}
	if r.noSpace.seen {
		r.out.ensureNewline()
		fmt.Fprintf(r.out, "[out of space: %s holds at most %s and /tmp %s in this sandbox]\n",
			SandboxWorkdir, formatBytes(r.lim.disk), formatBytes(r.d.cfg.TmpfsSize))
	}
}
