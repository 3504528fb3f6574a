package setup_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/buildcache"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/setup"
)

// realCase is a real project whose tests a second task runs, and how the
// two floors run the same tests: a plain container of the same image
// with warm caches of its own, and this machine with its caches warm.
type realCase struct {
	image, dir, test string
	// plain returns the arguments of `docker run` (before the image)
	// that give the plain container its own caches, filled by the
	// earlier runs of the same command (warm), and the environment that
	// points the tools at them. prepared is the sandbox's setup, whose
	// fetched packages a plain container may mount read-only: fetching
	// is not what is compared. workspace is the plain container's own
	// copy of dir, which it keeps from run to run as a checkout is kept.
	plain func(b *testing.B, prepared pullwright.SetupResult, workspace string) []string
	// host prepares this machine's run (its caches warm) and returns the
	// environment to run test with, and the directory to run it in: dir,
	// or a copy of its own where the tools write next to the sources
	// (Python's __pycache__), which the sandbox's runs must not find.
	host func(b *testing.B, prepared pullwright.SetupResult) (env []string, dir string)
}

// BenchmarkWarmRealRepos is what a maintainer waits for after approving a
// second task's tests of a real repository, against its two floors,
// interleaved in one run so that the machine's load hits all three
// alike:
//
//   - plain: `docker run --rm --network none` of the same image, as the
//     same user, with warm caches of its own (a Go build cache in a
//     volume that earlier runs of the same command filled; a
//     node_modules that npm ci installed once in its workspace; a
//     virtualenv pip installed once in a volume, and the __pycache__
//     its workspace keeps); the floor of an approved command, since a
//     container per command is kept;
//   - host: the same command on this machine with its caches warm,
//     reported, not the goal.
//
// Go tests run with -count=1: the sandbox never has a cached test
// result. The Node and Python cases need Debian's packages (see
// realrepos_debian_test.go) and are skipped without them.
//
//	go test -run '^$' -bench WarmRealRepos -benchtime 5x ./setup/
func BenchmarkWarmRealRepos(b *testing.B) {
	cases := map[string]func(b *testing.B) realCase{
		// spf13/cobra: a command-line library with its dependencies
		// (pflag, yaml, go-md2man and blackfriday) and two packages.
		// Tests that expect writing to a read-only directory to fail
		// are skipped: on this machine they run as root.
		"cobra": func(b *testing.B) realCase {
			return goRealCase(b, "github.com/spf13/cobra@v1.10.2", "go test -count=1 -skip '^TestFailGen' ./...")
		},
		// spf13/viper: a configuration library, seven packages and 54
		// modules of dependencies (mapstructure, afero, cast, toml,
		// yaml, fsnotify and theirs).
		"viper": func(b *testing.B) realCase {
			return goRealCase(b, "github.com/spf13/viper@v1.21.0", "go test -count=1 ./...")
		},
		"moment-timezone": momentTimezoneCase,
		"pyflakes":        pyflakesCase,
	}
	for _, name := range []string{"cobra", "viper", "moment-timezone", "pyflakes"} {
		b.Run(name, func(b *testing.B) {
			c := cases[name](b)
			repo := fmt.Sprintf("bench/real-%s-%d", name, os.Getpid())
			fencetest.RemoveCaches(b, repo)
			steps := &stepTimes{ms: map[string]int64{}}
			d, err := runner.NewDocker(runner.DockerConfig{Image: c.image, Forwarder: fencetest.Forwarder(b), Owner: repo, Logger: slog.New(steps)})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver()}
			req := pullwright.SetupRequest{Repo: repo, Dir: c.dir, Base: c.dir, Image: c.image, Timeout: 30 * time.Minute,
				ToolchainHosts: true, Nets: []netip.Prefix{fencetest.Loopback}}
			run := func(p pullwright.SetupResult) time.Duration {
				res, err := d.Run(b.Context(), pullwright.RunSpec{Dir: c.dir, Image: c.image, Command: c.test, Caches: p.Caches, Env: p.Env,
					Links: p.Links, Prepare: p.Prepare, Timeout: 20 * time.Minute, Memory: 4 << 30})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %v exit %d\n%s", err, res.ExitCode, res.Output)
				}
				return res.Duration
			}
			first, err := s.Prepare(b.Context(), req)
			if err != nil || first.Record == nil || first.Record.Failed {
				b.Fatalf("setup: %v %+v", err, first)
			}
			b.Logf("setup in %s\n%s", first.Record.Duration, first.Record.Output)
			run(first) // a first task
			first.Release(b.Context())

			workspace := sandboxtest.OwnedCopy(b, c.dir, d.Config().User)
			plainArgs := append([]string{"run", "--rm", "--network", "none", "-u", d.Config().User,
				"-v", workspace + ":" + runner.SandboxWorkdir, "-w", runner.SandboxWorkdir, "--tmpfs", "/tmp:exec"},
				c.plain(b, first, workspace)...)
			plain := func(command string) time.Duration {
				args := append(plainArgs, c.image, "sh", "-c", command)
				start := time.Now()
				if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
					b.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return time.Since(start)
			}
			plain(c.test) // warm its caches
			env, hostDir := c.host(b, first)

			var sandbox, prepare, inside, plainT, host time.Duration
			steps.reset()
			for b.Loop() {
				start := time.Now()
				p, err := s.Prepare(b.Context(), req)
				if err != nil || p.Record != nil {
					b.Fatalf("second task's prepare: %v %+v", err, p)
				}
				prepare += time.Since(start)
				inside += run(p)
				sandbox += time.Since(start)
				p.Release(b.Context())

				// Its output comes out through the engine, as the sandbox's does.
				plainT += plain(c.test)

				start = time.Now()
				hostRun(b, hostDir, env, c.test)
				host += time.Since(start)
			}
			n := float64(b.N)
			b.ReportMetric(sandbox.Seconds()/n, "sandbox-s")
			b.ReportMetric(prepare.Seconds()/n, "prepare-s")
			b.ReportMetric(inside.Seconds()/n, "inside-s")
			// The rest of the sandbox's time, by the runner's log: the
			// engine's create and start, the workspace's copy, the caches
			// and CA bundle put in place, and the container's removal.
			for _, k := range []string{"create", "start", "copy", "provision", "remove"} {
				b.ReportMetric(float64(steps.get(k+"_ms"))/1000/n, k+"-s")
			}
			b.ReportMetric(plainT.Seconds()/n, "plain-s")
			b.ReportMetric(host.Seconds()/n, "host-s")
			b.ReportMetric(sandbox.Seconds()/plainT.Seconds(), "sandbox/plain")
			b.ReportMetric(sandbox.Seconds()/host.Seconds(), "sandbox/host")
		})
	}
}

// goRealCase is the Go module at path@version, as its release has it,
// with its dependencies served by a module proxy over this machine's
// module cache.
func goRealCase(b *testing.B, module, test string) realCase {
	src := fencetest.ModuleSource(b, module)
	fencetest.DownloadModules(b, src)
	proxy, _ := fencetest.ModProxy(b)
	// Without the tools the test image adds (scripts/sandbox-image.sh),
	// as Go's own releases since 1.25 and the images built from them
	// are: the setup builds them.
	image := sandboxtest.CommitAfter(b, sandboxtest.Image(b), "cd \"$(go env GOTOOLDIR)\" && rm -f "+strings.Join(buildcache.Tools(), " "),
		"ENV GOPROXY=http://"+proxy, "ENV GOSUMDB=off")
	return realCase{image: image, dir: src, test: test,
		plain: func(b *testing.B, p pullwright.SetupResult, _ string) []string {
			// Its own build cache, in a volume owned by the sandbox's
			// user, and the module cache the setup filled (read-only, as
			// a module cache is).
			vol := fmt.Sprintf("pullwright-bench-gocache-%d-%s", os.Getpid(), path.Base(strings.Split(module, "@")[0]))
			b.Cleanup(func() { _ = exec.Command("docker", "volume", "rm", "-f", vol).Run() })
			if out, err := exec.Command("docker", "run", "--rm", "-u", "0", "-v", vol+":/gocache", image,
				"chown", runner.DefaultSandboxUser, "/gocache").CombinedOutput(); err != nil {
				b.Fatalf("own build cache: %v\n%s", err, out)
			}
			args := []string{"-v", vol + ":/gocache", "-v", p.Caches[0].Volume + ":" + setup.Mount + ":ro", "-e", "GOCACHE=/gocache"}
			for _, e := range p.Env {
				if !strings.HasPrefix(e, "GOCACHE=") {
					args = append(args, "-e", e)
				}
			}
			return args
		},
		host: func(b *testing.B, _ pullwright.SetupResult) ([]string, string) {
			env := append(os.Environ(), "GOCACHE="+b.TempDir(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
			hostRun(b, src, env, test+" >/dev/null") // warm it
			return env, src
		},
	}
}

// stepTimes is a log handler that adds up the runner's step durations
// (the attributes ending in _ms of its "runner: end" and "runner:
// removed" records).
type stepTimes struct {
	mu sync.Mutex
	ms map[string]int64
}

func (h *stepTimes) Enabled(context.Context, slog.Level) bool { return true }
func (h *stepTimes) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stepTimes) WithGroup(string) slog.Handler            { return h }
func (h *stepTimes) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "runner: end" && r.Message != "runner: removed" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		if strings.HasSuffix(a.Key, "_ms") {
			h.ms[a.Key] += a.Value.Int64()
		}
		return true
	})
	return nil
}

func (h *stepTimes) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.ms)
}

func (h *stepTimes) get(k string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ms[k]
}
