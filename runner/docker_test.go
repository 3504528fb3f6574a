package runner_test

// Tests of the Docker runner against the real engine; internal/sandboxtest
// says what they need and when they skip.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
)

// sandboxImage returns the test image (see internal/sandboxtest).
func sandboxImage(t testing.TB) string { return sandboxtest.Image(t) }

var testOwners atomic.Int64

// newDocker returns a Docker runner on the test image whose containers and
// volumes carry an owner label of their own and whose TempDir is a directory
// of the test, and checks when the test ends that no container, volume or
// file there is left.
func newDocker(t *testing.T, cfg runner.DockerConfig) *runner.Docker {
	t.Helper()
	image := sandboxImage(t)
	if cfg.Image == "" {
		cfg.Image = image
	}
	if cfg.Owner == "" {
		cfg.Owner = fmt.Sprintf("test-%d-%d", os.Getpid(), testOwners.Add(1))
	}
	if cfg.TempDir == "" {
		cfg.TempDir = t.TempDir()
	}
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	d, err := runner.NewDocker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer d.Close()
		runner.WaitRemovals(d)
		if left := ownedContainers(t, cfg.Owner); len(left) > 0 {
			t.Errorf("containers left behind: %v", left)
		}
		if left := ownedVolumes(t, cfg.Owner); len(left) > 0 {
			t.Errorf("volumes left behind: %v", left)
		}
		assertEmpty(t, cfg.TempDir)
	})
	return d
}

// ownedContainers lists the containers, running or not, labelled
// pullwright.managed=true with the given owner.
func ownedContainers(t testing.TB, owner string) []string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
		All: true,
		Filters: client.Filters{}.Add("label", runner.LabelManaged+"=true").
			Add("label", runner.LabelOwner+"="+owner),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID[:12]+" "+string(c.State))
	}
	return ids
}

// containerRuns reports whether a running container of owner has a
// process whose command line is want. The sandbox keeps no logs
// (its log driver is "none"), so a test watches its processes instead.
func containerRuns(t testing.TB, owner, want string) bool {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Error(err)
		return true
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		Filters: client.Filters{}.Add("label", runner.LabelManaged+"=true").
			Add("label", runner.LabelOwner+"="+owner),
	})
	if err != nil {
		return false
	}
	for _, c := range list.Items {
		top, err := cli.ContainerTop(ctx, c.ID, client.ContainerTopOptions{})
		if err != nil {
			continue
		}
		// The whole command line of a process, not a part of any: the
		// shell running "echo started; sleep 1000" holds "sleep 1000" in
		// its arguments before it has echoed anything.
		cmd := slices.Index(top.Titles, "CMD")
		if cmd < 0 {
			cmd = slices.Index(top.Titles, "COMMAND")
		}
		for _, p := range top.Processes {
			if cmd >= 0 && cmd < len(p) && strings.TrimSpace(p[cmd]) == want {
				return true
			}
		}
	}
	return false
}

// dockerRun runs command on a copy of dir (an empty directory if "").
func dockerRun(t *testing.T, d *runner.Docker, dir, command string, timeout time.Duration) pullwright.RunResult {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	res, err := d.Run(t.Context(), pullwright.RunSpec{
		Dir: dir, Command: command, Timeout: timeout,
		Labels: map[string]string{"pullwright.task": "1", "pullwright.request": t.Name()},
	})
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return res
}

var goTestTimes = regexp.MustCompile(`\(\d+\.\d+s\)|\t\d+\.\d+s|\t\(cached\)`)

func TestDockerGoTestFailsThenPasses(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.26\n",
		"calc.go": "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a + b + 1 }\n",
		"calc_test.go": `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 2); got != 4 {
		t.Errorf("Add(2, 2) = %d, want 4", got)
	}
}
`,
	})
	// Exit code and output are what `go test` says on any machine, test
	// times aside.
	check := func(wantExit int, want string) {
		t.Helper()
		res := dockerRun(t, d, dir, "go test ./...", 5*time.Minute)
		t.Logf("sandbox (exit %d, %s):\n%s", res.ExitCode, res.Duration, res.Output)
		if res.ExitCode != wantExit {
			t.Errorf("exit code %d, want %d", res.ExitCode, wantExit)
		}
		if got := goTestTimes.ReplaceAllString(res.Output, ""); got != want {
			t.Errorf("output (test times removed):\n%s\nwant:\n%s", got, want)
		}
		if res.TimedOut || res.OOMKilled || res.Truncated {
			t.Errorf("result %+v", res)
		}
	}
	check(1, "--- FAIL: TestAdd \n    calc_test.go:7: Add(2, 2) = 5, want 4\nFAIL\nFAIL\texample.com/calc\nFAIL\n")

	writeTree(t, dir, map[string]string{
		"calc.go": "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a + b }\n",
	})
	check(0, "ok  \texample.com/calc\n")
}

func TestDockerNoNetwork(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})

	// The bot's own listening port, on every address of this host (the
	// Docker bridge's gateway among them) and on 127.0.0.1.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	targets := []string{"127.0.0.1 " + port, "1.1.1.1 80"}
	var bridge string
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			targets = append(targets, ip.IP.String()+" "+port)
			if strings.HasPrefix(ip.IP.String(), "172.17.") {
				bridge = ip.IP.String()
			}
		}
	}
	var script strings.Builder
	for _, target := range targets {
		fmt.Fprintf(&script, "if nc -w 3 %s </dev/null; then echo 'CONNECTED %s'; else echo 'refused %s'; fi\n", target, target, target)
	}
	res := dockerRun(t, d, "", script.String(), time.Minute)
	t.Logf("output:\n%s", res.Output)
	if strings.Contains(res.Output, "CONNECTED") || accepted.Load() > 0 {
		t.Errorf("the sandbox reached the network (%d connections accepted)", accepted.Load())
	}
	for _, target := range targets {
		if !strings.Contains(res.Output, "refused "+target) {
			t.Errorf("no failed attempt to %s", target)
		}
	}
	if !strings.Contains(res.Output, "Network is unreachable") {
		t.Error("no 'Network is unreachable' in the output")
	}

	// The control: the same probe with a network reaches the listener, so
	// the probe itself works.
	if bridge != "" {
		withNet := newDocker(t, runner.DockerConfig{NetworkMode: "bridge"})
		res := dockerRun(t, withNet, "", fmt.Sprintf("nc -w 3 %s %s </dev/null && echo CONNECTED", bridge, port), time.Minute)
		if !strings.Contains(res.Output, "CONNECTED") {
			t.Errorf("control with NetworkMode bridge did not connect to %s:%s: %s", bridge, port, res.Output)
		}
	}
}

func TestDockerLimits(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})

	t.Run("out of memory", func(t *testing.T) {
		t.Parallel()
		small := newDocker(t, runner.DockerConfig{Memory: 64 << 20})
		// dd's 256 MiB buffer is filled by read(2): far beyond 64 MiB.
		res := dockerRun(t, small, "", "dd if=/dev/zero of=/dev/null bs=256M count=1", time.Minute)
		if !res.OOMKilled || res.ExitCode != 137 || res.TimedOut {
			t.Errorf("got exit %d, OOMKilled %v, TimedOut %v; want 137, true, false\n%s", res.ExitCode, res.OOMKilled, res.TimedOut, res.Output)
		}
		if !strings.Contains(res.Output, "[killed: out of memory (the sandbox's limit is 64 MiB)]") {
			t.Errorf("output %q lacks the OOM note", res.Output)
		}
	})

	t.Run("out of memory under a Spec limit", func(t *testing.T) {
		t.Parallel()
		res, err := d.Run(t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Command: "dd if=/dev/zero of=/dev/null bs=256M count=1",
			Timeout: time.Minute, Memory: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if !res.OOMKilled || !strings.Contains(res.Output, "[killed: out of memory (the sandbox's limit is 64 MiB)]") {
			t.Errorf("got OOMKilled %v, output %q; want the Spec's 64 MiB limit named", res.OOMKilled, res.Output)
		}
	})

	t.Run("fork bomb", func(t *testing.T) {
		t.Parallel()
		small := newDocker(t, runner.DockerConfig{PidsLimit: 20})
		// A bounded bomb: 100 background processes, of which the pids limit
		// lets about 20 live at a time.
		res := dockerRun(t, small, "", `i=0; while [ $i -lt 100 ]; do sleep 2 & i=$((i+1)); done; wait; echo bomb over`, time.Minute)
		t.Logf("exit %d after %s:\n%.2000s", res.ExitCode, res.Duration, res.Output)
		if res.TimedOut {
			t.Error("timed out")
		}
		if !strings.Contains(res.Output, "can't fork") && !strings.Contains(res.Output, "Resource temporarily unavailable") {
			t.Error("no fork failure in the output: the pids limit did not hold")
		}
		// That the container ended and was removed is checked at cleanup.
	})

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		res := dockerRun(t, d, "", "echo started; sleep 1000", 2*time.Second)
		if !res.TimedOut || res.ExitCode != -1 || res.OOMKilled {
			t.Errorf("got %+v, want timed out with exit -1", res)
		}
		if res.Output != "started\n[timed out after 2s]\n" {
			t.Errorf("output %q", res.Output)
		}
	})

	t.Run("50 MiB of output", func(t *testing.T) {
		t.Parallel()
		res := dockerRun(t, d, "", "echo first; head -c 52428800 /dev/zero | tr '\\0' x; echo; echo last", time.Minute)
		if !res.Truncated || res.ExitCode != 0 {
			t.Fatalf("got exit %d, truncated %v", res.ExitCode, res.Truncated)
		}
		marker := regexp.MustCompile(`\n\[… (\d+) bytes cut …\]\n`)
		m := marker.FindStringSubmatch(res.Output)
		if m == nil {
			t.Fatalf("no cut marker in the output (%d bytes)", len(res.Output))
		}
		if kept := len(res.Output) - len(m[0]); kept > runner.DefaultMaxOutput {
			t.Errorf("kept %d bytes, more than %d", kept, runner.DefaultMaxOutput)
		}
		total := len("first\n") + 52428800 + len("\nlast\n")
		if cut, _ := strconv.Atoi(m[1]); cut+len(res.Output)-len(m[0]) != total {
			t.Errorf("cut %d + kept %d != %d written", cut, len(res.Output)-len(m[0]), total)
		}
		if !strings.HasPrefix(res.Output, "first\nxxx") || !strings.HasSuffix(res.Output, "xxx\nlast\n") {
			t.Errorf("head or tail missing: %q … %q", res.Output[:20], res.Output[len(res.Output)-20:])
		}
	})

	t.Run("read-only root", func(t *testing.T) {
		t.Parallel()
		res := dockerRun(t, d, "", `touch /evil; echo "root=$?"; echo x >> /etc/passwd; echo "passwd=$?"; `+
			`touch /workspace/ok && touch /tmp/ok && echo writable`, time.Minute)
		for _, want := range []string{"Read-only file system", "root=1", "passwd=1", "writable"} {
			if !strings.Contains(res.Output, want) {
				t.Errorf("output lacks %q:\n%s", want, res.Output)
			}
		}
	})

	t.Run("no docker socket", func(t *testing.T) {
		t.Parallel()
		res := dockerRun(t, d, "", `for s in /var/run/docker.sock /run/docker.sock; do if [ -e $s ]; then echo "FOUND $s"; fi; done; echo checked`, time.Minute)
		if strings.Contains(res.Output, "FOUND") || !strings.Contains(res.Output, "checked") {
			t.Errorf("output:\n%s", res.Output)
		}
	})

	t.Run("unprivileged", func(t *testing.T) {
		t.Parallel()
		res := dockerRun(t, d, "", `id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status`, time.Minute)
		for _, want := range []string{"65534\n65534\n", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1"} {
			if !strings.Contains(res.Output, want) {
				t.Errorf("output lacks %q:\n%s", want, res.Output)
			}
		}
	})
}

// limitsProbe prints what the container sees of its limits as key=value
// lines, the same on cgroup v1 and v2 hosts: "net" the network interfaces,
// "memory" the memory limit in bytes, "swap" how much swap comes on top of
// it, and "cpu" the CFS quota and period in microseconds.
const limitsProbe = `echo "net=$(ls /sys/class/net | tr '\n' ' ')"
if [ -f /sys/fs/cgroup/memory.max ]; then
	echo "memory=$(cat /sys/fs/cgroup/memory.max)"
	echo "swap=$(cat /sys/fs/cgroup/memory.swap.max)"
	echo "cpu=$(cat /sys/fs/cgroup/cpu.max)"
else
	m=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)
	echo "memory=$m"
	echo "swap=$(( $(cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes) - m ))"
	echo "cpu=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"
fi
`

func TestDockerSpecLimits(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})
	tests := []struct {
		name string
		spec pullwright.RunSpec
		want map[string]string // probe keys; "net" is matched by wantNet
		// wantNet reports whether the interfaces are right.
		wantNet func(ifaces []string) bool
	}{
		{
			name:    "defaults",
			want:    map[string]string{"memory": strconv.Itoa(runner.DefaultMemory), "swap": "0"},
			wantNet: onlyLoopback,
		},
		{
			name:    "64 MiB",
			spec:    pullwright.RunSpec{Memory: 64 << 20},
			want:    map[string]string{"memory": "67108864", "swap": "0"},
			wantNet: onlyLoopback,
		},
		{
			name: "half a CPU",
			spec: pullwright.RunSpec{NanoCPUs: 5e8},
			want: map[string]string{"cpu": "50000 100000"},
		},
		{
			// More CPUs than any test host has: lowered, not refused.
			name: "more CPUs than the host",
			spec: pullwright.RunSpec{NanoCPUs: 4096e9},
		},
		{
			name:    "no network, explicitly",
			spec:    pullwright.RunSpec{Network: "none"},
			wantNet: onlyLoopback,
		},
		{
			name: "bridge",
			spec: pullwright.RunSpec{Network: "bridge"},
			wantNet: func(ifaces []string) bool {
				return slices.ContainsFunc(ifaces, func(s string) bool { return s != "lo" })
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := tt.spec
			spec.Dir, spec.Command, spec.Timeout = t.TempDir(), limitsProbe, time.Minute
			res, err := d.Run(t.Context(), spec)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			t.Logf("exit %d:\n%s", res.ExitCode, res.Output)
			if res.ExitCode != 0 {
				t.Fatalf("probe failed with exit code %d", res.ExitCode)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
				k, v, _ := strings.Cut(line, "=")
				got[k] = strings.TrimSpace(v)
			}
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("%s = %q, want %q", k, got[k], want)
				}
			}
			if ifaces := strings.Fields(got["net"]); tt.wantNet != nil && !tt.wantNet(ifaces) {
				t.Errorf("network interfaces %q", ifaces)
			}
		})
	}
}

func onlyLoopback(ifaces []string) bool { return slices.Equal(ifaces, []string{"lo"}) }

func TestDockerRefusesSpecLimits(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})
	tests := []struct {
		name    string
		spec    pullwright.RunSpec
		wantErr string
	}{
		{"host network", pullwright.RunSpec{Network: "host"}, `network "host" refused`},
		{"another container's network", pullwright.RunSpec{Network: "container:abc"}, `network "container:abc" refused`},
		{"a named network", pullwright.RunSpec{Network: "my-net"}, `network "my-net" refused`},
		{"case", pullwright.RunSpec{Network: "Bridge"}, `network "Bridge" refused`},
		{"negative memory", pullwright.RunSpec{Memory: -1}, "negative memory limit"},
		{"negative CPUs", pullwright.RunSpec{NanoCPUs: -1}, "negative CPU limit"},
		{"negative disk", pullwright.RunSpec{Disk: -1}, "negative disk limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := tt.spec
			spec.Dir, spec.Command = t.TempDir(), "echo ran"
			res, err := d.Run(t.Context(), spec)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if strings.Contains(res.Output, "ran") || res.ExitCode != -1 {
				t.Errorf("the command ran: %+v", res)
			}
		})
	}
}

// TestDockerEnvironment cannot run in parallel: it sets an environment
// variable of the test process.
func TestDockerEnvironment(t *testing.T) {
	t.Setenv("PULLWRIGHT_CANARY", "secret-canary-value")
	t.Setenv("GITHUB_TOKEN", "ghs_canary")
	d := newDocker(t, runner.DockerConfig{})
	res := dockerRun(t, d, "", "env", time.Minute)
	if strings.Contains(res.Output, "canary") {
		t.Errorf("the bot's environment reached the sandbox:\n%s", res.Output)
	}
	// The runner's variables, the image's (PATH, GOTOOLCHAIN) and the
	// shell's own (PWD, SHLVL, HOSTNAME from Docker): nothing else.
	allowed := []string{"HOME", "TMPDIR", "GOCACHE", "GOPATH", "CI", "LANG", "PATH", "GOTOOLCHAIN", "HOSTNAME", "PWD", "SHLVL"}
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		name, _, _ := strings.Cut(line, "=")
		if !slices.Contains(allowed, name) {
			t.Errorf("unexpected variable in the sandbox: %s", line)
		}
	}
	for _, want := range []string{"HOME=/tmp", "TMPDIR=/tmp", "GOCACHE=/tmp/gocache", "CI=true", "PWD=/workspace"} {
		if !strings.Contains(res.Output, want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, res.Output)
		}
	}
}

func TestDockerLeavesWorkspaceUnchanged(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"go.mod": "module example.com/x\n", "main.go": "package main\n", "sub/": "", "sub/data.txt": "data\n",
		".git/HEAD": "ref: refs/heads/main\n",
	})
	if err := os.Symlink("main.go", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	res := dockerRun(t, d, dir, `ls -A; echo pwned > main.go; rm -rf sub .git; ln -sf /etc/passwd link; `+
		`mkdir -p new/deep && echo x > new/deep/f && chmod -R a-w new; chmod 000 go.mod; echo done`, time.Minute)
	if res.ExitCode != 0 || !strings.Contains(res.Output, "done") || !strings.Contains(res.Output, "main.go") {
		t.Fatalf("the command did not run on the copy: exit %d\n%s", res.ExitCode, res.Output)
	}
	if after := snapshot(t, dir); !equalMaps(before, after) {
		t.Errorf("workspace changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestDockerContextCancel(t *testing.T) {
	t.Parallel()
	owner := fmt.Sprintf("cancel-%d-%d", os.Getpid(), testOwners.Add(1))
	d := newDocker(t, runner.DockerConfig{Owner: owner})
	ctx, cancel := context.WithCancel(t.Context())
	// Cancel once the command has printed and sleeps, not after a fixed
	// time: on a loaded machine setting up the sandbox can take longer
	// than any guess, and a cancel before the start tests something else.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		defer cancel()
		for ctx.Err() == nil && !containerRuns(t, owner, "sleep 1000") {
			time.Sleep(50 * time.Millisecond)
		}
	}()
	res, err := d.Run(ctx, pullwright.RunSpec{Dir: t.TempDir(), Command: "echo started; sleep 1000"})
	cancel()
	<-watched
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if res.ExitCode != -1 || res.TimedOut || !strings.HasPrefix(res.Output, "started\n[cancelled: ") {
		t.Errorf("result %+v", res)
	}
}

func TestDockerMissingImage(t *testing.T) {
	t.Parallel()
	// A registry on a closed local port: the pull fails at once.
	for _, noPull := range []bool{false, true} {
		d := newDocker(t, runner.DockerConfig{NoPull: noPull})
		res, err := d.Run(t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Command: "true", Image: "127.0.0.1:9/pullwright/none:never"})
		if err != nil {
			t.Fatalf("NoPull %v: error %v, want a Result", noPull, err)
		}
		t.Logf("NoPull %v: %s", noPull, res.Output)
		if res.ExitCode != -1 || !strings.HasPrefix(res.Output, "not run: image 127.0.0.1:9/pullwright/none:never is not available and could not be pulled: ") {
			t.Errorf("NoPull %v: result %+v", noPull, res)
		}
	}
}

func TestDockerCleanupOrphans(t *testing.T) {
	t.Parallel()
	image := sandboxImage(t)
	owner := fmt.Sprintf("orphans-%d", os.Getpid())
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := t.Context()
	// What a killed bot leaves: a running labelled container, a stopped
	// one, and a workspace copy; and a container of another bot sharing
	// the Docker host, which must survive.
	create := func(owner string, start bool) string {
		t.Helper()
		c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{
				Image: image, Cmd: []string{"sleep", "1000"},
				Labels: map[string]string{runner.LabelManaged: "true", runner.LabelOwner: owner, "pullwright.task": "7"},
			},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
		})
		if start {
			if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return c.ID
	}
	running := create(owner, true)
	stopped := create(owner, false)
	other := create(owner+"-other", false)
	tmp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tmp, "pullwright-docker-123", "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}

	d := newDocker(t, runner.DockerConfig{Owner: owner, TempDir: tmp})
	n, err := d.CleanupOrphans(ctx)
	if err != nil || n != 2 {
		t.Errorf("CleanupOrphans = %d, %v; want 2, nil", n, err)
	}
	for _, id := range []string{running, stopped} {
		if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Errorf("container %s still there (inspect: %v)", id[:12], err)
		}
	}
	if _, err := cli.ContainerInspect(ctx, other, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("another owner's container was removed: %v", err)
	}
	// newDocker's clean-up checks that no container of owner and nothing in
	// tmp is left.
}

// TestDockerRemovesWhatItRan: a run's container and volume are gone once
// Close returns, and already when Run returns if the run mounted a cache,
// which its owner may then remove at once.
func TestDockerRemovesWhatItRan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	d := newDocker(t, runner.DockerConfig{})
	cache := cacheVolume(t)
	res, err := d.Run(ctx, pullwright.RunSpec{Dir: t.TempDir(), Command: "test -d /deps",
		Caches: []pullwright.CacheMount{{Volume: cache, Target: "/deps", ReadOnly: true}}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run with a cache: %v %+v", err, res)
	}
	if left := ownedContainers(t, d.Config().Owner); len(left) > 0 {
		t.Errorf("containers left when Run returned: %v", left)
	}
	if _, err := cli.VolumeRemove(ctx, cache, client.VolumeRemoveOptions{}); err != nil {
		t.Errorf("remove the cache after the run: %v", err)
	}

	owner := fmt.Sprintf("closed-%d-%d", os.Getpid(), testOwners.Add(1))
	closed, err := runner.NewDocker(runner.DockerConfig{Image: sandboxImage(t), Owner: owner,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	res, err = closed.Run(ctx, pullwright.RunSpec{Dir: t.TempDir(), Command: "true"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if left := ownedContainers(t, owner); len(left) > 0 {
		t.Errorf("containers left after Close: %v", left)
	}
	if left := ownedVolumes(t, owner); len(left) > 0 {
		t.Errorf("volumes left after Close: %v", left)
	}
}

func TestImageFor(t *testing.T) {
	tests := []struct {
		files              []string
		override, fallback string
		want               string
	}{
		{nil, "", "", runner.DefaultImage},
		{nil, "", "alpine:3", "alpine:3"},
		{[]string{"go.mod"}, "", "alpine:3", "golang:1.26"},
		{[]string{"go.mod"}, "my/image:1", "", "my/image:1"},
		{[]string{"package.json"}, "", "", "node:22"},
		{[]string{"pyproject.toml"}, "", "", "python:3.13"},
		{[]string{"requirements.txt"}, "", "", "python:3.13"},
		{[]string{"Cargo.toml"}, "", "", "rust:1"},
		{[]string{"Cargo.toml", "package.json", "go.mod"}, "", "", "golang:1.26"},
		{[]string{"package.json", "requirements.txt"}, "", "", "node:22"},
		{[]string{"go.mod/"}, "", "", runner.DefaultImage}, // a directory does not count
		{[]string{"sub/go.mod"}, "", "", runner.DefaultImage},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		files := map[string]string{}
		for _, f := range tt.files {
			files[f] = ""
		}
		writeTree(t, dir, files)
		if got := runner.ImageFor(dir, tt.override, tt.fallback); got != tt.want {
			t.Errorf("ImageFor(%v, %q, %q) = %q, want %q", tt.files, tt.override, tt.fallback, got, tt.want)
		}
	}
}

func TestNewDockerRefusesRoot(t *testing.T) {
	for _, u := range []string{"0:0", "root", "1000"} {
		if _, err := runner.NewDocker(runner.DockerConfig{User: u}); err == nil {
			t.Errorf("NewDocker(User %q) accepted", u)
		}
	}
}

// A spec's Prepare runs before the command, in the same sandbox and as
// the same user, its output is not the command's, and whether it succeeds
// or not the command runs and its status is the run's; with KeepChanges
// too.
func TestDockerPrepareRunsBeforeTheCommand(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})
	for _, tc := range []struct {
		name, prepare, command string
		keep                   bool
		wantExit               int
		wantOut                string
	}{
		{"ready", "echo noise; echo ready > /tmp/made", "cat /tmp/made; id -u", false, 0, "ready\n65534\n"},
		{"failed prepare", "echo noise >&2; exit 3", "echo ran; exit 4", false, 4, "ran\n"},
		{"prepare reads no input", "cat", "echo ran", false, 0, "ran\n"},
		{"keep changes", "echo ready > /tmp/made", "cat /tmp/made > kept && cat kept", true, 0, "ready\n"},
		{"none", "", "echo ran", false, 0, "ran\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := d.Run(t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Command: tc.command, Prepare: tc.prepare,
				KeepChanges: tc.keep, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tc.wantExit || res.Output != tc.wantOut {
				t.Errorf("exit %d, output %q; want %d, %q", res.ExitCode, res.Output, tc.wantExit, tc.wantOut)
			}
			if tc.keep && (len(res.Changes) != 1 || res.Changes[0].Path != "kept") {
				t.Errorf("changes = %+v, want kept", res.Changes)
			}
		})
	}
}
