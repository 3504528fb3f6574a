package fencetest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/prereq"
	"github.com/pullwright/pullwright/runner"
)

// BuildDynamic builds pkg the way a plain go build does where a C compiler
// is found: with cgo, so linked dynamically against the compiler's C
// library (cc "" is the toolchain's compiler; "musl-gcc" gives musl). It
// checks the binary is dynamic, since a test of one that is not would
// prove nothing. No compiler skips the test, but with CI=true the default
// compiler must be there.
func BuildDynamic(t testing.TB, pkg, cc string) string {
	t.Helper()
	defaultCC := cc == ""
	if defaultCC {
		out, err := exec.Command("go", "env", "CC").Output()
		if err != nil {
			t.Fatalf("go env CC: %v", err)
		}
		cc = strings.TrimSpace(string(out))
	}
	if _, err := exec.LookPath(cc); err != nil {
		if !defaultCC {
			t.Skipf("no C compiler %q to build %s with cgo: %v", cc, pkg, err)
		}
		prereq.Missing(t, "a C compiler", fmt.Sprintf("no C compiler %q to build %s with cgo: %v", cc, pkg, err))
	}
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1", "CC="+cc, "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s with cgo (CC=%s): %v\n%s", pkg, cc, err, b)
	}
	fw, err := runner.LoadForwarder(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	if !fw.Dynamic() {
		t.Fatalf("%s built with cgo is static: nothing to test", pkg)
	}
	return out
}
