// Package buildcache keeps approved runs' Go builds warm without letting
// one run's output reach another's: the bot's setup compiles the default
// branch's packages into a layer of the repository's cache (compiling
// only, never running a test), and each approved run reads that layer,
// read-only, through a GOCACHEPROG program (gocacheprog) that writes
// whatever the run compiles into a layer of the run's own.
//
// The program is the bot's own binary ("bot gocacheprog", Serve), which
// the runner puts in the setup's sandbox as it puts the fence's forwarder
// there, and which the setup copies into the cache: nothing is compiled
// to serve the cache, and a setup of a repository with few packages takes
// seconds, not the minutes a build of the program from source took (the
// standard library's packages it needs, compiled from nothing on the
// sandbox's CPUs). So the program runs in the sandbox as the forwarder
// does, as a Linux build of the bot's architecture. Images with a Go
// older than 1.24 ignore GOCACHEPROG (and compile from nothing, as
// before).
package buildcache

import (
	"fmt"
	"path"
	"strings"
)

// Where, under a cache's directory, the program and the shared layer are.
// Tool is a script that starts the copy of the bot in Bin.
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
// key that holds it, so that a change to the program or the layout is a
// new cache, never a run pointed at a program that is not there.
const Version = "gocacheprog/3"

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

// RunLayer is where a run's own layer is: in its /tmp, which lives as
// long as the run and is no other's.
const RunLayer = "/tmp/pullwright-gocache"

// Warm is the shell script, run by setup in dir's module directories
// (slash-separated, relative to the working directory, made of names a
// shell takes as they are), that copies the program prog into the cache
// at cacheDir and compiles each module's packages and tests into the
// shared layer there with it. It runs in the environment of an approved
// run (GOPROXY=off: what compiles is what setup fetched). It fails only
// when the image has no go command or the program cannot be copied; a package that does not compile is
// left out (its runs compile it, and say why).
func Warm(cacheDir string, moduleDirs []string, prog Program) string {
	tool, store, bin := path.Join(cacheDir, Tool), path.Join(cacheDir, Store), path.Join(cacheDir, Bin)
	lib := path.Join(path.Dir(bin), "lib")
	cmd := tool + " -own " + store
	var b strings.Builder
	// Without a go command there is nothing to serve: no program, so no
	// run is pointed at one.
	b.WriteString("command -v go >/dev/null || { echo 'pullwright: no go command in the image' >&2; exit 1; }\n")
	fmt.Fprintf(&b, "mkdir -p %s %s || exit 1\n", path.Dir(tool), store)
	if len(prog.Files) == 0 {
		b.WriteString("echo 'pullwright: no program to serve the Go build cache' >&2; exit 1\n")
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
	// Written whole or not at all: a run is given the program only when
	// its script is there (measure looks for it), and a setup cut short
	// must not leave half of one.
	fmt.Fprintf(&b, "printf '#!/bin/sh\\n%s gocacheprog \"$@\"\\n' > %[2]s.new && chmod 555 %[2]s.new && mv %[2]s.new %[2]s || exit 1\n",
		strings.Join(start, " "), tool)
	for _, d := range moduleDirs {
		fmt.Fprintf(&b, "(cd %s && GOCACHEPROG=%q GOPROXY=off go build ./... >/dev/null 2>&1; GOCACHEPROG=%q GOPROXY=off go test -exec true ./... >/dev/null 2>&1) || echo 'pullwright: some packages in %s did not compile; runs compile them'\n",
			d, cmd, cmd, d)
	}
	// A tool the image's toolchain ships is not built: go tool runs it
	// from GOTOOLDIR. One that does not build is left to the runs.
	fmt.Fprintf(&b, "tooldir=$(go env GOTOOLDIR)\nfor t in %s; do [ -x \"$tooldir/$t\" ] || GOCACHEPROG=%q GOPROXY=off go tool -n $t >/dev/null 2>&1 || echo \"pullwright: go tool $t did not build; runs build it\"; done\n",
		strings.Join(Tools(), " "), cmd)
	fmt.Fprintf(&b, "echo 'pullwright: the Go build cache is warm'\n")
	return b.String()
}

// RunEnv is the variable that gives a run the cache at cacheDir's shared
// layer, read-only, under its own.
func RunEnv(cacheDir string) string {
	return "GOCACHEPROG=" + path.Join(cacheDir, Tool) + " -shared " + path.Join(cacheDir, Store) + " -own " + RunLayer
}
