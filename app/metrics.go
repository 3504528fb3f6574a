package app

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pullwright/pullwright/task"
)

// metrics are the bot's Prometheus series, on a registry of its own so that
// two bots in one process (tests) do not collide.
type metrics struct {
	reg        *prometheus.Registry
	deliveries *prometheus.CounterVec
	latency    prometheus.Histogram
	steps      *prometheus.CounterVec
	stepTime   *prometheus.HistogramVec
	ended      *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_webhook_requests_total",
			Help: "Webhook requests by HTTP status answered and GitHub event.",
		}, []string{"code", "event"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pullwright_webhook_duration_seconds",
			Help:    "Time from a webhook request to its answer, store commit included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_task_steps_total",
			Help: "Task steps by kind, the state they started in, and result (ok or error).",
		}, []string{"kind", "state", "result"}),
		stepTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pullwright_task_step_duration_seconds",
			Help:    "Duration of task steps by the state they started in.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}, []string{"state"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_tasks_ended_total",
			Help: "Tasks that reached a final state, by kind and state.",
		}, []string{"kind", "state"}),
	}
	m.reg.MustRegister(m.deliveries, m.latency, m.steps, m.stepTime, m.ended,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// knownEvents bounds the event label: the header is read before anything
// proves the request came from GitHub, so any other value counts as "other".
var knownEvents = map[string]bool{
	"issue_comment": true, "check_run": true, "pull_request": true, "pull_request_review_comment": true,
	"issues": true, "ping": true, "installation": true, "installation_repositories": true,
}

func (m *metrics) webhook(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		event := r.Header.Get("X-GitHub-Event")
		if !knownEvents[event] {
			event = "other"
		}
		m.deliveries.WithLabelValues(strconv.Itoa(sw.code), event).Inc()
		m.latency.Observe(time.Since(began).Seconds())
	})
}

func (m *metrics) observe(r task.StepResult) {
	if r.From != "" && !r.From.Terminal() && r.Duration > 0 {
		result := "ok"
		if r.Err != nil {
			result = "error"
		}
		m.steps.WithLabelValues(string(r.Kind), string(r.From), result).Inc()
		m.stepTime.WithLabelValues(string(r.From)).Observe(r.Duration.Seconds())
	}
	if r.To.Terminal() && r.Err == nil {
		m.ended.WithLabelValues(string(r.Kind), string(r.To)).Inc()
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}
