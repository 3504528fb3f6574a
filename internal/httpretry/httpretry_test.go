package httpretry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// policy retries every 503, and what it got told is recorded.
type policy struct {
	wait     time.Duration
	retrying []Failure
	gaveUp   Refusal
}

func (p *policy) Retry(req *http.Request, attempt int, resp *http.Response, err error) (time.Duration, string, bool) {
	return p.wait, "busy", err == nil && resp.StatusCode == http.StatusServiceUnavailable
}

func (p *policy) GiveUp(f Failure, why Refusal) (*http.Response, error) {
	p.gaveUp = why
	return f.Resp, f.Err
}

func (p *policy) Retrying(f Failure) { p.retrying = append(p.retrying, f) }

// server answers 503 to the first fails requests, then 200, and records the
// bodies it got; each failure's body is big, to see how much of it is read.
type server struct {
	fails int

	mu     sync.Mutex
	bodies []string
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	n := len(s.bodies)
	s.mu.Unlock()
	if n <= s.fails {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
		return
	}
	_, _ = io.WriteString(w, "ok")
}

// clock records the waits instead of sleeping.
type clock struct {
	t     time.Time
	waits []time.Duration
}

func (c *clock) now() time.Time { return c.t }

func (c *clock) sleep(ctx context.Context, d time.Duration) error {
	c.waits = append(c.waits, d)
	c.t = c.t.Add(d)
	return ctx.Err()
}

func transport(next http.RoundTripper, p Policy, c *clock) Transport {
	return Transport{Next: next, Policy: p, MaxRetries: 3, MaxWait: time.Minute, Sleep: c.sleep, Now: c.now}
}

func TestRetryRewindsTheBody(t *testing.T) {
	s := &server{fails: 2}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	p, c := &policy{wait: time.Second}, &clock{t: time.Now()}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := transport(srv.Client().Transport, p, c).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(s.bodies) != 3 || len(c.waits) != 2 || len(p.retrying) != 2 {
		t.Fatalf("status %d after %d tries, waits %v, %d retries logged; want 200 after 3, 2 waits",
			resp.StatusCode, len(s.bodies), c.waits, len(p.retrying))
	}
	for i, b := range s.bodies {
		if b != "payload" {
			t.Errorf("try %d sent %q, want the whole body again", i+1, b)
		}
	}
	if f := p.retrying[1]; f.Attempt != 2 || f.Req != req || f.Reason != "busy" || f.Wait != time.Second {
		t.Errorf("second retry told %+v", f)
	}
}

// A request whose body cannot be read again is tried once.
func TestNoRetryWithoutGetBody(t *testing.T) {
	s := &server{fails: 1}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	p, c := &policy{}, &clock{t: time.Now()}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, io.NopCloser(strings.NewReader("x")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := transport(srv.Client().Transport, p, c).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || len(s.bodies) != 1 || len(c.waits) != 0 {
		t.Errorf("status %d after %d tries and %d waits; want the only try's 503", resp.StatusCode, len(s.bodies), len(c.waits))
	}
}

// body counts what is read of it and whether it was closed.
type body struct {
	r      io.Reader
	read   int
	closed bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += n
	return n, err
}

func (b *body) Close() error { b.closed = true; return nil }

// answers is a RoundTripper that hands out its responses in turn.
type answers []*http.Response

func (a *answers) RoundTrip(*http.Request) (*http.Response, error) {
	r := (*a)[0]
	*a = (*a)[1:]
	return r, nil
}

func answer(status int, b *body) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: b}
}

// A failed try's body is read up to 64 KiB, so that the connection can be
// used again, and closed.
func TestRetryDrainsTheFailedAnswer(t *testing.T) {
	big := &body{r: strings.NewReader(strings.Repeat("x", 1<<20))}
	next := &answers{answer(http.StatusServiceUnavailable, big), answer(http.StatusOK, &body{r: strings.NewReader("")})}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "http://example.test/", nil)
	resp, err := transport(next, &policy{}, &clock{}).RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("RoundTrip = %v, %v", resp, err)
	}
	if big.read != maxDrainBytes || !big.closed {
		t.Errorf("read %d bytes of the failed answer, closed %v; want %d, closed", big.read, big.closed, maxDrainBytes)
	}
}

func TestGiveUp(t *testing.T) {
	tests := []struct {
		name      string
		wait      time.Duration
		deadline  time.Duration // 0: none
		want      Refusal
		wantTries int
	}{
		{name: "budget spent", wait: time.Second, want: BudgetSpent, wantTries: 4},
		{name: "wait longer than MaxWait", wait: time.Hour, want: TooLong, wantTries: 1},
		{name: "wait past the deadline", wait: 30 * time.Second, deadline: 10 * time.Second, want: PastDeadline, wantTries: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tries int
			next := roundTripper(func(*http.Request) (*http.Response, error) {
				tries++
				return answer(http.StatusServiceUnavailable, &body{r: strings.NewReader("busy")}), nil
			})
			ctx := t.Context()
			c := &clock{t: time.Now()}
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, c.t.Add(tt.deadline))
				defer cancel()
			}
			p := &policy{wait: tt.wait}
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
			resp, err := transport(next, p, c).RoundTrip(req)
			if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("RoundTrip = %v, %v; want GiveUp's answer, the last 503", resp, err)
			}
			if p.gaveUp != tt.want || tries != tt.wantTries || len(c.waits) != tt.wantTries-1 {
				t.Errorf("gave up for %d after %d tries and waits %v; want %d after %d", p.gaveUp, tries, c.waits, tt.want, tt.wantTries)
			}
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A caller that gives up during a wait gets its context's error at once.
func TestCancelDuringWait(t *testing.T) {
	var tries int
	next := roundTripper(func(*http.Request) (*http.Response, error) {
		tries++
		return answer(http.StatusServiceUnavailable, &body{r: strings.NewReader("")}), nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	tr := Transport{Next: next, Policy: &policy{wait: time.Hour}, MaxRetries: 3, MaxWait: 2 * time.Hour, Now: time.Now,
		Sleep: func(ctx context.Context, d time.Duration) error {
			cancel()
			return Sleep(ctx, d) // really wait, for up to an hour
		}}
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
	resp, err := tr.RoundTrip(req)
	if resp != nil || !errors.Is(err, context.Canceled) || tries != 1 {
		t.Errorf("RoundTrip = %v, %v after %d tries; want context.Canceled after 1", resp, err, tries)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(t.Context(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, d := range []time.Duration{0, time.Hour} {
		if err := Sleep(ctx, d); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep(cancelled, %v) = %v, want context.Canceled", d, err)
		}
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		first, most time.Duration
		attempt     int
		lo, hi      time.Duration
	}{
		{time.Second, time.Minute, 1, 500 * time.Millisecond, time.Second},
		{time.Second, time.Minute, 3, 2 * time.Second, 4 * time.Second},
		{10 * time.Second, 15 * time.Second, 2, 7500 * time.Millisecond, 15 * time.Second},
		{time.Second, time.Minute, 1000, 30 * time.Second, time.Minute}, // no overflow
		{0, time.Minute, 3, 0, 0},
	}
	for _, tt := range tests {
		for range 100 {
			if d := Backoff(tt.first, tt.most, tt.attempt); d < tt.lo || d > tt.hi {
				t.Errorf("Backoff(%v, %v, %d) = %v, want within [%v, %v]", tt.first, tt.most, tt.attempt, d, tt.lo, tt.hi)
				break
			}
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true}, // already past: retry now
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"99999999999999999999", 0, false},
		{"9999999999", 24 * time.Hour, true}, // bounded before MaxRetryWait applies
	}
	for _, tt := range tests {
		got, ok := RetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// A body that cannot be had again ends the retries with an error.
func TestRewindFails(t *testing.T) {
	next := &answers{answer(http.StatusServiceUnavailable, &body{r: strings.NewReader("")})}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://example.test/", strings.NewReader("x"))
	gone := errors.New("gone")
	req.GetBody = func() (io.ReadCloser, error) { return nil, gone }
	resp, err := transport(next, &policy{}, &clock{}).RoundTrip(req)
	if resp != nil || !errors.Is(err, gone) || !strings.Contains(err.Error(), "rewind the request body") {
		t.Errorf("RoundTrip = %v, %v; want the rewind's error", resp, err)
	}
}

func TestServerFailed(t *testing.T) {
	for status, want := range map[int]bool{500: true, 502: true, 503: true, 504: true, 501: false, 429: false, 404: false, 200: false} {
		if got := ServerFailed(status); got != want {
			t.Errorf("ServerFailed(%d) = %v, want %v", status, got, want)
		}
	}
}
