// Package fencetest gives tests of the dependency fence what they stand
// up: names for their own hosts, a Go module proxy over the machine's
// module cache, and the forwarder built as the bot's image carries it.
// Nothing here reaches a host the test did not start.
package fencetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/runner"
)

// Names resolves the tests' own hosts, under names that resolve nowhere
// else, and nothing more.
type Names map[string][]netip.Addr

// LookupNetIP answers from the table; any other name does not exist.
func (n Names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Loopback is the range the tests' servers are on, which a fence must be
// told it may reach.
var Loopback = netip.MustParsePrefix("127.0.0.0/8")

// ModProxy serves the machine's module cache, which is laid out as the Go
// module proxy protocol asks, on loopback; it returns the proxy as
// "modproxy.test:port" (resolved by Resolver) and a count of the requests
// it served.
func ModProxy(t testing.TB) (host string, served *atomic.Int64) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	files := http.FileServer(http.Dir(filepath.Join(strings.TrimSpace(string(out)), "cache", "download")))
	served = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return "modproxy.test:" + port, served
}

// DownloadModules fills this machine's module cache, which ModProxy
// serves, with every module the module at dir needs: what builds here
// fetched leaves out the modules of other platforms, which go mod
// download in a sandbox asks for. It asks the machine's own module proxy,
// once; later calls find the cache full.
func DownloadModules(t testing.TB, dir string) {
	t.Helper()
	cmd := exec.Command("go", "mod", "download")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod download in %s on this machine: %v\n%s", dir, err, out)
	}
}

// Resolver resolves the names of the stand-ins (ModProxy, ServeNPM,
// ServePython), all on loopback.
func Resolver() Names {
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	return Names{"modproxy.test": lo, "npmreg.test": lo, "pyindex.test": lo}
}

// Forwarder builds the fence's forwarder (package forward, what `bot
// fence-forward` and `bot gocacheprog` run) as a static Linux binary, as
// the bot's image has it: a test binary is none.
func Forwarder(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "forward")
	cmd := exec.Command("go", "build", "-o", out, "github.com/pullwright/pullwright/internal/fencetest/forward")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the forwarder: %v\n%s", err, b)
	}
	return out
}

// GoModule is a module that needs one dependency, which ModProxy serves,
// with its go.sum: the files of a repository with dependencies.
func GoModule(extra string) map[string]string {
	return map[string]string{
		"go.mod": "module example.com/app\n\ngo 1.21\n\nrequire github.com/hashicorp/yamux v0.1.2\n" + extra,
		"go.sum": "github.com/hashicorp/yamux v0.1.2 h1:XtB8kyFOyHXYVFnwT5C3+Bdo8gArse7j2AQ0DA0Uey8=\n" +
			"github.com/hashicorp/yamux v0.1.2/go.mod h1:C+zze2n6e/7wshOZep2A70/aQU6QBRWJO/G6FT1wIns=\n",
		"main.go": "package main\n\nimport \"github.com/hashicorp/yamux\"\n\nfunc main() { _ = yamux.DefaultConfig() }\n",
	}
}

// RemoveCaches removes repo's dependency caches (the volumes labelled
// with it) when the test ends.
func RemoveCaches(t testing.TB, repo string) {
	t.Helper()
	t.Cleanup(func() {
		cli, err := client.New(client.FromEnv)
		if err != nil {
			t.Errorf("docker client: %v", err)
			return
		}
		defer cli.Close()
		ctx := context.Background()
		list, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: client.Filters{}.Add("label", runner.LabelCacheRepo+"="+repo)})
		if err != nil {
			t.Errorf("list caches: %v", err)
			return
		}
		for _, v := range list.Items {
			if err := removeVolume(ctx, cli, v.Name); err != nil {
				t.Errorf("remove %s: %v", v.Name, err)
			}
		}
	})
}

// removeVolume removes a test's volume. A sandbox container that mounted
// it may still be on its way out when the test ends (the engine removes
// it while a loaded machine catches up): it is waited for, then removed
// with the volume, so that no cache outlives its test and shows up in the
// next test's count.
func removeVolume(ctx context.Context, cli *client.Client, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for try := 0; ; try++ {
		_, err := cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if !cerrdefs.IsConflict(err) || try == 10 {
			return err
		}
		if try >= 5 {
			// Still held after a few seconds: whatever holds it is the
			// test's own leftover.
			users, lerr := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("volume", name)})
			if lerr != nil {
				return fmt.Errorf("%w (and listing its containers: %w)", err, lerr)
			}
			for _, c := range users.Items {
				if _, rerr := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); rerr != nil && !cerrdefs.IsNotFound(rerr) {
					return fmt.Errorf("%w (and removing container %s: %w)", err, c.ID, rerr)
				}
			}
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// ModuleSource is a copy of the module at path@version (a real
// repository's tree as its release has it, tests included), from this
// machine's module cache, filled through its module proxy if need be.
func ModuleSource(t testing.TB, module string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", module, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: %v %s", module, err, m.Error)
	}
	dir := filepath.Join(t.TempDir(), "src")
	if err := os.CopyFS(dir, os.DirFS(m.Dir)); err != nil {
		t.Fatalf("copy %s: %v", m.Dir, err)
	}
	return dir
}
