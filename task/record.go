package task

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
)

// RunRecord is one execution request as it ended: what was asked, who
// answered, and what the command did. A fix keeps every one for its life
// (Work.Runs), so that the pull request can show what was tested, on which
// commit, and whether the work was verified at all.
type RunRecord struct {
	// RequestID is the request's id ("<task>-<sequence>").
	RequestID string    `json:"request_id"`
	Command   string    `json:"command"`
	Reason    string    `json:"reason,omitempty"`
	SHA       string    `json:"sha"`
	AskedAt   time.Time `json:"asked_at"`
	// Verdict is the answer (Approved, Rejected, TimedOut); By who gave
	// it, Auto the auto_approve rule that gave it instead, Why a
	// rejection's reason.
	Verdict Verdict `json:"verdict"`
	By      string  `json:"by,omitempty"`
	Auto    string  `json:"auto,omitempty"`
	Why     string  `json:"why,omitempty"`
	// Outcome sums up the run (the Outcome… constants); ExitCode,
	// Duration and Output (its last lines, bounded) are the command's,
	// when it ran.
	Outcome  RunOutcome    `json:"outcome"`
	ExitCode int           `json:"exit_code"`
	Duration time.Duration `json:"duration,omitempty"`
	Output   string        `json:"output,omitempty"`
	// CheckRunID is the run's check run, and CheckRunURL its page.
	CheckRunID  int64  `json:"check_run_id,omitempty"`
	CheckRunURL string `json:"check_run_url,omitempty"`
	// Required is true for a command the repository requires
	// (require_passing), which the bot asked for, not the agent.
	Required bool `json:"required,omitempty"`
	// Tests and Code say whether the run's commit changed test files
	// (with what configures how tests run, and fixtures) and other files
	// from the task's base: what a mode's check (checkMode) needs to know
	// of the commit. Set for a task in a mode.
	Tests bool `json:"tests_changed,omitempty"`
	Code  bool `json:"code_changed,omitempty"`
	// TestsDigest is a digest of the changed test files (configuration
	// included) at the run's commit, for a tdd task: the test that failed
	// must be the test that passes, run the same way.
	TestsDigest string `json:"tests_digest,omitempty"`
	// Kept is what the run changed that became the agent's change, for a
	// request that asked to keep it (ExecRequest.KeepChanges), as a diff
	// stat; KeptNote says why nothing was kept, when nothing was.
	Kept     []pullwright.FileStat `json:"kept,omitempty"`
	KeptNote string                `json:"kept_note,omitempty"`
}

// RunOutcome sums up how a request for a run ended, in the record of runs:
// what the approved command came to, or the answer that kept it from
// running. Its words are shown as they are.
type RunOutcome string

// Outcomes of a RunRecord.
const (
	OutcomePassed      RunOutcome = "passed"
	OutcomeFailed      RunOutcome = "failed"
	OutcomeTimedOut    RunOutcome = "timed out"
	OutcomeOOM         RunOutcome = "out of memory"
	OutcomeInterrupted RunOutcome = "interrupted"
	OutcomeSetupFailed RunOutcome = "setup failed"
	OutcomeRejected    RunOutcome = "rejected"
	OutcomeNoAnswer    RunOutcome = "no answer"
	// OutcomeNotRun is an approved command that never started: the
	// setup or the sandbox could not run it (Sandboxed, NotStarted).
	OutcomeNotRun RunOutcome = "could not run"
)

// maxRecordOutput bounds the output a record keeps: the check run holds
// the command's whole bounded output; the record keeps its end, where a
// test runner's verdict is.
const maxRecordOutput = 2 << 10

// record adds the end of t's current request to t.Runs, once: a step
// replayed after a crash finds it there.
func (t Job) record(o Outcome) {
	r := t.Request
	if r == nil {
		return
	}
	for _, rec := range slices.Concat(t.Runs, t.Calls) {
		if rec.RequestID == r.ID {
			return
		}
	}
	rec := RunRecord{
		RequestID: r.ID, Command: r.Command, Reason: r.Reason, SHA: r.SHA, AskedAt: r.AskedAt,
		Verdict: o.Verdict, By: o.By, Auto: r.Auto, Why: o.Reason, Required: r.Required,
		CheckRunID: r.RunCheckID, CheckRunURL: checkRunURL(r.CommentURL, t.Repo.CloneURL, r.RunCheckID),
	}
	switch o.Verdict {
	case Rejected:
		rec.Outcome = OutcomeRejected
	case TimedOut:
		rec.Outcome = OutcomeNoAnswer
	}
	if res := o.Result; res != nil {
		// What the step did, as the request kept it (runs.execute).
		Ran{Result: *res, Setup: r.Setup}.End(&rec)
	}
	if r.Tool != nil {
		// What the server answered went to the agent alone: the record,
		// which everyone who may read the repository may read in the
		// console, keeps how the call ended, not what it returned.
		rec.Output = ""
		t.Calls = append(t.Calls, rec)
		return
	}
	t.Runs = append(t.Runs, rec)
}

// OutcomeOf sums up how an approved command ended (one of the Outcome…
// constants), from its result and whether the repository's setup before
// it failed: the one reading of a RunResult for every record of runs.
func OutcomeOf(res pullwright.RunResult, setupFailed bool) RunOutcome {
	switch {
	case setupFailed:
		return OutcomeSetupFailed
	case res.TimedOut:
		return OutcomeTimedOut
	case res.OOMKilled:
		return OutcomeOOM
	case res.NotStarted:
		return OutcomeNotRun
	case res.ExitCode == -1:
		return OutcomeInterrupted
	case res.ExitCode == 0:
		return OutcomePassed
	}
	return OutcomeFailed
}

// checkRunURL is the page of check run id: GitHub serves a check run at
// <repository>/runs/<id>, on github.com and on a GitHub Enterprise host
// alike. The repository's page is read from the page of the request's
// comment (commentURL, <repository>/issues/<n>#… or /pull/<n>#…), or, for
// a request no comment showed (auto_approve), from its clone URL.
func checkRunURL(commentURL, cloneURL string, id int64) string {
	if id == 0 {
		return ""
	}
	repo := ""
	for _, sep := range []string{"/issues/", "/pull/"} {
		if i := strings.LastIndex(commentURL, sep); i > 0 {
			repo = commentURL[:i]
			break
		}
	}
	if repo == "" && strings.HasSuffix(cloneURL, ".git") {
		repo = strings.TrimSuffix(cloneURL, ".git")
	}
	if u, err := url.Parse(repo); repo == "" || err != nil || u.Scheme != "https" || u.Host == "" {
		return ""
	}
	return fmt.Sprintf("%s/runs/%d", repo, id)
}

// tailBytes is the end of s, at most n bytes, cut at a line start when
// one is near.
func tailBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < n/4 {
		s = s[i+1:]
	}
	return "[…]\n" + strings.ToValidUTF8(s, "")
}

// recordOn is the newest record of command on commit sha that match
// accepts (any record, when match is nil), if there is one: the one query
// behind the Verification section's last results (finalResults) and the
// require_passing checks (Flow.requirePassing, Task.unmet).
func recordOn(runs []RunRecord, command, sha string, match func(RunRecord) bool) (RunRecord, bool) {
	for i := len(runs) - 1; i >= 0; i-- {
		if r := runs[i]; r.Command == command && r.SHA == sha && (match == nil || match(r)) {
			return r, true
		}
	}
	return RunRecord{}, false
}

// approved accepts a record of a run that was approved, whatever came of it.
func approved(r RunRecord) bool { return r.Verdict == Approved }

// finalResults are the last result of each command that ran on sha, in
// the order the commands first ran there.
func finalResults(runs []RunRecord, sha string) []RunRecord {
	var out []RunRecord
	seen := map[string]bool{}
	for _, r := range runs {
		if r.SHA != sha || r.Verdict != Approved || seen[r.Command] {
			continue
		}
		seen[r.Command] = true
		last, _ := recordOn(runs, r.Command, sha, approved)
		out = append(out, last)
	}
	return out
}

// claimsPassing matches a summary that says the tests or the build pass:
// what a reviewer would take as "this was verified".
var claimsPassing = regexp.MustCompile(`(?i)\b(tests?|test suite|specs?|build|checks?|ci|lint(er)?)\b[^.\n]{0,40}\b(pass(es|ed|ing)?|succeed(s|ed)?|green|ok)\b|\bverified\b|\ball (tests|checks) (pass|passed)\b`)

// Verification is what a record of runs shows of one commit: the last
// result of each command that ran on it, and whether they verify it. It
// is the one judgement behind every surface that says whether work was
// verified: the pull request's Verification section (RenderVerification),
// and bot run's report, commit message and exit status.
type Verification struct {
	// Final is the last result of each command approved on the commit,
	// in the order the commands first ran there.
	Final []RunRecord
	// Verified is true when commands ran on the commit and the last
	// result of each passed.
	Verified bool
	// ran: a command was asked for at all, on any commit.
	ran bool
}

// Verify reads runs for commit sha. bot run, which commits once at the
// end, keys its records by the tree a run had instead of a commit; any
// key works as long as runs and sha use the same.
func Verify(runs []RunRecord, sha string) Verification {
	final := finalResults(runs, sha)
	return Verification{Final: final, Verified: allPassed(final), ran: len(runs) > 0}
}

// Unverified says why v does not verify its commit, as what follows "Not
// verified: " (plain text, no final stop); "" when v verifies it. commit
// names the commit in the sentence: "the final commit 3f1c2a9e0b7d",
// "this commit".
func (v Verification) Unverified(commit string) string {
	switch {
	case v.Verified:
		return ""
	case len(v.Final) == 0 && !v.ran:
		return "no command ran while the agent worked, so nothing was tested on " + commit
	case len(v.Final) == 0:
		return "no command ran on " + commit
	}
	var failed []string
	for _, r := range v.Final {
		if r.Outcome != OutcomePassed {
			failed = append(failed, code(oneLine(r.Command))+" "+shortResult(r))
		}
	}
	return strings.Join(failed, " and ") + " on " + commit
}

// Unbacked is what text (the agent's summary, or its title) claims of
// tests or a build passing that v does not bear out: "" when text claims
// nothing of the kind or v verifies the commit. A model's claim is never
// shown as a fact.
func (v Verification) Unbacked(text string) string {
	if v.Verified {
		return ""
	}
	return claimsPassing.FindString(text)
}

// Text is v as plain text, for a terminal or a commit message: the last
// result of each command on the commit, then a line that starts
// "Verified:" or "Not verified:". commit names the commit as for
// Unverified.
func (v Verification) Text(commit string) string {
	var b strings.Builder
	if len(v.Final) > 0 {
		b.WriteString("On " + commit + ":\n")
		for _, r := range v.Final {
			fmt.Fprintf(&b, "  - %s %s\n", code(oneLine(r.Command)), r.Describe())
		}
	}
	if v.Verified {
		b.WriteString("Verified: the last run of each command on " + commit + " passed.\n")
	} else {
		b.WriteString("Not verified: " + v.Unverified(commit) + ".\n")
	}
	return b.String()
}

// RenderVerification is the pull request's Verification section: every
// command that ran, on which commit, with its result; the last result of
// each command on the final commit; "not verified" unless each passed;
// and a warning when the agent's summary claims more than the record shows.
func RenderVerification(t Job) string {
	var b strings.Builder
	b.WriteString("### Verification\n\n")
	b.WriteString(renderMode(t))
	head := t.HeadSHA
	if len(t.Runs) > 0 {
		b.WriteString("| request | command | commit | result |\n|---|---|---|---|\n")
		for _, r := range t.Runs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.RequestID, cell(code(oneLine(r.Command))), words.Short(r.SHA), cell(resultText(r)))
		}
		b.WriteString("\n")
	}
	v := Verify(t.Runs, head)
	which := "final"
	if !t.Final {
		which = "latest"
	}
	commit := fmt.Sprintf("the %s commit %s", which, words.Short(head))
	switch {
	case head == "":
		b.WriteString("**Not verified**: nothing is committed yet.\n")
	case len(v.Final) == 0:
		fmt.Fprintf(&b, "**Not verified**: %s.\n", v.Unverified(commit))
	default:
		fmt.Fprintf(&b, "On %s:\n", commit)
		for _, r := range v.Final {
			fmt.Fprintf(&b, "- %s %s\n", code(oneLine(r.Command)), resultText(r))
		}
		if !v.Verified {
			fmt.Fprintf(&b, "\n**Not verified**: %s.\n", v.Unverified(commit))
		}
	}
	if claim := v.Unbacked(t.Summary); claim != "" {
		fmt.Fprintf(&b, "\n> [!WARNING]\n> The agent's summary says “%s”, but ", prose(claim))
		if len(v.Final) == 0 {
			fmt.Fprintf(&b, "nothing ran on the %s commit.\n", which)
		} else {
			b.WriteString("a command failed on that commit.\n")
		}
	}
	return b.String()
}

// allPassed reports whether there are results and each passed.
func allPassed(rs []RunRecord) bool {
	for _, r := range rs {
		if r.Outcome != OutcomePassed {
			return false
		}
	}
	return len(rs) > 0
}

// resultText is one record's result, with who let it run and its check run.
func resultText(r RunRecord) string {
	var s string
	switch r.Verdict {
	case Rejected:
		s = "not run: rejected by " + answerer(r.By)
		if r.Why != "" {
			s += " (" + prose(r.Why) + ")"
		}
		return s
	case TimedOut:
		return "not run: no answer in time"
	}
	mark := "❌"
	if r.Outcome == OutcomePassed {
		mark = "✅"
	}
	s = fmt.Sprintf("%s %s (exit code %d, %s)", mark, r.Outcome, r.ExitCode, r.Duration.Round(time.Second))
	switch {
	case r.Auto != "":
		s += ", approved by rule " + code(r.Auto)
	case r.Required && r.By != "":
		s += ", required, approved by @" + r.By
	case r.By != "":
		s += ", approved by @" + r.By
	}
	if r.CheckRunURL != "" {
		s += fmt.Sprintf(" · [check run](%s)", r.CheckRunURL)
	}
	return s
}

// Describe is r's result as plain text, for a terminal or a commit
// message: "passed (exit code 0, 3s), approved by ada". Whoever answered
// is named as given, without the @ of a pull request's mention.
func (r RunRecord) Describe() string {
	switch r.Verdict {
	case Rejected:
		s := "not run: rejected by " + plainAnswerer(r.By)
		if r.Why != "" {
			s += " (" + policy.Escaped(oneLine(r.Why)) + ")"
		}
		return s
	case TimedOut:
		return "not run: no answer in time"
	}
	s := string(r.Outcome)
	if r.Outcome != OutcomeNotRun && r.Outcome != OutcomeSetupFailed {
		s += fmt.Sprintf(" (exit code %d, %s)", r.ExitCode, r.Duration.Round(time.Second))
	}
	switch {
	case r.Auto != "":
		s += ", approved by rule " + code(r.Auto)
	case r.By != "":
		s += ", approved by " + plainAnswerer(r.By)
	}
	return s
}

// briefResult is a record's result in a few words, for a sentence.
func briefResult(r RunRecord) string {
	switch r.Verdict {
	case Rejected:
		return "rejected by " + answerer(r.By)
	case TimedOut:
		return "no answer in time"
	}
	return fmt.Sprintf("%s, exit code %d", r.Outcome, r.ExitCode)
}

// shortResult is an approved run's result for a sentence that names
// its command first: "failed (exit code 1)", "could not run".
func shortResult(r RunRecord) string {
	switch r.Outcome {
	case OutcomeNotRun:
		return string(r.Outcome)
	case OutcomeSetupFailed:
		return "did not run (its setup failed)"
	}
	return fmt.Sprintf("%s (exit code %d)", r.Outcome, r.ExitCode)
}

// plainAnswerer is answerer without Markdown's @.
func plainAnswerer(by string) string {
	if by == botAnswer {
		return "the bot"
	}
	return by
}

// answerer names who answered a request: a person by their login, or the
// bot itself (a command it refused to show, policy.CheckCommand) without
// an @, which would mention whatever account has its name.
func answerer(by string) string {
	if by == botAnswer {
		return "the bot"
	}
	return "@" + by
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
