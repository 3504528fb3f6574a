package setup_test

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/buildcache"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/setup"
)

// module writes a Go module that needs one dependency.
func module(t *testing.T, extra string) string {
	dir := t.TempDir()
	for name, content := range fencetest.GoModule(extra) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newDocker is a Docker runner for fenced setups whose containers and
// caches carry repo as their owner; image "" lets it choose.
func newDocker(t *testing.T, repo, image string) *runner.Docker {
	t.Helper()
	fencetest.RemoveCaches(t, repo)
	d, err := runner.NewDocker(runner.DockerConfig{Image: image, Forwarder: fencetest.Forwarder(t), Owner: repo,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// The second task is fast: setup fetches through the fence into the
// repository's cache once; an approved run, with no network, builds on it;
// the same manifests later find the cache ready and run no setup; a
// changed manifest sets up again.
func TestPrepareFillsTheCacheOnce(t *testing.T) {
	image := sandboxtest.Image(t)
	host, served := fencetest.ModProxy(t)
	repo := fmt.Sprintf("test/setup-%d", os.Getpid())
	d := newDocker(t, repo, image)
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Limits: setup.Limits{Keep: 1},
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	req := func(dir string) pullwright.SetupRequest {
		return pullwright.SetupRequest{
			Repo: repo, Dir: dir, Base: dir, Timeout: 2 * time.Minute,
			// The repository's own setup: its module proxy is the test's.
			Setup: []string{"GOPROXY=http://" + host + " GOTOOLCHAIN=local go mod download"},
			Hosts: []string{host}, Nets: []netip.Prefix{fencetest.Loopback},
		}
	}

	dir := module(t, "")
	first, err := s.Prepare(t.Context(), req(dir))
	if err != nil {
		t.Fatal(err)
	}
	if first.Record == nil || first.Record.Failed || served.Load() == 0 || len(first.Caches) != 1 || !first.Caches[0].ReadOnly {
		t.Fatalf("first prepare = %+v (served %d)", first, served.Load())
	}
	if len(first.Record.Blocked) > 0 {
		t.Errorf("the fence refused %s", first.Record.Blocked)
	}
	// The setup compiled the default branch's packages: the run builds
	// on them and compiles nothing again.
	run, err := d.Run(t.Context(), pullwright.RunSpec{Dir: dir, Command: "GOTOOLCHAIN=local go build -x -o /tmp/app . 2>/tmp/x && echo built; echo compiled $(grep -c /compile /tmp/x)",
		Caches: first.Caches, Env: first.Env, Prepare: first.Prepare, Timeout: 2 * time.Minute})
	if err != nil || !strings.Contains(run.Output, "built") || !strings.Contains(run.Output, "compiled 0\n") {
		t.Fatalf("approved run on the cache: %v, exit %d\n%s\n(setup said: %s)", err, run.ExitCode, run.Output, first.Record.Output)
	}

	before := served.Load()
	again, err := s.Prepare(t.Context(), req(module(t, "")))
	if err != nil {
		t.Fatal(err)
	}
	if again.Record != nil || served.Load() != before || again.Key != first.Key || again.Caches[0] != first.Caches[0] {
		t.Fatalf("same manifests: prepare = %+v, %d more requests; want the ready cache, no setup", again, served.Load()-before)
	}

	// Both runs ended: the cache is no longer held.
	first.Release(t.Context())
	again.Release(t.Context())
	changed, err := s.Prepare(t.Context(), req(module(t, "\n// a changed manifest\n")))
	if err != nil {
		t.Fatal(err)
	}
	if changed.Record == nil || changed.Record.Failed || changed.Key == first.Key || changed.Caches[0].Volume == first.Caches[0].Volume {
		t.Fatalf("changed manifest: prepare = %+v; want a setup into another cache", changed)
	}
	// Keep 1: the older cache made room for the newer.
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.VolumeInspect(t.Context(), first.Caches[0].Volume, client.VolumeInspectOptions{}); err == nil {
		t.Errorf("the older cache %s was kept beyond Keep", first.Caches[0].Volume)
	}
	if _, err := cli.VolumeInspect(t.Context(), changed.Caches[0].Volume, client.VolumeInspectOptions{}); err != nil {
		t.Errorf("the newer cache: %v", err)
	}
}

// A setup that reaches for a host off the list fails, says what was
// blocked, and leaves no ready cache: the approved command must not run on
// it, and the next try sets up again.
func TestPrepareFailsBehindTheFence(t *testing.T) {
	image := sandboxtest.Image(t)
	host, served := fencetest.ModProxy(t)
	repo := fmt.Sprintf("test/setup-blocked-%d", os.Getpid())
	d := newDocker(t, repo, image)
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver()}
	req := pullwright.SetupRequest{
		Repo: repo, Dir: module(t, ""), Timeout: 2 * time.Minute, // no Base: a private cache
		Setup: []string{"GOPROXY=http://" + host + " GOTOOLCHAIN=local go mod download"},
		Nets:  []netip.Prefix{fencetest.Loopback}, // the proxy is not listed
	}
	for _, base := range []string{"", req.Dir} { // a private cache, then the shared one
		req.Base = base
		p, err := s.Prepare(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if p.Record == nil || !p.Record.Failed || len(p.Caches) != 0 || served.Load() != 0 {
			t.Fatalf("prepare = %+v (served %d), want a failed setup and no cache", p, served.Load())
		}
		if name, _, _ := strings.Cut(host, ":"); len(p.Record.Blocked) == 0 || !strings.HasPrefix(p.Record.Blocked[0], name+":") || len(p.Record.Reached) != 0 {
			t.Fatalf("the fence reached %v and blocked %v", p.Record.Reached, p.Record.Blocked)
		}
		// Nothing of the failed setup stays on the engine's disk.
		out, err := exec.Command("docker", "volume", "ls", "-q", "--filter", "label="+runner.LabelOwner+"="+repo).Output()
		if err != nil || strings.TrimSpace(string(out)) != "" {
			t.Fatalf("volumes left after a failed setup: %q %v", out, err)
		}
	}
}

// A mirror the image's toolchain is configured with just works: with no
// setup of the repository's and no host of the operator's, the default
// setup (go mod download) reaches the module proxy the image's go env
// names, read from the image, and nothing else.
func TestPrepareReachesTheImagesOwnMirror(t *testing.T) {
	host, served := fencetest.ModProxy(t)
	image := sandboxtest.ImageWith(t, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	repo := fmt.Sprintf("test/setup-mirror-%d", os.Getpid())
	d := newDocker(t, repo, "")
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver()}
	dir := module(t, "")
	req := pullwright.SetupRequest{
		Repo: repo, Dir: dir, Base: dir, Image: image, Timeout: 2 * time.Minute, ToolchainHosts: true,
		Nets: []netip.Prefix{fencetest.Loopback},
	}
	p, err := s.Prepare(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Record == nil || p.Record.Failed || served.Load() == 0 || len(p.Steps) != 1 || p.Steps[0] != "go mod download" {
		out := ""
		if p.Record != nil {
			out = p.Record.Output
		}
		t.Fatalf("prepare = %+v (served %d)\n%s", p, served.Load(), out)
	}
	if len(p.Record.Blocked) > 0 {
		t.Errorf("the fence refused %s", p.Record.Blocked)
	}
	for _, h := range p.Record.Reached {
		if !strings.HasPrefix(h, "modproxy.test:") {
			t.Errorf("the fence let through %s", h)
		}
	}
	// Without the toolchain's hosts, the same setup is fenced off.
	req.ToolchainHosts, req.Repo = false, repo+"-strict"
	fencetest.RemoveCaches(t, req.Repo)
	strict, err := s.Prepare(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if strict.Record == nil || !strict.Record.Failed || len(strict.Record.Blocked) == 0 || len(strict.Record.Reached) != 0 {
		t.Fatalf("without toolchain hosts: prepare = %+v", strict)
	}
}

// pullwrightTree writes this repository's committed files into a
// directory: a real Go module with dozens of dependencies.
func pullwrightTree(t testing.TB) string {
	t.Helper()
	dir, tarball := t.TempDir(), filepath.Join(t.TempDir(), "tree.tar")
	for _, args := range [][]string{
		{"git", "-C", "..", "archive", "--format=tar", "-o", tarball, "HEAD"},
		{"tar", "-x", "-f", tarball, "-C", dir},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", args[0], err, out)
		}
	}
	return dir
}

// pullwrightPackages is pullwrightTree with the Go files of only the
// packages that pkgs and their tests build on, and those packages' tests
// in turn (the setup's warm builds and tests every package it finds): the
// module's go.mod and go.sum, its other files (docs, test data) and those
// packages stay as they are, and the rest of the module has no Go package
// left. A shared setup compiles the default branch's every package and
// test into the build cache; on the whole module that is most of a test's
// time, and none of its point.
func pullwrightPackages(t testing.TB, pkgs ...string) string {
	t.Helper()
	dir := pullwrightTree(t)
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]bool{}
	for len(pkgs) > 0 {
		cmd := exec.Command("go", append([]string{"list", "-deps", "-test", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}"}, pkgs...)...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps -test %s: %v", pkgs, err)
		}
		pkgs = nil
		for _, d := range strings.Fields(string(out)) {
			d, err := filepath.EvalSymlinks(d)
			if err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(root, d)
			if err != nil || !filepath.IsLocal(rel) {
				t.Fatalf("go list named %s, outside the module at %s", d, root)
			}
			if !keep[rel] {
				keep[rel] = true
				pkgs = append(pkgs, "./"+filepath.ToSlash(rel)) // "./." for the root
			}
		}
	}
	if len(keep) < 2 {
		t.Fatalf("go list named %d of the module's packages: %v", len(keep), keep)
	}
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && e.Name() == "testdata":
			return filepath.SkipDir // no package, and perhaps a test's files
		case e.IsDir() || !strings.HasSuffix(p, ".go"):
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		if keep[rel] {
			return nil
		}
		return os.Remove(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Pullwright's own repository, a real module with dozens of dependencies:
// its default setup fetches them all through the fence from a module
// proxy the test serves (the image's go env names it), and its policy
// package's tests then pass in a sandbox with no network, on the cache.
//
// The module's go.mod and go.sum are whole, so the setup fetches every
// dependency, but only the packages the policy package's tests build on
// are left (pullwrightPackages): the setup's warm of the build cache then
// compiles those, not the whole bot and its every test binary, which took
// most of this package's time and tests nothing the smaller warm does not.
func TestPullwrightsOwnTestsPassOnTheCache(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a real module in the sandbox")
	}
	fencetest.DownloadModules(t, "..")
	host, served := fencetest.ModProxy(t)
	image := sandboxtest.ImageWith(t, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	repo := fmt.Sprintf("test/pullwright-%d", os.Getpid())
	d := newDocker(t, repo, "")
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver()}
	dir := pullwrightPackages(t, "./policy/")
	p, err := s.Prepare(t.Context(), pullwright.SetupRequest{
		Repo: repo, Dir: dir, Base: dir, Image: image, Timeout: 10 * time.Minute, ToolchainHosts: true,
		Nets: []netip.Prefix{fencetest.Loopback},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Record == nil || p.Record.Failed {
		t.Fatalf("setup of Pullwright's own dependencies = %+v\n%s", p, p.Record.Output)
	}
	t.Logf("setup: %d requests to the module proxy in %s", served.Load(), p.Record.Duration)
	before := served.Load()
	res, err := d.Run(t.Context(), pullwright.RunSpec{
		Dir: dir, Image: image, Command: "GOTOOLCHAIN=local go test ./policy/", Caches: p.Caches, Env: p.Env, Prepare: p.Prepare,
		Timeout: 10 * time.Minute, Memory: 4 << 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Output, "ok  \tgithub.com/pullwright/pullwright/policy") || served.Load() != before {
		t.Fatalf("go test ./policy/ on the cache: exit %d, %d more requests\n%s", res.ExitCode, served.Load()-before, res.Output)
	}
}

// A setup on files whose manifests are not the default branch's runs into
// a cache of its own: nothing it ran can reach another task's runs, and
// the cache is gone once the run released it.
func TestPrepareOnChangedManifestsIsPrivate(t *testing.T) {
	image := sandboxtest.Image(t)
	host, _ := fencetest.ModProxy(t)
	repo := fmt.Sprintf("test/setup-private-%d", os.Getpid())
	d := newDocker(t, repo, image)
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver()}
	p, err := s.Prepare(t.Context(), pullwright.SetupRequest{
		Repo: repo, Dir: module(t, "\n// the agent's change\n"), Base: module(t, ""), Timeout: 2 * time.Minute,
		Setup: []string{"GOPROXY=http://" + host + " GOTOOLCHAIN=local go mod download"},
		Hosts: []string{host}, Nets: []netip.Prefix{fencetest.Loopback},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Private || p.Record.Failed || p.Record == nil || len(p.Caches) != 1 || !strings.HasPrefix(p.Caches[0].Volume, "pullwright-deps-private-") {
		t.Fatalf("prepare = %+v, want a private cache", p)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ready, err := cli.VolumeList(t.Context(), client.VolumeListOptions{Filters: client.Filters{}.Add("label", runner.LabelCacheRepo+"="+repo)})
	if err != nil || len(ready.Items) != 0 {
		t.Fatalf("a private setup left shared caches: %v %v", ready.Items, err)
	}
	p.Release(t.Context())
	if _, err := cli.VolumeInspect(t.Context(), p.Caches[0].Volume, client.VolumeInspectOptions{}); err == nil {
		t.Fatalf("the private cache %s outlived Release", p.Caches[0].Volume)
	}
}

// A repository's caches are capped in bytes as the engine measures them:
// the least recently used goes when a new one makes the total too large,
// unless a run still has it (handed out and not released, or mounted by a
// container), and the newest stays even when it alone is over the cap.
func TestEvictionBySizeSparesACacheInUse(t *testing.T) {
	image := sandboxtest.Image(t)
	repo := fmt.Sprintf("test/setup-size-%d", os.Getpid())
	d := newDocker(t, repo, image)
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Limits: setup.Limits{Keep: 5, RepoBytes: 5 << 20},
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	fill := func(name string) pullwright.SetupResult {
		t.Helper()
		dir := t.TempDir()
		p, err := s.Prepare(t.Context(), pullwright.SetupRequest{Repo: repo, Dir: dir, Base: dir, Timeout: time.Minute,
			Setup: []string{`dd if=/dev/zero of="$PULLWRIGHT_DEPS/` + name + `" bs=1048576 count=3 2>/dev/null`}})
		if err != nil || p.Record == nil || p.Record.Failed {
			t.Fatalf("setup %s = %+v, %v", name, p, err)
		}
		if !p.Measured || p.CacheBytes < 3<<20 {
			t.Errorf("setup %s measured %v, %d bytes; want at least 3 MiB", name, p.Measured, p.CacheBytes)
		}
		t.Cleanup(func() { p.Release(context.Background()) })
		return p
	}
	exists := func(volume string) bool {
		ready, err := d.ReadyCaches(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(ready, func(c runner.ReadyCache) bool { return c.Volume == volume })
	}

	one := fill("one")
	two := fill("two")
	// Both runs still have their caches: neither goes, over the cap.
	if len(two.Evicted) != 0 || !exists(one.Caches[0].Volume) {
		t.Fatalf("second setup evicted %v while the first's run holds its cache", two.Evicted)
	}
	one.Release(t.Context())
	two.Release(t.Context())

	// A container that mounts the second cache holds it on the engine.
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	held, err := cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Cmd: []string{"true"}},
		HostConfig: &container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: two.Caches[0].Volume, Target: setup.Mount, ReadOnly: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), held.ID, client.ContainerRemoveOptions{Force: true})
	three := fill("three")
	if !slices.Equal(three.Evicted, []string{one.Caches[0].Volume}) || exists(one.Caches[0].Volume) ||
		!exists(two.Caches[0].Volume) || !exists(three.Caches[0].Volume) {
		t.Fatalf("third setup evicted %v; want only the first's cache %s (the second's is mounted)", three.Evicted, one.Caches[0].Volume)
	}
	if three.CacheBytes < 6<<20 {
		t.Errorf("after the third setup the caches hold %d bytes; want both kept ones counted", three.CacheBytes)
	}
}

// Two bots sharing an engine (replicas) that set up the same manifests at
// once fill the cache once: the second waits for the first's claim, then
// finds the cache ready and runs nothing.
func TestTwoBotsOnOneEngineFillACacheOnce(t *testing.T) {
	image := sandboxtest.Image(t)
	repo := fmt.Sprintf("test/setup-claim-%d", os.Getpid())
	d1 := newDocker(t, repo, image)
	d2, err := runner.NewDocker(runner.DockerConfig{Image: image, Forwarder: fencetest.Forwarder(t), Owner: repo + "-2",
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d2.Close() })
	dir := t.TempDir()
	req := pullwright.SetupRequest{Repo: repo, Dir: dir, Base: dir, Timeout: time.Minute,
		Setup: []string{`echo filled >> "$PULLWRIGHT_DEPS/fills"; sleep 3`}}
	results := make([]pullwright.SetupResult, 2)
	var wg sync.WaitGroup
	for i, d := range []*runner.Docker{d1, d2} {
		wg.Go(func() {
			s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
			p, err := s.Prepare(t.Context(), req)
			if err != nil {
				t.Errorf("bot %d: %v", i+1, err)
				return
			}
			t.Cleanup(func() { p.Release(context.Background()) })
			results[i] = p
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ran := 0
	for _, p := range results {
		if p.Record != nil {
			ran++
		}
	}
	if ran != 1 || results[0].Caches[0].Volume != results[1].Caches[0].Volume {
		t.Fatalf("setups ran %d times (want 1), caches %v and %v (want one)", ran, results[0].Caches, results[1].Caches)
	}
	res, err := d1.Run(t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Command: `cat "$PULLWRIGHT_DEPS/fills"`,
		Caches: results[1].Caches, Env: results[1].Env, Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 || res.Output != "filled\n" {
		t.Fatalf("the cache's fills = %q (exit %d, %v); want one", res.Output, res.ExitCode, err)
	}
}

// An image the repository named (and the operator did not list) may
// carry a du that lies: the cache is measured in the runner's own image
// instead, so a lie does not make a cache look small enough to stay.
func TestACacheIsMeasuredInAnImageTheOperatorTrusts(t *testing.T) {
	image := sandboxtest.Image(t)
	// Debian's dash runs the du it finds on PATH (busybox's shell would
	// run its own applet whatever the file system holds).
	liar := lyingDu(t, sandboxtest.NodeAndPython(t))
	repo := fmt.Sprintf("test/setup-liar-%d", os.Getpid())
	d := newDocker(t, repo, image)
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	for _, trusted := range []bool{false, true} {
		dir := t.TempDir()
		p, err := s.Prepare(t.Context(), pullwright.SetupRequest{Repo: repo, Dir: dir, Base: dir, Timeout: time.Minute,
			Image: liar, ImageTrusted: trusted,
			Setup: []string{fmt.Sprintf(`dd if=/dev/zero of="$PULLWRIGHT_DEPS/x" bs=1048576 count=2 2>/dev/null # %v`, trusted)}})
		if err != nil || p.Record == nil || p.Record.Failed {
			t.Fatalf("setup = %+v, %v", p, err)
		}
		p.Release(t.Context())
		ready, err := d.ReadyCaches(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ready, func(c runner.ReadyCache) bool { return c.Volume == p.Caches[0].Volume })
		if i < 0 {
			t.Fatalf("no ready cache %s", p.Caches[0].Volume)
		}
		// Trusted, the image's own du measures, and it says 0: proof that
		// the untrusted case's size is not that du's.
		if got := ready[i].Bytes; trusted && got != 0 || !trusted && got < 2<<20 {
			t.Errorf("image trusted %v: the cache measures %d bytes; want %s", trusted, got, map[bool]string{true: "the lie (0)", false: "at least 2 MiB"}[trusted])
		}
	}
}

// lyingDu is base with a du first on PATH that says, in the form of
// du -sk DIR, that every directory is empty.
func lyingDu(t *testing.T, base string) string {
	t.Helper()
	return sandboxtest.WithFile(t, base, "/usr/local/bin/du", 0o755, "#!/bin/sh\necho \"0\t$2\"\n")
}

// A setup that leaves part of its cache unreadable hides its size from
// du, which then prints a sum of the rest: the cache's size is unknown,
// and under a cap on bytes the next setup removes it rather than count it
// as nothing.
func TestACacheOfUnknownSizeIsOverTheCap(t *testing.T) {
	image := sandboxtest.Image(t)
	repo := fmt.Sprintf("test/setup-unknown-%d", os.Getpid())
	d := newDocker(t, repo, image)
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Limits: setup.Limits{Keep: 5, RepoBytes: 100 << 20},
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	fill := func(cmd string) pullwright.SetupResult {
		t.Helper()
		dir := t.TempDir()
		p, err := s.Prepare(t.Context(), pullwright.SetupRequest{Repo: repo, Dir: dir, Base: dir, Timeout: time.Minute, Setup: []string{cmd}})
		if err != nil || p.Record == nil || p.Record.Failed {
			t.Fatalf("setup %q = %+v, %v", cmd, p, err)
		}
		p.Release(t.Context())
		return p
	}
	hidden := fill(`mkdir "$PULLWRIGHT_DEPS/h" && dd if=/dev/zero of="$PULLWRIGHT_DEPS/h/x" bs=1048576 count=2 2>/dev/null && chmod 000 "$PULLWRIGHT_DEPS/h"`)
	ready, err := d.ReadyCaches(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ready, func(c runner.ReadyCache) bool { return c.Volume == hidden.Caches[0].Volume })
	if i < 0 || ready[i].Bytes != -1 {
		t.Fatalf("ready caches %+v; want %s with an unknown size (-1)", ready, hidden.Caches[0].Volume)
	}
	next := fill(`echo fetched > "$PULLWRIGHT_DEPS/x"`)
	if !slices.Equal(next.Evicted, []string{hidden.Caches[0].Volume}) {
		t.Fatalf("the next setup evicted %v; want the cache of unknown size %s", next.Evicted, hidden.Caches[0].Volume)
	}
}

// A repository with a Go module whose image has no Go (its own setup
// steps, a Node image) still sets up: the build cache is warmed on the
// side, and without the program a run is not pointed at it.
func TestPrepareWithoutGoInTheImage(t *testing.T) {
	image := sandboxtest.NodeAndPython(t)
	repo := fmt.Sprintf("test/setup-nogo-%d", os.Getpid())
	d := newDocker(t, repo, image)
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	dir := write(t, map[string]string{"go.mod": "module example.com/tool\n\ngo 1.24\n", "main.go": "package main\n\nfunc main() {}\n"})
	p, err := s.Prepare(t.Context(), pullwright.SetupRequest{Repo: repo, Dir: dir, Base: dir, Image: image, Timeout: 2 * time.Minute,
		Setup: []string{"echo fetched > \"$PULLWRIGHT_DEPS/x\""}})
	if err != nil || p.Record == nil || p.Record.Failed {
		t.Fatalf("prepare = %+v, %v", p, err)
	}
	defer p.Release(t.Context())
	if p.Prepare != "" || slices.Contains(p.Env, buildcache.RunEnv()) {
		t.Errorf("a run is pointed at a build cache the setup could not make: env %q, prepare %q", p.Env, p.Prepare)
	}
	if !p.Measured || p.CacheBytes <= 0 {
		t.Errorf("the cache was not measured: %+v", p)
	}
}

// An operator's image that is not on the engine leaves a cache's size
// unknown, but not its build cache unused: the image the runs use tells
// whether the setup built the program that serves it (every approved
// run compiled from nothing otherwise).
func TestABuildCacheIsUsedWhenTheMeasuringImageIsMissing(t *testing.T) {
	image := sandboxtest.Image(t)
	repo := fmt.Sprintf("test/setup-nomeasure-%d", os.Getpid())
	d := newDocker(t, repo, "127.0.0.1:9/pullwright/none:never")
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	dir := write(t, map[string]string{"go.mod": "module example.com/tool\n\ngo 1.24\n", "main.go": "package main\n\nfunc main() {}\n"})
	p, err := s.Prepare(t.Context(), pullwright.SetupRequest{Repo: repo, Dir: dir, Base: dir, Image: image, Timeout: 2 * time.Minute})
	if err != nil || p.Record == nil || p.Record.Failed {
		t.Fatalf("prepare = %+v, %v", p, err)
	}
	defer p.Release(t.Context())
	if p.Prepare == "" || !slices.Contains(p.Env, buildcache.RunEnv()) {
		t.Errorf("runs are not pointed at the build cache; env %q, prepare %q", p.Env, p.Prepare)
	}
	ready, err := d.ReadyCaches(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(ready, func(c runner.ReadyCache) bool { return c.Volume == p.Caches[0].Volume }); i < 0 || ready[i].Bytes != -1 {
		t.Errorf("ready caches %+v; want %s with an unknown size (-1)", ready, p.Caches[0].Volume)
	}
}

// An approved run sees the tree as the user's toolchain would. The agent
// bumped a module in go.mod and go.sum still has the old version's lines:
// setup (which may write the caches) fetches the new version, and the
// run's go test then fails with "missing go.sum entry", as it would on a
// checkout of the commit in CI, instead of the go command adding the
// entry in the run's copy and the run passing. The same module with its
// go.sum right passes.
func TestARunSeesGoSumAsCIWould(t *testing.T) {
	image := sandboxtest.Image(t)
	host, _ := fencetest.ModProxy(t)
	repo := fmt.Sprintf("test/setup-gosum-%d", os.Getpid())
	d := newDocker(t, repo, image)
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	base := fencetest.GoModule("")
	bumped := fencetest.GoModule("")
	// The old version's lines (their hashes are never checked: no build
	// uses that version), not the new one's.
	bumped["go.sum"] = "github.com/hashicorp/yamux v0.1.1 h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n" +
		"github.com/hashicorp/yamux v0.1.1/go.mod h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		exit0 bool
		want  string
	}{
		{"go.sum has the entry", base, true, "no test files"},
		{"a bump whose go.sum entry is missing", bumped, false, "missing go.sum entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, tc.files)
			p, err := s.Prepare(t.Context(), pullwright.SetupRequest{
				Repo: repo, Dir: dir, Base: write(t, base), Timeout: 2 * time.Minute,
				// The checksum database, which a real setup reaches for
				// a new version, has no stand-in here.
				Setup: []string{"GOPROXY=http://" + host + " GOSUMDB=off GOTOOLCHAIN=local go mod download"},
				Hosts: []string{host}, Nets: []netip.Prefix{fencetest.Loopback},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release(t.Context())
			if p.Record != nil && p.Record.Failed {
				t.Fatalf("setup failed: %s", p.Record.Output)
			}
			res, err := d.Run(t.Context(), pullwright.RunSpec{Dir: dir, Command: "GOTOOLCHAIN=local go test ./...",
				Caches: p.Caches, Env: p.Env, Prepare: p.Prepare, Timeout: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if (res.ExitCode == 0) != tc.exit0 || !strings.Contains(res.Output, tc.want) {
				t.Fatalf("go test ./... on the cache: exit %d, want %q\n%s", res.ExitCode, tc.want, res.Output)
			}
			got, err := os.ReadFile(filepath.Join(dir, "go.sum"))
			if err != nil || string(got) != tc.files["go.sum"] {
				t.Errorf("the workspace's go.sum changed: %q, %v", got, err)
			}
		})
	}
}

// The program that serves a cache's Go build cache is the bot's own
// binary (the forwarder's), copied into the cache, never compiled in the
// sandbox: the copy in the cache is the very file, and a run through it
// compiles nothing the setup compiled. A dynamic build runs there through
// its own loader and libraries, in an image without a C library.
func TestTheBuildCachesProgramIsTheBotsBinary(t *testing.T) {
	image := sandboxtest.Image(t)
	for _, tc := range []struct {
		name string
		bot  func(t *testing.T) string
	}{
		{"static", func(t *testing.T) string { return fencetest.Forwarder(t) }},
		{"dynamic", func(t *testing.T) string {
			return fencetest.BuildDynamic(t, "github.com/pullwright/pullwright/internal/fencetest/forward", "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bot := tc.bot(t)
			repo := fmt.Sprintf("test/setup-prog-%s-%d", tc.name, os.Getpid())
			fencetest.RemoveCaches(t, repo)
			d, err := runner.NewDocker(runner.DockerConfig{Image: image, Forwarder: bot, Owner: repo,
				Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
			dir := write(t, map[string]string{"go.mod": "module example.com/tool\n\ngo 1.24\n", "main.go": "package main\n\nfunc main() {}\n"})
			p, err := s.Prepare(t.Context(), pullwright.SetupRequest{Repo: repo, Dir: dir, Base: dir, Timeout: 2 * time.Minute})
			if err != nil || p.Record == nil || p.Record.Failed {
				t.Fatalf("prepare = %+v, %v", p, err)
			}
			defer p.Release(t.Context())
			if p.Prepare == "" || !slices.Contains(p.Env, buildcache.RunEnv()) {
				t.Fatalf("runs are not pointed at the build cache; env %q, prepare %q", p.Env, p.Prepare)
			}
			want, err := exec.Command("sha256sum", bot).Output()
			if err != nil {
				t.Fatal(err)
			}
			res, err := d.Run(t.Context(), pullwright.RunSpec{Dir: dir,
				Command: "sha256sum " + setup.Dir + "/go/bin/bot; GOTOOLCHAIN=local go build -x -o /tmp/app . 2>/tmp/x && echo built; echo compiled $(grep -c /compile /tmp/x)",
				Caches:  p.Caches, Env: p.Env, Prepare: p.Prepare, Timeout: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if sum := strings.Fields(string(want))[0]; !strings.Contains(res.Output, sum+"  "+setup.Dir+"/go/bin/bot") {
				t.Errorf("the cache's program is not the bot's binary (sha256 %s):\n%s", sum, res.Output)
			}
			if !strings.Contains(res.Output, "built\ncompiled 0\n") {
				t.Errorf("a run through the bot's program compiled again:\n%s", res.Output)
			}
		})
	}
}
