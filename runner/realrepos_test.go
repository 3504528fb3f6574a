package runner_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/mount"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/setup"
)

// realReposEnv, set to 1, runs the tests that take a real repository's
// own test suite into the sandbox. They need this machine's module proxy
// (through the go command, to fill the module cache once) and minutes of
// compiling, so the default suite skips them:
//
//	PULLWRIGHT_REAL_REPOS=1 go test ./runner/ -run RealRepo -v -timeout 60m
const realReposEnv = "PULLWRIGHT_REAL_REPOS"

// ginModule is the real suite: a popular Go web framework whose tests
// listen on and dial localhost. Pinned, so that a run is repeatable.
const ginModule = "github.com/gin-gonic/gin@v1.12.0"

// A real repository's tests fail in the sandbox only where they fail in
// `docker run --network none` of the same image too: gin's, with its
// modules fetched through the fence by the default setup (from a module
// proxy the test serves over the machine's module cache) into a cache
// that both containers mount read-only, with the same environment.
func TestRealRepoGinAsInAPlainContainer(t *testing.T) {
	if os.Getenv(realReposEnv) != "1" {
		t.Skipf("set %s=1 to run gin's tests in the sandbox (the module proxy, minutes of compiling)", realReposEnv)
	}
	image := sandboxtest.Image(t)
	src := fencetest.ModuleSource(t, ginModule)
	fencetest.DownloadModules(t, src)
	host, served := fencetest.ModProxy(t)
	image = sandboxtest.ImageWith(t, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	repo := fmt.Sprintf("test/gin-%d", os.Getpid())
	d := newDocker(t, runner.DockerConfig{Forwarder: fencetest.Forwarder(t), Owner: repo})
	fencetest.RemoveCaches(t, repo) // before newDocker's check that nothing is left

	const memory = 4 << 30
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver()}
	p, err := s.Prepare(t.Context(), pullwright.SetupRequest{
		Repo: repo, Dir: src, Base: src, Image: image, ToolchainHosts: true,
		Nets: []netip.Prefix{fencetest.Loopback}, Memory: memory, Timeout: 30 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Release(context.Background()) })
	if p.Record == nil || p.Record.Failed {
		t.Fatalf("setup of gin's modules = %+v\n%s", p, p.Record.Output)
	}
	t.Logf("setup: %d requests to the module proxy, %s\n%s", served.Load(), p.Record.Duration, p.Record.Output)

	const command = "go test ./... 2>&1"
	before := served.Load()
	res, err := d.Run(t.Context(), pullwright.RunSpec{
		Dir: src, Image: image, Command: command, Caches: p.Caches, Env: p.Env, Links: p.Links, Prepare: p.Prepare,
		Memory: memory, Timeout: 30 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sandbox: %q with %q: exit %d in %s\n%s", command, p.Env, res.ExitCode, res.Duration, res.Output)

	// The plain container: the same image, user, caches and environment,
	// and a copy of the files at the image's working directory that
	// belongs to the user, as the sandbox's copy does (gin's
	// TestContextFormFile and two more chmod their working directory).
	user := d.Config().User
	mounts := []mount.Mount{{Type: mount.TypeBind, Source: sandboxtest.OwnedCopy(t, src, user), Target: runner.SandboxWorkdir}}
	for _, c := range p.Caches {
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: c.Volume, Target: c.Target, ReadOnly: true})
	}
	plainCommand := command
	if p.Prepare != "" {
		// The build cache's link step, as the sandbox runs it.
		plainCommand = p.Prepare + " >/dev/null 2>&1; " + command
	}
	t.Logf("the same in a plain container: %s", dockerRunLine(image, plainCommand, user, p.Env, mounts))
	start := time.Now()
	plainOut, plainExit := plainContainer{Image: image, Command: plainCommand, User: user, Env: p.Env, Mounts: mounts,
		WorkingDir: runner.SandboxWorkdir, Timeout: 30 * time.Minute}.run(t)
	t.Logf("plain container: exit %d in %s\n%s", plainExit, time.Since(start).Round(time.Second), plainOut)
	if served.Load() != before {
		t.Errorf("%d requests to the module proxy after setup", served.Load()-before)
	}

	sandbox, plain := goTestResults(res.Output), goTestResults(plainOut)
	if len(plain) == 0 {
		t.Fatal("no package results from the plain container")
	}
	for name, r := range sandbox {
		switch {
		case strings.HasPrefix(name, "package ") && r != "ok" && plain[name] == "ok":
			t.Errorf("%s: %s in the sandbox, ok in a plain container", name, r)
		case !strings.HasPrefix(name, "package ") && plain[name] != "FAIL":
			t.Errorf("%s fails in the sandbox, not in a plain container", name)
		}
	}
	for name, r := range plain {
		if _, ok := sandbox[name]; !ok && strings.HasPrefix(name, "package ") {
			t.Errorf("%s: %s in a plain container, no result in the sandbox", name, r)
		}
	}
	t.Logf("failed in the sandbox: %q; in a plain container: %q", failed(sandbox), failed(plain))
}

// dockerRunLine is the docker command that makes the plain container, for
// a person to run it again.
func dockerRunLine(image, command, user string, env []string, mounts []mount.Mount) string {
	args := []string{"docker", "run", "--rm", "--network", "none", "-u", user, "-w", runner.SandboxWorkdir}
	for _, m := range mounts {
		v := m.Source + ":" + m.Target
		if m.ReadOnly {
			v += ":ro"
		}
		args = append(args, "-v", v)
	}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	args = append(args, image, "sh", "-c", command)
	for i, a := range args {
		if strings.ContainsAny(a, " \"'$&>|;") {
			args[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(args, " ")
}

var (
	goTestPackage = regexp.MustCompile(`^(ok|FAIL|\?)\s+(\S+)`)
	goTestFailed  = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
)

// goTestResults reads go test's output (not -v): "package <path>" is
// "ok", "FAIL" or "no test files", and "<path>.<Test>" is "FAIL" for each
// failed test, which go test prints before its package's line.
func goTestResults(out string) map[string]string {
	r := map[string]string{}
	var pending []string
	for _, l := range strings.Split(out, "\n") {
		if m := goTestFailed.FindStringSubmatch(l); m != nil {
			pending = append(pending, m[1])
			continue
		}
		m := goTestPackage.FindStringSubmatch(l)
		if m == nil || !strings.Contains(m[2], "/") {
			continue
		}
		switch m[1] {
		case "ok":
			r["package "+m[2]] = "ok"
		case "?":
			r["package "+m[2]] = "no test files"
		default:
			r["package "+m[2]] = "FAIL"
			for _, name := range pending {
				r[m[2]+"."+name] = "FAIL"
			}
		}
		pending = nil
	}
	return r
}

// failed lists the failed packages and tests of results, sorted.
func failed(results map[string]string) []string {
	var out []string
	for name, r := range results {
		if r == "FAIL" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
