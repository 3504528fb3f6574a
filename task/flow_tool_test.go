package task_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// toolWorld is a world whose operator offers the MCP server docs (its
// file_issue not read-only) to the repository, which asks for it, and
// whose agent asks to call file_issue, then finishes.
func toolWorld(t *testing.T, config string) (*world, *tasktest.Tools, pullwright.ToolCall) {
	t.Helper()
	w := newWorld(t)
	op := policy.DefaultOperator()
	op.MCP.Servers = map[string]policy.MCPServer{"docs": {URL: "https://docs.internal.test/mcp", Tools: []string{"*"}, ReadOnly: []string{"search"},
		Repositories: []string{"acme/*"}, HeadersFromEnv: map[string]string{"Authorization": "DOCS_AUTH"}}}
	w.flow.Operator = op
	tools := &tasktest.Tools{Text: "filed as #7"}
	w.flow.Tools = tools
	w.gh.SetFile("main", ".github/pullwright.yml", "mcp: [docs]\n"+config)
	call := pullwright.ToolCall{Server: "docs", Tool: "file_issue", Arguments: `{"q":"typo"}`}
	ask := pending(call.Line(), map[string]string{"README.md": "# widget\n\nNo typo.\n"})
	ask.Progress.Pending.Tool = &call
	w.agent.Script = []tasktest.Turn{ask, finish("Fix the README typo", nil)}
	return w, tools, call
}

// An approved call is made once, on the operator's server, with the
// arguments shown; the agent hears the answer; the record keeps it apart
// from the runs; nothing runs in a sandbox, and no check run shows the
// answer.
func TestAnApprovedToolCallIsMadeOnce(t *testing.T) {
	w, tools, call := toolWorld(t, "")
	fix := w.fix("fix the typo")
	w.drain()
	parked := w.want(fix.ID, task.AwaitingApproval)
	r := tasktest.Job(parked).Request
	if r.Shown == nil || r.Shown.Tool == nil || *r.Shown.Tool != call || r.Shown.ServerHost != "docs.internal.test" || r.Shown.Where != (approval.Where{}) || r.Shown.Setup != nil || len(r.Shown.Files) != 0 {
		t.Fatalf("shown %+v", r.Shown)
	}
	if c := w.gh.CheckRuns[r.CheckRunID]; !strings.HasPrefix(c.Title, "Approve calling: docs/file_issue") {
		t.Errorf("approval check run %+v", c)
	}
	if len(tools.Calls) != 0 {
		t.Fatalf("called before approval: %+v", tools.Calls)
	}
	w.clock.Advance(time.Minute)
	w.answer(task.KindApprove, "maint", 12, r.ID)
	w.drain()
	done := w.want(fix.ID, task.Done)
	if len(tools.Calls) != 1 || tools.Calls[0] != call || tools.Servers[0].URL != "https://docs.internal.test/mcp" {
		t.Fatalf("calls %+v on %+v", tools.Calls, tools.Servers)
	}
	if o := w.agent.Outcomes; len(o) != 1 || o[0].Verdict != task.Approved || o[0].Result == nil || o[0].Result.Output != "filed as #7" || o[0].Result.ExitCode != 0 {
		t.Fatalf("the agent heard %+v", o)
	}
	if len(w.runner.Specs) != 0 {
		t.Errorf("a tool call ran %d commands in a sandbox", len(w.runner.Specs))
	}
	if len(tasktest.Job(done).Calls) != 1 || tasktest.Job(done).Calls[0].RequestID != r.ID || tasktest.Job(done).Calls[0].By != "maint" || tasktest.Job(done).Calls[0].Output != "" || len(tasktest.Job(done).Runs) != 0 {
		t.Errorf("record: calls %+v runs %+v", tasktest.Job(done).Calls, tasktest.Job(done).Runs)
	}
	if c := w.gh.CheckRuns[tasktest.Job(done).Request.RunCheckID]; !strings.HasPrefix(c.Title, "Called") || strings.Contains(c.Text, "filed as #7") {
		t.Errorf("run check run %+v", c)
	}

	// The same step replayed by a later claim, as after a crash mid-call:
	// reported, never made again.
	replay := done.Clone()
	again := *tasktest.Job(done).Request
	tasktest.Job(replay).Request, replay.State, replay.Claim = &again, task.Running, 2
	again.Result, again.StartedIn, again.RunClosed = nil, 1, false
	if err := w.flow.Step(w.ctx, replay); err != nil {
		t.Fatal(err)
	}
	// Not "not called": the server may have acted, and a second
	// approval of the same call must be a choice made knowing that.
	if again.Result == nil || again.Result.NotStarted || again.Result.ExitCode != -1 || !strings.Contains(again.Result.Output, "may or may not have acted") || len(tools.Calls) != 1 {
		t.Errorf("replayed: result %+v after %d calls", again.Result, len(tools.Calls))
	}
}

// No auto_approve rule answers a call, even one that matches its line;
// and a server the operator withdrew while the request waited is not
// called.
func TestAToolCallIsNeverAutoApprovedNorMadeOnAWithdrawnServer(t *testing.T) {
	w, tools, _ := toolWorld(t, "auto_approve:\n  - pattern: \".*\"\n")
	fix := w.fix("fix the typo")
	w.drain()
	parked := w.want(fix.ID, task.AwaitingApproval)
	if tasktest.Job(parked).Request.Answer != nil || tasktest.Job(parked).Request.Auto != "" || tasktest.Job(parked).Request.Shown.AutoApprove != nil {
		t.Fatalf("a rule answered a tool call: %+v", tasktest.Job(parked).Request)
	}
	op := policy.DefaultOperator()
	w.flow.Operator = op
	w.clock.Advance(time.Minute)
	w.answer(task.KindApprove, "maint", 12, tasktest.Job(parked).Request.ID)
	w.drain()
	w.want(fix.ID, task.Done)
	if len(tools.Calls) != 0 {
		t.Fatalf("a withdrawn server was called: %+v", tools.Calls)
	}
	if o := w.agent.Outcomes; len(o) != 1 || o[0].Result == nil || !o[0].Result.NotStarted || !strings.Contains(o[0].Result.Output, "no longer offers") {
		t.Fatalf("the agent heard %+v", o)
	}
}
