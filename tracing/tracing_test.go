package tracing_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/otlptest"
	"github.com/pullwright/pullwright/tracing"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestEnabled(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		if got := tracing.Enabled(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("Enabled(%v) = %v, want %v", tt.env, got, tt.want)
		}
	}
}

// Without an endpoint nothing is recorded: no span context to save.
func TestOffRecordsNothing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tp, shutdown, err := tracing.New(t.Context(), os.Getenv, "test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t.Context())
	ctx, span := tp.Tracer(tracing.Name).Start(t.Context(), "task")
	defer span.End()
	if span.IsRecording() || tracing.Parent(ctx) != "" {
		t.Errorf("tracing off recorded a span (parent %q)", tracing.Parent(ctx))
	}
}

// A trace goes on across a restart: the second process's span is a child
// of the first's, in the same trace, through the saved traceparent.
func TestATraceGoesOnAfterARestart(t *testing.T) {
	r := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL)
	t.Setenv("OTEL_SERVICE_NAME", "pullwright-test")
	start := func() (trace.Tracer, func(context.Context) error) {
		tp, shutdown, err := tracing.New(t.Context(), os.Getenv, "test", slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return tp.Tracer(tracing.Name), shutdown
	}
	tr, shutdown := start()
	ctx, root := tr.Start(t.Context(), "task")
	saved := tracing.Parent(ctx)
	root.End()
	if err := shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	tr, shutdown = start()
	_, step := tr.Start(tracing.Resume(t.Context(), saved), "step")
	step.End()
	if err := shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := r.Spans()
	if len(spans) != 2 {
		t.Fatalf("received %d spans, want 2: %+v", len(spans), spans)
	}
	if spans[0].TraceID != spans[1].TraceID || spans[1].ParentID != spans[0].SpanID || spans[0].ParentID != "" {
		t.Errorf("spans are not one trace of a root and its child: %+v", spans)
	}
	if spans[0].Service != "pullwright-test" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's", spans[0].Service)
	}
	if got := tracing.Resume(t.Context(), "not a traceparent"); trace.SpanContextFromContext(got).IsValid() {
		t.Errorf("a traceparent that does not parse was taken")
	}
}

func TestAnotherProtocolIsRefused(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", k: "grpc"}
		if _, _, err := tracing.New(t.Context(), func(k string) string { return env[k] }, "test", slog.New(slog.DiscardHandler)); err == nil {
			t.Errorf("%s=grpc was accepted; nothing would be exported", k)
		}
	}
}

// The log line names where traces go without what may be credentials.
func TestTheEndpointIsLoggedWithoutCredentials(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://user:p@ss@collector.example:4318/otlp?api_key=SECRET")
	var logs bytes.Buffer
	_, shutdown, err := tracing.New(t.Context(), os.Getenv, "test", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t.Context())
	if got := logs.String(); !strings.Contains(got, "endpoint=https://collector.example:4318/otlp") || strings.Contains(got, "ss@") || strings.Contains(got, "SECRET") {
		t.Errorf("log: %s", got)
	}
}

// A step's failure is typed on its span; a failure nothing typed is "_OTHER".
func TestEndAs(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, a := tp.Tracer(tracing.Name).Start(t.Context(), "a")
	tracing.EndAs(a, errors.New("boom"), "permanent")
	_, b := tp.Tracer(tracing.Name).Start(t.Context(), "b")
	tracing.End(b, errors.New("boom"))
	_, c := tp.Tracer(tracing.Name).Start(t.Context(), "c")
	tracing.EndAs(c, nil, "permanent")
	want := map[string]string{"a": "permanent", "b": "_OTHER", "c": ""}
	for _, sp := range exp.GetSpans() {
		var got string
		for _, kv := range sp.Attributes {
			if kv.Key == "error.type" {
				got = kv.Value.AsString()
			}
		}
		if got != want[sp.Name] || (got != "") != (sp.Status.Code == codes.Error) {
			t.Errorf("span %s: error.type %q, status %v; want %q", sp.Name, got, sp.Status, want[sp.Name])
		}
	}
}
