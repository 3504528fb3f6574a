package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
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
// of the call bounds all tries together.
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
		sleep:      sleepContext,
		now:        time.Now,
	}
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// maxDrainBytes is how much of a failed response's body is read before it
// is closed, so that its connection can be reused.
const maxDrainBytes = 64 << 10

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	// A body that cannot be sent again (no GetBody) allows one try only.
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	try := req
	for attempt := 0; ; attempt++ {
		resp, err := t.next.RoundTrip(try)
		if attempt >= t.maxRetries || !replayable || ctx.Err() != nil || !retryable(resp, err) {
			return resp, err
		}
		wait := t.wait(attempt, resp)
		if deadline, ok := ctx.Deadline(); ok && t.now().Add(wait).After(deadline) {
			// The wait would outlast the call: hand back what we have now,
			// while the caller still has time to act on it.
			t.log.Warn("model endpoint failed; no time left to retry within the call's deadline",
				append(failedTry(resp, err), "host", req.URL.Host, "attempt", attempt+1, "wait", wait)...)
			return resp, err
		}
		t.log.Warn("model endpoint failed; retrying",
			append(failedTry(resp, err), "host", req.URL.Host, "attempt", attempt+1, "max_retries", t.maxRetries, "wait", wait)...)
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
			resp.Body.Close()
		}
		if err := t.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("wait to retry %s %s: %w", req.Method, req.URL.Redacted(), err)
		}
		// A RoundTripper must not change the caller's request: each retry
		// goes out on a copy with a fresh body.
		try = req.Clone(ctx)
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("retry %s %s: rewind the request body: %w", req.Method, req.URL.Redacted(), err)
			}
			try.Body = body
		}
	}
}

// failedTry describes a failed try for the log.
func failedTry(resp *http.Response, err error) []any {
	if err != nil {
		return []any{"err", err}
	}
	return []any{"status", resp.StatusCode}
}

// retryable reports whether a try that ended with resp or err may succeed
// when made again.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return connectionError(err)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
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

// wait is how long to wait before try attempt+2: what the server asked for
// in Retry-After, else exponential backoff with jitter; never more than
// maxWait.
func (t *retryTransport) wait(attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), t.now()); ok {
			return min(d, t.maxWait)
		}
	}
	d := t.backoff
	for i := 0; i < attempt && d < t.maxWait; i++ {
		d *= 2
	}
	d = min(d, t.maxWait)
	// Jitter over the upper half spreads out the tasks that a rate limit
	// hit at the same moment, without ever waiting less than half the
	// backoff.
	half := d / 2
	return half + rand.N(d-half+1)
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}
