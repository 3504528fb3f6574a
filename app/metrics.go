package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/task"
)

// metrics are the bot's Prometheus series, on a registry of its own so that
// two bots in one process (tests) do not collide. Every label takes its
// values from a fixed set, so no request can add series: the repo and
// model labels are bounded too, by the repositories the App is installed
// on and the models the operator allows.
type metrics struct {
	reg          *prometheus.Registry
	log          *slog.Logger
	requests     *prometheus.CounterVec
	latency      prometheus.Histogram
	deliveries   *prometheus.CounterVec
	steps        *prometheus.CounterVec
	stepTime     *prometheus.HistogramVec
	ended        *prometheus.CounterVec
	approvalWait *prometheus.HistogramVec
	runs         *prometheus.CounterVec
	runTime      *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	modelTokens  *prometheus.CounterVec
	cost         *prometheus.CounterVec
	turns        prometheus.Counter
	llmErrors    *prometheus.CounterVec
	depCaches    *prometheus.CounterVec
	cacheBytes   prometheus.Gauge
	evictions    prometheus.Counter
	setupTime    prometheus.Histogram
	fenceBlocked prometheus.Counter
}

// Label values known in advance: their series exist from the start, at 0.
var (
	verdicts       = []task.Verdict{task.Approved, task.Rejected, task.TimedOut}
	runOutcomes    = []string{"ok", "failed", "timed_out", "oom_killed", "error"}
	tokenTypes     = []string{"prompt", "completion"}
	llmErrorKinds  = []string{"transient", "permanent"}
	cacheResults   = []string{"hit", "miss", "failed", "error"}
	unfinishedTask = []task.State{task.Queued, task.Preparing, task.Working, task.AwaitingApproval, task.Running, task.Publishing}
)

// counter is the part of task.Store the tasks gauge reads.
type counter interface {
	Counts(ctx context.Context) (map[task.State]int, error)
}

func newMetrics(store counter, log *slog.Logger) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		log: log,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_webhook_requests_total",
			Help: "Webhook requests by HTTP status answered and GitHub event.",
		}, []string{"code", "event"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pullwright_webhook_duration_seconds",
			Help:    "Time from a webhook request to its answer, store commit included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_deliveries_total",
			Help: "Webhook deliveries by GitHub event and what the bot made of them (the outcome it logs).",
		}, []string{"event", "outcome"}),
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
		approvalWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pullwright_approval_wait_seconds",
			Help:    "Time from an execution request being shown to its answer, by verdict (approved, rejected, timed_out). Auto-approved requests are not counted.",
			Buckets: []float64{10, 30, 60, 120, 300, 600, 1800, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 24 * 3600, 48 * 3600},
		}, []string{"verdict"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_sandbox_runs_total",
			Help: "Approved commands run in the sandbox, by outcome: ok, failed (non-zero exit), timed_out, oom_killed, error (the sandbox itself failed).",
		}, []string{"outcome"}),
		runTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pullwright_sandbox_run_duration_seconds",
			Help:    "Wall time of a sandbox run, workspace copy and container included, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 15),
		}, []string{"outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_llm_tokens_total",
			Help: "Tokens the model reported using, by type (prompt or completion).",
		}, []string{"type"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_model_tokens_total",
			Help: "Tokens the model calls used, by repository, model and kind: prompt (cached ones included), cached (the part of prompt the endpoint served from its cache) and completion. Estimated from the sizes sent and answered when the endpoint reports no usage.",
		}, []string{"repo", "model", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_model_cost_usd_total",
			Help: "What the model calls cost in USD at the operator's prices, by repository and model. Calls of a model without a price add nothing.",
		}, []string{"repo", "model"}),
		turns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pullwright_llm_turns_total",
			Help: "Model calls answered (agent turns).",
		}),
		llmErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_llm_errors_total",
			Help: "Agent turns that failed, after the agent's own retries, by kind: transient (429, 5xx, timeouts, connection errors; the task retries) or permanent (the task fails).",
		}, []string{"kind"}),
		depCaches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pullwright_dependency_cache_total",
			Help: "Approved runs of repositories with a setup, by what their dependency cache was: hit (ready, no setup), miss (setup ran and filled it), failed (setup failed; the command did not run), error (setup could not run).",
		}, []string{"result"}),
		setupTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pullwright_setup_duration_seconds",
			Help:    "Wall time of a repository's setup behind the fence, sandbox included.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12),
		}),
		fenceBlocked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pullwright_fence_blocked_total",
			Help: "Hosts the fence refused a setup, counted once per setup and host.",
		}),
		cacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pullwright_dependency_cache_bytes",
			Help: "Bytes the ready dependency caches hold on the Docker engine's disk, as measured after the last setup and its evictions.",
		}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pullwright_dependency_cache_evictions_total",
			Help: "Dependency caches removed to keep within caches.keep, caches.repo_size and caches.host_size, least recently used first.",
		}),
	}
	for _, r := range cacheResults {
		m.depCaches.WithLabelValues(r)
	}
	for _, v := range verdicts {
		m.approvalWait.WithLabelValues(string(v))
	}
	for _, o := range runOutcomes {
		m.runs.WithLabelValues(o)
		m.runTime.WithLabelValues(o)
	}
	for _, t := range tokenTypes {
		m.tokens.WithLabelValues(t)
	}
	for _, k := range llmErrorKinds {
		m.llmErrors.WithLabelValues(k)
	}
	m.reg.MustRegister(m.requests, m.latency, m.deliveries, m.steps, m.stepTime, m.ended,
		m.approvalWait, m.runs, m.runTime, m.tokens, m.modelTokens, m.cost, m.turns, m.llmErrors, m.depCaches, m.setupTime, m.fenceBlocked,
		m.cacheBytes, m.evictions,
		&taskGauge{store: store, desc: prometheus.NewDesc("pullwright_tasks",
			"Tasks not yet ended, by state, read from the store at scrape time.", []string{"state"}, nil)},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// knownEvents bounds the event label: the header is read before anything
// proves the request came from GitHub, so any other value counts as "other".
var knownEvents = map[string]bool{
	"issue_comment": true, "check_run": true, "pull_request": true, "pull_request_review_comment": true,
	"issues": true, "ping": true, "installation": true, "installation_repositories": true,
}

func eventLabel(event string) string {
	if !knownEvents[event] {
		return "other"
	}
	return event
}

func (m *metrics) webhook(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		m.requests.WithLabelValues(strconv.Itoa(sw.code), eventLabel(r.Header.Get("X-GitHub-Event"))).Inc()
		m.latency.Observe(time.Since(began).Seconds())
	})
}

// delivery is webhook.Config.Observe: the handler bounds the outcome.
func (m *metrics) delivery(event, outcome string) {
	m.deliveries.WithLabelValues(eventLabel(event), outcome).Inc()
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
	if r.Answer != nil {
		switch v := r.Answer.Verdict; v {
		case task.Approved, task.Rejected, task.TimedOut:
			m.approvalWait.WithLabelValues(string(v)).Observe(r.Waited.Seconds())
		}
	}
}

// run counts one sandbox run.
// setup counts what a run's dependencies took: a cache hit, a setup that
// filled one or failed, or an error; and what the fence refused.
func (m *metrics) setup(ready pullwright.SetupResult, err error) {
	switch s := ready.Record; {
	case err != nil:
		m.depCaches.WithLabelValues("error").Inc()
	case s == nil && len(ready.Caches) > 0:
		m.depCaches.WithLabelValues("hit").Inc()
	case s != nil:
		result := "miss"
		if s.Failed {
			result = "failed"
		}
		m.depCaches.WithLabelValues(result).Inc()
		m.setupTime.Observe(s.Duration.Seconds())
		m.fenceBlocked.Add(float64(len(s.Blocked)))
	}
}

// caches records what a setup's eviction measured and removed.
func (m *metrics) caches(bytes int64, evicted int) {
	m.cacheBytes.Set(float64(bytes))
	m.evictions.Add(float64(evicted))
}

func (m *metrics) run(res pullwright.RunResult, err error, took time.Duration) {
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case res.OOMKilled:
		outcome = "oom_killed"
	case res.TimedOut:
		outcome = "timed_out"
	case res.ExitCode != 0:
		outcome = "failed"
	}
	m.runs.WithLabelValues(outcome).Inc()
	m.runTime.WithLabelValues(outcome).Observe(took.Seconds())
}

// turn counts what one agent turn of a task on repo spent, and its
// failure. A turn the budget refused, or one cut short by a shutdown, is
// no model error. Like the token counts, the cost is the turn's own: a
// turn the task retries after a failure made its calls, and they count.
func (m *metrics) turn(repo string, u turnUsage) {
	if u.Turns > 0 {
		m.turns.Add(float64(u.Turns))
	}
	if u.PromptTokens > 0 {
		m.tokens.WithLabelValues("prompt").Add(float64(u.PromptTokens))
	}
	if u.CompletionTokens > 0 {
		m.tokens.WithLabelValues("completion").Add(float64(u.CompletionTokens))
	}
	for _, s := range u.Spend.Models {
		for _, k := range []struct {
			kind string
			n    int
		}{{"prompt", s.PromptTokens}, {"cached", s.CachedTokens}, {"completion", s.CompletionTokens}} {
			if k.n > 0 {
				m.modelTokens.WithLabelValues(repo, s.Model, k.kind).Add(float64(k.n))
			}
		}
		// An unpriced model's USD is 0, not its cost; and a difference of
		// sums may be a rounding below 0, which a counter refuses.
		if !s.Unpriced && s.USD > 0 {
			m.cost.WithLabelValues(repo, s.Model).Add(s.USD)
		}
	}
	switch err := u.Err; {
	case err == nil, errors.Is(err, agent.ErrBudget), errors.Is(err, context.Canceled):
	case agent.IsTransient(err):
		m.llmErrors.WithLabelValues("transient").Inc()
	default:
		m.llmErrors.WithLabelValues("permanent").Inc()
	}
}

// taskGauge reads the number of unfinished tasks by state from the store
// at each scrape. Ended tasks are left out: their number only grows (see
// pullwright_tasks_ended_total), and counting them would read the whole
// table at every scrape.
type taskGauge struct {
	store counter
	desc  *prometheus.Desc
}

func (g *taskGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *taskGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := g.store.Counts(ctx)
	if err != nil {
		// The other series are still served (ContinueOnError).
		ch <- prometheus.NewInvalidMetric(g.desc, err)
		return
	}
	for _, s := range unfinishedTask {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n[s]), string(s))
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:      m.reg,
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slog.NewLogLogger(m.log.Handler(), slog.LevelError),
	})
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
