package agent

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/tracing"
)

// Each model call is a span in OpenTelemetry's conventions for generative
// AI, under the step's: the model and the tokens, not the conversation.
func TestAModelCallIsASpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	s := fakellm.New(t, raw(`{"role":"assistant","content":"the secret plan","tool_calls":[`+readA+`]}`, `"tool_calls"`,
		`{"prompt_tokens":1200,"completion_tokens":30,"prompt_tokens_details":{"cached_tokens":1000}}`))
	a := agentFor(t, s, Config{})
	brief := testBrief
	brief.Instructions = "fix it; the token is hunter2"
	st := a.Start(brief)
	ctx, step := tp.Tracer(tracing.Name).Start(t.Context(), "step working")
	if err := a.Turn(ctx, st, workspaceDir(t, map[string]string{"a.txt": "a\n"})); err != nil {
		t.Fatal(err)
	}
	step.End()
	var call *tracetest.SpanStub
	for i, sp := range exp.GetSpans() {
		if strings.HasPrefix(sp.Name, "chat ") {
			call = &exp.GetSpans()[i]
		}
	}
	if call == nil {
		t.Fatalf("no model call span among %v", exp.GetSpans().Snapshots())
	}
	got := map[string]string{}
	for _, kv := range call.Attributes {
		got[string(kv.Key)] = kv.Value.Emit()
		if v := kv.Value.Emit(); strings.Contains(v, "hunter2") || strings.Contains(v, "secret plan") {
			t.Errorf("%s = %q: the conversation is in a span", kv.Key, v)
		}
	}
	want := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": a.cfg.Model,
		"gen_ai.usage.input_tokens": "1200", "gen_ai.usage.output_tokens": "30", "gen_ai.usage.cache_read.input_tokens": "1000",
		"gen_ai.response.finish_reasons": `["tool_calls"]`}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if call.Name != "chat "+a.cfg.Model || call.Parent.SpanID() != step.SpanContext().SpanID() {
		t.Errorf("span %q under %s, want chat %s under the step", call.Name, call.Parent.SpanID(), a.cfg.Model)
	}
}
