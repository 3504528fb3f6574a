package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakellm"
)

var testProtected = []string{".github/workflows/**", ".github/pullwright.yml", "vendor"}

// protectedWorkspace is a repository with a workflow, symlinks into the
// protected paths, and symlinks out of the workspace.
func protectedWorkspace(t *testing.T) (dir, outside string) {
	t.Helper()
	dir = workspaceDir(t, map[string]string{
		".github/workflows/ci.yml": "on: push\n",
		".github/dependabot.yml":   "version: 2\n",
		"src/a.go":                 "package a\n",
		"docs/x.md":                "old\n",
	})
	outside = t.TempDir()
	mustSymlink(t, ".github/workflows/ci.yml", filepath.Join(dir, "notes.yml"))
	mustSymlink(t, ".github/workflows", filepath.Join(dir, "wf"))
	mustSymlink(t, ".github/workflows/new.yml", filepath.Join(dir, "dangling"))
	mustSymlink(t, "../.github/workflows/ci.yml", filepath.Join(dir, "src", "up.yml"))
	mustSymlink(t, outside, filepath.Join(dir, "out-abs"))
	mustSymlink(t, strings.Repeat("../", 30)+"tmp", filepath.Join(dir, "out-rel"))
	return dir, outside
}

func TestProtectedPaths(t *testing.T) {
	refused := []string{"protected", "the maintainers of this repository protected", "may be read",
		"say in your finish summary what change you would have made"}
	tests := []struct {
		name    string
		tool    string
		args    string
		want    []string // substrings of the result
		wantErr bool
	}{
		{name: "write a workflow", tool: "write_file", args: `{"path":".github/workflows/ci.yml","content":"evil"}`, wantErr: true,
			want: append([]string{`.github/workflows/ci.yml is protected: it matches ".github/workflows/**"`}, refused...)},
		{name: "create a workflow", tool: "write_file", args: `{"path":".github/workflows/new.yml","content":"evil"}`, wantErr: true,
			want: []string{`matches ".github/workflows/**"`}},
		{name: "edit a workflow", tool: "edit_file", args: `{"path":".github/workflows/ci.yml","old_text":"push","new_text":"pull_request_target"}`,
			wantErr: true, want: refused},
		{name: "the configuration", tool: "write_file", args: `{"path":".github/pullwright.yml","content":"auto_approve: [{pattern: '.*'}]"}`,
			wantErr: true, want: []string{`matches ".github/pullwright.yml"`}},
		{name: "case does not open it", tool: "write_file", args: `{"path":".GitHub/Workflows/ci.yml","content":"evil"}`, wantErr: true,
			want: []string{"protected"}},
		{name: "dot segments do not open it", tool: "write_file", args: `{"path":"./docs/../.github/./workflows/ci.yml","content":"evil"}`,
			wantErr: true, want: []string{"protected"}},
		{name: "backslashes do not open it", tool: "write_file", args: `{"path":".github\\workflows\\ci.yml","content":"evil"}`,
			wantErr: true, want: []string{"protected"}},
		{name: "a directory glob protects what is under it", tool: "write_file", args: `{"path":"vendor/x/y.go","content":"package y"}`,
			wantErr: true, want: []string{`matches "vendor"`}},
		{name: "write through a symlink", tool: "write_file", args: `{"path":"notes.yml","content":"evil"}`, wantErr: true,
			want: append([]string{`notes.yml leads through a symlink to .github/workflows/ci.yml, which is protected`}, refused...)},
		{name: "edit through a symlink", tool: "edit_file", args: `{"path":"notes.yml","old_text":"push","new_text":"evil"}`,
			wantErr: true, want: []string{"leads through a symlink to .github/workflows/ci.yml"}},
		{name: "through a symlinked directory", tool: "write_file", args: `{"path":"wf/new.yml","content":"evil"}`, wantErr: true,
			want: []string{"leads through a symlink to .github/workflows/new.yml"}},
		{name: "through a dangling symlink", tool: "write_file", args: `{"path":"dangling","content":"evil"}`, wantErr: true,
			want: []string{"leads through a symlink to .github/workflows/new.yml"}},
		{name: "through a relative symlink", tool: "edit_file", args: `{"path":"src/up.yml","old_text":"push","new_text":"evil"}`,
			wantErr: true, want: []string{"protected"}},
		{name: "symlink out of the workspace, absolute", tool: "write_file", args: `{"path":"out-abs/evil.txt","content":"evil"}`,
			wantErr: true, want: []string{"symlink to an absolute path outside the workspace"}},
		{name: "symlink out of the workspace, relative", tool: "write_file", args: `{"path":"out-rel/evil.txt","content":"evil"}`,
			wantErr: true, want: []string{"outside the workspace"}},
		{name: "reading stays allowed", tool: "read_file", args: `{"path":".github/workflows/ci.yml"}`, want: []string{"on: push"}},
		{name: "reading through a symlink too", tool: "read_file", args: `{"path":"notes.yml"}`, want: []string{"on: push"}},
		{name: "a neighbour is not protected", tool: "write_file", args: `{"path":".github/dependabot.yml","content":"version: 2\n# ok\n"}`,
			want: []string{"replaced the content of .github/dependabot.yml"}},
		{name: "ordinary files", tool: "edit_file", args: `{"path":"docs/x.md","old_text":"old","new_text":"new"}`, want: []string{"edited docs/x.md"}},
		{name: "a name like a protected one", tool: "write_file", args: `{"path":"src/vendor.go","content":"package a\n"}`,
			want: []string{"created src/vendor.go"}},
	}
	dir, outside := protectedWorkspace(t)
	a := newTestAgent(t, Config{})
	st := &State{Limits: pullwright.Limits{Protected: testProtected}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, step := callTool(t, a, dir, st, tt.tool, tt.args)
			if isErr := strings.HasPrefix(got, "error: "); isErr != tt.wantErr {
				t.Fatalf("error result = %v, want %v; result:\n%s", isErr, tt.wantErr, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %q; result:\n%s", w, got)
				}
			}
			if tt.wantErr && !strings.HasPrefix(step, tt.tool+" failed: ") {
				t.Errorf("step = %q", step)
			}
		})
	}

	if got := readDisk(t, dir, ".github/workflows/ci.yml"); got != "on: push\n" {
		t.Errorf("the workflow changed: %q", got)
	}
	for _, p := range []string{".github/workflows/new.yml", ".github/pullwright.yml", "vendor", ".GitHub"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("written outside the workspace: %v", entries)
	}
	if got := readDisk(t, dir, "docs/x.md"); got != "new\n" {
		t.Errorf("docs/x.md = %q", got)
	}
}

// Through a whole turn: the protected paths and the test command are in the
// first message, and a write to a protected file through a symlink is
// refused with a result the model can act on.
func TestProtectedPathsInATurn(t *testing.T) {
	dir, _ := protectedWorkspace(t)
	s := fakellm.New(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{
			call("write_file", `{"path":"notes.yml","content":"on: pull_request_target\n"}`),
			call("edit_file", `{"path":"docs/x.md","old_text":"old","new_text":"new"}`),
		}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", `{"title":"Docs","summary":"CI would need pull_request_target; left to you."}`)}},
	)
	a := agentFor(t, s, Config{})
	brief := testBrief
	brief.Limits.Protected = testProtected
	brief.TestCommand = "go test ./..."
	st := roundTrip(t, a.Start(brief))
	for st.Finish == nil {
		if err := a.Turn(context.Background(), st, dir); err != nil {
			t.Fatal(err)
		}
		st = roundTrip(t, st) // the rules survive a restart between turns
	}
	reqs := s.Requests()
	first := reqs[0].Messages[1].Content
	for _, want := range []string{
		"- Protected paths: you may read them, but write_file and edit_file refuse",
		"  - `.github/workflows/**`\n  - `.github/pullwright.yml`\n  - `vendor`\n",
		"- The maintainers test this repository with: `go test ./...`; ask to run it with the run tool",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first message lacks %q:\n%s", want, first)
		}
	}
	results := toolMessages(reqs[1].Messages)
	asst := reqs[1].Messages[2]
	if got := results[asst.ToolCalls[0].ID]; !strings.HasPrefix(got, "error: notes.yml leads through a symlink to .github/workflows/ci.yml, which is protected") {
		t.Errorf("write through the symlink = %q", got)
	}
	if got := readDisk(t, dir, ".github/workflows/ci.yml"); got != "on: push\n" {
		t.Errorf("the workflow changed: %q", got)
	}
	if got := readDisk(t, dir, "docs/x.md"); got != "new\n" {
		t.Errorf("docs/x.md = %q", got)
	}
}
