package main_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/otlptest"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/tracing"
)

// A task is one trace through a kill -9: the bot exports to a collector
// (an in-process OTLP/HTTP receiver), is killed while the task waits for
// its approval, and the restarted bot's steps join the trace the first
// one started. No span holds what people or the agent wrote.
func TestATaskIsOneTraceThroughAKill(t *testing.T) {
	const command, secret = "grep -c commit README.md", "hunter2-not-for-spans"
	steps := []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": command, "reason": "check that the typo is gone"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit in the README", "summary": "Fixed and checked."})}},
	}
	llm := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		return steps[min(fakellm.Turn(req), len(steps)-1)]
	})
	rcv := otlptest.New(t)
	h := startKillTest(t, llm, botproc.Options{Env: []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL,
		// Spans a kill finds in the exporter's buffer are lost: export
		// them at once, as a short delay in production would.
		"OTEL_BSP_SCHEDULE_DELAY=20",
	}}, "/agent fix the typo "+secret)
	h.GitHub.SetPermission(botproc.Owner, botproc.Repo, "maintainer", "write")
	waiting := h.WaitState(1, task.AwaitingApproval)
	trace := tracing.TraceID(waiting.Trace)
	if trace == "" {
		t.Fatalf("the parked task saved no trace (%q)", waiting.Trace)
	}
	has := func(name string) bool {
		return slices.ContainsFunc(rcv.Spans(), func(s otlptest.Span) bool { return s.TraceID == trace && s.Name == name })
	}
	waitFor := func(name string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !has(name); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q span of trace %s arrived; got %+v", name, trace, rcv.Spans())
			}
		}
	}
	// Every span of the steps before the park must be out before the
	// kill, or the kill loses it with the exporter's buffer: the parked
	// task pushed its checkpoint and opened its draft in steps of their
	// own, whose spans may come after the first "step working".
	for _, name := range []string{"step working", "git push", "open pull request"} {
		waitFor(name)
	}

	h.Bot.Kill()
	h.Bot.Restart()
	if code := h.Comment("approve-1", 1, "maintainer", "/approve"); code != http.StatusAccepted {
		t.Fatalf("/approve answered %d", code)
	}
	done := h.WaitState(1, task.Done)
	if done.Trace != waiting.Trace {
		t.Errorf("the trace changed from %s to %s", waiting.Trace, done.Trace)
	}
	waitFor("step publishing")

	spans := rcv.Spans()
	ids := map[string]bool{}
	names := map[string]int{}
	for _, s := range spans {
		ids[s.SpanID] = true
		if s.TraceID == trace {
			names[s.Name]++
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, secret) || strings.Contains(v, command) || strings.Contains(v, "x-access-token") {
				t.Errorf("span %q holds %s=%q", s.Name, k, v)
			}
		}
	}
	for _, want := range []string{"webhook issue_comment", "step queued", "step preparing", "step working", "chat test-model",
		"step awaiting_approval", "approval wait", "sandbox run", "step running", "step publishing", "git clone", "git push", "open pull request"} {
		if names[want] == 0 {
			t.Errorf("trace %s has no %q span; it has %v", trace, want, names)
		}
	}
	for _, s := range spans {
		if s.TraceID == trace && s.ParentID != "" && !ids[s.ParentID] {
			t.Errorf("span %q's parent %s was never exported", s.Name, s.ParentID)
		}
	}
}
