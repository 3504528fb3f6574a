package runner_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
)

// A forwarder linked dynamically, against glibc (go build's default where
// a C compiler is found) or musl, carries a fenced run's connections in an
// image with no C library (busybox-static) and in one with a C library of
// its own (Debian's glibc): it goes into the sandbox with this host's
// loader and libraries, and starts through them.
func TestDockerFencedRunDynamicForwarder(t *testing.T) {
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "module files for %s\n", r.URL.Path)
	}))
	defer registry.Close()
	_, port, _ := net.SplitHostPort(registry.Listener.Addr().String())
	url := "http://registry.test:" + port + "/example.com/m/@v/list"
	images := []struct {
		name, image, fetch string
	}{
		{"busybox-static", sandboxtest.Image(t), "wget -q -O- " + url},
		{"debian", sandboxtest.NodeAndPython(t),
			`python3 -c 'import urllib.request; print(urllib.request.urlopen("` + url + `").read().decode())'`},
	}
	builds := []struct{ name, cc string }{
		{"glibc", ""},
		{"musl", "musl-gcc"},
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			fwd := fencetest.BuildDynamic(t, "github.com/pullwright/pullwright/internal/fencetest/forward", b.cc)
			files, err := runner.LoadForwarder(t.Context(), fwd)
			if err != nil {
				t.Fatal(err)
			}
			// What the sandbox's library directory holds: the loader and
			// the libraries, no more.
			libs := []string{filepath.Base(files.Interpreter)}
			for _, l := range files.Libraries {
				libs = append(libs, l.Name)
			}
			slices.Sort(libs)
			for _, img := range images {
				t.Run(img.name, func(t *testing.T) {
					proxy, err := fence.New(fence.Policy{Hosts: []string{"registry.test:" + port}, AllowedNets: []netip.Prefix{fencetest.Loopback}},
						fencetest.Names{"registry.test": {netip.MustParseAddr("127.0.0.1")}}, nil)
					if err != nil {
						t.Fatal(err)
					}
					d := newDocker(t, runner.DockerConfig{Image: img.image, Forwarder: fwd})
					res, err := d.Run(t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Route: proxy, Timeout: time.Minute,
						Command: "echo tools: $(ls " + runner.ToolsDir + "/lib | sort); " + img.fetch})
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					if res.ExitCode != 0 || !strings.Contains(res.Output, "module files for /example.com/m/@v/list") {
						t.Fatalf("fetch through the fence: exit %d\n%s", res.ExitCode, res.Output)
					}
					if want := "tools: " + strings.Join(libs, " ") + "\n"; !strings.Contains(res.Output, want) {
						t.Errorf("output lacks %q:\n%s", want, res.Output)
					}
				})
			}
		})
	}
}

// LoadForwarder finds nothing more for a static build, the loader and the
// C library for a dynamic one, and refuses what is no Linux program.
func TestLoadForwarder(t *testing.T) {
	static, err := runner.LoadForwarder(t.Context(), fencetest.Forwarder(t))
	if err != nil || static.Dynamic() || len(static.Libraries) != 0 {
		t.Errorf("static build: %+v, %v", static, err)
	}

	dyn, err := runner.LoadForwarder(t.Context(), fencetest.BuildDynamic(t, "github.com/pullwright/pullwright/internal/fencetest/forward", ""))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range dyn.Libraries {
		names = append(names, l.Name)
		if _, err := os.Stat(l.Path); err != nil {
			t.Errorf("library %s: %v", l.Name, err)
		}
	}
	if !dyn.Dynamic() || !slices.Contains(names, "libc.so.6") {
		t.Errorf("dynamic build: interpreter %q, libraries %q; want the loader and libc.so.6", dyn.Interpreter, names)
	}
	if slices.Contains(names, filepath.Base(dyn.Interpreter)) || slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "/") }) {
		t.Errorf("libraries %q list the loader, or a path", names)
	}

	// What this process tells its loader to preload is not the binary's
	// need: not listed, not copied into sandboxes.
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libm.so.6"); err == nil {
		t.Setenv("LD_PRELOAD", "/lib/x86_64-linux-gnu/libm.so.6")
		again, err := runner.LoadForwarder(t.Context(), fencetest.BuildDynamic(t, "github.com/pullwright/pullwright/internal/fencetest/forward", ""))
		if err != nil {
			t.Fatalf("with LD_PRELOAD set: %v", err)
		}
		if slices.ContainsFunc(again.Libraries, func(l runner.Library) bool { return strings.HasPrefix(l.Name, "libm.") }) {
			t.Errorf("with LD_PRELOAD set the libraries are %+v; the preloaded one is not the binary's", again.Libraries)
		}
	}

	script := filepath.Join(t.TempDir(), "forward")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.LoadForwarder(t.Context(), script); err == nil || !strings.Contains(err.Error(), "not a Linux binary") {
		t.Errorf("a script: %v, want not a Linux binary", err)
	}
	if _, err := runner.NewDocker(runner.DockerConfig{Forwarder: script}); err == nil || !strings.Contains(err.Error(), "fence forwarder") {
		t.Errorf("NewDocker with a script for forwarder: %v", err)
	}
}
