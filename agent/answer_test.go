package agent

import (
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
)

// What the agent reads of a command that ran, and of an approved call of
// an MCP tool, however it ended.
func TestWhatTheAgentReadsOfARun(t *testing.T) {
	a := newTestAgent(t, Config{})
	pending := func(tool *pullwright.ToolCall) *State {
		return &State{
			Messages: []openai.ChatCompletionMessage{
				{Role: "user", Content: "go"},
				{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "run", Arguments: `{}`}}}},
			},
			Pending: &Request{ToolCallID: "c1", Command: "x", Reason: "x", Tool: tool},
		}
	}
	call := &pullwright.ToolCall{Server: "docs", Tool: "file_issue", Arguments: `{}`}
	for _, tc := range []struct {
		name string
		res  pullwright.RunResult
		call bool // an MCP tool's call (AnswerCall), else a command (Ran)
		want []string
		not  []string
	}{
		{name: "a command that passed", res: pullwright.RunResult{ExitCode: 0, Output: "ok\n", Duration: 1500 * time.Millisecond},
			want: []string{"exit code 0 after 1.5s\n", "<untrusted-output>\nok\n"}, not: []string{"memory"}},
		{name: "a command killed for memory", res: pullwright.RunResult{ExitCode: 137, Output: "building…", OOMKilled: true, Duration: time.Second},
			want: []string{"exit code 137 after 1s\n", "building…\n[the sandbox killed the command: it ran out of memory]\n</untrusted-output>"}},
		{name: "a command that timed out", res: pullwright.RunResult{ExitCode: -1, Output: "waiting", TimedOut: true, Duration: 10 * time.Minute},
			want: []string{"timed out after 10m0s: the command was killed (exit code -1)", "waiting"}},
		{name: "a call made", call: true, res: pullwright.RunResult{Output: "filed as #7"},
			want: []string{"approved and called; the server answered:\n", "filed as #7"}},
		{name: "a call that failed", call: true, res: pullwright.RunResult{ExitCode: 1, Output: "no such repository"},
			want: []string{"approved and called, but the call failed:\n", "no such repository"}},
		{name: "a call never made", call: true, res: pullwright.RunResult{ExitCode: -1, NotStarted: true, Output: "the server did not answer"},
			want: []string{"not called: the server did not answer"}, not: []string{"approved and called"}},
		{name: "a call interrupted", call: true, res: pullwright.RunResult{ExitCode: -1, Output: "cancelled"},
			want: []string{"interrupted: cancelled"}, not: []string{"approved and called"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			if tc.call {
				st := pending(call)
				if err := a.AnswerCall(st, tc.res); err != nil {
					t.Fatal(err)
				}
				if st.Pending != nil {
					t.Fatal("the call is still pending")
				}
				got = st.Messages[len(st.Messages)-1].Content
			} else {
				got = Ran(tc.res)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("unexpected %q in:\n%s", n, got)
				}
			}
		})
	}
}
