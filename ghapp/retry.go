package ghapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/httpretry"
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
// The loop is httpretry's; this is GitHub's httpretry.Policy.
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
		sleep: httpretry.Sleep, now: time.Now,
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

// RoundTrip implements http.RoundTripper.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return httpretry.Transport{Next: t.next, Policy: t, MaxRetries: t.maxRetries, MaxWait: t.maxWait,
		Sleep: t.sleep, Now: t.now}.RoundTrip(req)
}

// Retry implements httpretry.Policy.
func (t *retryTransport) Retry(req *http.Request, attempt int, resp *http.Response, err error) (time.Duration, string, bool) {
	if err != nil {
		// A connection the bot refused to make (an image host at a
		// non-public address) would be refused again.
		if req.Context().Err() != nil || !idempotent(req.Method) || errors.Is(err, pullwright.ErrNotGitHubs) {
			return 0, "", false
		}
		return t.backoff(attempt), "network error", true
	}
	h := resp.Header
	retryAfter, hasRetryAfter := httpretry.RetryAfter(h.Get("Retry-After"), t.now())
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
	case httpretry.ServerFailed(s) && idempotent(req.Method):
		if hasRetryAfter {
			return retryAfter, "server error (Retry-After)", true
		}
		return t.backoff(attempt), "server error", true
	}
	return 0, "", false
}

func (t *retryTransport) backoff(attempt int) time.Duration {
	return httpretry.Backoff(t.minBackoff, t.maxWait, attempt)
}

// GiveUp implements httpretry.Policy: a *RetryError says why.
func (t *retryTransport) GiveUp(f httpretry.Failure, why httpretry.Refusal) (*http.Response, error) {
	httpretry.Drain(f.Resp)
	e := &RetryError{Method: f.Req.Method, Path: f.Req.URL.Path, StatusCode: status(f), Attempts: f.Attempt, Wait: f.Wait, Err: f.Err}
	switch why {
	case httpretry.BudgetSpent:
		e.Wait, e.Reason = 0, f.Reason+", retry budget exhausted"
	case httpretry.TooLong:
		e.Reason = fmt.Sprintf("%s, GitHub asks to wait %s, more than the %s allowed", f.Reason, f.Wait, t.maxWait)
	case httpretry.PastDeadline:
		e.Reason = fmt.Sprintf("%s, waiting %s would pass the call's deadline", f.Reason, f.Wait)
	}
	return nil, e
}

// Retrying implements httpretry.Policy.
func (t *retryTransport) Retrying(f httpretry.Failure) {
	t.log.LogAttrs(f.Req.Context(), slog.LevelWarn, "github request retry",
		slog.String("method", f.Req.Method),
		slog.String("path", f.Req.URL.Path),
		slog.Int("status", status(f)),
		slog.Int("attempt", f.Attempt),
		slog.Duration("wait", f.Wait),
		slog.String("reason", f.Reason),
	)
}

// status is the failed try's status code; 0 after a network error.
func status(f httpretry.Failure) int {
	if f.Resp == nil {
		return 0
	}
	return f.Resp.StatusCode
}
