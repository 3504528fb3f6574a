package setup_test

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/setup"
)

// BenchmarkSetup is a cold setup on Pullwright's own module, against
// its floor in the same run, interleaved so that the machine's load hits
// both alike: a setup of all its dependencies through the fence into an
// empty cache, which then compiles the default branch's packages and
// tests into the build cache, against the same work run directly on this
// machine (go mod download from the same module proxy into an empty
// module cache, then go build ./... and go test -exec true ./... into an
// empty build cache).
//
//	go test -run '^$' -bench 'Setup$' -benchtime 3x ./setup/
func BenchmarkSetup(b *testing.B) {
	fencetest.DownloadModules(b, "..")
	host, _ := fencetest.ModProxy(b)
	image := sandboxtest.ImageWith(b, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	repo := fmt.Sprintf("bench/pullwright-%d", os.Getpid())
	fencetest.RemoveCaches(b, repo)
	d, err := runner.NewDocker(runner.DockerConfig{Image: image, Forwarder: fencetest.Forwarder(b), Owner: repo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Limits: setup.Limits{Keep: 1}}
	dir := pullwrightTree(b)
	req := pullwright.SetupRequest{
		Repo: repo, Dir: dir, Base: dir, Image: image, Timeout: 20 * time.Minute, ToolchainHosts: true,
		Nets: []netip.Prefix{fencetest.Loopback},
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	var cold, direct time.Duration
	for i := 0; i < b.N; i++ {
		removeCacheVolumes(b, cli, repo)
		start := time.Now()
		p, err := s.Prepare(b.Context(), req)
		if err != nil || p.Record == nil || p.Record.Failed {
			b.Fatalf("setup: %v %+v", err, p)
		}
		cold += time.Since(start)

		modcache, gocache := b.TempDir(), b.TempDir()
		env := append(os.Environ(), "GOMODCACHE="+modcache, "GOCACHE="+gocache, "GOPROXY=http://"+strings.Replace(host, "modproxy.test", "127.0.0.1", 1),
			"GOSUMDB=off", "GOFLAGS=-modcacherw -mod=mod", "GOTOOLCHAIN=local")
		start = time.Now()
		hostRun(b, dir, env, "go mod download && go build ./... && go test -exec true ./... >/dev/null")
		direct += time.Since(start)
		if err := exec.Command("chmod", "-R", "u+w", modcache).Run(); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(cold.Seconds()/n, "cold-s")
	b.ReportMetric(direct.Seconds()/n, "direct-s")
	b.ReportMetric(cold.Seconds()/direct.Seconds(), "cold/direct")
}

// hostRun runs script with sh in dir on this machine.
func hostRun(b *testing.B, dir string, env []string, script string) {
	b.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// warmCase is a project whose tests a second task runs, and how this
// machine runs the same tests with its caches warm.
type warmCase struct {
	image, dir, test string
	setupReq         pullwright.SetupRequest
	// host prepares this machine's run (its caches warm) and returns
	// the environment to run test with.
	host func(b *testing.B, prepared pullwright.SetupResult) []string
}

// BenchmarkWarmRun is what a maintainer waits for after approving the
// second task's test command, against the same command on this machine
// with warm caches (the maintainer's own `go test`, `npm test`, `python
// -m unittest`), interleaved in the same run: Prepare finding the cache
// ready, then the run on it. first-s is a task's first command right
// after the setup that warmed the cache (once, before the loop). Tests
// run with -count=1: the sandbox never has a cached test result.
//
//	go test -run '^$' -bench WarmRun -benchtime 5x ./setup/
func BenchmarkWarmRun(b *testing.B) {
	cases := map[string]func(b *testing.B) warmCase{
		"pullwright": func(b *testing.B) warmCase {
			fencetest.DownloadModules(b, "..")
			host, _ := fencetest.ModProxy(b)
			dir := pullwrightTree(b)
			gocache := b.TempDir()
			return warmCase{
				image: sandboxtest.ImageWith(b, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off"), dir: dir,
				test: "GOTOOLCHAIN=local go test -count=1 ./policy/",
				host: func(b *testing.B, _ pullwright.SetupResult) []string {
					env := append(os.Environ(), "GOCACHE="+gocache, "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
					hostRun(b, dir, env, "go test -count=1 ./policy/ >/dev/null") // warm it
					return env
				},
			}
		},
		"npm": func(b *testing.B) warmCase {
			c := npmProject(b, sandboxtest.NodeAndPython(b), "")
			dir := write(b, c.files)
			return warmCase{image: c.image, dir: dir, test: c.test,
				host: func(b *testing.B, p pullwright.SetupResult) []string {
					// The packages the setup installed, as npm ci would
					// have put them here.
					hostRun(b, dir, os.Environ(), "docker run --rm -v "+p.Caches[0].Volume+":/deps:ro "+c.image+
						" tar -C /deps/files/workspace -cf - node_modules | tar -xf -")
					return os.Environ()
				}}
		},
		"pip": func(b *testing.B) warmCase {
			c, ix := pipProject(b, sandboxtest.NodeAndPython(b))
			dir := write(b, c.files)
			venv := filepath.Join(b.TempDir(), "venv")
			return warmCase{image: c.image, dir: dir, test: c.test,
				host: func(b *testing.B, _ pullwright.SetupResult) []string {
					_, port, _ := strings.Cut(ix.Host, ":")
					hostRun(b, dir, os.Environ(), "python3 -m venv "+venv+" && "+venv+"/bin/pip install -q --index-url http://127.0.0.1:"+port+"/simple/ -r requirements.txt")
					return append(os.Environ(), "PATH="+venv+"/bin:"+os.Getenv("PATH"), "VIRTUAL_ENV="+venv)
				}}
		},
	}
	for _, name := range []string{"pullwright", "npm", "pip"} {
		b.Run(name, func(b *testing.B) {
			c := cases[name](b)
			repo := fmt.Sprintf("bench/warm-%s-%d", name, os.Getpid())
			fencetest.RemoveCaches(b, repo)
			// The operator's image is the case's, as in a deployment that
			// serves one ecosystem: it measures the cache.
			d, err := runner.NewDocker(runner.DockerConfig{Image: c.image, Forwarder: fencetest.Forwarder(b), Owner: repo, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver()}
			req := pullwright.SetupRequest{Repo: repo, Dir: c.dir, Base: c.dir, Image: c.image, Timeout: 20 * time.Minute,
				ToolchainHosts: true, Nets: []netip.Prefix{fencetest.Loopback}}
			run := func(p pullwright.SetupResult) time.Duration {
				res, err := d.Run(b.Context(), pullwright.RunSpec{Dir: c.dir, Image: c.image, Command: c.test, Caches: p.Caches, Env: p.Env,
					Links: p.Links, Prepare: p.Prepare, Timeout: 10 * time.Minute, Memory: 4 << 30})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %v exit %d\n%s", err, res.ExitCode, res.Output)
				}
				return res.Duration
			}
			first, err := s.Prepare(b.Context(), req)
			if err != nil || first.Record == nil || first.Record.Failed {
				b.Fatalf("setup: %v %+v", err, first)
			}
			start := time.Now()
			run(first)
			firstRun := time.Since(start)
			first.Release(b.Context())
			env := c.host(b, first)

			// The same command in `docker run --network none` of the same
			// image with the same cache: what the container and the image's
			// own toolchain cost, whoever runs them.
			plainArgs := []string{"run", "--rm", "--network", "none", "-v", first.Caches[0].Volume + ":" + setup.Mount + ":ro",
				"-v", c.dir + ":/workspace", "-w", "/workspace", "--tmpfs", "/tmp:exec"}
			for _, e := range first.Env {
				plainArgs = append(plainArgs, "-e", e)
			}
			command := c.test + " >/dev/null 2>&1"
			if first.Prepare != "" {
				// The build cache's link step, as the sandbox runs it.
				command = first.Prepare + " >/dev/null 2>&1; " + command
			}
			plainArgs = append(plainArgs, c.image, "sh", "-c", command)
			var sandbox, host, prepare, inside, plain time.Duration
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

				start = time.Now()
				if out, err := exec.Command("docker", plainArgs...).CombinedOutput(); err != nil {
					b.Fatalf("docker run: %v\n%s", err, out)
				}
				plain += time.Since(start)

				start = time.Now()
				hostRun(b, c.dir, env, c.test+" >/dev/null 2>&1")
				host += time.Since(start)
			}
			b.ReportMetric(plain.Seconds()/float64(b.N), "plain-s")
			b.ReportMetric(sandbox.Seconds()/plain.Seconds(), "sandbox/plain")
			b.ReportMetric(firstRun.Seconds(), "first-s")
			b.ReportMetric(sandbox.Seconds()/float64(b.N), "sandbox-s")
			// Where a second task's time goes: Prepare finding the cache,
			// the command in its container (as the runner times it, from
			// start to exit), and the rest, the runner's and the engine's.
			b.ReportMetric(prepare.Seconds()/float64(b.N), "prepare-s")
			b.ReportMetric(inside.Seconds()/float64(b.N), "inside-s")
			b.ReportMetric(host.Seconds()/float64(b.N), "host-s")
			b.ReportMetric(firstRun.Seconds()/(host.Seconds()/float64(b.N)), "first/host")
			b.ReportMetric(sandbox.Seconds()/host.Seconds(), "sandbox/host")
		})
	}
}

func removeCacheVolumes(b *testing.B, cli *client.Client, repo string) {
	list, err := cli.VolumeList(b.Context(), client.VolumeListOptions{Filters: client.Filters{}.Add("label", runner.LabelCacheRepo+"="+repo)})
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range list.Items {
		if _, err := cli.VolumeRemove(b.Context(), v.Name, client.VolumeRemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
	}
}
