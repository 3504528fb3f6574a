package webhook

import (
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pullwright/pullwright/tracing"
)

// A delivery that records a task starts the task's trace: its span is the
// root the task's steps join. One that records nothing traces nothing.
func TestADeliveryStartsTheTasksTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	rec := newFakeRecorder()
	h, _ := newHandler(t, rec, func(c *Config) { c.Tracer = tp.Tracer(tracing.Name) })
	fix := delivery{event: "issue_comment", id: "d-fix", body: variant(t, "issue_comment.created.json", commentBody("/agent fix it, the key is hunter2"))}
	if w := serve(h, fix); w.Code != http.StatusAccepted {
		t.Fatalf("fix = %d %s", w.Code, w.Body)
	}
	ignored := delivery{event: "issue_comment", id: "d-chat", body: variant(t, "issue_comment.created.json", commentBody("thanks!"))}
	if w := serve(h, ignored); w.Code != http.StatusOK {
		t.Fatalf("chat = %d %s", w.Code, w.Body)
	}
	spans := exp.GetSpans()
	if len(rec.tasks) != 1 || len(spans) != 1 {
		t.Fatalf("%d tasks, %d spans; want one of each", len(rec.tasks), len(spans))
	}
	s := spans[0]
	if s.Name != "webhook issue_comment" || s.Parent.IsValid() || tracing.TraceID(rec.tasks[0].Trace) != s.SpanContext.TraceID().String() {
		t.Errorf("span %q (parent %v) in trace %s; the task's trace is %q", s.Name, s.Parent.IsValid(), s.SpanContext.TraceID(), rec.tasks[0].Trace)
	}
	for _, kv := range s.Attributes {
		if v := kv.Value.Emit(); v == "" || len(v) > 64 || strings.Contains(v, "hunter2") {
			t.Errorf("%s = %q", kv.Key, v)
		}
	}
}
