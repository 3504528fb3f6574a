package task

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

func TestUsageCountsAdmittedTasksOfTheInstallation(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	record := func(id string, tk *Task, admitted bool) *Task {
		t.Helper()
		if admitted {
			tk.AdmittedMS = clk.Now().UnixMilli()
		}
		if err := s.Record(ctx, Delivery{ID: id}, tk); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	old := record("old", fixTask(1), true) // admitted two hours ago, still running
	clk.Add(time.Hour)
	record("refused", fixTask(2), false) // refused requests never count
	done := record("done", fixTask(3), true)
	clk.Add(30 * time.Minute)
	recent := record("recent", fixTask(4), true)
	other := fixTask(5)
	other.Repo.InstallationID = 11 // its key starts "11/": not installation 1's
	record("other", other, true)
	record("reply", &Task{Kind: KindReply, Repo: fixTask(0).Repo, Issue: 6}, true)
	clk.Add(30 * time.Minute)

	// The done task is over: it counts for the hour, not as running.
	if err := claimAndMove(ctx, s, done.ID, Done); err != nil {
		t.Fatal(err)
	}
	since := clk.Now().Add(-time.Hour) // recent is inside the hour, done on its edge
	tests := []struct {
		except              int64
		wantActive, wantNew int
	}{
		{0, 2, 2},
		{old.ID, 1, 2},
		{recent.ID, 1, 1},
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

// claimAndMove puts task id in state to, as a worker would; it leases the
// tasks due before it on the way.
func claimAndMove(ctx context.Context, s *SQLite, id int64, to State) error {
	for {
		tk, err := s.Claim(ctx, "test", time.Minute)
		if err != nil {
			return err
		}
		if tk.ID != id {
			continue // leased now, so the next claim finds the next task
		}
		tk.State = to
		return s.Save(ctx, tk, "test")
	}
}
