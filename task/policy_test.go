package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/policy"
)

func TestProtectedChanges(t *testing.T) {
	dir := t.TempDir()
	write := func(p, content string) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p, target string) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	write("src/main.go", "package main\n")
	write(".github/workflows/ci.yml", "on: push\n")
	link("docs/ci.yml", "../.github/workflows/ci.yml")
	link("docs/passwd", "/etc/passwd")
	link("docs/up", "../../outside")
	link("docs/readme", "../src/main.go")
	s := policy.Settings{Protected: policy.AlwaysProtected}

	tests := []struct {
		change pullwright.Change
		want   string // substring of the refusal, "" for allowed
	}{
		{pullwright.Change{Path: "src/main.go"}, ""},
		{pullwright.Change{Path: ".github/workflows/ci.yml"}, "protected by `.github/workflows/**`"},
		{pullwright.Change{Path: ".github/workflows/old.yml", Status: pullwright.ChangeDeleted}, "protected by"},
		{pullwright.Change{Path: ".github/pullwright.yml"}, "protected by `.github/pullwright.yml`"},
		{pullwright.Change{Path: "docs/ci.yml"}, "a symlink to `.github/workflows/ci.yml`"},
		{pullwright.Change{Path: "docs/passwd"}, "a symlink out of the repository"},
		{pullwright.Change{Path: "docs/up"}, "a symlink out of the repository"},
		{pullwright.Change{Path: "docs/readme"}, ""},
	}
	for _, tt := range tests {
		got := protectedChanges(s, dir, []pullwright.Change{tt.change})
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%s refused: %v", tt.change.Path, got)
		case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
			t.Errorf("%s: got %v, want a refusal saying %q", tt.change.Path, got, tt.want)
		}
	}
}
