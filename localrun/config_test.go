package localrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/localrun"
)

// bot run reads .github/pullwright.yml at HEAD; when the working tree's
// differs, it says so rather than ignoring the edit without a word.
func TestRunWarnsOfAnUncommittedConfiguration(t *testing.T) {
	const (
		path      = ".github/pullwright.yml"
		committed = "budget:\n  max_turns: 7\n"
	)
	tests := []struct {
		name   string
		head   bool   // HEAD has the file
		worked string // the working tree's, "" for none
		want   string // in the warning, "" for no warning
	}{
		{"changed", true, "budget:\n  max_turns: 9\n", "warning: uncommitted changes to .github/pullwright.yml are not used: bot run reads it from HEAD ("},
		{"not committed", false, "budget:\n  max_turns: 9\n", "warning: .github/pullwright.yml is not committed, so it is not used: bot run reads the configuration from HEAD ("},
		{"deleted", true, "", "warning: .github/pullwright.yml is deleted in the working tree, but bot run reads it from HEAD ("},
		{"the same", true, committed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var extra map[string]string
			if tt.head {
				extra = map[string]string{path: committed}
			}
			dir := newRepo(t, false, extra)
			if tt.worked != "" {
				writeFile(t, dir, path, tt.worked)
			} else if err := os.Remove(filepath.Join(dir, path)); err != nil {
				t.Fatal(err)
			}
			llm := fakellm.New(t, readStep, finishStep)
			o, _, stderr := options(t, dir, llm, strings.NewReader(""), true)
			if _, err := localrun.Run(context.Background(), o); err != nil {
				t.Fatalf("Run: %v\n%s", err, stderr)
			}
			out := stderr.String()
			if tt.want == "" {
				if strings.Contains(out, "pullwright.yml") && strings.Contains(out, "warning:") {
					t.Errorf("a warning about the file, which is HEAD's:\n%s", out)
				}
				return
			}
			mustContain(t, "stderr", out, tt.want)
			if tt.worked != "" {
				mustContain(t, "stderr", out, "bot check")
			}
			if tt.head {
				// HEAD's file is the one used.
				mustContain(t, "stderr", out, "budget: 7 turns")
			}
		})
	}
}

// A file broken at HEAD and fixed in the working tree: the error says the
// fix is not committed.
func TestRunSaysTheFixOfABrokenConfigurationIsNotCommitted(t *testing.T) {
	dir := newRepo(t, false, map[string]string{".github/pullwright.yml": "budget:\n  max_turnz: 7\n"})
	writeFile(t, dir, ".github/pullwright.yml", "budget:\n  max_turns: 7\n")
	llm := fakellm.New(t)
	o, _, _ := options(t, dir, llm, strings.NewReader(""), true)
	_, err := localrun.Run(context.Background(), o)
	if err == nil {
		t.Fatal("Run succeeded")
	}
	mustContain(t, "the error", err.Error(), "max_turnz", "uncommitted changes to .github/pullwright.yml are not used")
}
