package ghapp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// retryTransport retries GitHub requests. It sits under ghinstallation, so
// token minting (POST /app/installations/{id}/access_tokens) is retried too.
//
//   - 429, and 403 with X-RateLimit-Remaining: 0 or a Retry-After header
//     (primary and secondary rate limits), are retried for every method: GitHub
//     did not apply the request.
//   - 500, 502, 503 and 504, and network errors, are retried only for
//     idempotent methods; a POST that hit one may have been applied, and the
//     callers' marker search or head lookup handles that.
//
// The wait is Retry-After (seconds or HTTP date), else the time until
// X-RateLimit-Reset when the limit is spent, else exponential backoff with
// jitter from minBackoff. A wait longer than maxWait, or one that would pass
// the context's deadline, fails at once with a *RetryError instead of
// sleeping. Logs carry method, path, status, attempt and wait, never headers.
type retryTransport struct {
	next       http.RoundTripper
	log        *slog.Logger
	maxRetries int
	minBackoff time.Duration
	maxWait    time.Duration

	// Seams for tests.
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time
}

func newRetryTransport(next http.RoundTripper, log *slog.Logger, maxRetries int, minBackoff, maxWait time.Duration) *retryTransport {
	return &retryTransport{
		next: next, log: log, maxRetries: maxRetries, minBackoff: minBackoff, maxWait: maxWait,
		sleep: sleepCtx, now: time.Now,
	}
}

// RetryError is returned when the transport gives up on a request that
// GitHub answered with a retryable status: the retry budget is spent, or the
// wait GitHub asks for is longer than allowed.
type RetryError struct {
	Method     string
	Path       string // URL path, no query
	StatusCode int    // last status; 0 after a network error
	Attempts   int
	Wait       time.Duration // the wait that was refused (0 when the budget ran out)
	Reason     string
	Err        error // last network error, if any
}

func (e *RetryError) Error() string {
	what := fmt.Sprintf("%d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode == 0 && e.Err != nil {
		what = e.Err.Error()
	}
	return fmt.Sprintf("%s %s: %s: %s after %d attempt(s)", e.Method, e.Path, what, e.Reason, e.Attempts)
}

func (e *RetryError) Unwrap() error { return e.Err }

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// RoundTrip implements http.RoundTripper.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	canRetry := rewindable(req)
	r := req
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			r = req.Clone(ctx)
			if req.Body != nil && req.Body != http.NoBody {
				body, err := req.GetBody()
				if err != nil {
					return nil, fmt.Errorf("%s %s: rewind body for retry: %w", req.Method, req.URL.Path, err)
				}
				r.Body = body
			}
		}
		resp, err := t.next.RoundTrip(r)

		var (
			wait   time.Duration
			reason string
			status int
		)
		if err != nil {
			if ctx.Err() != nil || !canRetry || !idempotent(req.Method) {
				return nil, err
			}
			reason, wait = "network error", t.backoff(attempt)
		} else {
			var retry bool
			wait, reason, retry = t.classify(req.Method, resp, attempt)
			if !retry || !canRetry {
				return resp, nil
			}
			status = resp.StatusCode
		}

		giveUp := func(why string, refused time.Duration) error {
			if resp != nil {
				drain(resp)
			}
			return &RetryError{
				Method: req.Method, Path: req.URL.Path, StatusCode: status,
				Attempts: attempt, Wait: refused, Reason: reason + ", " + why, Err: err,
			}
		}
		switch {
		case attempt > t.maxRetries:
			return nil, giveUp("retry budget exhausted", 0)
		case wait > t.maxWait:
			return nil, giveUp(fmt.Sprintf("GitHub asks to wait %s, more than the %s allowed", wait, t.maxWait), wait)
		}
		if dl, ok := ctx.Deadline(); ok && t.now().Add(wait).After(dl) {
			return nil, giveUp(fmt.Sprintf("waiting %s would pass the call's deadline", wait), wait)
		}
		if resp != nil {
			drain(resp)
		}
		t.log.LogAttrs(ctx, slog.LevelWarn, "github request retry",
			slog.String("method", req.Method),
			slog.String("path", req.URL.Path),
			slog.Int("status", status),
			slog.Int("attempt", attempt),
			slog.Duration("wait", wait),
			slog.String("reason", reason),
		)
		if err := t.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// classify decides whether resp is retryable and how long to wait first.
func (t *retryTransport) classify(method string, resp *http.Response, attempt int) (time.Duration, string, bool) {
	h := resp.Header
	retryAfter, hasRetryAfter := parseRetryAfter(h.Get("Retry-After"), t.now())
	spent := h.Get("X-RateLimit-Remaining") == "0"
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests || (s == http.StatusForbidden && (spent || hasRetryAfter)):
		switch {
		case hasRetryAfter:
			return retryAfter, "rate limited (Retry-After)", true
		case spent:
			if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
				wait := time.Unix(reset, 0).Sub(t.now())
				if wait <= 0 {
					wait = t.minBackoff
				}
				return wait, "rate limited (X-RateLimit-Reset)", true
			}
		}
		return t.backoff(attempt), "rate limited", true
	case (s == http.StatusInternalServerError || s == http.StatusBadGateway ||
		s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout) && idempotent(method):
		if hasRetryAfter {
			return retryAfter, "server error (Retry-After)", true
		}
		return t.backoff(attempt), "server error", true
	}
	return 0, "", false
}

// backoff is minBackoff·2^(attempt-1) with equal jitter, capped at maxWait.
func (t *retryTransport) backoff(attempt int) time.Duration {
	d := t.minBackoff
	for i := 1; i < attempt && d < t.maxWait; i++ {
		d *= 2
	}
	d = min(d, t.maxWait)
	half := d / 2
	return half + rand.N(half+1)
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
		return time.Duration(min(secs, 1<<32)) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(0, at.Sub(now)), true
	}
	return 0, false
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
