package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// serve's whole path of a run that keeps its changes: the model asks
// with keep_changes, the request says so, the approved command changes
// files in its copy, the agent is told what it kept, and the pull
// request holds it.
func TestAKeptRunLandsThroughServe(t *testing.T) {
	t.Parallel()
	llm := fakellm.NewByTurn(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": "echo generated > GENERATED.txt",
			"reason": "write the generated file", "keep_changes": true})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling", "summary": "Fixed."})}},
	)
	e := newEnv(t, llm)
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	if code := e.comment("d1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
		t.Fatalf("fix answered %d", code)
	}
	waiting := e.waitState(1, task.AwaitingApproval)
	r := tasktest.Job(waiting).Request
	if r == nil || !r.KeepChanges {
		t.Fatalf("request %+v does not keep its changes", r)
	}
	e.waitComment(1, "what it changes is kept")
	if code := e.comment("d2", 1, "maintainer", "/approve"); code != http.StatusAccepted {
		t.Fatalf("approve answered %d", code)
	}
	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s\n%s", done.State, done.Error, e.logs.String())
	}
	if res := lastToolResult(llm); !strings.Contains(res, "- GENERATED.txt added (+1 -0)") {
		t.Errorf("the model was told %q", res)
	}
	if got, found, err := e.git.File(owner, repoName, tasktest.Job(done).Branch, "GENERATED.txt"); err != nil || !found || string(got) != "generated\n" {
		t.Errorf("GENERATED.txt on the branch = %q (found %v, %v)", got, found, err)
	}
	if runs := tasktest.Job(done).Runs; len(runs) != 1 || len(runs[0].Kept) != 1 {
		t.Errorf("record of runs %+v", runs)
	}
}
