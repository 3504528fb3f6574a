package localrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pullwright/pullwright/runner"
)

// Every container and volume a bot run's sandbox makes carries the run's
// process: labelRun is "<pid>@<host>", labelRunStarted when the process
// started (its start time in the kernel's clock ticks since boot, on
// Linux; absent elsewhere), so that a pid used again by another process
// is not taken for the run. A run that is stopped removes its own; one
// that was killed cannot, and the next bot run on the machine removes
// what it left (removeLeftBehind). Several bot runs may share the engine:
// each removes only what a process that is gone made.
const (
	labelRun        = "pullwright.run"
	labelRunStarted = "pullwright.run.started"
)

// sandboxOwner is the runner's owner label of every bot run.
const sandboxOwner = "bot-run"

// leftBehindTimeout bounds the removal of what a killed run left.
const leftBehindTimeout = time.Minute

// process is one bot run's process, as its labels name it.
type process struct {
	pid     int
	host    string
	started string // "" when it cannot be told
}

// thisProcess is the running process.
func thisProcess() process {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return process{pid: pid, host: host, started: startTime(pid)}
}

// labels are what the process's containers and volumes carry.
func (p process) labels() map[string]string {
	l := map[string]string{labelRun: strconv.Itoa(p.pid) + "@" + p.host}
	if p.started != "" {
		l[labelRunStarted] = p.started
	}
	return l
}

// goneFrom reports whether labels name a bot run on host whose process no
// longer runs, as alive tells. A label it does not understand, or another
// host's process (the engine may be shared), is never gone: what is not
// surely a dead run's stays.
func goneFrom(labels map[string]string, host string, alive func(pid int, started string) bool) bool {
	pidText, on, ok := strings.Cut(labels[labelRun], "@")
	if !ok || on != host || host == "" {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	return !alive(pid, labels[labelRunStarted])
}

// processAlive reports whether process pid runs and, when started is
// known, is the one that started then.
func processAlive(pid int, started string) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	if err := p.Signal(syscall.Signal(0)); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if now := startTime(pid); started != "" && now != "" && now != started {
		return false // another process has the pid now
	}
	return true
}

// startTime is when process pid started, in clock ticks since boot (field
// 22 of /proc/PID/stat); "" where there is no /proc.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command's name, in parentheses, may hold spaces and
	// parentheses: the fields after it are counted from its last ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// removeLeftBehind removes the sandbox containers and volumes of bot runs
// on this machine whose process is gone (killed before it could remove
// them), and returns how many containers it removed.
func removeLeftBehind(ctx context.Context, d *runner.Docker, self process) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, leftBehindTimeout)
	defer cancel()
	n, err := d.RemoveLeftBehind(ctx, labelRun, func(labels map[string]string) bool {
		return goneFrom(labels, self.host, processAlive)
	})
	if err != nil {
		return n, fmt.Errorf("remove the sandboxes a stopped bot run left: %w", err)
	}
	return n, nil
}

// RemoveSandboxes removes the sandbox containers of this process's bot
// run, at once: for a run that quits without waiting for its own
// clean-up (a second Ctrl-C).
func RemoveSandboxes(ctx context.Context) (int, error) {
	d, err := runner.NewDocker(runner.DockerConfig{Owner: sandboxOwner})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	self := thisProcess().labels()[labelRun]
	return d.RemoveLeftBehind(ctx, labelRun, func(labels map[string]string) bool { return labels[labelRun] == self })
}
