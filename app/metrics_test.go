package app_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// scrape is one parsed answer of GET /metrics.
type scrape map[string]*dto.MetricFamily

// scrape GETs /metrics and parses it as Prometheus scrapes it.
func (e *env) scrape() scrape {
	e.t.Helper()
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("GET /metrics = %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		e.t.Fatalf("GET /metrics Content-Type = %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// get returns the value of the series of family name whose labels are
// exactly labels ("k=v" pairs): a counter's or gauge's value, a
// histogram's observation count. ok is false when there is no such series.
func (s scrape) get(name string, labels ...string) (v float64, ok bool) {
	f := s[name]
	if f == nil {
		return 0, false
	}
	want := append([]string(nil), labels...)
	sort.Strings(want)
	for _, m := range f.GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// check is one expected series value.
type check struct {
	name   string
	labels []string
	want   float64
}

func (s scrape) check(t *testing.T, checks []check) {
	t.Helper()
	for _, c := range checks {
		got, ok := s.get(c.name, c.labels...)
		switch {
		case !ok:
			t.Errorf("%s{%s}: no such series", c.name, strings.Join(c.labels, ","))
		case got != c.want:
			t.Errorf("%s{%s} = %v, want %v", c.name, strings.Join(c.labels, ","), got, c.want)
		}
	}
}

// tasksGauge lists pullwright_tasks for every unfinished state: want for
// the states named, 0 for the others.
func tasksGauge(want map[task.State]float64) []check {
	var out []check
	for _, s := range []task.State{task.Queued, task.Preparing, task.Working, task.AwaitingApproval, task.Running, task.Publishing} {
		out = append(out, check{"pullwright_tasks", []string{"state=" + string(s)}, want[s]})
	}
	return out
}

// deliverUnsigned posts a delivery whose signature is wrong.
func (e *env) deliverUnsigned(id, event string, body []byte) int {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+"/webhook", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// One approved fix, a redelivery and a forged delivery, then a scrape:
// every series the issue asks for counts what happened.
func TestMetricsCountAnApprovedFix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newRunLLM(t, "grep -c commit README.md"))
	e.gh.SetPermission(owner, repoName, "maintainer", "write")

	// Before anything happened the series are there, at zero.
	e.scrape().check(t, append(tasksGauge(nil),
		check{"pullwright_llm_errors_total", []string{"kind=transient"}, 0},
		check{"pullwright_sandbox_runs_total", []string{"outcome=ok"}, 0},
		check{"pullwright_approval_wait_seconds", []string{"verdict=approved"}, 0},
	))

	if code := e.comment("d1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
		t.Fatalf("fix answered %d", code)
	}
	e.waitState(1, task.AwaitingApproval)
	// The wait is a row in the store, and the gauge reads the store.
	e.scrape().check(t, tasksGauge(map[task.State]float64{task.AwaitingApproval: 1}))

	if code := e.comment("d1", 1, owner, "/agent fix the typo"); code != http.StatusOK {
		t.Fatalf("redelivery answered %d, want 200", code)
	}
	if code := e.deliverUnsigned("forged", "issue_comment", e.payload("/approve", nil)); code != http.StatusUnauthorized {
		t.Fatalf("forged delivery answered %d, want 401", code)
	}
	if code := e.comment("d2", 1, "maintainer", "/approve"); code != http.StatusAccepted {
		t.Fatalf("approve answered %d", code)
	}
	done := e.waitTask(1)
	if done.State != task.Done || tasktest.Job(done).PRNumber == 0 {
		t.Fatalf("task ended %s (pull request %d): %s\n%s", done.State, tasktest.Job(done).PRNumber, done.Error, e.logs.String())
	}

	calls := float64(e.llm.Calls())
	if calls != 3 {
		t.Fatalf("the model was called %v times, want 3", calls)
	}
	s := e.scrape()
	s.check(t, append(tasksGauge(nil), []check{
		{"pullwright_deliveries_total", []string{"event=issue_comment", "outcome=fix"}, 1},
		{"pullwright_deliveries_total", []string{"event=issue_comment", "outcome=duplicate"}, 1},
		{"pullwright_deliveries_total", []string{"event=issue_comment", "outcome=bad_signature"}, 1},
		{"pullwright_deliveries_total", []string{"event=issue_comment", "outcome=approve"}, 1},
		{"pullwright_webhook_requests_total", []string{"code=401", "event=issue_comment"}, 1},
		{"pullwright_tasks_ended_total", []string{"kind=fix", "state=done"}, 1},
		{"pullwright_tasks_ended_total", []string{"kind=approve", "state=done"}, 1},
		{"pullwright_approval_wait_seconds", []string{"verdict=approved"}, 1},
		{"pullwright_approval_wait_seconds", []string{"verdict=rejected"}, 0},
		{"pullwright_approval_wait_seconds", []string{"verdict=timed_out"}, 0},
		{"pullwright_sandbox_runs_total", []string{"outcome=ok"}, 1},
		{"pullwright_sandbox_runs_total", []string{"outcome=failed"}, 0},
		{"pullwright_sandbox_runs_total", []string{"outcome=error"}, 0},
		{"pullwright_sandbox_run_duration_seconds", []string{"outcome=ok"}, 1},
		// Every call answered with fakellm's default usage.
		{"pullwright_llm_turns_total", nil, calls},
		{"pullwright_llm_tokens_total", []string{"type=prompt"}, calls * fakellm.DefaultPromptTokens},
		{"pullwright_llm_tokens_total", []string{"type=completion"}, calls * fakellm.DefaultCompletionTokens},
		{"pullwright_llm_errors_total", []string{"kind=transient"}, 0},
		{"pullwright_llm_errors_total", []string{"kind=permanent"}, 0},
	}...))
	// The tokens counted are the ones the task recorded.
	prompt, _ := s.get("pullwright_llm_tokens_total", "type=prompt")
	completion, _ := s.get("pullwright_llm_tokens_total", "type=completion")
	if int(prompt+completion) != tasktest.Job(done).Tokens {
		t.Errorf("tokens counted = %v, the task recorded %d", prompt+completion, tasktest.Job(done).Tokens)
	}
	// The wait is the time the request was shown, no more than the test took.
	if h := s["pullwright_approval_wait_seconds"]; h != nil {
		for _, m := range h.GetMetric() {
			if sum := m.GetHistogram().GetSampleSum(); sum < 0 || sum > time.Minute.Seconds() {
				t.Errorf("approval wait sum = %v seconds", sum)
			}
		}
	}
}

// A request rejected or left to time out is counted under its verdict.
func TestMetricsApprovalWaitByVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		verdict task.Verdict
		timeout time.Duration
		answer  func(e *env, r *task.ExecRequest)
	}{
		{task.Rejected, 0, func(e *env, r *task.ExecRequest) {
			if code := e.button("b1", "maintainer", "reject", r.ID, r.SHA); code != http.StatusAccepted {
				e.t.Fatalf("button answered %d", code)
			}
		}},
		{task.TimedOut, 300 * time.Millisecond, nil},
	}
	for _, tc := range tests {
		t.Run(string(tc.verdict), func(t *testing.T) {
			e := newEnv(t, newRunLLM(t, "make test"), func(c *app.Config) { c.ApprovalTimeout = tc.timeout })
			e.gh.SetPermission(owner, repoName, "maintainer", "maintain")
			e.comment("d1", 1, owner, "/agent fix the typo")
			if tc.answer != nil {
				tc.answer(e, tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request)
			}
			if done := e.waitTask(1); done.State != task.Done {
				t.Fatalf("task ended %s: %s", done.State, done.Error)
			}
			var checks []check
			for _, v := range []task.Verdict{task.Approved, task.Rejected, task.TimedOut} {
				want := 0.0
				if v == tc.verdict {
					want = 1
				}
				checks = append(checks, check{"pullwright_approval_wait_seconds", []string{"verdict=" + string(v)}, want})
			}
			// Nothing ran.
			for _, o := range []string{"ok", "failed", "timed_out", "oom_killed", "error"} {
				checks = append(checks, check{"pullwright_sandbox_runs_total", []string{"outcome=" + o}, 0})
			}
			e.scrape().check(t, checks)
		})
	}
}

// A model endpoint that fails moves the error counter by kind: a 5xx is
// retried by the task, a 4xx fails it.
func TestMetricsCountModelErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status          int
		state           task.State
		transient, perm float64
	}{
		{http.StatusInternalServerError, task.Done, 1, 0},
		{http.StatusBadRequest, task.Failed, 0, 1},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			llm := fakellm.New(t, fixScript()...).FailNext(1, tc.status, nil)
			e := newEnv(t, llm)
			e.comment("d1", 1, owner, "/agent fix the spelling")
			if done := e.waitTask(1); done.State != tc.state {
				t.Fatalf("task ended %s, want %s: %s", done.State, tc.state, done.Error)
			}
			answered := float64(llm.Calls() - 1)
			e.scrape().check(t, []check{
				{"pullwright_llm_errors_total", []string{"kind=transient"}, tc.transient},
				{"pullwright_llm_errors_total", []string{"kind=permanent"}, tc.perm},
				{"pullwright_llm_turns_total", nil, answered},
				{"pullwright_llm_tokens_total", []string{"type=prompt"}, answered * fakellm.DefaultPromptTokens},
				{"pullwright_tasks_ended_total", []string{"kind=fix", "state=" + string(tc.state)}, 1},
			})
		})
	}
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.New(t))
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	tests := []struct {
		name     string
		before   func()
		path     string
		code     int
		body     string
		contains bool
	}{
		{"ready", nil, "/readyz", http.StatusOK, "ready", false},
		{"alive", nil, "/healthz", http.StatusOK, "ok", false},
		{"store closed", func() { e.bot.Store().Close() }, "/readyz", http.StatusServiceUnavailable, "store unavailable", false},
		{"alive without a store", nil, "/healthz", http.StatusOK, "ok", false},
		// The scrape still answers, without the gauge it cannot read.
		{"metrics without a store", nil, "/metrics", http.StatusOK, "pullwright_llm_errors_total", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			code, body := get(tc.path)
			if code != tc.code || (tc.contains && !strings.Contains(body, tc.body)) || (!tc.contains && body != tc.body) {
				t.Fatalf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
			}
			if tc.path == "/metrics" && strings.Contains(body, "pullwright_tasks{") {
				t.Errorf("the tasks gauge is served without a store:\n%s", body)
			}
		})
	}
}
