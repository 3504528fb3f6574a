// Package buildcache keeps approved runs' Go builds warm without letting
// one run's output reach another's: the bot's setup compiles the default
// branch's packages into a build cache directory of the repository's
// cache (compiling only, never running a test), and each approved run
// gets, in its own /tmp, a build cache directory made of links into that
// one, which is mounted read-only (Link): the go command reads it as a
// plain GOCACHE, and what the run compiles stays in its /tmp.
//
// The link step is the bot's own binary ("bot gocache"), which the runner
// puts in the setup's sandbox as it puts the fence's forwarder there, and
// which the setup copies into the cache: nothing is compiled to serve the
// cache. So the step runs in the sandbox as the forwarder does, as a
// Linux build of the bot's architecture.
package buildcache

import (
	"fmt"
	"path"
	"strings"
)

// Where, under a cache's directory, the link step and the shared layer
// (a GOCACHE directory) are. Tool is a script that starts the copy of the
// bot in Bin.
const (
	Tool  = "go/bin/pullwright-gocache"
	Bin   = "go/bin/bot"
	Store = "go/build"
)

// Program is the bot's own binary as the setup's sandbox has it, put
// there by the runner.
type Program struct {
	// Files are its files in the sandbox: the binary first, then, for a
	// dynamic build, its ELF loader and shared libraries, which go into
	// a directory lib beside it.
	Files []string
	// Start is the command that runs the copy of the binary at bin whose
	// loader and libraries are in lib.
	Start func(bin, lib string) []string
}

// Version names what Warm leaves in a cache: a cache is kept under a
// key that holds it, so that a change to the link step or the layout is a
// new cache, never a run pointed at a layout it cannot read.
const Version = "gocache/4"

// Tools are the go command's own tools that a test or a common command
// runs and that Go 1.25 and later no longer ship prebuilt: the first
// `go tool nm` (cobra's tests run it) or `go test -cover -coverprofile`
// over packages without tests (covdata) compiles the tool, about 60
// packages of the standard library and cmd, which a plain container does
// once into its own cache and a run would do every time into a layer that
// dies with it. Warm builds them into the shared layer. pprof and trace
// are left out: they are large and a test seldom runs them.
func Tools() []string {
	return []string{"addr2line", "buildid", "covdata", "nm", "objdump", "pack"}
}

// RunLayer is a run's build cache directory (GOCACHE): in its /tmp, which
// lives as long as the run, is capped, and is no other's.
const RunLayer = "/tmp/pullwright-gocache"

// Warm is the shell script, run by setup in dir's module directories
// (slash-separated, relative to the working directory, made of names a
// shell takes as they are), that copies the bot's binary prog into the
// cache at cacheDir (for the runs' link step, Prepare) and compiles each
// module's packages and tests, and the go command's Tools, into the shared
// layer there. It runs in the environment of an approved run (GOPROXY=off:
// what compiles is what setup fetched). It fails only when the image has
// no go command or the binary cannot be copied; a package that does not
// compile is left out (its runs compile it, and say why).
func Warm(cacheDir string, moduleDirs []string, prog Program) string {
	tool, store, bin := path.Join(cacheDir, Tool), path.Join(cacheDir, Store), path.Join(cacheDir, Bin)
	lib := path.Join(path.Dir(bin), "lib")
	var b strings.Builder
	// Without a go command there is nothing to serve: no link step, so no
	// run is pointed at one.
	b.WriteString("command -v go >/dev/null || { echo 'pullwright: no go command in the image' >&2; exit 1; }\n")
	fmt.Fprintf(&b, "mkdir -p %s %s || exit 1\n", path.Dir(tool), store)
	if len(prog.Files) == 0 {
		b.WriteString("echo 'pullwright: no program to link the Go build cache' >&2; exit 1\n")
		return b.String()
	}
	// The paths are the runner's and the cache's, made of names a shell
	// takes as they are.
	fmt.Fprintf(&b, "cp %s %s || exit 1\n", prog.Files[0], bin)
	if len(prog.Files) > 1 {
		fmt.Fprintf(&b, "mkdir -p %s && cp %s %s/ || exit 1\n", lib, strings.Join(prog.Files[1:], " "), lib)
	}
	// The image's ENV reaches the program: what would make a copied
	// loader run more code than the bot's, or look elsewhere first, is
	// blanked.
	start := append([]string{"unset LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH GLIBC_TUNABLES LD_DEBUG LD_PROFILE;", "exec"},
		prog.Start(bin, lib)...)
	// Written whole or not at all: a run is given the build cache only
	// when the link step's script is there (measure looks for it), and a
	// setup cut short must not leave half of one.
	fmt.Fprintf(&b, "printf '#!/bin/sh\\n%s gocache \"$@\"\\n' > %[2]s.new && chmod 555 %[2]s.new && mv %[2]s.new %[2]s || exit 1\n",
		strings.Join(start, " "), tool)
	for _, d := range moduleDirs {
		fmt.Fprintf(&b, "(cd %s && GOCACHE=%s GOPROXY=off go build ./... >/dev/null 2>&1; GOCACHE=%s GOPROXY=off go test -exec true ./... >/dev/null 2>&1) || echo 'pullwright: some packages in %s did not compile; runs compile them'\n",
			d, store, store, d)
	}
	// A tool the image's toolchain ships is not built: go tool runs it
	// from GOTOOLDIR. One that does not build is left to the runs.
	fmt.Fprintf(&b, "tooldir=$(go env GOTOOLDIR)\nfor t in %s; do [ -x \"$tooldir/$t\" ] || GOCACHE=%s GOPROXY=off go tool -n $t >/dev/null 2>&1 || echo \"pullwright: go tool $t did not build; runs build it\"; done\n",
		strings.Join(Tools(), " "), store)
	fmt.Fprintf(&b, "echo 'pullwright: the Go build cache is warm'\n")
	return b.String()
}

// RunEnv is the variable that points a run's go command at its build
// cache directory, which Prepare makes.
func RunEnv() string {
	return "GOCACHE=" + RunLayer
}

// Prepare is the command that makes a run's build cache directory from
// the shared layer of the cache at cacheDir, before the run's command
// (pullwright.RunSpec.Prepare).
func Prepare(cacheDir string) string {
	return path.Join(cacheDir, Tool) + " -shared " + path.Join(cacheDir, Store) + " " + RunLayer
}
