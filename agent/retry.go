package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/pullwright/pullwright/internal/httpretry"
)

// Defaults of the retry settings of Config.
const (
	DefaultMaxRetries   = 3
	DefaultRetryBackoff = time.Second
	DefaultMaxRetryWait = time.Minute
)

// retryTransport retries a model request that failed in a way the next try
// may not: a rate limit (429), an overloaded or restarting server (500, 502,
// 503, 504), or a connection that could not be made or broke. Retrying here,
// inside one model call, keeps a busy endpoint from failing a turn (and, in
// the task package, from being retried a whole turn at a time); the deadline
// of the call bounds all tries together. The loop is httpretry's; this is
// the model client's httpretry.Policy.
type retryTransport struct {
	next       http.RoundTripper
	maxRetries int           // tries after the first; 0 means none
	backoff    time.Duration // first wait without Retry-After, doubled each try
	maxWait    time.Duration // longest single wait
	log        *slog.Logger

	// sleep and now are the clock; tests replace them to see the waits
	// without waiting.
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time
}

func newRetryTransport(next http.RoundTripper, cfg Config, log *slog.Logger) *retryTransport {
	if next == nil {
		next = http.DefaultTransport
	}
	return &retryTransport{
		next:       next,
		maxRetries: max(cfg.MaxRetries, 0),
		backoff:    cfg.RetryBackoff,
		maxWait:    cfg.MaxRetryWait,
		log:        log,
		sleep:      httpretry.Sleep,
		now:        time.Now,
	}
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return httpretry.Transport{Next: t.next, Policy: t, MaxRetries: t.maxRetries, MaxWait: t.maxWait,
		Sleep: t.sleep, Now: t.now}.RoundTrip(req)
}

// Retry implements httpretry.Policy: the wait is what the server asked for
// in Retry-After, else exponential backoff with jitter; never more than
// maxWait.
func (t *retryTransport) Retry(req *http.Request, attempt int, resp *http.Response, err error) (time.Duration, string, bool) {
	if req.Context().Err() != nil || !retryable(resp, err) {
		return 0, "", false
	}
	if resp != nil {
		if d, ok := httpretry.RetryAfter(resp.Header.Get("Retry-After"), t.now()); ok {
			return min(d, t.maxWait), "", true
		}
	}
	return httpretry.Backoff(t.backoff, t.maxWait, attempt), "", true
}

// GiveUp implements httpretry.Policy: the caller gets the last try's answer
// as it is, while it still has time to act on it.
func (t *retryTransport) GiveUp(f httpretry.Failure, why httpretry.Refusal) (*http.Response, error) {
	if why == httpretry.PastDeadline {
		t.log.Warn("model endpoint failed; no time left to retry within the call's deadline",
			append(failedTry(f), "host", f.Req.URL.Host, "attempt", f.Attempt, "wait", f.Wait)...)
	}
	return f.Resp, f.Err
}

// Retrying implements httpretry.Policy.
func (t *retryTransport) Retrying(f httpretry.Failure) {
	t.log.Warn("model endpoint failed; retrying",
		append(failedTry(f), "host", f.Req.URL.Host, "attempt", f.Attempt, "max_retries", t.maxRetries, "wait", f.Wait)...)
}

// failedTry describes a failed try for the log.
func failedTry(f httpretry.Failure) []any {
	if f.Err != nil {
		return []any{"err", f.Err}
	}
	return []any{"status", f.Resp.StatusCode}
}

// retryable reports whether a try that ended with resp or err may succeed
// when made again.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return connectionError(err)
	}
	return resp.StatusCode == http.StatusTooManyRequests || httpretry.ServerFailed(resp.StatusCode)
}

// connectionError reports whether err is a failure to connect, or a
// connection that broke or timed out, rather than, say, a bad certificate
// or a malformed URL, which no retry cures.
func connectionError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &opErr) || (errors.As(err, &dnsErr) && (dnsErr.IsTemporary || dnsErr.IsTimeout))
}
