package runner

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"time"
)

// A fenced run's forwarder ("bot fence-forward") is the bot's own binary,
// copied into the sandbox. A static build runs there as it is. A dynamic
// one (a plain go build, which uses cgo where a C compiler is found) needs
// an ELF interpreter and shared libraries that a sandbox image may not
// have (a busybox-static image has no C library) or have in other
// versions (another distribution, musl): so it travels with this host's
// own, the loader named in its PT_INTERP and the libraries that loader
// finds for it here, and starts through the copied loader with
// --library-path, which glibc's and musl's loaders both take. Nothing
// else goes in: the binary, the loader, the libraries.

// forwarderLibDir is the directory in ToolsDir of a dynamic forwarder's
// loader and libraries.
const forwarderLibDir = "lib"

// forwarderLoadTimeout bounds asking the loader for a forwarder's
// libraries.
const forwarderLoadTimeout = 30 * time.Second

// Forwarder is what a fenced run's sandbox gets of a forwarder binary on
// this host.
type Forwarder struct {
	// Program is the binary.
	Program string
	// Interpreter is its ELF interpreter (PT_INTERP); "" for a static
	// build.
	Interpreter string
	// Libraries are the shared libraries it needs, besides the
	// interpreter.
	Libraries []Library
}

// Library is a shared library a dynamic forwarder needs.
type Library struct {
	// Name is the name the program asks for (DT_NEEDED), its file name
	// in the sandbox.
	Name string
	// Path is where this host's loader finds it.
	Path string
}

// Dynamic says whether the forwarder needs its loader and libraries.
func (f Forwarder) Dynamic() bool { return f.Interpreter != "" }

// LoadForwarder finds the files the forwarder at program needs in a
// sandbox: for a dynamic build, its interpreter and the libraries the
// interpreter resolves for it on this host, asked of the interpreter
// itself (--list, as ldd does), which knows its search path (the
// program's run path, LD_LIBRARY_PATH, its cache) as nothing else does.
func LoadForwarder(ctx context.Context, program string) (Forwarder, error) {
	fw := Forwarder{Program: program}
	f, err := elf.Open(program)
	if err != nil {
		return fw, fmt.Errorf("%s is not a Linux binary: %w", program, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fw, fmt.Errorf("%s is not an executable (ELF type %s)", program, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return fw, fmt.Errorf("read the ELF interpreter of %s: %w", program, err)
		}
		fw.Interpreter = string(bytes.TrimRight(b, "\x00"))
	}
	if !fw.Dynamic() {
		return fw, nil
	}
	if !path.IsAbs(fw.Interpreter) {
		return fw, fmt.Errorf("%s names the ELF interpreter %q, not a path", program, fw.Interpreter)
	}
	cmd := exec.CommandContext(ctx, fw.Interpreter, "--list", program)
	// What the loader is told to add (a preloaded allocator, an audit
	// library) is this process's, not the binary's needs: it would be
	// listed, and copied into every sandbox.
	cmd.Env = slices.DeleteFunc(os.Environ(), loaderVariable)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fw, fmt.Errorf("list the shared libraries of %s with its loader %s: %w: %s%s", program, fw.Interpreter, err,
			strings.TrimSpace(string(out)), strings.TrimSpace(stderr.String()))
	}
	listed, err := parseLoaderList(string(out))
	if err != nil {
		return fw, fmt.Errorf("the shared libraries of %s: %w", program, err)
	}
	interp, err := os.Stat(fw.Interpreter)
	if err != nil {
		return fw, fmt.Errorf("the ELF interpreter of %s: %w", program, err)
	}
	seen := map[string]bool{path.Base(fw.Interpreter): true}
	for _, l := range listed {
		fi, err := os.Stat(l.Path)
		if err != nil {
			return fw, fmt.Errorf("the shared library %s of %s: %w", l.Name, program, err)
		}
		// The loader itself: listed by its path, and by musl as the C
		// library too, which it is.
		if os.SameFile(fi, interp) {
			continue
		}
		if strings.Contains(l.Name, "/") {
			return fw, fmt.Errorf("%s needs the shared library %s by its path, which a sandbox does not have", program, l.Name)
		}
		if seen[l.Name] {
			continue
		}
		seen[l.Name] = true
		fw.Libraries = append(fw.Libraries, l)
	}
	return fw, nil
}

// parseLoaderList reads what an ELF loader prints for --list, glibc's as
// ldd shows it and musl's alike:
//
//	linux-vdso.so.1 (0x…)                          the kernel's: nothing to copy
//	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)
//	/lib64/ld-linux-x86-64.so.2 (0x…)              a library by its path (the loader)
//	libfoo.so.1 => not found
//
// A line it does not know is an error: a library it did not understand
// would be missing in the sandbox.
func parseLoaderList(out string) ([]Library, error) {
	var libs []Library
	var missing []string
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, target, arrow := strings.Cut(line, " => ")
		if !arrow {
			// "name (0x…)" or "/path (0x…)".
			n, addr, ok := strings.Cut(line, " ")
			if !ok || !strings.HasPrefix(addr, "(0x") {
				return nil, fmt.Errorf("the loader printed %q", line)
			}
			if strings.HasPrefix(n, "/") {
				libs = append(libs, Library{Name: n, Path: n})
			}
			continue
		}
		name = strings.TrimSpace(name)
		target = strings.TrimSpace(target)
		if target == "not found" {
			missing = append(missing, name)
			continue
		}
		p, _, _ := strings.Cut(target, " (0x")
		p = strings.TrimSpace(p)
		switch {
		case p == "" || strings.HasPrefix(p, "(0x"):
			// An older glibc's "linux-vdso.so.1 =>  (0x…)".
		case strings.HasPrefix(p, "/"):
			libs = append(libs, Library{Name: name, Path: p})
		default:
			return nil, fmt.Errorf("the loader printed %q", line)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not found on this host: %s", strings.Join(missing, ", "))
	}
	if len(libs) == 0 {
		return nil, errors.New("the loader listed none")
	}
	return libs, nil
}

// command is what starts the forwarder in the sandbox.
func (f Forwarder) command() []string {
	return append(f.start(ToolsDir+"/"+forwarderName, ToolsDir+"/"+forwarderLibDir), "fence-forward")
}

// start is what starts the binary at prog whose loader and libraries,
// for a dynamic build, are in lib.
func (f Forwarder) start(prog, lib string) []string {
	if !f.Dynamic() {
		return []string{prog}
	}
	return []string{lib + "/" + path.Base(f.Interpreter), "--library-path", lib, prog}
}

// BotFiles are the files of the bot's binary in a sandbox of a run that
// asked for it (RunSpec.Bot): the binary, then for a dynamic build its
// loader and libraries; nil without a forwarder.
func (d *Docker) BotFiles() []string {
	if d.cfg.Forwarder == "" {
		return nil
	}
	files := []string{ToolsDir + "/" + forwarderName}
	if d.fwd.Dynamic() {
		lib := ToolsDir + "/" + forwarderLibDir + "/"
		files = append(files, lib+path.Base(d.fwd.Interpreter))
		for _, l := range d.fwd.Libraries {
			files = append(files, lib+l.Name)
		}
	}
	return files
}

// BotStart is the command that starts a copy of the bot's binary at prog
// whose loader and libraries (BotFiles) were copied into lib.
func (d *Docker) BotStart(prog, lib string) []string { return d.fwd.start(prog, lib) }

// loaderVariable reports whether env ("NAME=value") tells a dynamic
// loader to load, audit or trace more than a program needs.
func loaderVariable(env string) bool {
	name, _, _ := strings.Cut(env, "=")
	return strings.HasPrefix(name, "LD_") || name == "GLIBC_TUNABLES"
}

// forwarderEnv blanks, for the forwarder's exec, what an image's ENV could
// set for glibc's or musl's loader to run code of the image's inside it.
func forwarderEnv() []string {
	return []string{"LD_PRELOAD=", "LD_AUDIT=", "LD_LIBRARY_PATH=", "GLIBC_TUNABLES=", "LD_DEBUG=", "LD_PROFILE="}
}
