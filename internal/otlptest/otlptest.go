// Package otlptest is an OTLP/HTTP trace receiver for tests: it takes
// what the bot's exporter sends (protobuf, gzip or not), keeps every
// span, and answers as a collector does.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, its ids in hex.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Service                   string
	Attrs                     map[string]string
	Error                     bool
	StartNanos, EndNanos      uint64
}

// Receiver is a running receiver; URL is its base address (the value
// of OTEL_EXPORTER_OTLP_ENDPOINT).
type Receiver struct {
	URL string

	mu    sync.Mutex
	spans []Span
	posts int
}

// New starts a receiver that stops with t.
func New(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "unsupported content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.posts++
	for _, rs := range msg.ResourceSpans {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, Span{
					TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId), ParentID: hex.EncodeToString(s.ParentSpanId),
					Name: s.Name, Service: service, Attrs: attrs(s.Attributes),
					Error:      s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					StartNanos: s.StartTimeUnixNano, EndNanos: s.EndTimeUnixNano,
				})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Spans are the spans received so far, in order of arrival.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// attrs renders attribute values as strings, for tests to compare.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = x.StringValue
		default:
			out[kv.Key] = protoText(v)
		}
	}
	return out
}

func protoText(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_ArrayValue:
		s := "["
		for i, e := range x.ArrayValue.Values {
			if i > 0 {
				s += " "
			}
			if sv, ok := e.GetValue().(*commonpb.AnyValue_StringValue); ok {
				s += sv.StringValue
			} else {
				s += protoText(e)
			}
		}
		return s + "]"
	}
	return v.String()
}
