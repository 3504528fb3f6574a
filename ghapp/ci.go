package ghapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v88/github"

	"github.com/pullwright/pullwright"
)

// actionsApp is the slug of the app GitHub Actions reports its jobs as.
const actionsApp = "github-actions"

// maxCheckRunsRead bounds the check runs FailingChecks reads (10 pages of
// 100): a commit with more is pathological, and what failed among the
// first thousand is plenty to work on.
const maxCheckRunsRead = 1000

// failed are the check run conclusions that say the code did not pass.
// cancelled, skipped, neutral, stale and action_required say nothing
// about the code (a person stopped it, a fork's workflow waits for
// approval), so a fix has nothing to learn from them.
var failed = map[string]bool{"failure": true, "timed_out": true, "startup_failure": true}

// FailingChecks lists the check runs that failed on commit sha: GET
// /repos/{o}/{r}/commits/{sha}/check-runs with filter=latest (so a check
// re-run since counts by its latest run), all pages up to 1000 runs, in
// GitHub's order. Only completed runs with a failing conclusion are
// returned, with their output but without annotations or logs
// (CheckAnnotations, JobLogTail).
func (a *App) FailingChecks(ctx context.Context, r pullwright.Repo, sha string) ([]pullwright.CheckFailure, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return nil, fmt.Errorf("list check runs of %s/%s@%s: %w", owner, repo, sha, err)
	}
	opts := &github.ListCheckRunsOptions{Filter: github.Ptr("latest"), ListOptions: github.ListOptions{PerPage: a.pageSize}}
	var out []pullwright.CheckFailure
	read := 0
	rest, err := eachPage(&opts.ListOptions, func() (*github.Response, bool, error) {
		res, resp, err := gh.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, opts)
		if err != nil {
			return nil, false, err
		}
		for _, cr := range res.CheckRuns {
			if cr.GetStatus() == "completed" && failed[cr.GetConclusion()] {
				out = append(out, checkFailureOf(cr))
			}
		}
		read += len(res.CheckRuns)
		return resp, read < maxCheckRunsRead, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list check runs of %s/%s@%s: %w", owner, repo, sha, err)
	}
	if rest {
		a.log.WarnContext(ctx, "commit has more check runs than are read; the rest are left out",
			"repo", owner+"/"+repo, "sha", sha, "read", read)
	}
	return out, nil
}

func checkFailureOf(cr *github.CheckRun) pullwright.CheckFailure {
	f := pullwright.CheckFailure{
		ID: cr.GetID(), Name: cr.GetName(), App: cr.GetApp().GetSlug(), Conclusion: cr.GetConclusion(),
		URL:   cr.GetHTMLURL(),
		Title: cr.GetOutput().GetTitle(), Summary: cr.GetOutput().GetSummary(), Text: cr.GetOutput().GetText(),
		AnnotationCount: cr.GetOutput().GetAnnotationsCount(),
	}
	if f.App == actionsApp {
		// GitHub Actions gives a job and its check run the same id: the
		// REST docs' job example (GET /repos/{o}/{r}/actions/jobs/{job_id},
		// "Download job logs for a workflow run") has id 399444496 with
		// url …/actions/jobs/399444496 and check_run_url
		// …/check-runs/399444496, and a workflow's job.check_run_id context
		// is that same number. So the check run names its job's log.
		f.JobID = f.ID
	}
	return f
}

// CheckAnnotations lists up to max of a check run's annotations (GET
// /repos/{o}/{r}/check-runs/{id}/annotations, as many pages as that takes),
// in GitHub's order.
func (a *App) CheckAnnotations(ctx context.Context, r pullwright.Repo, checkRunID int64, max int) ([]pullwright.CheckAnnotation, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return nil, fmt.Errorf("list annotations of check run %d of %s/%s: %w", checkRunID, owner, repo, err)
	}
	if max <= 0 {
		return nil, nil
	}
	opts := &github.ListOptions{PerPage: min(a.pageSize, max)}
	var out []pullwright.CheckAnnotation
	_, err = eachPage(opts, func() (*github.Response, bool, error) {
		as, resp, err := gh.Checks.ListCheckRunAnnotations(ctx, owner, repo, checkRunID, opts)
		if err != nil {
			return nil, false, err
		}
		for _, an := range as {
			out = append(out, pullwright.CheckAnnotation{
				Path: an.GetPath(), StartLine: an.GetStartLine(), EndLine: an.GetEndLine(),
				Level: an.GetAnnotationLevel(), Title: an.GetTitle(), Message: an.GetMessage(),
			})
		}
		return resp, len(out) < max, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list annotations of check run %d of %s/%s: %w", checkRunID, owner, repo, err)
	}
	return out[:min(len(out), max)], nil
}

// maxLogRead bounds what JobLogTail reads of a log before it gives up on
// the true end: a job's log can be hundreds of megabytes.
const maxLogRead = 32 << 20

// logDeadline bounds the download of a log; GitHub's download URL is
// itself good for one minute.
const logDeadline = time.Minute

// JobLogTail returns the end of a GitHub Actions job's log, at most max
// bytes, with cut set when the log was longer. GET
// /repos/{o}/{r}/actions/jobs/{id}/logs answers 302 with a Location to a
// short-lived download URL on another host; that URL carries its own
// authorisation, so it is fetched without the app's token, which must not
// leave GitHub's API. A log longer than 32 MiB is read no further: its
// tail is then the end of what was read, and cut is set.
//
// GitHub refuses the log with 403 when the app lacks the actions: read
// permission (pullwright.ErrNotPermitted), and with 404 or 410 when there
// is no such job or its logs expired (pullwright.ErrGone).
func (a *App) JobLogTail(ctx context.Context, r pullwright.Repo, jobID int64, max int) (tail string, cut bool, err error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout+logDeadline)
	defer cancel()
	tail, cut, err = a.jobLogTail(ctx, inst, owner, repo, jobID, max)
	if err != nil {
		return "", false, fmt.Errorf("read the log of job %d of %s/%s: %w", jobID, owner, repo, err)
	}
	return tail, cut, nil
}

func (a *App) jobLogTail(ctx context.Context, inst int64, owner, repo string, jobID int64, max int) (string, bool, error) {
	gh, err := a.client(inst)
	if err != nil {
		return "", false, err
	}
	actx, cancel := a.callCtx(ctx)
	defer cancel()
	// One redirect is followed: a renamed repository answers 301 first.
	loc, resp, err := gh.Actions.GetWorkflowJobLogs(actx, owner, repo, jobID, 1)
	if err != nil {
		status := StatusCode(err)
		if status == 0 && resp != nil {
			// go-github reports a status other than 302 as a plain error
			// with the response beside it.
			status = resp.StatusCode
		}
		switch status {
		case http.StatusForbidden:
			return "", false, fmt.Errorf("%w: GitHub answered 403 (the app needs the actions: read permission): %w", pullwright.ErrNotPermitted, err)
		case http.StatusNotFound, http.StatusGone:
			return "", false, fmt.Errorf("%w: GitHub answered %d (no such job, or its logs expired): %w", pullwright.ErrGone, status, err)
		}
		return "", false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return "", false, fmt.Errorf("download: %w", err)
	}
	dl := &http.Client{Transport: a.rt}
	res, err := dl.Do(req)
	if err != nil {
		return "", false, fmt.Errorf("download: %w", err)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusGone:
		return "", false, fmt.Errorf("%w: the download answered %s", pullwright.ErrGone, res.Status)
	case res.StatusCode != http.StatusOK:
		return "", false, fmt.Errorf("download: %s", res.Status)
	}
	return readTail(res.Body, max, maxLogRead)
}

// readTail reads r up to limit bytes and keeps the last n, starting on a
// line (or else a character) boundary; cut says the start is left out.
func readTail(r io.Reader, n, limit int) (string, bool, error) {
	if n <= 0 {
		return "", false, errors.New("no room for the log")
	}
	ring := make([]byte, 0, 2*n)
	buf := make([]byte, 32<<10)
	total, dropped := 0, false
	for total < limit {
		k, err := r.Read(buf[:min(len(buf), limit-total)])
		total += k
		ring = append(ring, buf[:k]...)
		if len(ring) > 2*n {
			ring, dropped = append(ring[:0], ring[len(ring)-n:]...), true
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", false, fmt.Errorf("download: %w", err)
		}
	}
	more := total >= limit
	if total >= limit {
		// Tell whether the log ended right at the limit.
		var one [1]byte
		k, _ := io.ReadFull(r, one[:])
		more = k > 0
	}
	if len(ring) <= n && !dropped {
		return string(ring), more, nil
	}
	tail := ring[len(ring)-min(n, len(ring)):]
	if nl := strings.IndexByte(string(tail), '\n'); nl >= 0 && nl < n/2 {
		tail = tail[nl+1:]
	} else {
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
	}
	return string(tail), true, nil
}
