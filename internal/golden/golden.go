// Package golden compares a test's output with a file kept under
// testdata/, and rewrites the file when the test binary runs with -update.
// It is for tests only: it registers the -update flag, so a test binary
// that imports it must not register one of its own.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Check compares got with the file at path. Under -update it writes got
// there instead (making its directory if needed), so a first run creates
// the file and a later one records a change someone has checked.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run '%s' -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (rerun with -update after checking the change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
