package setup_test

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/setup"
)

// A bot built the ordinary way (go build with a C compiler present, so
// with cgo and linked dynamically) is its own forwarder: Forwarder takes
// it, and a repository's setup fetches its dependencies through the fence
// in the busybox-static image, which has no C library, into the cache an
// approved run then finds them in. (A setup of its own, as for changed
// manifests: a shared one would also warm the build cache, minutes that
// test nothing of the forwarder.)
func TestSetupWithTheBotBuiltTheOrdinaryWay(t *testing.T) {
	image := sandboxtest.Image(t)
	bot := fencetest.BuildDynamic(t, "github.com/pullwright/pullwright/cmd/bot", "")
	fwd, err := setup.Forwarder(bot)
	if err != nil || fwd != bot {
		t.Fatalf("Forwarder(%s) = %q, %v; want the bot", bot, fwd, err)
	}
	host, served := fencetest.ModProxy(t)
	repo := fmt.Sprintf("test/setup-dynamic-%d", os.Getpid())
	fencetest.RemoveCaches(t, repo)
	d, err := runner.NewDocker(runner.DockerConfig{Image: image, Forwarder: fwd, Owner: repo,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Limits: setup.Limits{Keep: 1},
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	dir := module(t, "")
	prep, err := s.Prepare(t.Context(), pullwright.SetupRequest{
		Repo: repo, Dir: dir, Timeout: 2 * time.Minute,
		Setup: []string{"GOPROXY=http://" + host + " GOTOOLCHAIN=local go mod download"},
		Hosts: []string{host}, Nets: []netip.Prefix{fencetest.Loopback},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Release(t.Context())
	if prep.Record == nil || prep.Record.Failed || served.Load() == 0 {
		t.Fatalf("setup through the dynamic bot's forwarder: %+v, %d requests served", prep.Record, served.Load())
	}
	run, err := d.Run(t.Context(), pullwright.RunSpec{Dir: dir, Command: "GOTOOLCHAIN=local GOPROXY=off go mod verify",
		Caches: prep.Caches, Env: prep.Env, Timeout: 2 * time.Minute})
	if err != nil || run.ExitCode != 0 || !strings.Contains(run.Output, "all modules verified") {
		t.Fatalf("approved run on the cache: %v, exit %d\n%s", err, run.ExitCode, run.Output)
	}
}

// The configured forwarder is taken as it is when it can run, and refused
// when it is no Linux program; none configured is this program, static
// or not.
func TestForwarder(t *testing.T) {
	static := fencetest.Forwarder(t)
	if got, err := setup.Forwarder(static); err != nil || got != static {
		t.Errorf("Forwarder(static) = %q, %v", got, err)
	}
	script := t.TempDir() + "/forward"
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Forwarder(script); err == nil || !strings.Contains(err.Error(), "not a Linux binary") {
		t.Errorf("Forwarder(a script) = %v, want not a Linux binary", err)
	}
	exe, _ := os.Executable()
	if got, err := setup.Forwarder(""); err != nil || got != exe {
		t.Errorf(`Forwarder("") = %q, %v; want this test binary %s`, got, err, exe)
	}
}
