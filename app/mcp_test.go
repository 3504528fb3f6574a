package app_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/mcptest"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
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
	if !slices.Contains(offered, "docs__search") || slices.Contains(offered, "docs__file_issue") {
		t.Errorf("offered %v: want docs__search and not docs__file_issue, which is not read-only", offered)
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

// A repository cannot reach a server the operator did not offer it: the
// task does not start, the comment names the line, and nothing is called.
func TestARepositoryCannotReachAnMCPServerItIsNotOffered(t *testing.T) {
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
