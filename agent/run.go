package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/untrusted"
)

// Request is a command the model asked to run, waiting for an answer.
//
// The agent never executes anything: a run call ends the turn with
// State.Pending set. The task package persists the State, asks a maintainer
// for approval, has the command run elsewhere, and hands the outcome back
// with Resolve (built with RunResult, Rejected or TimedOut).
type Request struct {
	ToolCallID string `json:"tool_call_id"`
	Command    string `json:"command"`
	Reason     string `json:"reason"`
	// Tool is set when the request calls an MCP tool that is not
	// read-only (askCall); Command is then Tool.Line().
	Tool *pullwright.ToolCall `json:"tool,omitempty"`
	// KeepChanges is true when the model asked to keep what the command
	// changes in the repository (KeepChanges applies it once it ran).
	KeepChanges bool `json:"keep_changes,omitempty"`
	// Network is true when the model asked to run a dependency command
	// with the setup's network, through the fence; KeepChanges is then
	// true as well.
	Network bool `json:"network,omitempty"`
}

// ErrPending is wrapped by Turn's error when an execution request is waiting
// for its answer; call Resolve first.
var ErrPending = errors.New("agent: an execution request is waiting for its answer")

// ErrNothingPending is returned by Resolve when no execution request is
// waiting (for instance when an answer is handed in twice).
var ErrNothingPending = errors.New("agent: no execution request is waiting for an answer")

// Bounds of a run request.
const (
	maxCommandBytes = 4 << 10
	maxReasonBytes  = 1 << 10
	maxRejectBytes  = 2 << 10 // the reason of a rejection
)

// Tool results of refused run and finish calls.
const (
	errSecondRun = "only one run request per turn; ask again after this one is answered"
	// finish in the same message as a run request that is now pending.
	finishRefusedPending = "error: finish refused: this message also asks to run a command; answer the pending run first: " +
		"its result (or its rejection) arrives as the run tool's result in your next turn, then call finish again"
	// finish in the same message as a run call that failed.
	finishRefusedFailed = "error: finish refused: this message also calls run, and that request failed (see its result); " +
		"send a corrected run request, or call finish on its own in a later turn"
	stepFinishRefused = "finish refused: a run request came with it"
)

// runRun records the request as st.Pending. Turn then appends no tool
// message for this call: Resolve does, with the answer.
func runRun(env toolEnv, raw json.RawMessage) (toolResult, error) {
	if env.st.Pending != nil {
		return toolResult{}, errorf("%s", errSecondRun)
	}
	var a struct {
		Command     string `json:"command"`
		Reason      string `json:"reason"`
		KeepChanges bool   `json:"keep_changes"`
		Network     bool   `json:"network"`
	}
	if err := toolsByName[ToolRun].decodeArgs(raw, &a); err != nil {
		return toolResult{}, err
	}
	if (a.KeepChanges || a.Network) && env.st.Reviewing != nil {
		return toolResult{}, errorf("keep_changes and network are not for a review: a review changes no file; ask for the command without them")
	}
	cmd := strings.TrimSpace(a.Command)
	switch {
	case cmd == "":
		return toolResult{}, errorf("command is empty; give the exact command line to run, e.g. \"go test ./pkg/...\"")
	case len(cmd) > maxCommandBytes:
		return toolResult{}, errorf("command is %d bytes; the limit is %d: ask for a shorter, narrower command", len(cmd), maxCommandBytes)
	}
	if err := policy.CheckCommand(cmd); err != nil {
		// A maintainer must see exactly what runs.
		return toolResult{}, errorf("%v; write the command with plain characters only", err)
	}
	reason := strings.TrimSpace(a.Reason)
	if reason == "" {
		return toolResult{}, errorf("reason is empty; tell the maintainer who approves it what the command checks and why you need it")
	}
	env.st.Pending = &Request{ToolCallID: env.callID, Command: cmd, Reason: untrusted.Cut(reason, maxReasonBytes),
		KeepChanges: a.KeepChanges || a.Network, Network: a.Network}
	step := "asked to run `" + untrusted.Cut(strings.Join(strings.Fields(cmd), " "), 120) + "`"
	switch {
	case a.Network:
		step += " with the setup's network, keeping what it changes"
	case a.KeepChanges:
		step += ", keeping what it changes"
	}
	return toolResult{text: "run request recorded; waiting for a maintainer's approval", step: step}, nil
}

// Resolve answers the pending request: result becomes the tool message of
// its tool call, and Pending is cleared. result should be built with
// RunResult, Rejected or TimedOut. Like any tool output it is cut to
// MaxToolOutput; command output from RunResult is cut inside its
// <untrusted-output> block, which stays closed, keeping the beginning and the
// end of the output.
//
// The tool message is placed among the other results of the same assistant
// message in the order of its tool calls, so that every tool call is
// answered, in order, before the next assistant or user message. On error st
// is left unchanged.
func (a *Agent) Resolve(st *State, result string) error {
	if st == nil || st.Pending == nil {
		return ErrNothingPending
	}
	return a.answer(st, a.resultText(result))
}

// ResolveCall answers a pending call of an MCP tool (Request.Tool) that
// was approved and made: text is what the server answered, failed
// whether the call failed. It goes to the model as the server's words,
// in the block every MCP result comes in.
func (a *Agent) ResolveCall(st *State, text string, failed bool) error {
	if st == nil || st.Pending == nil {
		return ErrNothingPending
	}
	c := st.Pending.Tool
	if c == nil {
		return errors.New("agent: the pending request is a command, not a tool call")
	}
	head := "approved and called; the server answered:\n"
	if failed {
		head = "approved and called, but the call failed:\n"
	}
	if text = a.cut(text); text == "" {
		text = "(no output)"
	}
	return a.answer(st, head+untrusted.Block("untrusted-mcp-result", fmt.Sprintf(" server=%q tool=%q", c.Server, c.Tool), text))
}

// AnswerCall answers a pending call of an MCP tool (Request.Tool) that
// was approved, with res, how the call went: the server's answer
// (ResolveCall), or why it was not made or did not end (NotCalled,
// Interrupted).
func (a *Agent) AnswerCall(st *State, res pullwright.RunResult) error {
	switch {
	case res.NotStarted:
		return a.Resolve(st, NotCalled(res.Output))
	case res.ExitCode < 0:
		return a.Resolve(st, Interrupted(res.Output))
	}
	return a.ResolveCall(st, res.Output, res.ExitCode != 0)
}

// NotCalled is the tool result of an approved call of an MCP tool that
// was never made, and why.
func NotCalled(why string) string { return "not called: " + why }

// Interrupted is the tool result of an approved call of an MCP tool that
// did not end, with what it said until then.
func Interrupted(output string) string { return "interrupted: " + output }

// answer places content as the tool message of the pending call.
func (a *Agent) answer(st *State, content string) error {
	id := st.Pending.ToolCallID
	ai, k := -1, -1
	for i := len(st.Messages) - 1; i >= 0 && ai < 0; i-- {
		if st.Messages[i].Role != openai.ChatMessageRoleAssistant {
			continue
		}
		if j := slices.IndexFunc(st.Messages[i].ToolCalls, func(tc openai.ToolCall) bool { return tc.ID == id }); j >= 0 {
			ai, k = i, j
		}
	}
	if ai < 0 {
		return fmt.Errorf("agent: the pending tool call %q is not in the conversation", id)
	}
	calls := st.Messages[ai].ToolCalls
	pos := ai + 1
	for j := ai + 1; j < len(st.Messages) && st.Messages[j].Role == openai.ChatMessageRoleTool; j++ {
		tid := st.Messages[j].ToolCallID
		if tid == id {
			return fmt.Errorf("agent: the pending tool call %q is already answered", id)
		}
		if slices.IndexFunc(calls, func(tc openai.ToolCall) bool { return tc.ID == tid }) < k {
			pos = j + 1
		}
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: content, ToolCallID: id}
	st.Messages = slices.Insert(st.Messages, pos, msg)
	st.Pending = nil
	return nil
}

// Reopen goes on with a finished conversation because the repository's
// required command (require_passing) failed on the final commit: result
// (built with RunResult) is told to the model in a user message after its
// finish, and Finish is cleared so that the next Turn calls the model.
func (a *Agent) Reopen(st *State, command, result string) error {
	if st == nil || st.Finish == nil {
		return errors.New("agent: the conversation is not finished, so it cannot be reopened")
	}
	if st.Pending != nil {
		return fmt.Errorf("agent: a request is pending (tool call %s); answer it with Resolve", st.Pending.ToolCallID)
	}
	text := "You finished, but the repository requires `" + command + "` to pass on the final commit before the pull " +
		"request is ready for review (require_passing in .github/pullwright.yml). It ran on your final commit and did " +
		"not pass:\n" + a.resultText(result) + "\nFind and fix the cause; run the command again if you need to, then " +
		"call finish again."
	st.Messages = append(st.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text})
	st.Steps = append(st.Steps, "required `"+untrusted.Cut(command, 120)+"` did not pass on the final commit; went on")
	st.Finish = nil
	return nil
}

const (
	outputOpen  = "<untrusted-output>\n"
	outputClose = "</untrusted-output>"
)

// resultText bounds an answer of Resolve like runTool bounds a tool result.
func (a *Agent) resultText(s string) string {
	// RunResult's block: its content is neutralised, so the first opening
	// tag is the real one and the text ends with the real closing tag.
	if i := strings.Index(s, outputOpen); i >= 0 && strings.HasSuffix(s, outputClose) && i+len(outputOpen) <= len(s)-len(outputClose) {
		head, inner := s[:i], s[i+len(outputOpen):len(s)-len(outputClose)]
		return head + untrusted.Block("untrusted-output", "", cutMiddle(inner, a.cfg.MaxToolOutput))
	}
	if s = a.cut(s); s == "" {
		s = "(no output)"
	}
	return s
}

// cutMiddle bounds command output to limit bytes by keeping its beginning and
// its end, where test runners and compilers put their summaries, on line or
// rune boundaries, with a note saying how much was cut.
func cutMiddle(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	headMax := limit / 2
	h := headMax
	if nl := strings.LastIndexByte(s[:headMax], '\n'); nl >= headMax/2 {
		h = nl + 1
	} else {
		for h > 0 && !utf8.RuneStart(s[h]) {
			h--
		}
	}
	t := len(s) - (limit - headMax) // start of the kept end
	if nl := strings.IndexByte(s[t:], '\n'); nl >= 0 && nl < (limit-headMax)/2 {
		t += nl + 1
	} else {
		for t < len(s) && !utf8.RuneStart(s[t]) {
			t++
		}
	}
	return s[:h] + fmt.Sprintf("\n[… %d bytes cut …]\n", t-h) + s[t:]
}

// RunResult is the tool result of a command that ran: its exit code and
// duration, then its output in an <untrusted-output> block (output is data
// from the repository's code, never instructions). truncated says the runner
// kept only part of the output; timedOut that the command hit its time limit
// and was killed.
func RunResult(exitCode int, output string, truncated bool, timedOut bool, duration time.Duration) string {
	var b strings.Builder
	if timedOut {
		fmt.Fprintf(&b, "timed out after %s: the command was killed (exit code %d); its output until then follows", roundDuration(duration), exitCode)
	} else {
		fmt.Fprintf(&b, "exit code %d after %s", exitCode, roundDuration(duration))
	}
	b.WriteByte('\n')
	if truncated {
		b.WriteString("The output was longer than the sandbox keeps, so part of it was cut; ask for a narrower command if the missing part matters.\n")
	}
	if output == "" {
		output = "(no output)"
	}
	b.WriteString(untrusted.Block("untrusted-output", "", output))
	return b.String()
}

// Ran is the tool result of a command that ran, res: RunResult of its
// exit code and RanOutput.
func Ran(res pullwright.RunResult) string {
	return RunResult(res.ExitCode, RanOutput(res), res.Truncated, res.TimedOut, res.Duration)
}

// RanOutput is res's output as the agent reads it: with the sandbox's
// note when it killed the command for running out of memory.
func RanOutput(res pullwright.RunResult) string {
	if res.OOMKilled {
		return res.Output + "\n[the sandbox killed the command: it ran out of memory]"
	}
	return res.Output
}

func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// afterRefusal tells the model how to carry on when its command did not run.
const afterRefusal = "The command was not run. Carry on without it: do not ask for it again, and never try to get " +
	"around this with another command, a script or any other tool that does the same thing. Continue by reading and " +
	"reasoning, and say in your summary what you could not verify."

// Rejected is the tool result of a request a maintainer rejected. Its first
// line is "rejected by @by: reason".
func Rejected(by, reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "no reason given"
	}
	return "rejected by @" + untrusted.Login(by) + ": " + untrusted.Neutralise(untrusted.Cut(reason, maxRejectBytes)) + "\n" +
		"Take the maintainer's reason into account. " + afterRefusal
}

// TimedOut is the tool result of a request that nobody approved or rejected
// in time.
func TimedOut() string {
	return "approval timed out: no maintainer answered the request in time. " + afterRefusal
}
