package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pullwright/pullwright"
)

// DefaultPath is the PATH a Local command gets.
const DefaultPath = "/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"

// defaultWaitDelay bounds how long Run waits, once the shell is gone and its
// process group killed, for output from processes that left the group
// (setsid, daemons) and still hold the output pipe.
const defaultWaitDelay = 2 * time.Second

// Local runs commands as child processes of the bot, on a copy of the
// workspace, with a minimal environment and in their own process group. It
// gives NO isolation: the command runs as the bot's user, sees the bot's file
// system and network, and a process that calls setsid escapes the group kill.
// Use it for development and on GitHub Actions runners only. Local is Unix
// only. For the same reason it ignores Spec.Network, Spec.Memory,
// Spec.NanoCPUs and Spec.Disk: it has no network namespace, cgroup or
// file system of its own to apply them to, so a command gets the host's
// network, memory, CPUs and disk whatever they say.
//
// The zero value is usable: TempDir "" means os.TempDir() and a nil Logger
// means slog.Default().
type Local struct {
	// TempDir is where per-run directories (the workspace copy, HOME,
	// TMPDIR, GOCACHE, GOPATH) are created and removed again.
	TempDir string
	// Path is the PATH a command gets (default DefaultPath). A GitHub
	// Actions job passes its own, which holds the toolchains its setup
	// steps installed.
	Path   string
	Logger *slog.Logger

	waitDelay time.Duration // 0 means defaultWaitDelay; tests shorten it
}

var _ Runner = (*Local)(nil)

// NewLocal returns a Local runner and logs, once, a warning that it gives no
// isolation.
func NewLocal(tempDir string, log *slog.Logger) *Local {
	l := &Local{TempDir: tempDir, Logger: log}
	l.logger().Warn("runner: LOCAL RUNNER, NO ISOLATION: approved commands run as this process's user, " +
		"with its file system and network; use it only for development and on GitHub Actions runners, " +
		"and BOT_RUNNER=docker everywhere else")
	return l
}

func (l *Local) logger() *slog.Logger {
	if l.Logger == nil {
		return slog.Default()
	}
	return l.Logger
}

// Run copies s.Dir into a fresh directory under l.TempDir, runs s.Command
// there with /bin/sh -c and removes the copy again, whatever happened. The
// command gets only PATH, HOME, TMPDIR, LANG, CI, GOCACHE and GOPATH, the
// last four pointing at empty per-run directories. When the shell exits, or
// the timeout or ctx ends the run, its whole process group is killed.
func (l *Local) Run(ctx context.Context, s pullwright.RunSpec) (pullwright.RunResult, error) {
	s = withDefaults(s)
	res := pullwright.RunResult{ExitCode: -1}
	if s.Dir == "" {
		return res, errors.New("run: no workspace directory")
	}
	if s.Command == "" {
		return res, errors.New("run: empty command")
	}
	if s.Route != nil {
		// No isolation means no fence: the command would have the host's
		// network whatever the allow-list says.
		return res, errors.New("run: the local runner cannot fence a run's network; use the Docker runner")
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("run: %w", err)
	}
	log := l.logger().With(labelAttrs(s.Labels)...)

	if _, err := os.Stat("/bin/sh"); err != nil {
		return res, fmt.Errorf("run: this machine has no /bin/sh to run commands with (a minimal container image?): %w", err)
	}
	base, work, remove, err := copyWorkspace(ctx, log, l.TempDir, "pullwright-run-", s.Dir)
	if err != nil {
		return res, err
	}
	defer remove()
	path := l.Path
	if path == "" {
		path = DefaultPath
	}
	env := []string{"PATH=" + path, "LANG=C.UTF-8", "CI=true"}
	for _, v := range []struct{ name, dir string }{
		{"HOME", "home"}, {"TMPDIR", "tmp"}, {"GOCACHE", "gocache"}, {"GOPATH", "gopath"},
	} {
		dir := filepath.Join(base, v.dir)
		if err := os.Mkdir(dir, 0o700); err != nil {
			return res, fmt.Errorf("create run directory: %w", err)
		}
		env = append(env, v.name+"="+dir)
	}
	res, err = l.run(ctx, log, s, work, env)
	if err != nil {
		return res, err
	}
	return res, keep(ctx, s, &res, walkCopy(ctx, work))
}

// run starts the shell and collects its result; see Run.
func (l *Local) run(ctx context.Context, log *slog.Logger, s pullwright.RunSpec, dir string, env []string) (pullwright.RunResult, error) {
	res := pullwright.RunResult{ExitCode: -1}
	waitDelay := l.waitDelay
	if waitDelay <= 0 {
		waitDelay = defaultWaitDelay
	}

	// One pipe for stdout and stderr keeps them in the order written. It is
	// handed to the shell as a file, so Wait returns when the shell exits
	// rather than when every process holding the pipe has closed it.
	pr, pw, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("create output pipe: %w", err)
	}
	defer pr.Close()

	runCtx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "/bin/sh", "-c", s.Command)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = pw
	cmd.Stderr = pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var interrupted atomic.Bool
	cmd.Cancel = func() error {
		interrupted.Store(true)
		return killGroup(cmd.Process.Pid)
	}
	cmd.WaitDelay = waitDelay

	log.Info("runner: start", "command", s.Command, "timeout", s.Timeout)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		return res, fmt.Errorf("start /bin/sh: %w", err)
	}
	pw.Close()

	out := newBoundedOutput(s.MaxOutput)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr) // ends at EOF or at the read deadline below
	}()

	pid := cmd.Process.Pid
	exitedErr := waitExited(pid)
	if exitedErr == nil {
		// The shell is gone but not yet reaped; whatever it left running in
		// its group goes too.
		_ = killGroup(pid)
	}
	killed := interrupted.Load() // by the timeout or ctx; read before Wait can call Cancel late
	waitErr := cmd.Wait()
	if exitedErr != nil {
		_ = killGroup(pid)
	}
	// Collect what is still in the pipe. A process that left the group may
	// hold it open forever: stop reading after waitDelay.
	drain := time.NewTimer(waitDelay)
	select {
	case <-copied:
	case <-drain.C:
		_ = pr.SetReadDeadline(time.Now())
		<-copied
	}
	drain.Stop()
	res.Duration = time.Since(start)

	ps := cmd.ProcessState
	if ps == nil {
		return res, fmt.Errorf("wait for /bin/sh: %w", waitErr)
	}
	status, _ := ps.Sys().(syscall.WaitStatus)
	cancelled := killed && ctx.Err() != nil
	res.TimedOut = killed && !cancelled
	switch {
	case killed:
		// Even if the shell exited on its own at the last moment, the run
		// was ended by the timeout or ctx and its group killed: -1.
	case status.Exited():
		res.ExitCode = status.ExitStatus()
	}
	switch {
	case cancelled:
		out.ensureNewline()
		fmt.Fprintf(out, "[cancelled: %v]\n", ctx.Err())
	case res.TimedOut:
		out.ensureNewline()
		fmt.Fprintf(out, "[timed out after %s]\n", s.Timeout)
	case status.Signaled():
		out.ensureNewline()
		fmt.Fprintf(out, "[killed by signal %s]\n", signalName(status.Signal()))
	}
	res.Output, res.Truncated = out.String()

	log.Info("runner: end", "command", s.Command, "exit_code", res.ExitCode,
		"duration", res.Duration, "timed_out", res.TimedOut, "cancelled", cancelled,
		"output_bytes", out.total, "truncated", res.Truncated)
	if cancelled {
		return res, fmt.Errorf("run %q: %w", s.Command, ctx.Err())
	}
	return res, nil
}

// killGroup sends SIGKILL to the process group pgid.
func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// signalName is e.g. "9 (SIGKILL)".
func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
		syscall.SIGHUP: "SIGHUP", syscall.SIGILL: "SIGILL", syscall.SIGINT: "SIGINT",
		syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM", syscall.SIGUSR1: "SIGUSR1",
		syscall.SIGUSR2: "SIGUSR2", syscall.SIGALRM: "SIGALRM", syscall.SIGXCPU: "SIGXCPU",
	}
	if name, ok := names[sig]; ok {
		return fmt.Sprintf("%d (%s)", int(sig), name)
	}
	return fmt.Sprintf("%d (%s)", int(sig), sig)
}

// labelAttrs turns labels into slog attributes, sorted by key.
func labelAttrs(labels map[string]string) []any {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]any, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.String(k, labels[k]))
	}
	return attrs
}
