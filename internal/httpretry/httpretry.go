// Package httpretry is the retry loop that the model client (agent) and the
// GitHub client (ghapp) share: it sends a request again after a failed try,
// on a copy with a fresh body, after a wait that respects the request's
// context. Which failures are retried, how long to wait, what to hand back
// on giving up and what to log are each client's Policy.
package httpretry

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy is what one client decides about its failed tries.
type Policy interface {
	// Retry reports whether the try that ended in resp or err may succeed
	// when made again, how long to wait before it, and why (for the log
	// and the error on giving up). attempt counts the tries made, from 1.
	Retry(req *http.Request, attempt int, resp *http.Response, err error) (wait time.Duration, reason string, ok bool)
	// GiveUp is what RoundTrip returns for a try that Retry allowed but
	// that is not made after all, for the reason why.
	GiveUp(f Failure, why Refusal) (*http.Response, error)
	// Retrying is told of each retry before its wait (to log it).
	Retrying(f Failure)
}

// Failure is a failed try that the Policy would retry.
type Failure struct {
	Req     *http.Request  // the caller's request
	Attempt int            // tries made, from 1
	Resp    *http.Response // the try's response, or nil
	Err     error          // the try's error, or nil
	Wait    time.Duration  // the wait Retry asked for
	Reason  string         // Retry's reason
}

// Refusal is why a retry the Policy allowed is not made.
type Refusal int

const (
	BudgetSpent  Refusal = iota + 1 // MaxRetries retries were made already
	TooLong                         // the wait is longer than MaxWait
	PastDeadline                    // the wait would end after the context's deadline
)

// Transport is an http.RoundTripper that retries what its Policy allows.
// A request whose body cannot be sent again (no GetBody) is tried once.
type Transport struct {
	Next       http.RoundTripper
	Policy     Policy
	MaxRetries int           // tries after the first
	MaxWait    time.Duration // longest single wait
	// Sleep and Now are the clock; Sleep is usually the package's Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	try := req
	for attempt := 1; ; attempt++ {
		resp, err := t.Next.RoundTrip(try)
		if !replayable {
			return resp, err
		}
		wait, reason, ok := t.Policy.Retry(req, attempt, resp, err)
		if !ok {
			return resp, err
		}
		f := Failure{Req: req, Attempt: attempt, Resp: resp, Err: err, Wait: wait, Reason: reason}
		if attempt > t.MaxRetries {
			return t.Policy.GiveUp(f, BudgetSpent)
		}
		if wait > t.MaxWait {
			return t.Policy.GiveUp(f, TooLong)
		}
		if deadline, ok := ctx.Deadline(); ok && t.Now().Add(wait).After(deadline) {
			return t.Policy.GiveUp(f, PastDeadline)
		}
		t.Policy.Retrying(f)
		Drain(resp)
		if err := t.Sleep(ctx, wait); err != nil {
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

// ServerFailed reports whether status is a server's failure that the
// same request may not meet again: 500, 502, 503 or 504. Whether a client
// may send it again (the request may have been applied) is its Policy's.
func ServerFailed(status int) bool {
	switch status {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// maxDrainBytes is how much of a failed response's body is read before it
// is closed, so that its connection can be reused.
const maxDrainBytes = 64 << 10

// Drain reads up to 64 KiB of the body of resp, if any, and closes it.
func Drain(resp *http.Response) {
	if resp == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
	_ = resp.Body.Close()
}

// Sleep waits d, or until ctx is done, and returns ctx's error then.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Backoff is the wait before the retry after try attempt (from 1) when the
// server does not say: first, doubled with each try, at most most, with
// jitter over the upper half. The jitter spreads out the clients that a
// failure hit at the same moment, without ever waiting less than half.
func Backoff(first, most time.Duration, attempt int) time.Duration {
	d := first
	for i := 1; i < attempt && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	half := d / 2
	return half + rand.N(d-half+1)
}

// RetryAfter parses a Retry-After header: delay-seconds or an HTTP date,
// relative to now. A wait is at most a day (longer ones are read as a day,
// before any client's own limit applies); a date in the past is no wait.
func RetryAfter(v string, now time.Time) (time.Duration, bool) {
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
