package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/golden"
)

// TestTranscriptGolden keeps what the model sees in a scripted ten-turn
// task (the system prompt, every tool's definition and every result) as
// one golden file: the last request, which holds the whole conversation.
// A change to a prompt, a tool's description or a result's wording shows
// up as a diff of that file in review. Rerun with -update after checking.
func TestTranscriptGolden(t *testing.T) {
	dir := workspaceDir(t, map[string]string{
		"greet/greet.go":      "package greet\n\n// Hello greets.\nfunc Hello(name string) string {\n\treturn \"Helo, \" + name\n}\n",
		"greet/greet_test.go": "package greet\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {\n\tif Hello(\"x\") != \"Hello, x\" {\n\t\tt.Fatal(Hello(\"x\"))\n\t}\n}\n",
		"docs/notes.txt":      "Old notes.\r\nSecond line.\r\n",
		"scripts/check":       "#!/bin/sh\ngo vet ./...\n",
		"README.md":           "# greet\n\nSays Helo.\n",
	})
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "base")
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}

	s := fakellm.New(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{
			call("plan", `{"items":[{"title":"Find the greeting","status":"in_progress"},{"title":"Fix it and its docs","status":"pending"}]}`),
			call("grep", `{"pattern":"Helo","path_glob":"*.go"}`),
		}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("read_file", `{"path":"greet/greet.go"}`)}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{
			// Tabs written as spaces: matched, re-indented, and said so.
			call("edit_file", `{"path":"greet/greet.go","old_text":"    return \"Helo, \" + name","new_text":"    return \"Hello, \" + name"}`),
		}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{
			// A miss: answered with the nearest lines.
			call("edit_file", `{"path":"README.md","old_text":"Says Hallo.","new_text":"Says Hello."}`),
		}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{
			call("edit_file", `{"path":"README.md","old_text":"Says Helo.","new_text":"Says Hello."}`),
			call("edit_file", `{"path":"docs/notes.txt","old_text":"Old notes.\nSecond line.\n","new_text":"Notes.\n"}`),
		}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{
			call("move_file", `{"from":"docs/notes.txt","to":"docs/NOTES.txt"}`),
			call("set_executable", `{"path":"scripts/check","executable":true}`),
		}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("run", `{"command":"go test ./greet/","reason":"The greeting's test checks the fix."}`)}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("diff", `{}`)}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{
			call("plan", `{"items":[{"title":"Find the greeting","status":"done"},{"title":"Fix it and its docs","status":"done"}]}`),
		}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{
			call("finish", `{"title":"Fix the greeting's typo","summary":"Helo → Hello in greet.go and the README; the test passes."}`),
		}},
	)
	a := agentFor(t, s, Config{})
	b := testBrief
	b.Base = strings.TrimSpace(string(out))
	b.TestCommand = "go test ./..."
	st := a.Start(b)
	for i := 0; st.Finish == nil; i++ {
		if i == 12 {
			t.Fatal("no finish after 12 turns")
		}
		if err := a.Turn(context.Background(), st, dir); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if st.Pending != nil {
			if err := a.Resolve(st, RunResult(0, "ok  \texample.com/greet\t0.01s\n", false, false, 2*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	bodies := s.Bodies()
	if len(bodies) != 10 {
		t.Fatalf("%d requests, want 10", len(bodies))
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, bodies[len(bodies)-1], "", "  "); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/transcript.golden.json", pretty.String()+"\n")
}
