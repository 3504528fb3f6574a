package task_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
	"github.com/pullwright/pullwright/tracing"
)

// A task is one trace from its creation to its pull request, through a
// restart while it waited: the root span is saved with the task, every
// step of either process is its child, and the wait for the approval is a
// span of its own. Spans carry ids and counts, never what people or the
// agent wrote.
func TestATaskIsOneTraceAcrossARestart(t *testing.T) {
	w := newWorld(t)
	exp := tracetest.NewInMemoryExporter()
	tracer := func() *sdktrace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		t.Cleanup(func() { tp.Shutdown(t.Context()) })
		return tp
	}
	w.pool.Tracer = tracer().Tracer(tracing.Name)
	secret := "fix the typo, the password is hunter2"
	w.agent.Script = append(w.agent.Script,
		pending("go test ./... # a command of the agent's", map[string]string{"README.md": "# widget\n\nNo typo.\n"}),
		finish("Fix the README typo", map[string]string{"main.go": "package main\n\nfunc main() { println(1) }\n"}))
	fix := w.fix(secret)
	w.drain()
	parked := w.want(fix.ID, task.AwaitingApproval)
	if parked.Trace == "" {
		t.Fatal("the parked task saved no trace")
	}

	// A new process: a new provider, the same store.
	w.pool = &task.Pool{Store: w.store, Steps: w.flow, Workers: 1, MaxAttempts: 3, Backoff: func(int) time.Duration { return 0 },
		Tracer: tracer().Tracer(tracing.Name)}
	w.clock.Advance(time.Minute)
	w.answer(task.KindApprove, "maint", 12, tasktest.Job(parked).Request.ID)
	w.drain()
	done := w.want(fix.ID, task.Done)

	var root string
	byName := map[string]int{}
	ids := map[string]bool{}
	for _, s := range exp.GetSpans() {
		ids[s.SpanContext.SpanID().String()] = true
	}
	for _, s := range exp.GetSpans() {
		var isFix bool
		for _, a := range s.Attributes {
			if string(a.Key) == "pullwright.task.id" && a.Value.AsInt64() == fix.ID {
				isFix = true
			}
			if v := a.Value.Emit(); strings.Contains(v, "hunter2") || strings.Contains(v, "go test") {
				t.Errorf("span %q holds %s=%q: what people or the agent wrote", s.Name, a.Key, v)
			}
		}
		if s.Name == "task fix" {
			root = s.SpanContext.TraceID().String()
			if s.Parent.IsValid() {
				t.Errorf("the root has a parent %s", s.Parent.SpanID())
			}
			continue
		}
		if !isFix && !slices.Contains([]string{"approval wait", "sandbox run", "git clone", "git push", "open pull request"}, s.Name) {
			continue // the approve task's own trace
		}
		byName[s.Name]++
		if s.SpanContext.TraceID().String() != done.Trace[3:35] {
			t.Errorf("span %q is in trace %s, not the task's %s", s.Name, s.SpanContext.TraceID(), done.Trace)
		}
		if !ids[s.Parent.SpanID().String()] {
			t.Errorf("span %q has a parent %s that was never exported", s.Name, s.Parent.SpanID())
		}
	}
	if root == "" || !strings.Contains(done.Trace, root) {
		t.Fatalf("no root span for the task's trace %q", done.Trace)
	}
	for _, want := range []string{"step queued", "step preparing", "step working", "step awaiting_approval", "step running", "step publishing", "approval wait", "sandbox run", "git clone", "git push", "open pull request"} {
		if byName[want] == 0 {
			t.Errorf("no %q span; spans: %v", want, byName)
		}
	}
	if byName["approval wait"] != 1 {
		t.Errorf("%d approval wait spans, want 1", byName["approval wait"])
	}
}

// blockFirst holds the first step it is given until its context ends:
// a bot killed or stopped in a task's first step.
type blockFirst struct {
	scriptStepper
	started chan struct{}
	once    sync.Once
	held    atomic.Bool
}

func (s *blockFirst) Step(ctx context.Context, t *task.Task) error {
	if s.held.CompareAndSwap(false, true) {
		s.once.Do(func() { close(s.started) })
		<-ctx.Done()
		return ctx.Err()
	}
	return s.scriptStepper.Step(ctx, t)
}

// A task's trace is saved before its first step: a bot stopped in that
// step leaves the next claim the same trace, not a second root.
func TestATraceOutlivesAnInterruptedFirstStep(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	s := tasktest.NewStore(time.Now)
	st := &blockFirst{scriptStepper: scriptStepper{fail: map[task.State][]error{}}, started: make(chan struct{})}
	p1 := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond, Lease: 300 * time.Millisecond, Tracer: tp.Tracer(tracing.Name)}
	stop := runPool(t, p1)
	tk := fixTask(1)
	if err := s.Record(t.Context(), task.Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	<-st.started
	stop()
	p2 := &task.Pool{Store: s, Steps: st, Workers: 1, Poll: 5 * time.Millisecond, Lease: 300 * time.Millisecond, Tracer: tp.Tracer(tracing.Name)}
	defer runPool(t, p2)()
	done := waitFor(t, s, tk.ID, func(t *task.Task) bool { return t.State == task.Done })
	traces := map[string]bool{}
	roots := 0
	for _, sp := range exp.GetSpans() {
		traces[sp.SpanContext.TraceID().String()] = true
		if sp.Name == "task fix" {
			roots++
		}
	}
	if roots != 1 || len(traces) != 1 || !strings.Contains(done.Trace, exp.GetSpans()[0].SpanContext.TraceID().String()) {
		t.Errorf("%d roots in %d traces, want one of each (task's %q)", roots, len(traces), done.Trace)
	}
}
