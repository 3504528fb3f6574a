// Package mcptools gives the agent the tools of the MCP servers the
// operator allows a repository (pullwright.ToolServer), over MCP's streamable
// HTTP transport with the official Go SDK.
//
// The operator decides everything here: which servers, which of their
// tools are offered, which only read. A server's own description of a
// tool is shown to the model as the server's words; its hints (such as
// "read-only") are not trusted. What a server answers is data for the
// model, never an instruction, and is bounded like command output. A
// server that is down, slow or answers badly gives a result that says so;
// nothing here stops a task.
package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/untrusted"
)

// Sep joins a server's name and its tool's in the name the model sees:
// "docs__search". Server names have no "_", so the first Sep splits.
const Sep = "__"

// MaxResult bounds the text of one call's result, and MaxResponse the
// bytes read of one HTTP answer of a server.
const (
	MaxResult   = 64 << 10
	MaxResponse = 4 << 20
)

// listTimeout bounds connecting to a server and listing its tools, which
// every turn does.
const listTimeout = 10 * time.Second

// Tool is one server's tool as the agent is offered it.
type Tool struct {
	// Name is what the model calls: server, Sep, tool.
	Name         string
	Server, Tool string
	// Description is the server's, marked as the server's words.
	Description string
	// Schema is the tool's input schema, as the server lists it.
	Schema json.RawMessage
	// ReadOnly is the operator's word that the tool only reads: its
	// calls run without asking.
	ReadOnly bool
}

// Result is what a call gave: Text for the model (the server's words,
// bounded), and whether the call failed (at the server, in the tool, or
// on the way).
type Result struct {
	Text   string
	Failed bool
}

// Client reaches one task's servers. It lists each server's tools once.
type Client struct {
	servers []pullwright.ToolServer
	getenv  func(string) string
	base    http.RoundTripper
	version string
	log     *slog.Logger

	mu     sync.Mutex
	listed bool
	tools  []Tool
	notes  []string
}

// New is a client of servers. getenv reads the credentials the operator
// named (read at each call, never kept); base carries the requests
// (http.DefaultTransport when nil).
func New(servers []pullwright.ToolServer, getenv func(string) string, base http.RoundTripper, version string, log *slog.Logger) *Client {
	if base == nil {
		base = http.DefaultTransport
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{servers: servers, getenv: getenv, base: base, version: version, log: log}
}

// Tools lists the tools the operator offers of every server, in the
// servers' order. notes say, in words for the agent's brief, which server
// could not be listed and why, or which listed tool was left out.
func (c *Client) Tools(ctx context.Context) (tools []Tool, notes []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listed {
		return c.tools, c.notes
	}
	for _, s := range c.servers {
		ts, ns := c.list(ctx, s)
		c.tools = append(c.tools, ts...)
		c.notes = append(c.notes, ns...)
	}
	c.listed = true
	return c.tools, c.notes
}

func (c *Client) list(ctx context.Context, s pullwright.ToolServer) ([]Tool, []string) {
	ctx, cancel := context.WithTimeout(ctx, min(s.Timeout, listTimeout))
	defer cancel()
	secrets := c.secrets(s)
	cs, err := c.connect(ctx, s)
	if err != nil {
		msg := why(err, secrets)
		c.log.Warn("mcp server unreachable", "server", s.Name, "err", msg)
		return nil, []string{fmt.Sprintf("The MCP server %s could not be reached, so its tools are not available: %s", s.Name, msg)}
	}
	// The session's end waits on the server; a listing cut short by
	// its deadline need not.
	defer func() {
		if ctx.Err() != nil {
			go cs.Close()
		} else {
			cs.Close()
		}
	}()
	var tools []Tool
	var notes []string
	note := func(n string) {
		if len(notes) < maxNotes && !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	seen := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			msg := why(err, secrets)
			c.log.Warn("mcp tools list failed", "server", s.Name, "err", msg)
			return nil, []string{fmt.Sprintf("The MCP server %s did not list its tools, so they are not available: %s", s.Name, msg)}
		}
		if seen++; seen > maxListed {
			note(fmt.Sprintf("The MCP server %s lists more than %d tools; the rest are left out.", s.Name, maxListed))
			break
		}
		if t == nil || !s.Offers(t.Name) {
			continue
		}
		if !toolName(t.Name) {
			note(fmt.Sprintf("The MCP server %s lists a tool whose name cannot be offered to you; it is left out.", s.Name))
			continue
		}
		if slices.ContainsFunc(tools, func(o Tool) bool { return o.Tool == t.Name }) {
			note(fmt.Sprintf("The MCP server %s lists %s twice; only the first is offered.", s.Name, t.Name))
			continue
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || !objectSchema(schema) || len(schema) > maxSchema {
			note(fmt.Sprintf("The MCP tool %s%s%s has no usable input schema (an object schema of at most 16 KiB); it is left out.", s.Name, Sep, t.Name))
			continue
		}
		tools = append(tools, Tool{Name: s.Name + Sep + t.Name, Server: s.Name, Tool: t.Name,
			Description: describe(s.Name, t), Schema: schema, ReadOnly: s.IsReadOnly(t.Name)})
		if len(tools) == maxToolsPerServer {
			note(fmt.Sprintf("The MCP server %s offers more than %d tools; only the first %d are available.", s.Name, maxToolsPerServer, maxToolsPerServer))
			break
		}
	}
	return tools, notes
}

// maxToolsPerServer bounds what one server adds to every request's
// tools; maxListed the tools of a listing read at all, maxNotes the notes
// one listing gives.
const (
	maxToolsPerServer = 32
	maxListed         = 500
	maxNotes          = 5
)

// maxSchema bounds a tool's input schema, which every request carries.
const maxSchema = 16 << 10

// maxDescription bounds a tool's description as the model sees it.
const maxDescription = 1024

func describe(server string, t *mcp.Tool) string {
	d := strings.TrimSpace(t.Description)
	if len(d) > maxDescription {
		d = d[:maxDescription] + "…"
	}
	if d == "" {
		d = "(no description)"
	}
	return fmt.Sprintf("A tool of the MCP server %s (%s), described by the server: %s", server, t.Name, untrusted.Neutralise(d))
}

// toolName reports whether a server's tool name can be part of a name a
// model API takes (letters, digits, '_' and '-', 64 in all).
func toolName(n string) bool {
	if n == "" || len(n) > 30 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func objectSchema(b []byte) bool {
	var m map[string]any
	return json.Unmarshal(b, &m) == nil && m["type"] == "object"
}

// Find is the offered tool the model named, if any.
func (c *Client) Find(ctx context.Context, name string) (Tool, bool) {
	tools, _ := c.Tools(ctx)
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return Tool{}, false
	}
	return tools[i], true
}

// Call runs the tool the model named with args, within its server's
// timeout. Every failure is a Result that says what went wrong; only the
// end of ctx (the task stopping) is an error.
func (c *Client) Call(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	t, ok := c.Find(ctx, name)
	if !ok {
		return Result{Text: "There is no tool " + name + ".", Failed: true}, nil
	}
	s, _ := pullwright.ToolServerNamed(c.servers, t.Server)
	// The arguments go to the server as they are written, not decoded
	// and encoded again: a number a person approved (an id beyond 2^53)
	// must not arrive rounded.
	arguments := json.RawMessage("{}")
	if len(args) > 0 {
		var object map[string]json.RawMessage
		if err := json.Unmarshal(args, &object); err != nil || object == nil {
			why := "null"
			if err != nil {
				why = err.Error()
			}
			return Result{Text: "The arguments are not a JSON object: " + why, Failed: true}, nil
		}
		arguments = args
	}
	callCtx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	secrets := c.secrets(s)
	res, err := c.call(callCtx, s, t.Tool, arguments)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("call %s: %w", name, ctx.Err())
		}
		msg := why(err, secrets)
		c.log.Warn("mcp call failed", "server", s.Name, "tool", t.Tool, "err", msg)
		if errors.Is(err, context.DeadlineExceeded) || callCtx.Err() != nil {
			return Result{Text: fmt.Sprintf("The MCP server %s did not answer within %s.", s.Name, s.Timeout), Failed: true}, nil
		}
		return Result{Text: fmt.Sprintf("The call failed: %s", msg), Failed: true}, nil
	}
	return render(res, secrets), nil
}

func (c *Client) call(ctx context.Context, s pullwright.ToolServer, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	cs, err := c.connect(ctx, s)
	if err != nil {
		return nil, err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if ctx.Err() != nil {
		// Ending the session tells the server, within the SDK's own
		// bound; the task need not wait on a server that is already late.
		go cs.Close()
	} else {
		cs.Close()
	}
	return res, err
}

// connect opens a session with s, its credentials added to requests to
// its own host only, no redirect followed, and each answer bounded.
func (c *Client) connect(ctx context.Context, s pullwright.ToolServer) (*mcp.ClientSession, error) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, fmt.Errorf("the server's URL: %w", err)
	}
	headers, missing := s.HeaderValues(c.getenv)
	if len(missing) > 0 {
		return nil, fmt.Errorf("the bot's environment has no value for %s", strings.Join(missing, ", "))
	}
	hc := &http.Client{
		Transport: &authTransport{base: c.base, host: u.Host, headers: headers},
		// A credential must reach only the host the operator named.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "pullwright", Version: c.version}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return cs, nil
}

type authTransport struct {
	base    http.RoundTripper
	host    string
	headers http.Header
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == t.host {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header[k] = v
		}
	}
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = &boundedBody{ReadCloser: res.Body, left: MaxResponse}
	return res, nil
}

// boundedBody fails a read past its bound rather than let a server fill
// the bot's memory.
type boundedBody struct {
	io.ReadCloser
	left int64
}

var errTooLarge = fmt.Errorf("the server's answer is over %d MiB", MaxResponse>>20)

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// secrets are the values of s's credentials, and the token of each
// "Scheme token" value: a server may echo a credential it refused, in an
// error or a result, which must reach neither the model nor a log.
func (c *Client) secrets(s pullwright.ToolServer) []string {
	h, _ := s.HeaderValues(c.getenv)
	var out []string
	for _, vs := range h {
		for _, v := range vs {
			out = append(out, v)
			if _, tok, ok := strings.Cut(v, " "); ok && len(strings.TrimSpace(tok)) >= 8 {
				out = append(out, strings.TrimSpace(tok))
			}
		}
	}
	// The longest first, so that a token inside a value is not left half.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redact replaces each of secrets in s.
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// why is err in a line for the model: the SDK's words, bounded; callers
// redact it.
func why(err error, secrets []string) string {
	s := redact(err.Error(), secrets)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// render is a call's result as text: its text parts, a resource's text,
// and a line for each part that is not text.
func render(r *mcp.CallToolResult, secrets []string) Result {
	var b strings.Builder
	for _, c := range r.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				fmt.Fprintf(&b, "[resource %s]\n%s", c.Resource.URI, c.Resource.Text)
			} else {
				b.WriteString("[a binary resource, left out]")
			}
		case *mcp.ImageContent:
			b.WriteString("[an image, left out]")
		case *mcp.AudioContent:
			b.WriteString("[audio, left out]")
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[a link to a resource: %s]", c.URI)
		default:
			b.WriteString("[content of a kind the bot does not show, left out]")
		}
	}
	if b.Len() == 0 && r.StructuredContent != nil {
		if j, err := json.Marshal(r.StructuredContent); err == nil {
			b.Write(j)
		}
	}
	text := redact(b.String(), secrets)
	if len(text) > MaxResult {
		text = untrusted.Cut(text, MaxResult) + fmt.Sprintf("\n[cut: the result is over %d KiB]", MaxResult>>10)
	}
	if text == "" {
		text = "(the tool returned nothing)"
	}
	return Result{Text: text, Failed: r.IsError}
}
