package mcptools

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/mcptest"
)

func docs(url string) pullwright.ToolServer {
	return pullwright.ToolServer{Name: "docs", URL: url, HeadersFromEnv: map[string]string{"Authorization": "DOCS_AUTH"},
		Tools: []string{"search", "file_issue", "broken", "huge", "mixed", "slow", "echo_auth", "missing"}, ReadOnly: []string{"search"}, Timeout: 2 * time.Second}
}

func env(k string) string { return map[string]string{"DOCS_AUTH": "Bearer sekrit-token"}[k] }

func TestTools(t *testing.T) {
	s := mcptest.New(t)
	c := New([]pullwright.ToolServer{docs(s.URL)}, env, nil, "test", nil)
	tools, notes := c.Tools(t.Context())
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		switch {
		case tl.ReadOnly != (tl.Tool == "search"):
			t.Errorf("%s read-only = %v: only the operator's word counts", tl.Name, tl.ReadOnly)
		case !strings.HasPrefix(tl.Description, "A tool of the MCP server docs ("+tl.Tool+"), described by the server: "):
			t.Errorf("description %q", tl.Description)
		case !objectSchema(tl.Schema):
			t.Errorf("schema %s", tl.Schema)
		}
	}
	// As the server lists them (by name); drop_all is not offered, "missing" not listed.
	if got := strings.Join(names, " "); got != "docs__broken docs__echo_auth docs__file_issue docs__huge docs__mixed docs__search docs__slow" {
		t.Errorf("tools = %s (notes %v)", got, notes)
	}
	if len(notes) != 0 {
		t.Errorf("notes = %v", notes)
	}
	auth := s.Auth()
	if len(auth) == 0 || auth[0] != "Bearer sekrit-token" {
		t.Errorf("the server was sent Authorization %q", auth)
	}
	// Listed once per client.
	n := len(auth)
	c.Tools(t.Context())
	if auth := s.Auth(); len(auth) != n {
		t.Errorf("the tools were listed again: %d requests, then %d", n, len(auth))
	}
}

func TestCall(t *testing.T) {
	s := mcptest.New(t)
	// Only the calls log, on the test's goroutine.
	var logs strings.Builder
	c := New([]pullwright.ToolServer{docs(s.URL)}, env, nil, "test", slog.New(slog.NewTextHandler(&logs, nil)))
	defer func() {
		if strings.Contains(logs.String(), "sekrit") {
			t.Errorf("the log holds the credential:\n%s", logs.String())
		}
	}()
	for _, tt := range []struct {
		name, args string
		want       string
		failed     bool
	}{
		{"docs__search", `{"q":"retry"}`, "found: retry", false},
		{"docs__broken", `{}`, "no such page", true},
		{"docs__mixed", `{}`, "a\n[an image, left out]\n[resource file:///r.txt]\nr", false},
		{"docs__huge", `{}`, "\n[cut: the result is over 64 KiB]", false},
		{"docs__slow", `{}`, "The MCP server docs did not answer within 2s.", true},
		{"docs__drop_all", `{}`, "There is no tool docs__drop_all.", true},
		{"docs__search", `[1]`, "The arguments are not a JSON object", true},
		// A credential the server echoes reaches neither the model nor
		// the log.
		{"docs__echo_auth", `{}`, "bad token [redacted]", true},
		{"docs__search", `{"q":"Bearer sekrit-token and sekrit-token"}`, "found: [redacted] and [redacted]", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Call(t.Context(), tt.name, json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Text, tt.want) || res.Failed != tt.failed || len(res.Text) > MaxResult+100 {
				t.Errorf("Call = %q (failed %v), want %q (failed %v)", clip(res.Text), res.Failed, tt.want, tt.failed)
			}
		})
	}
	calls := s.Calls()
	for _, call := range calls {
		if strings.HasPrefix(call, "drop_all") {
			t.Errorf("a tool the operator does not offer was called: %v", calls)
		}
	}
	if len(calls) == 0 || calls[0] != `search {"q":"retry"}` {
		t.Errorf("calls = %v", calls)
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// A task that stops stops its call: that is an error, not a result.
func TestCallCancelled(t *testing.T) {
	s := mcptest.New(t)
	c := New([]pullwright.ToolServer{docs(s.URL)}, env, nil, "test", nil)
	c.Tools(t.Context())
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := c.Call(ctx, "docs__slow", json.RawMessage(`{}`)); err == nil {
		t.Fatal("a cancelled call returned a result")
	}
}

// A server that is down, answers what is not MCP, redirects elsewhere or
// lacks its credential leaves its tools out with a note, and the
// credential never reaches another host or a note.
func TestUnavailableServers(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{not json"))
	}))
	defer garbage.Close()
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer other.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"x":"`))
		w.Write([]byte(strings.Repeat("a", MaxResponse+1)))
	}))
	defer big.Close()

	for _, tt := range []struct {
		name, url string
		env       func(string) string
		want      string
	}{
		{"down", down.URL, env, "could not be reached"},
		{"not mcp", garbage.URL, env, "could not be reached"},
		{"redirect", redirect.URL, env, "could not be reached"},
		{"too big", big.URL, env, "could not be reached"},
		{"no credential", garbage.URL, func(string) string { return "" }, "the bot's environment has no value for DOCS_AUTH"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := New([]pullwright.ToolServer{docs(tt.url + "/mcp")}, tt.env, nil, "test", nil)
			tools, notes := c.Tools(t.Context())
			if len(tools) != 0 || len(notes) != 1 || !strings.Contains(notes[0], tt.want) || !strings.HasPrefix(notes[0], "The MCP server docs ") {
				t.Fatalf("tools %v, notes %q; want a note with %q", tools, notes, tt.want)
			}
			if strings.Contains(notes[0], "sekrit") {
				t.Errorf("a note holds the credential: %s", notes[0])
			}
			if res, err := c.Call(t.Context(), "docs__search", nil); err != nil || !res.Failed {
				t.Errorf("Call = %+v, %v", res, err)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) != 0 {
		t.Errorf("a redirect reached another host, with Authorization %q", elsewhere)
	}
}
