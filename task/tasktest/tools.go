package tasktest

import (
	"context"
	"sync"

	"github.com/pullwright/pullwright"
)

// Tools is an MCP server as the task calls it (task.ToolCaller): it
// records each call and the server it was made on, and answers Text
// (Failed), or Err as the end of the context would.
type Tools struct {
	mu      sync.Mutex
	Calls   []pullwright.ToolCall
	Servers []pullwright.ToolServer
	Text    string
	Failed  bool
	Err     error
}

func (f *Tools) CallTool(_ context.Context, s pullwright.ToolServer, c pullwright.ToolCall) (string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls = append(f.Calls, c)
	f.Servers = append(f.Servers, s)
	if f.Err != nil {
		return "", false, f.Err
	}
	return f.Text, f.Failed, nil
}
