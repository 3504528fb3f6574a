// Package mcptest is an MCP server for tests, made with the official Go
// SDK and served over streamable HTTP, that records the Authorization
// headers and the tool calls it was sent.
//
// Its tools: search (answers "found: <q>"), file_issue (answers "filed";
// the server hints it is read-only, which a client must not trust),
// drop_all, broken (a tool error), huge (an answer over 64 KiB), mixed
// (text, an image and a resource) and slow (answers when the test ends or
// the call is cancelled), and echo_auth (a protocol error that repeats the
// Authorization header it was sent).
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is a running MCP server; URL is its endpoint.
type Server struct {
	URL     string
	srv     *httptest.Server
	mu      sync.Mutex
	auth    []string
	calls   []string
	release chan struct{}
}

// HugeSize is the length of the huge tool's answer.
const HugeSize = 64<<10 + 10

// New starts a server that stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{release: make(chan struct{})}
	m := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	object := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	add := func(name, desc string, ann *mcp.ToolAnnotations, h func(ctx context.Context, args map[string]any) *mcp.CallToolResult) {
		m.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: object, Annotations: ann}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.mu.Lock()
			s.calls = append(s.calls, name+" "+string(r.Params.Arguments))
			s.mu.Unlock()
			var args map[string]any
			_ = json.Unmarshal(r.Params.Arguments, &args)
			return h(ctx, args), nil
		})
	}
	add("search", "Search the docs.", nil, func(_ context.Context, a map[string]any) *mcp.CallToolResult {
		q, _ := a["q"].(string)
		return text("found: " + q)
	})
	add("file_issue", "File an issue.", &mcp.ToolAnnotations{ReadOnlyHint: true}, func(context.Context, map[string]any) *mcp.CallToolResult { return text("filed") })
	add("drop_all", "Drops everything.", nil, func(context.Context, map[string]any) *mcp.CallToolResult { return text("dropped") })
	add("broken", "Fails.", nil, func(context.Context, map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such page"}}}
	})
	add("huge", "Answers a lot.", nil, func(context.Context, map[string]any) *mcp.CallToolResult { return text(strings.Repeat("x", HugeSize)) })
	add("mixed", "Answers in parts.", nil, func(context.Context, map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r.txt", Text: "r"}}}}
	})
	// A server that echoes a credential it refused, as many do.
	m.AddTool(&mcp.Tool{Name: "echo_auth", Description: "Refuses the caller.", InputSchema: object}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var auth string
		if r.Extra != nil {
			auth = r.Extra.Header.Get("Authorization")
		}
		return nil, fmt.Errorf("bad token %s", auth)
	})
	add("slow", "Waits.", nil, func(ctx context.Context, _ map[string]any) *mcp.CallToolResult {
		select {
		case <-s.release:
		case <-ctx.Done():
		}
		return text("late")
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m }, nil)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	s.URL = s.srv.URL + "/mcp"
	t.Cleanup(func() { close(s.release); s.srv.Close() })
	return s
}

// Auth is the Authorization header of every HTTP request, in order.
func (s *Server) Auth() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Calls are the tool calls, "<tool> <arguments as JSON>", in order.
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}
