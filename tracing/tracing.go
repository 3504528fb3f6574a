// Package tracing exports the bot's traces with OpenTelemetry when the
// operator asks for it with the standard variables
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// and the other OTEL_* ones the SDK reads), over OTLP/HTTP. With neither
// set, the provider is OpenTelemetry's no-op one: nothing is recorded,
// exported or slowed.
//
// A task is one trace however many processes move it: its root span's
// context is saved with the task (as a W3C traceparent), and every step
// starts as a child of it (Resume), on whatever replica claims the step.
package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of the bot's spans.
const Name = "github.com/pullwright/pullwright"

// Enabled reports whether env (as os.Getenv reads it) asks for traces.
// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn them off as
// the specification says.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New is the bot's tracer provider: an SDK one exporting over OTLP/HTTP
// in batches when Enabled(getenv), else the no-op one. The exporter reads
// the process's own OTEL_* variables. shutdown flushes what is left
// (bounded by ctx) and is always safe to call.
func New(ctx context.Context, getenv func(string) string, version string, log *slog.Logger) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	if !Enabled(getenv) {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(k); p != "" && p != "http/protobuf" {
			// The gRPC exporter would bring a second transport for one
			// setting; say so rather than export nothing in silence.
			return nil, nil, fmt.Errorf("tracing: %s=%s is not supported: the bot exports over http/protobuf", k, p)
		}
	}
	// The exporter reads the endpoint, headers, timeout, compression and
	// certificates from the OTEL_EXPORTER_OTLP_* variables itself.
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: create the OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("pullwright"), semconv.ServiceVersion(version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithHost(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, nil, fmt.Errorf("tracing: describe the resource: %w", err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	log.Info("tracing: exporting traces over OTLP/HTTP", "endpoint", endpoint(getenv))
	return sdk, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := sdk.Shutdown(ctx); err != nil {
			return fmt.Errorf("tracing: flush and stop: %w", err)
		}
		return nil
	}, nil
}

// endpoint is where traces go, for the log line: the scheme, host and
// path only, since the user part and the query may hold credentials.
func endpoint(getenv func(string) string) string {
	e := cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	u, err := url.Parse(e)
	if err != nil || u.Host == "" {
		return "(not a URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

var w3c = propagation.TraceContext{}

// Parent is the traceparent of the span in ctx, to save with a task ("" when
// ctx holds no recorded span: with tracing off, nothing is saved).
func Parent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}

// Resume is ctx with the saved traceparent as its remote parent, so that
// spans started from it join the task's trace, in this process or after a
// restart on another replica. A saved value that does not parse is ignored.
func Resume(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Start starts a span named name as a child of the span in ctx, with the
// tracer of that span's provider: code deep in a step needs no tracer of
// its own, and records nothing when the step is not traced.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(Name).Start(ctx, name, trace.WithAttributes(attrs...))
}

// End ends span, marking it failed when err is not nil, with error.type
// "_OTHER", as the semantic conventions say when nothing better is known
// (EndAs says better). The error's text is left out: it may quote what a
// user or a repository wrote.
func End(span trace.Span, err error) { EndAs(span, err, "") }

// EndAs is End with the kind of failure as error.type ("" for "_OTHER").
func EndAs(span trace.Span, err error, errorType string) {
	if err != nil {
		span.SetStatus(codes.Error, "failed")
		span.SetAttributes(attribute.String("error.type", cmp.Or(errorType, "_OTHER")))
	}
	span.End()
}

// StartAt is Start with the span begun at start: for a wait that is
// only known to have happened once it is over.
func StartAt(ctx context.Context, name string, start time.Time, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(Name).Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
}

// TraceID is the trace id (32 hex digits) of a saved traceparent, "" when
// there is none or it does not parse.
func TraceID(traceparent string) string {
	sc := trace.SpanContextFromContext(Resume(context.Background(), traceparent))
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
