package task

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/untrusted"
)

// Bounds of what the brief carries of a pull request's failing checks. The
// first message goes with every model call, so the checks share one
// budget: the first ones get their logs, later ones may get less, and the
// brief says what was left out.
const (
	maxFailingChecks = 10
	// maxCheckOutput bounds one check's title, summary and text together.
	maxCheckOutput      = 4 << 10
	maxCheckAnnotations = 20
	maxAnnotationBytes  = 512
	maxCheckLog         = 8 << 10
	// minCheckLog is the least tail worth asking GitHub for.
	minCheckLog = 1 << 10
	// maxChecksTotal is shared by the checks in order; past it, each
	// check still keeps minCheckOutput of its output, so that the agent
	// knows what failed.
	maxChecksTotal = 40 << 10
	minCheckOutput = 512
)

// failingChecks gathers what failed on commit sha for the agent: the first
// maxFailingChecks failing check runs (more counts the rest), each with
// its output, its annotations and, for a GitHub Actions job, the end of its
// log, all bounded and cleaned of what a reader would not see. A log or
// annotations GitHub will not give leave a note, and the work goes on: the
// agent can still reproduce the failure with the run tool.
func (pw pulls) failingChecks(ctx context.Context, t *Task, sha string) (checks []pullwright.CheckFailure, more int, err error) {
	if sha == "" {
		// No commit to ask about (a pull request read without its head).
		return nil, 0, nil
	}
	all, err := pw.gh.FailingChecks(ctx, t.Repo, sha)
	if err != nil {
		return nil, 0, err
	}
	if len(all) > maxFailingChecks {
		all, more = all[:maxFailingChecks], len(all)-maxFailingChecks
	}
	left := maxChecksTotal
	for _, c := range all {
		var notes []string
		room := min(maxCheckOutput, max(left, minCheckOutput))
		for _, f := range []*string{&c.Title, &c.Summary, &c.Text} {
			v := untrusted.Visible(*f)
			switch {
			case len(v) > room && room > 0:
				v, c.OutputCut = untrusted.Cut(v, room), true
			case len(v) > room:
				v, c.OutputCut = "", true
			}
			*f = v
			room -= len(v)
		}
		left -= len(c.Title) + len(c.Summary) + len(c.Text)
		if c.AnnotationCount > 0 && left > 0 {
			as, err := pw.gh.CheckAnnotations(ctx, t.Repo, c.ID, maxCheckAnnotations)
			if err != nil {
				pw.log.WarnContext(ctx, "check run annotations", "task_id", t.ID, "check_run", c.ID, "err", err)
				notes = append(notes, "its annotations could not be read")
			}
			for _, a := range as {
				a.Title, a.Message = plain(untrusted.Cut(a.Title, maxAnnotationBytes)), plain(untrusted.Cut(a.Message, maxAnnotationBytes))
				c.Annotations = append(c.Annotations, a)
				left -= len(a.Path) + len(a.Title) + len(a.Message)
			}
			c.MoreAnnotations = max(c.AnnotationCount-len(c.Annotations), 0)
		}
		switch room := min(maxCheckLog, left); {
		case c.JobID == 0:
		case room < minCheckLog:
			notes = append(notes, "its log is left out: the checks before it used the room this brief has for failing checks")
		default:
			c.Log, c.LogCut, err = pw.gh.JobLogTail(ctx, t.Repo, c.JobID, room)
			switch {
			case errors.Is(err, pullwright.ErrNotPermitted):
				notes = append(notes, "GitHub refused its log: the app needs the `actions: read` permission")
			case errors.Is(err, pullwright.ErrGone):
				notes = append(notes, "GitHub no longer has its log (logs expire after the repository's retention period)")
			case err != nil:
				pw.log.WarnContext(ctx, "job log", "task_id", t.ID, "job", c.JobID, "err", err)
				notes = append(notes, "its log could not be read")
			}
			c.Log = plain(stampRE.ReplaceAllString(c.Log, ""))
			left -= len(c.Log)
		}
		c.Missing = strings.Join(notes, "; ")
		checks = append(checks, c)
	}
	return checks, more, nil
}

// stampRE matches the time GitHub Actions puts before each line of a job's
// log: it costs tokens and tells the agent nothing.
var stampRE = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?`)

// ansiRE matches terminal escape sequences (colours, cursor moves), which
// tools print into logs and a reader of them never sees as text.
var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]`)

// plain is tool output as a reader sees it: without terminal escapes,
// invisible characters, or other control characters than tab and newline.
func plain(s string) string {
	s = ansiRE.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r', r < 0x20, r == 0x7f, untrusted.IsInvisible(r):
			return -1
		}
		return r
	}, s)
}
