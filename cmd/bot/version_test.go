package main

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/botproc"
)

// linkedDynamically says, from the ELF header alone, whether exe has an
// interpreter: what "bot version" must report.
func linkedDynamically(t *testing.T, exe string) bool {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

// checkVersion checks the lines of "bot version" for a binary linked
// dynamically or not, built as version.
func checkVersion(t *testing.T, out, version string, dynamic bool) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 6 || lines[0] != "pullwright "+version {
		t.Fatalf("version printed:\n%s\nwant first the line %q and the capabilities", out, "pullwright "+version)
	}
	want := []string{"build:    go", "linking:  static: setups run", "sandbox:  docker", "local (no isolation)",
		"console:  built in", "sqlite://", "postgres://"}
	if dynamic {
		want[1] = "linking:  dynamic (ld-"
		want = append(want, "libc.so", "): setups run")
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("version lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "will not run") {
		t.Errorf("version says setups will not run:\n%s", out)
	}
}

// "bot version" and "bot --version" say the same: the version, how this
// binary is linked and that setups run, the sandboxes, the console and the
// stores.
func TestVersion(t *testing.T) {
	var byWord, byFlag, errb bytes.Buffer
	if err := run(t.Context(), []string{"version"}, env(nil), &byWord, &errb); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), []string{"--version"}, env(nil), &byFlag, &errb); err != nil {
		t.Fatal(err)
	}
	if byWord.String() != byFlag.String() {
		t.Errorf("version and --version differ:\n%s\n%s", byWord.String(), byFlag.String())
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	checkVersion(t, byWord.String(), buildVersion(), linkedDynamically(t, exe))
}

// The bot built the ordinary way (cgo where a C compiler is) and the
// image's way (static, its version set by the linker) each report their
// own linking, and that setups run.
func TestVersionOfBuiltBots(t *testing.T) {
	ordinary, err := botproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(t.TempDir(), "bot")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7", "-o", static, ".")
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	for _, c := range []struct{ name, bin, version string }{
		{"ordinary", ordinary, ""},
		{"static", static, "v9.8.7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.CommandContext(t.Context(), c.bin, "--version").Output()
			if err != nil {
				t.Fatalf("%s --version: %v", c.bin, err)
			}
			version := c.version
			if version == "" {
				version = strings.TrimPrefix(strings.SplitN(string(out), "\n", 2)[0], "pullwright ")
			}
			checkVersion(t, string(out), version, linkedDynamically(t, c.bin))
		})
	}
	if !linkedDynamically(t, ordinary) {
		t.Log("the ordinary build is static here: no C compiler for cgo")
	}
	if linkedDynamically(t, static) {
		t.Error("the CGO_ENABLED=0 build is dynamic")
	}
}
