package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/mcptools"
	"github.com/pullwright/pullwright/untrusted"
)

// serverTools are the MCP tools of one turn: the operator's servers the
// task may use (Limits.ToolServers), listed once per turn.
type serverTools struct {
	client *mcptools.Client
	// offered are the tools in the turn's requests: those the operator
	// marked read-only. A tool that changes something must be approved as
	// a run is, which the request flow does not carry yet, so it is not
	// offered at all rather than run unasked.
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
		if !t.ReadOnly {
			continue
		}
		def := openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Schema}}
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
