// Package buildcache keeps approved runs' Go builds warm without letting
// one run's output reach another's: the bot's setup compiles the default
// branch's packages into a layer of the repository's cache (compiling
// only, never running a test), and each approved run reads that layer,
// read-only, through a GOCACHEPROG program (gocacheprog) that writes
// whatever the run compiles into a layer of the run's own.
//
// The program is built inside the setup's sandbox by the image's own go
// command, from the source embedded here, so it needs nothing of the
// bot's machine and suits the image's architecture. Images with a Go
// older than 1.24 ignore GOCACHEPROG (and compile from nothing, as
// before).
package buildcache

import (
	_ "embed"
	"fmt"
	"path"
	"strings"
)

//go:embed gocacheprog/main.go
var source string

// Where, under a cache's directory, the program and the shared layer are.
const (
	Tool  = "go/bin/pullwright-gocache"
	Store = "go/build"
)

// Version names what Warm leaves in a cache: a cache is kept under a
// key that holds it, so that a change to the program or the layout is a
// new cache, never a run pointed at a program that is not there.
const Version = "gocacheprog/1"

// RunLayer is where a run's own layer is: in its /tmp, which lives as
// long as the run and is no other's.
const RunLayer = "/tmp/pullwright-gocache"

// eof ends the program's source in the script; the source never holds it.
const eof = "PULLWRIGHT_GOCACHEPROG_SOURCE"

// Warm is the shell script, run by setup in dir's module directories
// (slash-separated, relative to the working directory, made of names a
// shell takes as they are), that builds the program into the cache at
// cacheDir and compiles each module's packages and tests into the shared
// layer there with it. It runs in the environment of an approved run
// (GOPROXY=off: what compiles is what setup fetched). It fails only when
// the program cannot be built; a package that does not compile is left
// out (its runs compile it, and say why).
func Warm(cacheDir string, moduleDirs []string) string {
	tool, store := path.Join(cacheDir, Tool), path.Join(cacheDir, Store)
	prog := tool + " -own " + store
	var b strings.Builder
	fmt.Fprintf(&b, "src=\"${TMPDIR:-/tmp}/pullwright-gocacheprog\"\nmkdir -p %s %s \"$src\"\n", path.Dir(tool), store)
	fmt.Fprintf(&b, "cat > \"$src/main.go\" <<'%s'\n%s%s\n", eof, source, eof)
	// Its own build cache, GOFLAGS and toolchain: the repository's
	// settings are not the program's.
	// Written whole or not at all: a run is given the program only when
	// it is there, and a build cut short must not leave half of one.
	fmt.Fprintf(&b, "(cd \"$src\" && GOENV=off GOWORK=off GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=0 GOCACHE=\"$src/cache\" go build -trimpath -o %[1]s.new main.go && mv %[1]s.new %[1]s) || exit 1\n", tool)
	for _, d := range moduleDirs {
		fmt.Fprintf(&b, "(cd %s && GOCACHEPROG=%q GOPROXY=off go build ./... >/dev/null 2>&1; GOCACHEPROG=%q GOPROXY=off go test -exec true ./... >/dev/null 2>&1) || echo 'pullwright: some packages in %s did not compile; runs compile them'\n",
			d, prog, prog, d)
	}
	fmt.Fprintf(&b, "echo 'pullwright: the Go build cache is warm'\n")
	return b.String()
}

// RunEnv is the variable that gives a run the cache at cacheDir's shared
// layer, read-only, under its own.
func RunEnv(cacheDir string) string {
	return "GOCACHEPROG=" + path.Join(cacheDir, Tool) + " -shared " + path.Join(cacheDir, Store) + " -own " + RunLayer
}
