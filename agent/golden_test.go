package agent

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./agent/ -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (rerun with -update after checking the change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// The first message of an issue task is unchanged by pull request support.
func TestFirstMessageIssueGolden(t *testing.T) {
	b := testBrief
	b.TestCommand = "go test ./..."
	b.Limits.Protected = []string{".github/workflows/**"}
	golden(t, "issue_brief.golden", firstMessage(b))
}
