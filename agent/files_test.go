package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
)

func TestDeleteMoveAndMode(t *testing.T) {
	files := map[string]string{
		"a.go":                     "package a\n",
		"pkg/x.go":                 "package pkg\n",
		"pkg/sub/y.go":             "package sub\n",
		"run.sh":                   "#!/bin/sh\necho hi\n",
		".github/workflows/ci.yml": "on: push\n",
		"docs/readme.md":           "docs\n",
	}
	protected := []string{".github/workflows/**"}
	cases := []struct {
		name    string
		tool    string
		args    map[string]any
		want    []string
		wantErr bool
		gone    []string // paths that must not exist afterwards
		there   []string // paths that must exist afterwards
		exec    map[string]bool
	}{
		{name: "delete a file", tool: ToolDeleteFile, args: map[string]any{"path": "a.go"},
			want: []string{"deleted a.go"}, gone: []string{"a.go"}},
		{name: "delete a directory", tool: ToolDeleteFile, args: map[string]any{"path": "pkg"},
			want: []string{"deleted the directory pkg and the 3 entries in it"}, gone: []string{"pkg"}},
		{name: "delete a protected file", tool: ToolDeleteFile, args: map[string]any{"path": ".github/workflows/ci.yml"},
			wantErr: true, want: []string{"protected"}, there: []string{".github/workflows/ci.yml"}},
		{name: "delete a directory holding a protected file", tool: ToolDeleteFile, args: map[string]any{"path": ".github"},
			wantErr: true, want: []string{"protected"}, there: []string{".github/workflows/ci.yml"}},
		{name: "delete a missing file", tool: ToolDeleteFile, args: map[string]any{"path": "nope.go"},
			wantErr: true, want: []string{"no such file"}},
		{name: "delete the root", tool: ToolDeleteFile, args: map[string]any{"path": "."},
			wantErr: true, want: []string{"repository root"}},
		{name: "delete .git", tool: ToolDeleteFile, args: map[string]any{"path": ".git"},
			wantErr: true, want: []string{".git"}},
		{name: "delete outside", tool: ToolDeleteFile, args: map[string]any{"path": "../x"},
			wantErr: true, want: []string{"outside the workspace"}},
		{name: "rename a file", tool: ToolMoveFile, args: map[string]any{"from": "a.go", "to": "b/b.go"},
			want: []string{"moved a.go to b/b.go"}, gone: []string{"a.go"}, there: []string{"b/b.go"}},
		{name: "move a directory", tool: ToolMoveFile, args: map[string]any{"from": "pkg", "to": "internal/pkg"},
			want: []string{"moved the directory pkg (3 entries) to internal/pkg"}, gone: []string{"pkg"}, there: []string{"internal/pkg/sub/y.go"}},
		{name: "move onto an existing file", tool: ToolMoveFile, args: map[string]any{"from": "a.go", "to": "run.sh"},
			wantErr: true, want: []string{"run.sh already exists"}, there: []string{"a.go"}},
		{name: "move into a protected place", tool: ToolMoveFile, args: map[string]any{"from": "a.go", "to": ".github/workflows/a.yml"},
			wantErr: true, want: []string{"protected"}, there: []string{"a.go"}},
		{name: "move a protected file away", tool: ToolMoveFile, args: map[string]any{"from": ".github/workflows/ci.yml", "to": "ci.yml"},
			wantErr: true, want: []string{"protected"}, there: []string{".github/workflows/ci.yml"}},
		{name: "move a directory into a protected place", tool: ToolMoveFile, args: map[string]any{"from": "docs", "to": ".github/workflows"},
			wantErr: true, want: []string{"protected"}, there: []string{"docs/readme.md"}},
		{name: "move a directory under a protected glob", tool: ToolMoveFile, args: map[string]any{"from": "docs", "to": ".github/workflows/docs"},
			wantErr: true, want: []string{"protected"}, there: []string{"docs/readme.md"}},
		{name: "move into itself", tool: ToolMoveFile, args: map[string]any{"from": "pkg", "to": "pkg/sub/pkg"},
			wantErr: true, want: []string{"into itself"}},
		{name: "move into .git", tool: ToolMoveFile, args: map[string]any{"from": "a.go", "to": ".git/hooks/pre-commit"},
			wantErr: true, want: []string{".git"}, there: []string{"a.go"}},
		{name: "make executable", tool: ToolSetExecutable, args: map[string]any{"path": "a.go", "executable": true},
			want: []string{"a.go is now executable (mode 755)"}, exec: map[string]bool{"a.go": true}},
		{name: "make not executable", tool: ToolSetExecutable, args: map[string]any{"path": "run.sh", "executable": false},
			want: []string{"run.sh is now not executable (mode 644)"}, exec: map[string]bool{"run.sh": false}},
		{name: "already executable", tool: ToolSetExecutable, args: map[string]any{"path": "run.sh", "executable": true},
			want: []string{"was already executable"}, exec: map[string]bool{"run.sh": true}},
		{name: "mode of a protected file", tool: ToolSetExecutable, args: map[string]any{"path": ".github/workflows/ci.yml", "executable": true},
			wantErr: true, want: []string{"protected"}, exec: map[string]bool{".github/workflows/ci.yml": false}},
		{name: "mode without executable", tool: ToolSetExecutable, args: map[string]any{"path": "a.go"},
			wantErr: true, want: []string{`missing required argument "executable"`}},
	}
	a := newTestAgent(t, Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := workspaceDir(t, files)
			if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			st := &State{Limits: pullwright.Limits{Protected: protected}}
			got, _ := callTool(t, a, dir, st, tc.tool, args(t, tc.args))
			if isErr := strings.HasPrefix(got, "error: "); isErr != tc.wantErr {
				t.Fatalf("error = %v, want %v; result:\n%s", isErr, tc.wantErr, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %q; result:\n%s", w, got)
				}
			}
			for _, p := range tc.gone {
				if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
					t.Errorf("%s is still there", p)
				}
			}
			for _, p := range tc.there {
				if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
					t.Errorf("%s is gone: %v", p, err)
				}
			}
			for p, want := range tc.exec {
				fi, err := os.Stat(filepath.Join(dir, p))
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm()&0o111 != 0; got != want {
					t.Errorf("%s executable = %v, want %v (mode %v)", p, got, want, fi.Mode())
				}
			}
		})
	}
}

// A symlink is deleted or moved as a link: what it points to stays, and a
// link out of the workspace is no way out.
func TestDeleteAndMoveSymlinks(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := workspaceDir(t, map[string]string{"target.txt": "t\n", ".github/workflows/ci.yml": "on: push\n"})
	mustSymlink(t, "target.txt", filepath.Join(dir, "link"))
	mustSymlink(t, outside, filepath.Join(dir, "out"))
	mustSymlink(t, ".github/workflows", filepath.Join(dir, "wf"))
	a := newTestAgent(t, Config{})
	st := &State{Limits: pullwright.Limits{Protected: []string{".github/workflows/**"}}}

	if got, _ := callTool(t, a, dir, st, ToolDeleteFile, `{"path":"link"}`); !strings.Contains(got, "deleted the symlink link") {
		t.Errorf("delete link = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "target.txt")); err != nil {
		t.Errorf("deleting the link removed its target: %v", err)
	}
	if got, _ := callTool(t, a, dir, st, ToolDeleteFile, `{"path":"out/secret.txt"}`); !strings.HasPrefix(got, "error: ") {
		t.Errorf("delete through a link out = %q", got)
	}
	if got, _ := callTool(t, a, dir, st, ToolMoveFile, `{"from":"target.txt","to":"out/moved.txt"}`); !strings.HasPrefix(got, "error: ") {
		t.Errorf("move through a link out = %q", got)
	}
	if got, _ := callTool(t, a, dir, st, ToolDeleteFile, `{"path":"wf/ci.yml"}`); !strings.Contains(got, "protected") {
		t.Errorf("delete through a link to a protected directory = %q", got)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("the file outside is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".github/workflows/ci.yml")); err != nil {
		t.Errorf("the protected file is gone: %v", err)
	}
}

// The diff tool shows every kind of change since the task's base, with
// no approval, and says when it cannot.
func TestDiffTool(t *testing.T) {
	dir := workspaceDir(t, map[string]string{
		"a.go": "package a\n\nvar x = 1\n", "old.txt": "old\n", "run.sh": "echo\n", "keep.md": "keep\n",
		"big.txt": strings.Repeat("line\n", 10),
	})
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "base")
	base := git("rev-parse", "HEAD")

	a := newTestAgent(t, Config{})
	st := &State{Base: base}
	if got, _ := callTool(t, a, dir, st, ToolDiff, `{}`); !strings.Contains(got, "no changes yet") {
		t.Errorf("diff before any change = %q", got)
	}
	for _, c := range []struct{ tool, args string }{
		{ToolEditFile, `{"path":"a.go","old_text":"var x = 1","new_text":"var x = 2"}`},
		{ToolDeleteFile, `{"path":"old.txt"}`},
		{ToolMoveFile, `{"from":"keep.md","to":"docs/keep.md"}`},
		{ToolSetExecutable, `{"path":"run.sh","executable":true}`},
		{ToolWriteFile, `{"path":"new.go","content":"package a\n"}`},
	} {
		if got, _ := callTool(t, a, dir, st, c.tool, c.args); strings.HasPrefix(got, "error: ") {
			t.Fatalf("%s: %s", c.tool, got)
		}
	}
	got, step := callTool(t, a, dir, st, ToolDiff, `{}`)
	for _, want := range []string{
		"<untrusted-diff>", "6 files changed",
		"  a.go +1 -1\n", "-var x = 1\n+var x = 2\n",
		"  old.txt +0 -1\n", "deleted file mode 100644",
		"docs/keep.md +1 -0", "  keep.md +0 -1",
		"old mode 100644\nnew mode 100755",
		"  new.go +1 -0\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
	if step != "looked at the diff (6 files)" {
		t.Errorf("step = %q", step)
	}
	if got, _ := callTool(t, a, dir, st, ToolDiff, `{"path":"docs"}`); !strings.Contains(got, "1 file changed") || strings.Contains(got, "a.go") {
		t.Errorf("diff of docs = %q", got)
	}
	small := newTestAgent(t, Config{MaxToolOutput: 1 << 10})
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	cut, _, _ := small.runTool(toolEnv{ctx: t.Context(), ws: ws, st: st, maxOutput: 1 << 10}, toolCallOf(ToolDiff, `{}`))
	if !strings.Contains(cut, "6 files changed") || !strings.Contains(cut, "are not shown") || strings.Contains(cut, "bytes cut") {
		t.Errorf("a diff over the budget does not name what it left out:\n%s", cut)
	}
	if got, _ := callTool(t, a, dir, &State{}, ToolDiff, `{}`); !strings.Contains(got, "not available") {
		t.Errorf("diff without a base = %q", got)
	}
}

// A symbolic link moves only where it still leads inside the workspace,
// and not into .git: moved onto a tracked directory's place, a link out
// would have its files read through it.
func TestMoveFileKeepsLinksInside(t *testing.T) {
	a := newTestAgent(t, Config{})
	cases := []struct {
		link, target, to string
		ok               bool
	}{
		{"abs", "/etc", "conf", false},
		{"docs/up", "../a.go", "up", false},
		{"out", "../..", "deep/out", false},
		{"g", ".git", "x/g", false},
		{"rel", "docs/readme.md", "rel2", true},
		{"docs/back", "../a.go", "pkg/back", true},
	}
	for _, tc := range cases {
		t.Run(tc.link+" to "+tc.to, func(t *testing.T) {
			dir := workspaceDir(t, map[string]string{"a.go": "package a\n", "docs/readme.md": "docs\n", "pkg/p.go": "package p\n"})
			if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.target, filepath.Join(dir, tc.link)); err != nil {
				t.Fatal(err)
			}
			got, _ := callTool(t, a, dir, &State{}, ToolMoveFile, args(t, map[string]any{"from": tc.link, "to": tc.to}))
			if ok := !strings.HasPrefix(got, "error: "); ok != tc.ok {
				t.Fatalf("moved = %v, want %v: %s", ok, tc.ok, got)
			}
			_, err := os.Lstat(filepath.Join(dir, tc.link))
			if moved := err != nil; moved != tc.ok {
				t.Errorf("the link moved = %v, want %v", moved, tc.ok)
			}
		})
	}
}
