package runner_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/runner"
)

// A fenced run reaches the allowed host through the fence and nothing else:
// not a host off the list, and not the allowed host itself by its address
// when a process ignores the proxy, since the sandbox has no network but
// loopback. The fence records what it refused.
func TestDockerFencedRun(t *testing.T) {
	var registryHits, elsewhereHits atomic.Int64
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		registryHits.Add(1)
		fmt.Fprintf(w, "module files for %s\n", r.URL.Path)
	}))
	defer registry.Close()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits.Add(1)
	}))
	defer elsewhere.Close()
	port := func(s *httptest.Server) string { _, p, _ := net.SplitHostPort(s.Listener.Addr().String()); return p }
	loopback := netip.MustParseAddr("127.0.0.1")
	proxy, err := fence.New(fence.Policy{
		Hosts:       []string{"registry.test:" + port(registry)},
		AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, // the test's registry is on loopback
	}, fencetest.Names{"registry.test": {loopback}, "elsewhere.test": {loopback}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newDocker(t, runner.DockerConfig{Forwarder: fencetest.Forwarder(t)})
	cmd := strings.Join([]string{
		"ls /sys/class/net",
		"wget -q -O- http://registry.test:" + port(registry) + "/example.com/m/@v/list",
		"wget -q -O- http://elsewhere.test:" + port(elsewhere) + "/ || echo elsewhere refused",
		// Around the proxy there is nothing: no interface but loopback,
		// no route at all.
		"echo routes: $(tail -n +2 /proc/net/route | wc -l)",
	}, "; ")
	res, err := d.Run(t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Command: cmd, Timeout: time.Minute, Route: proxy, Network: runner.NetworkBridge})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("exit %d:\n%s", res.ExitCode, res.Output)
	for _, want := range []string{"lo\n", "module files for /example.com/m/@v/list", "elsewhere refused", "routes: 0"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(res.Output, "eth0") {
		t.Errorf("a fenced sandbox has a network interface besides loopback")
	}
	if registryHits.Load() != 1 || elsewhereHits.Load() != 0 {
		t.Errorf("registry hits %d (want 1), elsewhere %d (want 0)", registryHits.Load(), elsewhereHits.Load())
	}
	events, _ := proxy.Events()
	var shown []string
	for _, e := range events {
		shown = append(shown, e.String())
	}
	if len(events) != 2 || !events[0].Allowed || events[1].Allowed || !strings.HasPrefix(events[1].String(), "blocked: elsewhere.test:") {
		t.Errorf("fence events = %q", shown)
	}
}

// Without the forwarder a fenced run is an error, before any container.
func TestDockerFencedRunNeedsTheForwarder(t *testing.T) {
	d := newDocker(t, runner.DockerConfig{})
	proxy, _ := fence.New(fence.Policy{}, fencetest.Names{}, nil)
	if _, err := d.Run(t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Command: "true", Route: proxy}); err == nil || !strings.Contains(err.Error(), "Forwarder") {
		t.Fatalf("Run = %v, want an error naming DockerConfig.Forwarder", err)
	}
	if _, err := (&runner.Local{}).Run(t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Command: "true", Route: proxy}); err == nil {
		t.Fatal("the local runner ran a fenced command")
	}
}

// The real Go command fetches a module through the fence from a module
// proxy the test serves (the module proxy protocol is files over HTTP: the
// machine's own module cache is one) into a cache volume, verified by
// go.sum; the checksum database, not on the list, is never reached. Then
// an approved run with no network builds against the cache, read-only.
func TestDockerFencedSetupFillsACacheRunsRead(t *testing.T) {
	host, served := fencetest.ModProxy(t)
	proxy, err := fence.New(fence.Policy{Hosts: []string{host}, AllowedNets: []netip.Prefix{fencetest.Loopback}}, fencetest.Resolver(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, fencetest.GoModule(""))
	volume := cacheVolume(t)
	modcache := "GOMODCACHE=/deps/" + runner.CacheFiles + "/go/mod"
	d := newDocker(t, runner.DockerConfig{Forwarder: fencetest.Forwarder(t)})
	setup, err := d.Run(t.Context(), pullwright.RunSpec{
		Dir: dir, Route: proxy, Timeout: 2 * time.Minute,
		Caches:  []pullwright.CacheMount{{Volume: volume, Target: "/deps"}},
		Env:     []string{modcache, "GOPROXY=http://" + host, "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"},
		Command: "go mod download",
	})
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	if setup.ExitCode != 0 || served.Load() == 0 {
		t.Fatalf("go mod download through the fence: exit %d, %d requests served\n%s", setup.ExitCode, served.Load(), setup.Output)
	}
	events, _ := proxy.Events()
	for _, e := range events {
		if !e.Allowed {
			t.Errorf("the fence refused %s", e)
		}
	}

	before := served.Load()
	run, err := d.Run(t.Context(), pullwright.RunSpec{
		Dir: dir, Timeout: 2 * time.Minute,
		Caches:  []pullwright.CacheMount{{Volume: volume, Target: "/deps", ReadOnly: true}},
		Env:     []string{modcache, "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"},
		Command: "go build -o /tmp/app . && echo built; touch /deps/" + runner.CacheFiles + "/x || echo cache read-only",
	})
	if err != nil {
		t.Fatalf("approved run: %v", err)
	}
	if !strings.Contains(run.Output, "built") || !strings.Contains(run.Output, "cache read-only") || served.Load() != before {
		t.Fatalf("approved run on the cache: exit %d\n%s", run.ExitCode, run.Output)
	}
}

// cacheVolume is a volume for a test's cache, removed when it ends.
func cacheVolume(t *testing.T) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("pullwright-test-cache-%d-%d", os.Getpid(), testOwners.Add(1))
	if _, err := cli.VolumeCreate(t.Context(), client.VolumeCreateOptions{Name: name}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer cli.Close()
		if _, err := cli.VolumeRemove(context.Background(), name, client.VolumeRemoveOptions{Force: true}); err != nil {
			t.Errorf("remove the cache volume: %v", err)
		}
	})
	return name
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
