package task

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		change Change
		want   string // substring of the refusal, "" for allowed
	}{
		{Change{Path: "src/main.go"}, ""},
		{Change{Path: ".github/workflows/ci.yml"}, "protected by `.github/workflows/**`"},
		{Change{Path: ".github/workflows/old.yml", Deleted: true}, "protected by"},
		{Change{Path: ".github/pullwright.yml"}, "protected by `.github/pullwright.yml`"},
		{Change{Path: "docs/ci.yml"}, "a symlink to `.github/workflows/ci.yml`"},
		{Change{Path: "docs/passwd"}, "a symlink out of the repository"},
		{Change{Path: "docs/up"}, "a symlink out of the repository"},
		{Change{Path: "docs/readme"}, ""},
	}
	for _, tt := range tests {
		got := protectedChanges(s, dir, []Change{tt.change})
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%s refused: %v", tt.change.Path, got)
		case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
			t.Errorf("%s: got %v, want a refusal saying %q", tt.change.Path, got, tt.want)
		}
	}
}

func TestUsageCountsOlderTasksOfTheInstallation(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	var ids []int64
	for i := 1; i <= 3; i++ {
		tk := fixTask(i)
		if err := s.Record(ctx, Delivery{ID: "d" + string(rune('0'+i))}, tk); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
		clk.Add(40 * time.Minute)
	}
	other := fixTask(9)
	other.Repo.InstallationID = 11 // its key starts "11/": not installation 1's
	if err := s.Record(ctx, Delivery{ID: "other"}, other); err != nil {
		t.Fatal(err)
	}
	reply := &Task{Kind: KindReply, Repo: fixTask(0).Repo, Issue: 4}
	if err := s.Record(ctx, Delivery{ID: "reply"}, reply); err != nil {
		t.Fatal(err)
	}

	// Now is 120 minutes after the first task: only the third was created
	// in the last hour. The task being judged and younger ones never count.
	since := clk.Now().Add(-time.Hour)
	tests := []struct {
		except              int64
		wantActive, wantNew int
	}{
		{ids[0], 0, 0},
		{ids[1], 1, 0},
		{ids[2], 2, 0},
		{other.ID + 100, 3, 1},
	}
	for _, tt := range tests {
		active, started, err := s.Usage(ctx, 1, since, tt.except)
		if err != nil {
			t.Fatal(err)
		}
		if active != tt.wantActive || started != tt.wantNew {
			t.Errorf("Usage(except %d) = %d active, %d new; want %d, %d", tt.except, active, started, tt.wantActive, tt.wantNew)
		}
	}
}
