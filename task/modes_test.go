package task

import (
	"reflect"
	"strings"
	"testing"
)

func TestCheckMode(t *testing.T) {
	const base, testOnly, fixed, final = "base", "tests", "fixed", "final"
	run := func(cmd, sha string, outcome RunOutcome, tests, code bool) RunRecord {
		return RunRecord{Command: cmd, SHA: sha, Verdict: Approved, Outcome: outcome, Tests: tests, Code: code}
	}
	cases := []struct {
		name         string
		mode         Mode
		instructions string
		api          []string
		runs         []RunRecord
		want         []string // missing steps; nil when verified
	}{
		{name: "tdd: test fails alone, then passes with the fix", mode: ModeTDD, runs: []RunRecord{
			run("go test ./...", testOnly, OutcomeFailed, true, false),
			run("go test ./...", final, OutcomePassed, true, true),
		}},
		{name: "tdd: the failing run already held code changes", mode: ModeTDD, runs: []RunRecord{
			run("go test ./...", fixed, OutcomeFailed, true, true),
			run("go test ./...", final, OutcomePassed, true, true),
		}, want: []string{"a run that shows a new or changed test failing before the fix (on a commit with the test change only)", "the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: failing on the base, with no test change", mode: ModeTDD, runs: []RunRecord{
			run("go test ./...", base, OutcomeFailed, false, false),
			run("go test ./...", final, OutcomePassed, true, true),
		}, want: []string{"a run that shows a new or changed test failing before the fix (on a commit with the test change only)", "the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: passing only on an earlier commit", mode: ModeTDD, runs: []RunRecord{
			run("go test ./...", testOnly, OutcomeFailed, true, false),
			run("go test ./...", fixed, OutcomePassed, true, true),
		}, want: []string{"the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: the test was changed after it failed", mode: ModeTDD, runs: []RunRecord{
			{Command: "go test ./...", SHA: testOnly, Verdict: Approved, Outcome: OutcomeFailed, Tests: true, TestsDigest: "strict"},
			{Command: "go test ./...", SHA: final, Verdict: Approved, Outcome: OutcomePassed, Tests: true, Code: true, TestsDigest: "weakened"},
		}, want: []string{"the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: another command passed", mode: ModeTDD, runs: []RunRecord{
			run("go test ./pkg", testOnly, OutcomeFailed, true, false),
			run("go vet ./...", final, OutcomePassed, true, true),
		}, want: []string{"the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: a run that never started is no failing test", mode: ModeTDD, runs: []RunRecord{
			run("go test ./...", testOnly, OutcomeNotRun, true, false),
			run("go test ./...", final, OutcomePassed, true, true),
		}, want: []string{"a run that shows a new or changed test failing before the fix (on a commit with the test change only)", "the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: a rejected run is no step", mode: ModeTDD, runs: []RunRecord{
			{Command: "go test ./...", SHA: testOnly, Verdict: Rejected, Outcome: OutcomeRejected, Tests: true},
			run("go test ./...", final, OutcomePassed, true, true),
		}, want: []string{"a run that shows a new or changed test failing before the fix (on a commit with the test change only)", "the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "debug: reproduced on the base, gone after the fix", mode: ModeDebug, runs: []RunRecord{
			run("./repro.sh", base, OutcomeFailed, false, false),
			run("./repro.sh", final, OutcomePassed, false, true),
		}},
		{name: "debug: a sandbox that failed reproduces nothing", mode: ModeDebug, runs: []RunRecord{
			run("./repro.sh", base, OutcomeNotRun, false, false),
			run("./repro.sh", final, OutcomePassed, false, true),
		}, want: []string{"a run that reproduces the failure before the code is changed", "the same command passing on the final commit, with the fix"}},
		{name: "debug: never reproduced", mode: ModeDebug, runs: []RunRecord{
			run("./repro.sh", final, OutcomePassed, false, true),
		}, want: []string{"a run that reproduces the failure before the code is changed", "the same command passing on the final commit, with the fix"}},
		{name: "debug: a timeout is not a reproduction that passes later", mode: ModeDebug, runs: []RunRecord{
			run("./repro.sh", base, OutcomeTimedOut, false, false),
			run("./repro.sh", final, OutcomeFailed, false, true),
		}, want: []string{"the same command passing on the final commit, with the fix"}},
		{name: "refactor: passing before and after", mode: ModeRefactor, runs: []RunRecord{
			run("go test ./...", base, OutcomePassed, false, false),
			run("go test ./...", final, OutcomePassed, false, true),
		}},
		{name: "refactor: never run before the change", mode: ModeRefactor, runs: []RunRecord{
			run("go test ./...", final, OutcomePassed, false, true),
		}, want: []string{"the tests passing before the code was changed", "the same tests passing on the final commit"}},
		{name: "refactor: the API changed", mode: ModeRefactor, api: []string{"removed pkg: func Old"}, runs: []RunRecord{
			run("go test ./...", base, OutcomePassed, false, false),
			run("go test ./...", final, OutcomePassed, false, true),
		}, want: []string{"an unchanged exported API (`removed pkg: func Old`)"}},
		{name: "refactor: told to keep the API, and it changed", mode: ModeRefactor, instructions: "split store.go by table; keep the public API unchanged",
			api: []string{"removed pkg: func Old"}, runs: []RunRecord{
				run("go test ./...", base, OutcomePassed, false, false),
				run("go test ./...", final, OutcomePassed, false, true),
			}, want: []string{"an unchanged exported API (`removed pkg: func Old`)"}},
		{name: "refactor: the passing run before had changed the tests", mode: ModeRefactor, runs: []RunRecord{
			run("go test ./...", testOnly, OutcomePassed, true, false),
			run("go test ./...", final, OutcomePassed, true, true),
		}, want: []string{"the tests passing before the code was changed", "the same tests passing on the final commit"}},
		{name: "refactor: the API changed as asked", mode: ModeRefactor, instructions: "rename Old to New in the API", api: []string{"removed pkg: func Old"}, runs: []RunRecord{
			run("go test ./...", base, OutcomePassed, false, false),
			run("go test ./...", final, OutcomePassed, false, true),
		}},
		{name: "no mode", runs: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := &Task{Kind: KindFix, Mode: c.mode, Instructions: c.instructions, agentWork: &Work{Final: true, HeadSHA: final, BaseSHA: base, Runs: c.runs, APIChanges: c.api}}
			got := checkMode(job(task))
			if got.OK != (c.want == nil) || !reflect.DeepEqual(got.Missing, c.want) {
				t.Errorf("checkMode = %+v, want missing %q", got, c.want)
			}
			text := renderMode(job(task))
			if c.mode == "" {
				if text != "" {
					t.Errorf("a task without a mode renders %q", text)
				}
				return
			}
			if !strings.HasPrefix(text, "**Mode "+string(c.mode)+"**: the record shows ") || strings.Contains(text, "Missing") != (c.want != nil) {
				t.Errorf("rendered %q", text)
			}
			for _, m := range c.want {
				if !strings.Contains(text, "\n- "+m+"\n") {
					t.Errorf("rendered %q, without %q", text, m)
				}
			}
		})
	}
}

func TestAsksAPIChange(t *testing.T) {
	for _, c := range []struct {
		instructions string
		want         bool
	}{
		{"rename Open to Dial in the API", true},
		{"split store.go; change the exported signature of New to take a context", true},
		{"split store.go by table; keep the public API unchanged", false},
		{"tidy the API docs without changing the API", false},
		{"don't rename anything exported", false},
		{"split store.go by table", false},
	} {
		if got := asksAPIChange(c.instructions); got != c.want {
			t.Errorf("asksAPIChange(%q) = %v, want %v", c.instructions, got, c.want)
		}
	}
}
