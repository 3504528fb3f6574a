package app_test

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/mcptest"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// withMCP runs the bot with the operator's MCP server docs at url, offered
// to repos, its credential in the bot's environment.
func withMCP(url string, repos ...string) envOption {
	return func(c *app.Config) {
		op := policy.DefaultOperator()
		op.Models.Default = c.Model
		op.MCP.Servers = map[string]policy.MCPServer{"docs": {URL: url, HeadersFromEnv: map[string]string{"Authorization": "DOCS_MCP_AUTH"},
			Tools: []string{"search", "file_issue"}, ReadOnly: []string{"search"}, Repositories: repos, Timeout: policy.Duration(10 * time.Second)}}
		c.Operator = op
		c.Getenv = func(k string) string { return map[string]string{"DOCS_MCP_AUTH": "Bearer docs-credential"}[k] }
	}
}

// A repository that asks for the operator's MCP server gets its read-only
// tool: the agent calls it, the call runs at once with the operator's
// credential, and the result reaches the model as data.
func TestAnMCPToolReachesTheModel(t *testing.T) {
	t.Parallel()
	srv := mcptest.New(t)
	steps := append([]fakellm.Step{{ToolCalls: []fakellm.ToolCall{call("docs__search", map[string]any{"q": "commit spelling"})}}}, fixScript()...)
	llm := fakellm.New(t, steps...)
	e := newEnv(t, llm, withMCP(srv.URL, owner+"/*"))
	e.configure("mcp: [docs]\n")
	if code := e.comment("d1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
		t.Fatalf("fix answered %d", code)
	}
	tk := e.waitTask(1)
	if tk.State != task.Done {
		t.Fatalf("task ended %s: %s\nlogs:\n%s", tk.State, tk.Error, e.logs.String())
	}
	if calls := srv.Calls(); len(calls) != 1 || calls[0] != `search {"q":"commit spelling"}` {
		t.Errorf("the MCP server was called with %v", calls)
	}
	if auth := srv.Auth(); len(auth) == 0 || auth[0] != "Bearer docs-credential" {
		t.Errorf("the MCP server was sent Authorization %v", auth)
	}
	reqs := llm.Requests()
	var offered []string
	for _, tl := range reqs[0].Tools {
		offered = append(offered, tl.Function.Name)
	}
	if !slices.Contains(offered, "docs__search") || !slices.Contains(offered, "docs__file_issue") {
		t.Errorf("offered %v: want docs__search, and docs__file_issue, whose calls wait for approval", offered)
	}
	var result string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			result = m.Content
		}
	}
	if !strings.Contains(result, `<untrusted-mcp-result server="docs" tool="search">`) || !strings.Contains(result, "found: commit spelling") {
		t.Errorf("the model's next request carries %q", result)
	}
	for i, r := range reqs {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "docs-credential") {
				t.Errorf("request %d carries the MCP credential", i)
			}
		}
	}
	if status := e.statusComment(1); strings.Contains(status, "docs-credential") {
		t.Errorf("the status comment carries the credential:\n%s", status)
	}
}

// A call of an MCP tool the operator did not mark read-only is an
// execution request: shown with its server, tool and arguments, it waits,
// is made after /approve with the operator's credential and exactly the
// arguments shown, and its answer reaches the model as data; the record
// keeps it apart from the runs, and no check run shows the answer.
func TestAnMCPToolCallWaitsForApproval(t *testing.T) {
	t.Parallel()
	srv := mcptest.New(t)
	llm := fakellm.NewByTurn(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		fakellm.Step{Content: "The typo came from the docs site; file it there too.", ToolCalls: []fakellm.ToolCall{call("docs__file_issue", map[string]any{"q": "typo – commit", "id": json.Number("9007199254740993")})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit in the README", "summary": "Fixed; filed upstream."})}},
	)
	e := newEnv(t, llm, withMCP(srv.URL, owner+"/*"), withConsole)
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	e.configure("mcp: [docs]\n")
	if code := e.comment("d1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
		t.Fatalf("fix answered %d", code)
	}
	waiting := e.waitState(1, task.AwaitingApproval)
	r := tasktest.Job(waiting).Request
	line := `docs/file_issue {"id":9007199254740993,"q":"typo \u2013 commit"}`
	if r == nil || r.Tool == nil || r.Command != line || r.Shown == nil || r.Shown.Tool == nil || r.Shown.Command != line {
		t.Fatalf("request = %+v; want the call %s", r, line)
	}
	if calls := srv.Calls(); len(calls) != 0 {
		t.Fatalf("the server was called before approval: %v", calls)
	}
	shown := e.waitComment(1, "request `"+r.ID+"`").Body
	host := strings.TrimPrefix(strings.TrimSuffix(srv.URL, "/mcp"), "http://")
	for _, want := range []string{"asks to call a tool", line, "file_issue", "`docs`", host, "The typo came from the docs site", "/approve", r.Shown.ShortDigest()} {
		if !strings.Contains(shown, want) {
			t.Errorf("the request comment lacks %q:\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "sandbox") {
		t.Errorf("the request comment speaks of a sandbox for a tool call:\n%s", shown)
	}
	approvals := checkRunsNamed(e.gh, task.ApprovalCheck)
	if len(approvals) != 1 || !strings.HasPrefix(approvals[0].Title, "Approve calling: docs/file_issue") {
		t.Fatalf("approval check runs = %+v", approvals)
	}
	// The console's page and its API show the same value: the call, its
	// server's host, the digest the comment gave.
	browser := e.browser(t, owner)
	get := func(path string) []byte {
		t.Helper()
		resp, err := browser.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s = %d: %s", path, resp.StatusCode, b)
		}
		return b
	}
	id := strconv.FormatInt(waiting.ID, 10)
	if page := string(get("/console/tasks/" + id)); !strings.Contains(page, html.EscapeString(line)) || !strings.Contains(page, "This calls a tool that may change things outside this repository.") {
		t.Errorf("the console's page lacks the call %q or its sentence", line)
	}
	var api struct {
		Pending struct {
			Command    string               `json:"command"`
			Tool       *pullwright.ToolCall `json:"tool"`
			ServerHost string               `json:"server_host"`
			Digest     string               `json:"digest"`
		} `json:"pending"`
	}
	if err := json.Unmarshal(get("/api/tasks/"+id), &api); err != nil {
		t.Fatal(err)
	}
	if p := api.Pending; p.Command != line || p.Tool == nil || *p.Tool != *r.Tool || p.ServerHost != host || p.Digest != r.Shown.Digest {
		t.Errorf("the API's pending request = %+v, want the value shown (%s, digest %s)", p, line, r.Shown.ShortDigest())
	}

	if code := e.comment("d2", 1, "maintainer", "/approve"); code != http.StatusAccepted {
		t.Fatalf("approve answered %d", code)
	}
	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s\n%s", done.State, done.Error, e.logs.String())
	}
	// On the wire, byte for byte what was shown: the id not rounded to
	// a float's, the dash as its escape.
	if calls := srv.Calls(); len(calls) != 1 || calls[0] != `file_issue {"id":9007199254740993,"q":"typo \u2013 commit"}` {
		t.Errorf("the server was called with %v; want the approved call once, as shown", calls)
	}
	if auth := srv.Auth(); len(auth) == 0 || auth[len(auth)-1] != "Bearer docs-credential" {
		t.Errorf("the server was sent Authorization %v", auth)
	}
	if got := lastToolResult(llm); !strings.HasPrefix(got, "approved and called; the server answered:\n<untrusted-mcp-result server=\"docs\" tool=\"file_issue\">") ||
		!strings.Contains(got, "filed") {
		t.Errorf("the model got %q", got)
	}
	runs := checkRunsNamed(e.gh, task.RunCheck)
	if len(runs) != 1 || runs[0].Conclusion != "success" || !strings.HasPrefix(runs[0].Title, "Called") || strings.Contains(runs[0].Text, "filed") {
		t.Errorf("run check runs = %+v; want one that does not show the answer", runs)
	}
	if len(tasktest.Job(done).Calls) != 1 || tasktest.Job(done).Calls[0].RequestID != r.ID || tasktest.Job(done).Calls[0].Verdict != task.Approved || tasktest.Job(done).Calls[0].By != "maintainer" || len(tasktest.Job(done).Runs) != 0 {
		t.Errorf("record: calls %+v, runs %+v", tasktest.Job(done).Calls, tasktest.Job(done).Runs)
	}
	for _, c := range append(e.gh.Comments(owner, repoName, 1), e.gh.Comments(owner, repoName, e.gh.PullRequests(owner, repoName)[0].Number)...) {
		if strings.Contains(c.Body, "docs-credential") {
			t.Errorf("a comment carries the credential:\n%s", c.Body)
		}
	}
}

// A repository cannot reach a server the operator did not offer it: the
// task does not start, the comment names the line, and nothing is called.
func TestARepositoryCannotReachAnMCPServerItIsNotOffered(t *testing.T) {
	t.Parallel()
	srv := mcptest.New(t)
	llm := fakellm.New(t)
	e := newEnv(t, llm, withMCP(srv.URL, "someone-else/*"))
	e.configure("model: test-model\nmcp: [docs]\n")
	e.comment("d1", 1, owner, "/agent fix the typo")
	if tk := e.waitTask(1); tk.State != task.Failed {
		t.Fatalf("task ended %s, want failed", tk.State)
	}
	status := e.waitComment(1, "cannot be used").Body
	if !strings.Contains(status, "line 2, `mcp[0]`") || !strings.Contains(status, `does not offer an MCP server "docs" to `+owner+"/"+repoName) {
		t.Errorf("status comment:\n%s", status)
	}
	if llm.Calls() != 0 || len(srv.Auth()) != 0 {
		t.Errorf("model calls %d, MCP requests %d: nothing may run", llm.Calls(), len(srv.Auth()))
	}
}
