package task

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pullwright/pullwright/internal/words"
)

// Modes a fix can be asked in ("/agent tdd …"). Each is a prompt for the
// agent (agent/prompt.go's modeRules) and a check of the task's record of
// runs, checkMode: the pull request says whether the work was verified as
// its mode, or which step is missing.
const (
	ModeTDD      Mode = "tdd"
	ModeDebug    Mode = "debug"
	ModeRefactor Mode = "refactor"
)

// Mode is how a fix must prove its work ("" for no mode).
type Mode string

// ModeCheck is what a task's record shows of its mode's steps: the runs
// that show them, and the steps it does not show.
type ModeCheck struct {
	OK      bool
	Missing []string
	// Before is the run of the first step (the failure before the fix,
	// the tests passing before the change) and After the same command's
	// passing run on the final commit. Where a step is missing, each is
	// the nearest run the record has (the first step's command on the
	// final commit, or a passing run there), nil when it has none.
	Before, After *RunRecord
}

// checkMode checks t's record of runs against its mode. Every step must
// be a run that was approved and ran, on the commit the step needs:
//
//   - tdd: a run that failed on a commit holding test changes and no other
//     change, then the same command passing on the final commit, which
//     holds the fix (a change beyond tests);
//   - debug: a run that failed before any change to the code (tests or a
//     reproduction script may be added), then the same command passing on
//     the final commit, which holds the fix;
//   - refactor: the tests passing on a commit with no change to the code
//     or the tests,
//     the same command passing on the final commit, and the exported API
//     unchanged (Work.APIChanges) unless the instructions speak of it.
func checkMode(t Job) ModeCheck {
	final := t.HeadSHA
	ran := func(r RunRecord) bool {
		// A command that never started, or was cut short, shows nothing of
		// the code: not a failure that reproduces a bug, nor a pass.
		return r.Verdict == Approved && r.Outcome != OutcomeInterrupted && r.Outcome != OutcomeSetupFailed && r.Outcome != OutcomeNotRun
	}
	// passedAfter is a passing run of cmd on the final commit after run i;
	// in tdd, with the tests as they were when run i failed, so that the
	// test that failed was not weakened to pass.
	passedAfter := func(i int, cmd string) *RunRecord {
		for j := i + 1; j < len(t.Runs); j++ {
			r := t.Runs[j]
			if r.Command == cmd && r.SHA == final && r.Outcome == OutcomePassed && r.Code &&
				(t.Mode != ModeTDD || r.TestsDigest == t.Runs[i].TestsDigest) {
				return &t.Runs[j]
			}
		}
		return nil
	}
	// first is the first step's run, with the second's when the record
	// has both.
	first := func(step func(RunRecord) bool) (before, after *RunRecord) {
		for i, r := range t.Runs {
			if !ran(r) || !step(r) {
				continue
			}
			if before == nil {
				before = &t.Runs[i]
			}
			if after = passedAfter(i, r.Command); after != nil {
				return &t.Runs[i], after
			}
		}
		return before, nil
	}
	var c ModeCheck
	switch t.Mode {
	case ModeTDD, ModeDebug:
		c.Before, c.After = first(func(r RunRecord) bool {
			return r.Outcome != OutcomePassed && !r.Code && (t.Mode != ModeTDD || r.Tests)
		})
		switch {
		case c.Before == nil && t.Mode == ModeTDD:
			c.Missing = append(c.Missing, "a run that shows a new or changed test failing before the fix (on a commit with the test change only)")
		case c.Before == nil:
			c.Missing = append(c.Missing, "a run that reproduces the failure before the code is changed")
		}
		if c.After == nil && t.Mode == ModeTDD {
			c.Missing = append(c.Missing, "the same command passing on the final commit, with the fix and the tests unchanged since they failed")
		} else if c.After == nil {
			c.Missing = append(c.Missing, "the same command passing on the final commit, with the fix")
		}
	case ModeRefactor:
		// Before the change means the code and its tests as they were:
		// tests deleted or weakened first would pass anything.
		c.Before, c.After = first(func(r RunRecord) bool { return r.Outcome == OutcomePassed && !r.Code && !r.Tests })
		if c.Before == nil {
			c.Missing = append(c.Missing, "the tests passing before the code was changed")
		}
		if c.After == nil {
			c.Missing = append(c.Missing, "the same tests passing on the final commit")
		}
		if len(t.APIChanges) > 0 && !asksAPIChange(t.Instructions) {
			c.Missing = append(c.Missing, fmt.Sprintf("an unchanged exported API (%s)", apiList(t.APIChanges)))
		}
	default:
		return ModeCheck{OK: true}
	}
	c.OK = len(c.Missing) == 0
	if c.After == nil {
		c.After = nearestOnFinal(t, c.Before)
	}
	return c
}

// nearestOnFinal is what the record has on the final commit where the
// second step is missing: the last run there of the first step's
// command, or, without a first step, the last run there that passed.
func nearestOnFinal(t Job, before *RunRecord) *RunRecord {
	for i := len(t.Runs) - 1; i >= 0; i-- {
		r := t.Runs[i]
		if r.SHA != t.HeadSHA || r.Verdict != Approved {
			continue
		}
		if before != nil && r.Command == before.Command && &t.Runs[i] != before ||
			before == nil && r.Outcome == OutcomePassed {
			return &t.Runs[i]
		}
	}
	return nil
}

func apiList(changes []string) string {
	var shown []string
	for _, c := range clipList(changes, 5) {
		shown = append(shown, code(oneLine(c)))
	}
	return strings.Join(shown, "; ")
}

// apiAsked matches a sentence of the instructions that asks for a change
// of the exported API ("rename Open to Dial in the API", "change the
// exported signature of …"); apiKept one that says to keep it, which wins
// ("keep the public API unchanged"). Only an explicit ask lets a refactor
// change the API.
var (
	apiAsked = regexp.MustCompile(`(?i)\b(change|rename|remove|delete|add|break|modify|replace)\w*\b.*\b(api|exported|signatures?|public interface)\b|\b(api|exported|signatures?)\b.*\b(change|rename|remove|break|modify)\w*\b`)
	apiKept  = regexp.MustCompile(`(?i)\b(keep|unchanged|without|preserv\w*|not|never|same)\b|n't\b`)
)

// asksAPIChange reports whether the instructions ask for the exported API
// to change: some sentence asks it, and that sentence does not say to keep
// it.
func asksAPIChange(instructions string) bool {
	for _, s := range regexp.MustCompile(`[.;!?\n]+`).Split(instructions, -1) {
		if apiAsked.MatchString(s) && !apiKept.MatchString(s) {
			return true
		}
	}
	return false
}

func clipList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}

// renderMode is the line about the task's mode, in the pull request's
// Verification section and the status comment. It says what the record
// shows of the mode's steps, the runs and what their commits changed, so
// that a reader judges the work by them; then which steps it lacks.
func renderMode(t Job) string {
	if t.Mode == "" {
		return ""
	}
	c := checkMode(t)
	var b strings.Builder
	fmt.Fprintf(&b, "**Mode %s**: the record shows %s.", t.Mode, modeShown(t, c))
	if c.OK {
		b.WriteString("\n\n")
		return b.String()
	}
	if t.Final {
		b.WriteString(" Missing:\n")
	} else {
		b.WriteString(" Not shown yet:\n")
	}
	for _, m := range c.Missing {
		b.WriteString("- " + m + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// modeShown is what the record shows of the mode's steps, as runs on
// commits: "`go test ./...` failed on 1a2b3c4d5e6f (changes tests only),
// then passed on 6f5e4d3c2b1a (the final commit, changes code only; the
// tests as when they failed)".
func modeShown(t Job, c ModeCheck) string {
	var parts []string
	switch before, after := c.Before, c.After; {
	case before != nil && after != nil:
		s := fmt.Sprintf("%s %s on %s (%s), then ", code(oneLine(before.Command)), outcomeVerb(before.Outcome), words.Short(before.SHA), commitText(t, *before))
		if after.Command != before.Command {
			s += code(oneLine(after.Command)) + " "
		}
		s += fmt.Sprintf("%s on %s (%s", outcomeVerb(after.Outcome), words.Short(after.SHA), commitText(t, *after))
		if t.Mode == ModeTDD && after.Tests {
			if after.TestsDigest == before.TestsDigest {
				s += "; the tests as when they failed"
			} else {
				s += "; the tests changed since they failed"
			}
		}
		parts = append(parts, s+")")
	case before != nil:
		parts = append(parts, fmt.Sprintf("%s %s on %s (%s), and not run on the %s commit %s since",
			code(oneLine(before.Command)), outcomeVerb(before.Outcome), words.Short(before.SHA), commitText(t, *before), finalWord(t), words.Short(t.HeadSHA)))
	case after != nil:
		parts = append(parts, fmt.Sprintf("%s %s on %s (%s)", code(oneLine(after.Command)), outcomeVerb(after.Outcome), words.Short(after.SHA), commitText(t, *after)))
	default:
		parts = append(parts, "no run that is one of the mode's steps")
	}
	if t.Mode == ModeRefactor && t.APIChecked {
		switch {
		case len(t.APIChanges) == 0:
			parts = append(parts, "the exported Go API of the changed files unchanged")
		case asksAPIChange(t.Instructions):
			parts = append(parts, "the exported Go API changed as the instructions ask ("+apiList(t.APIChanges)+")")
		default:
			parts = append(parts, "the exported Go API changed")
		}
	}
	return strings.Join(parts, "; ")
}

// commitText says what a run's commit is and what it changed from the
// task's base.
func commitText(t Job, r RunRecord) string {
	var what string
	switch {
	case r.SHA == t.BaseSHA:
		return "the base"
	case r.Tests && r.Code:
		what = "changes tests and code"
	case r.Tests:
		what = "changes tests only"
	case r.Code:
		what = "changes code only"
	default:
		what = "changes neither tests nor code"
	}
	if r.SHA == t.HeadSHA {
		return "the " + finalWord(t) + " commit, " + what
	}
	return what
}

// finalWord names the task's head commit: final once the agent finished,
// latest while it works.
func finalWord(t Job) string {
	if t.Final {
		return "final"
	}
	return "latest"
}

// outcomeVerb is a run's outcome as the verb of a sentence.
func outcomeVerb(outcome RunOutcome) string {
	switch outcome {
	case OutcomeTimedOut:
		return "timed out"
	case OutcomeOOM:
		return "ran out of memory"
	case OutcomeInterrupted:
		return "was interrupted"
	case OutcomeSetupFailed:
		return "did not run (its setup failed)"
	case OutcomeRejected:
		return "was rejected"
	case OutcomeNoAnswer:
		return "had no answer"
	}
	return string(outcome) // passed, failed
}
