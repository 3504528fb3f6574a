package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf16"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/mcptools"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/untrusted"
)

// serverTools are the MCP tools of one turn: the operator's servers the
// task may use (Limits.ToolServers), listed once per turn.
type serverTools struct {
	client *mcptools.Client
	// offered are the tools in the turn's requests: those the operator
	// marked read-only, which run at once, and, outside a review, the
	// others, each call of which is an execution request like a run.
	offered []mcptools.Tool
	defs    []openai.Tool
	// bytes is the counted size of defs, which every request carries.
	bytes int
	// calls counts the calls of the turn's answer (maxCallsPerAnswer).
	calls int
}

// maxToolBytes bounds what the MCP tools' definitions add to every
// request; maxCallsPerAnswer the MCP calls one answer may make, each of
// which may take its server's timeout.
const (
	maxToolBytes      = 32 << 10
	maxCallsPerAnswer = 8
)

// serverTools lists st's MCP tools. A server that cannot be listed is
// logged and left out: the agent works with what it has.
func (a *Agent) serverTools(ctx context.Context, st *State, log *slog.Logger) *serverTools {
	if len(st.Limits.ToolServers) == 0 {
		return nil
	}
	getenv := a.cfg.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	c := mcptools.New(st.Limits.ToolServers, getenv, a.cfg.MCPTransport, "pullwright", log)
	tools, notes := c.Tools(ctx)
	for _, n := range notes {
		log.Warn("mcp tools", "note", n)
	}
	s := &serverTools{client: c}
	for _, t := range tools {
		desc := t.Description
		if !t.ReadOnly {
			if st.Reviewing != nil {
				// A review changes nothing, here or elsewhere.
				continue
			}
			desc += approvalNote
		}
		def := openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: desc, Parameters: t.Schema}}
		b, err := json.Marshal(def)
		if err != nil || s.bytes+len(b) > maxToolBytes {
			log.Warn("mcp tool left out: the MCP tools' definitions would be over their share of every request", "tool", t.Name, "limit_bytes", maxToolBytes)
			continue
		}
		s.bytes += len(b)
		s.offered = append(s.offered, t)
		s.defs = append(s.defs, def)
	}
	return s
}

// with is tools and the turn's MCP tools.
func (s *serverTools) with(tools []openai.Tool) []openai.Tool {
	if s == nil || len(s.defs) == 0 {
		return tools
	}
	return append(slices.Clip(tools), s.defs...)
}

// run calls an offered MCP tool; ok is false when name is not one. Its
// result is the server's words, in a block that marks them as data.
func (s *serverTools) run(env toolEnv, name string, raw json.RawMessage) (res toolResult, ok bool, err error) {
	if s == nil {
		return toolResult{}, false, nil
	}
	i := slices.IndexFunc(s.offered, func(t mcptools.Tool) bool { return t.Name == name })
	if i < 0 {
		return toolResult{}, false, nil
	}
	t := s.offered[i]
	if !t.ReadOnly {
		res, err := askCall(env, t, raw)
		return res, true, err
	}
	if s.calls++; s.calls > maxCallsPerAnswer {
		return toolResult{}, true, errorf("at most %d MCP calls per answer: ask for the rest in your next answer", maxCallsPerAnswer)
	}
	r, err := s.client.Call(env.ctx, name, raw)
	if err != nil {
		return toolResult{}, true, err
	}
	step := fmt.Sprintf("called MCP tool `%s` of %s (read-only)", untrusted.Cut(t.Tool, 40), t.Server)
	if r.Failed {
		step += ": it failed"
	}
	return toolResult{text: r.Text, block: "untrusted-mcp-result", attrs: fmt.Sprintf(" server=%q tool=%q", t.Server, t.Tool), step: step}, true, nil
}

func (s *serverTools) has(name string) bool {
	return s != nil && slices.ContainsFunc(s.offered, func(t mcptools.Tool) bool { return t.Name == name })
}

// asks reports whether a call of name is an execution request: an
// offered tool the operator did not mark read-only.
func (s *serverTools) asks(name string) bool {
	return s != nil && slices.ContainsFunc(s.offered, func(t mcptools.Tool) bool { return t.Name == name && !t.ReadOnly })
}

// tool is the offered MCP tool name as a tool of the loop: its arguments
// go to the server as the model sent them (the server checks them against
// its own schema), after parseArguments made them one JSON object.
func (s *serverTools) tool(name string) *tool {
	return &tool{name: name, run: func(env toolEnv, raw json.RawMessage) (toolResult, error) {
		res, _, err := s.run(env, name, raw)
		return res, err
	}}
}

// size is the counted size of the MCP tools' definitions.
func (s *serverTools) size() int {
	if s == nil {
		return 0
	}
	return s.bytes
}

// approvalNote ends the description of a tool that is not read-only: the
// model should know that a call waits for a person, and give its reason
// where the person will read it.
const approvalNote = "\n\n(Pullwright: this tool is not read-only, so each call is shown to a maintainer and waits for approval, " +
	"like a run request. Say in your message's text why you call it; one such call per message.)"

// maxCallArguments bounds the arguments of a call that needs approval:
// a person reads all of them.
const maxCallArguments = 8 << 10

// askCall records a call of t, which is not read-only, as the pending
// execution request: the arguments are made the one text that is shown
// and sent (callArguments), and the reason is the text of the message
// the call came in. Turn then appends no tool message for this call;
// Resolve or ResolveCall does, with the answer.
func askCall(env toolEnv, t mcptools.Tool, raw json.RawMessage) (toolResult, error) {
	if env.st.Pending != nil {
		return toolResult{}, errorf("%s", errSecondRun)
	}
	args, err := callArguments(raw)
	if err != nil {
		return toolResult{}, errorf("%v", err)
	}
	if len(args) > maxCallArguments {
		return toolResult{}, errorf("the arguments are %d bytes as they would be shown; the limit for a call that needs approval is %d", len(args), maxCallArguments)
	}
	call := pullwright.ToolCall{Server: t.Server, Tool: t.Tool, Arguments: args}
	if err := policy.CheckCommand(call.Line()); err != nil {
		// callArguments escapes what would not show; this guards the
		// server's and the tool's names, which the server chose.
		return toolResult{}, errorf("%v", err)
	}
	reason := ""
	for i := len(env.st.Messages) - 1; i >= 0; i-- {
		if m := env.st.Messages[i]; m.Role == openai.ChatMessageRoleAssistant {
			reason = strings.TrimSpace(m.Content)
			break
		}
	}
	env.st.Pending = &Request{ToolCallID: env.callID, Command: call.Line(), Reason: untrusted.Cut(reason, maxReasonBytes), Tool: &call}
	return toolResult{
		text: "call recorded; waiting for a maintainer's approval",
		step: fmt.Sprintf("asked to call MCP tool `%s` of %s", untrusted.Cut(t.Tool, 40), t.Server),
	}, nil
}

// callArguments is the JSON object raw holds as the one text a person
// reads and the server is sent: compact, keys sorted, numbers as
// written, and every character outside printable ASCII written as a
// \u escape, so that nothing in it shows as something else.
func callArguments(raw json.RawMessage) (string, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("the arguments are not a JSON object: %w", err)
	}
	if v == nil {
		v = map[string]any{}
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return "", fmt.Errorf("encode the arguments: %w", err)
	}
	var out strings.Builder
	for _, r := range strings.TrimSuffix(b.String(), "\n") {
		if r >= 0x20 && r < 0x7f {
			out.WriteRune(r)
			continue
		}
		// Inside a JSON string (the only place such a rune can be once
		// encoded) \u escapes mean the same; a rune beyond the BMP is its
		// surrogate pair, as JSON writes it.
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&out, `\u%04x`, r)
	}
	return out.String(), nil
}
