package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/pullwright/pullwright/runner"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// forwarderLoadTimeout bounds what "bot version" asks this binary's loader.
const forwarderLoadTimeout = 10 * time.Second

// printVersion is "bot version": the version, then what this binary can
// do. The first line stays "pullwright VERSION" for whatever reads it. What
// depends on the machine it runs on is said only where this binary can
// find it at once (how it is linked, so whether setups run); the Docker
// engine is looked for when serve or run starts, not here.
func printVersion(ctx context.Context, w io.Writer) error {
	fmt.Fprintln(w, "pullwright", buildVersion())
	fmt.Fprintf(w, "build:    %s %s/%s%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, revision())
	fmt.Fprintf(w, "linking:  %s\n", linking(ctx))
	fmt.Fprintln(w, "sandbox:  docker (the default; the engine DOCKER_HOST names, else the local socket), local (no isolation)")
	fmt.Fprintln(w, "console:  built in; served when GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET, BOT_SESSION_KEY and BOT_PUBLIC_URL are set")
	_, err := fmt.Fprintln(w, "stores:   sqlite:// (built in, no C library), postgres://")
	return err
}

// revision is the commit the binary was built from, when the build
// recorded it.
func revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return fmt.Sprintf(", commit %.12s%s", rev, modified)
}

// linking says how this binary is linked and whether it can be the
// forwarder of repositories' setups, as serve and run will find it.
func linking(ctx context.Context) string {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Sprintf("unknown (%v): setups will not run", err)
	}
	ctx, cancel := context.WithTimeout(ctx, forwarderLoadTimeout)
	defer cancel()
	fw, err := runner.LoadForwarder(ctx, exe)
	switch {
	case err != nil:
		return fmt.Sprintf("unknown: setups will not run: %v", err)
	case !fw.Dynamic():
		return "static: setups run, with this binary as their forwarder"
	}
	libs := []string{filepath.Base(fw.Interpreter)}
	for _, l := range fw.Libraries {
		libs = append(libs, l.Name)
	}
	return fmt.Sprintf("dynamic (%s): setups run, with this binary as their forwarder and its loader and libraries beside it",
		strings.Join(libs, ", "))
}
