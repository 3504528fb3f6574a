package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/httpretry"
)

// fail is one FailNext call.
type fail struct {
	n, status int
	header    http.Header
}

// between is a wait the jitter may put anywhere in [lo, hi].
type between struct{ lo, hi time.Duration }

func exactly(d time.Duration) between { return between{d, d} }

func TestRetries(t *testing.T) {
	// An HTTP date Retry-After is relative to the fake clock's start.
	dateIn := func(d time.Duration) func(now time.Time) string {
		return func(now time.Time) string { return now.Add(d).UTC().Format(http.TimeFormat) }
	}
	tests := []struct {
		name      string
		cfg       Config
		fails     []fail
		date      func(now time.Time) string // Retry-After of the first failure, as an HTTP date
		wantCalls int
		wantErr   int // the status of the error Turn returns; 0 for success
		wantWaits []between
	}{
		{
			name:      "429 with Retry-After in seconds",
			fails:     []fail{{1, 429, http.Header{"Retry-After": {"1"}}}},
			wantCalls: 2,
			wantWaits: []between{exactly(time.Second)},
		},
		{
			name:      "Retry-After as an HTTP date",
			fails:     []fail{{1, 503, nil}},
			date:      dateIn(7 * time.Second),
			wantCalls: 2,
			wantWaits: []between{exactly(7 * time.Second)},
		},
		{
			name:      "Retry-After longer than MaxRetryWait",
			cfg:       Config{MaxRetryWait: 5 * time.Second},
			fails:     []fail{{1, 429, http.Header{"Retry-After": {"3600"}}}},
			wantCalls: 2,
			wantWaits: []between{exactly(5 * time.Second)},
		},
		{
			name:      "unreadable Retry-After: backoff",
			fails:     []fail{{1, 429, http.Header{"Retry-After": {"soon"}}}},
			wantCalls: 2,
			wantWaits: []between{{500 * time.Millisecond, time.Second}},
		},
		{
			name:      "every retryable status, exponential backoff with jitter",
			fails:     []fail{{1, 500, nil}, {1, 502, nil}, {1, 504, nil}},
			wantCalls: 4,
			wantWaits: []between{{500 * time.Millisecond, time.Second}, {time.Second, 2 * time.Second}, {2 * time.Second, 4 * time.Second}},
		},
		{
			name:      "backoff capped by MaxRetryWait",
			cfg:       Config{RetryBackoff: 10 * time.Second, MaxRetryWait: 15 * time.Second, MaxRetries: 3},
			fails:     []fail{{3, 503, nil}},
			wantCalls: 4,
			wantWaits: []between{{5 * time.Second, 10 * time.Second}, {7500 * time.Millisecond, 15 * time.Second}, {7500 * time.Millisecond, 15 * time.Second}},
		},
		{
			name:      "gives up after MaxRetries",
			fails:     []fail{{4, 503, nil}},
			wantCalls: 4,
			wantErr:   503,
			wantWaits: []between{{500 * time.Millisecond, time.Second}, {time.Second, 2 * time.Second}, {2 * time.Second, 4 * time.Second}},
		},
		{
			name:      "fewer retries",
			cfg:       Config{MaxRetries: 1},
			fails:     []fail{{2, 429, http.Header{"Retry-After": {"2"}}}},
			wantCalls: 2,
			wantErr:   429,
			wantWaits: []between{exactly(2 * time.Second)},
		},
		{
			name:      "retries turned off",
			cfg:       Config{MaxRetries: -1},
			fails:     []fail{{1, 503, nil}},
			wantCalls: 1,
			wantErr:   503,
		},
		{
			name:      "no retry on a client error",
			fails:     []fail{{1, 400, nil}},
			wantCalls: 1,
			wantErr:   400,
		},
		{
			// The wait would end after the call's deadline: the 429 comes
			// back at once, for the task to retry later.
			name:      "no time left before the deadline",
			cfg:       Config{CallTimeout: 10 * time.Second},
			fails:     []fail{{1, 429, http.Header{"Retry-After": {"30"}}}},
			wantCalls: 1,
			wantErr:   429,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakellm.NewByTurn(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("think", `{"thought":"x"}`)}})
			a := agentFor(t, s, tt.cfg)
			clock := withClock(a)
			for i, f := range tt.fails {
				if i == 0 && tt.date != nil {
					f.header = http.Header{"Retry-After": {tt.date(clock.now())}}
				}
				s.FailNext(f.n, f.status, f.header)
			}
			st := a.Start(testBrief)
			before := clone(t, st)
			err := a.Turn(context.Background(), st, workspaceDir(t, nil))

			if tt.wantErr == 0 && (err != nil || st.Turns != 1) {
				t.Errorf("Turn = %v, turns %d; want one successful turn", err, st.Turns)
			}
			if tt.wantErr != 0 {
				var apiErr *openai.APIError
				if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != tt.wantErr {
					t.Errorf("Turn = %v, want the %d of the last try", err, tt.wantErr)
				}
				if !reflect.DeepEqual(st, before) {
					t.Error("a failed turn changed the state")
				}
			}
			if s.Calls() != tt.wantCalls {
				t.Errorf("%d requests, want %d", s.Calls(), tt.wantCalls)
			}
			// Every try sent the whole request again.
			for i, r := range s.Requests() {
				if !reflect.DeepEqual(r, s.Requests()[0]) {
					t.Errorf("request %d differs from the first", i+1)
				}
			}
			waits := clock.Waits()
			if len(waits) != len(tt.wantWaits) {
				t.Fatalf("waits %v, want %v", waits, tt.wantWaits)
			}
			for i, w := range waits {
				if w < tt.wantWaits[i].lo || w > tt.wantWaits[i].hi {
					t.Errorf("wait %d = %v, want within %v", i+1, w, tt.wantWaits[i])
				}
			}
		})
	}
}

// Connections that break before an answer are retried too.
func TestRetryBrokenConnections(t *testing.T) {
	s := fakellm.NewByTurn(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("think", `{"thought":"x"}`)}})
	target, err := url.Parse(strings.TrimSuffix(s.URL, "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var tries atomic.Int64
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tries.Add(1) <= 2 {
			// A gateway dropping the connection without an answer.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)

	a := newTestAgent(t, Config{BaseURL: flaky.URL + "/v1"})
	clock := withClock(a)
	st := a.Start(testBrief)
	if err := a.Turn(context.Background(), st, workspaceDir(t, nil)); err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if tries.Load() != 3 || s.Calls() != 1 || len(clock.Waits()) != 2 {
		t.Errorf("%d tries, %d reached the model, %d waits; want 3, 1, 2", tries.Load(), s.Calls(), len(clock.Waits()))
	}
}

// A request whose body cannot be sent again is tried once.
func TestRetryNeedsAReplayableBody(t *testing.T) {
	s := fakellm.New(t).FailNext(1, http.StatusServiceUnavailable, nil)
	a := newTestAgent(t, Config{BaseURL: s.URL})
	clock := withClock(a)
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/chat/completions",
		io.NopCloser(strings.NewReader(body))) // not a type NewRequest can rewind: no GetBody
	if err != nil {
		t.Fatal(err)
	}
	if req.GetBody != nil {
		t.Fatal("the request is replayable after all")
	}
	resp, err := a.retry.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || s.Calls() != 1 || len(clock.Waits()) != 0 {
		t.Errorf("status %d after %d requests and %d waits; want the 503 of the only try", resp.StatusCode, s.Calls(), len(clock.Waits()))
	}
}

// A caller that gives up while a retry waits gets its context's error.
func TestRetryWaitEndsWithTheContext(t *testing.T) {
	s := fakellm.New(t).FailNext(1, http.StatusTooManyRequests, http.Header{"Retry-After": {"30"}})
	a := newTestAgent(t, Config{BaseURL: s.URL})
	ctx, cancel := context.WithCancel(context.Background())
	a.retry.sleep = func(ctx context.Context, d time.Duration) error {
		cancel() // the task is cancelled during the wait
		return httpretry.Sleep(ctx, d)
	}
	err := a.Turn(ctx, a.Start(testBrief), workspaceDir(t, nil))
	if !errors.Is(err, context.Canceled) || IsTransient(err) {
		t.Errorf("err = %v, want a cancellation, not transient", err)
	}
	if s.Calls() != 1 {
		t.Errorf("%d requests, want 1", s.Calls())
	}
}

func TestNewRetryDefaults(t *testing.T) {
	a, err := New(Config{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if a.retry.maxRetries != 3 || a.retry.backoff != time.Second || a.retry.maxWait != time.Minute || a.retry.next != http.DefaultTransport {
		t.Errorf("retry transport = %+v", a.retry)
	}
	// The caller's client keeps its transport; the agent wraps it.
	own := &http.Transport{}
	hc := &http.Client{Transport: own}
	a, err = New(Config{Model: "m", HTTPClient: hc, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if a.retry.next != own || hc.Transport != own || a.retry.maxRetries != 0 {
		t.Errorf("retry transport wraps %v with %d retries; caller's transport now %v", a.retry.next, a.retry.maxRetries, hc.Transport)
	}
	for _, cfg := range []Config{{Model: "m", RetryBackoff: -time.Second}, {Model: "m", MaxRetryWait: -time.Second}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
