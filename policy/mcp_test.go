package policy

import (
	"strings"
	"testing"
	"time"
)

const mcpOperator = `
mcp:
  servers:
    docs:
      url: https://docs.mcp.example/mcp
      headers_from_env:
        Authorization: DOCS_MCP_AUTH
      tools: [search, fetch_page, file_issue]
      read_only: [search, fetch_page]
      repositories: [acme/*]
    tracker:
      url: http://127.0.0.1:8931/mcp
      tools: ["*"]
      repositories: [acme/web, Other/Thing]
      timeout: 5s
`

func TestLoadOperatorMCP(t *testing.T) {
	o, err := LoadOperator([]byte(mcpOperator))
	if err != nil {
		t.Fatal(err)
	}
	docs := o.MCP.Servers["docs"]
	if docs.URL != "https://docs.mcp.example/mcp" || docs.HeadersFromEnv["Authorization"] != "DOCS_MCP_AUTH" ||
		len(docs.Tools) != 3 || len(docs.ReadOnly) != 2 || o.MCP.Servers["tracker"].Timeout.D() != 5*time.Second {
		t.Errorf("servers = %+v", o.MCP.Servers)
	}
}

func TestLoadOperatorMCPErrors(t *testing.T) {
	for _, tt := range []struct{ name, yml, want string }{
		{"bad name", "mcp:\n  servers:\n    Docs_1:\n      url: https://x.example/mcp\n      tools: [a]\n      repositories: ['*']\n", `"Docs_1" is not a server name`},
		{"no url", "mcp:\n  servers:\n    d:\n      tools: [a]\n      repositories: ['*']\n", "url: is missing"},
		{"plain http", "mcp:\n  servers:\n    d:\n      url: http://mcp.example/mcp\n      tools: [a]\n      repositories: ['*']\n", "plain http to another machine"},
		{"credentials in url", "mcp:\n  servers:\n    d:\n      url: https://u:secret-pass@mcp.example/mcp\n      tools: [a]\n      repositories: ['*']\n", "holds credentials"},
		{"token in query", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp?key=s3cr3t\n      tools: [a]\n      repositories: ['*']\n", "has a query"},
		{"other scheme", "mcp:\n  servers:\n    d:\n      url: ws://mcp.example/mcp\n      tools: [a]\n      repositories: ['*']\n", "must be https"},
		{"value pasted as env name", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp\n      headers_from_env: {Authorization: Bearer ghp_abc}\n      tools: [a]\n      repositories: ['*']\n", "not the value itself"},
		{"client's own header", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp\n      headers_from_env: {Mcp-Session-Id: X}\n      tools: [a]\n      repositories: ['*']\n", "set by the bot's MCP client"},
		{"no tools", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp\n      repositories: ['*']\n", "tools: is missing"},
		{"bad tool", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp\n      tools: ['a b']\n      repositories: ['*']\n", `"a b" is not a tool name`},
		{"read-only not offered", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp\n      tools: [a]\n      read_only: [b]\n      repositories: ['*']\n", "b is not among the server's tools"},
		{"no repositories", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp\n      tools: [a]\n", "repositories: is missing"},
		{"bad repository", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp\n      tools: [a]\n      repositories: ['acme']\n", `"acme" is not "owner/name"`},
		{"long timeout", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp\n      tools: [a]\n      repositories: ['*']\n      timeout: 1h\n", "must be between 0"},
		{"unknown key", "mcp:\n  servers:\n    d:\n      url: https://mcp.example/mcp\n      tools: [a]\n      repositories: ['*']\n      command: rm -rf /\n", "command: unknown key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadOperator([]byte(tt.yml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadOperator = %v, want an error with %q", err, tt.want)
			}
			for _, secret := range []string{"secret-pass", "s3cr3t", "ghp_abc"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error repeats a credential: %v", err)
				}
			}
		})
	}
}

// A repository asks for servers by name; it gets only those the operator
// offers it, each with the operator's tools and rules, and an error naming
// its line for any other.
func TestToolServers(t *testing.T) {
	o, err := LoadOperator([]byte(mcpOperator))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, repo, yml string
		want            []string
		err             string
	}{
		{"none asked", "acme/web", "model: x\n", nil, ""},
		{"by owner", "acme/api", "mcp: [docs]\n", []string{"docs"}, ""},
		{"owner case", "ACME/api", "mcp: [docs]\n", []string{"docs"}, ""},
		{"both", "acme/web", "mcp: [docs, tracker, docs]\n", []string{"docs", "tracker"}, ""},
		{"exact repo", "other/thing", "mcp: [tracker]\n", []string{"tracker"}, ""},
		{"not offered to the repo", "acme/api", "\nmcp: [tracker]\n", nil, ".github/pullwright.yml:2: mcp[0]: this installation does not offer an MCP server \"tracker\" to acme/api (it offers: docs)"},
		{"another owner", "evil/acme", "mcp: [docs]\n", nil, `does not offer an MCP server "docs" to evil/acme (it offers none to this repository)`},
		{"unknown", "acme/api", "mcp: [docs, shell]\n", nil, `mcp[1]: this installation does not offer an MCP server "shell" to acme/api (it offers: docs)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load([]byte(tt.yml))
			if err != nil {
				t.Fatal(err)
			}
			got, err := o.ToolServers(tt.repo, c)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ToolServers = %+v, %v; want %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("servers = %v, want %v", names, tt.want)
			}
		})
	}
	c, _ := Load([]byte("mcp: [docs, tracker]\n"))
	got, err := o.ToolServers("acme/web", c)
	if err != nil {
		t.Fatal(err)
	}
	docs, tracker := got[0], got[1]
	for _, tt := range []struct {
		s              ToolServer
		tool           string
		offer, readOnl bool
	}{
		{docs, "search", true, true},
		{docs, "file_issue", true, false},
		{docs, "drop_table", false, false},
		{tracker, "anything", true, false},
	} {
		if tt.s.Offers(tt.tool) != tt.offer || tt.s.IsReadOnly(tt.tool) != tt.readOnl {
			t.Errorf("%s.%s: offers %v read-only %v", tt.s.Name, tt.tool, tt.s.Offers(tt.tool), tt.s.IsReadOnly(tt.tool))
		}
	}
	if docs.Timeout != DefaultMCPTimeout || tracker.Timeout != 5*time.Second {
		t.Errorf("timeouts %v %v", docs.Timeout, tracker.Timeout)
	}
	env := map[string]string{"DOCS_MCP_AUTH": "Bearer t"}
	if h, missing := docs.HeaderValues(func(k string) string { return env[k] }); h.Get("Authorization") != "Bearer t" || len(missing) != 0 {
		t.Errorf("headers %v, missing %v", h, missing)
	}
	if _, missing := docs.HeaderValues(func(string) string { return "" }); len(missing) != 1 || missing[0] != "DOCS_MCP_AUTH" {
		t.Errorf("missing = %v", missing)
	}
}

func TestRepositoryMCPNames(t *testing.T) {
	if _, err := Load([]byte("mcp: [Bad_Name]\n")); err == nil || !strings.Contains(err.Error(), `mcp[0]: "Bad_Name" is not an MCP server's name`) {
		t.Errorf("Load = %v", err)
	}
}
