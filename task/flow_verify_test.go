package task_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// TestRequirePassing: the repository's required command must pass on the
// final commit before the pull request is ready for review. The bot asks
// for it itself, through the approval rules; a failure sends the agent
// back to work; a refusal leaves the pull request a draft.
func TestRequirePassing(t *testing.T) {
	const required = "make check"
	cases := []struct {
		name   string
		config string
		// script is the agent's turns after the first finish, when the
		// required command failed and it goes on.
		script []tasktest.Turn
		// runs are the sandbox's results, in order.
		runs []pullwright.RunResult
		// answers are the maintainer's answers to the bot's requests, in
		// order ("" lets auto_approve answer).
		answers []task.Kind
		// wantRuns are the records' outcomes; wantDraft whether the pull
		// request stays a draft; wantReopened how many times the agent
		// heard that the required command failed.
		wantRuns     []task.RunOutcome
		wantDraft    bool
		wantReopened int
	}{
		{name: "auto-approved and passing", config: "require_passing: make check\nauto_approve:\n  - command: make check\n",
			runs: []pullwright.RunResult{{ExitCode: 0, Output: "all good\n"}}, answers: []task.Kind{""},
			wantRuns: []task.RunOutcome{task.OutcomePassed}},
		{name: "approved, failing, fixed, passing", config: "require_passing: make check\n",
			script:   []tasktest.Turn{finish("Fix the README typo", map[string]string{"main.go": "package main\n\nfunc main() { println(2) }\n"})},
			runs:     []pullwright.RunResult{{ExitCode: 2, Output: "FAIL: lint\n"}, {ExitCode: 0, Output: "ok\n"}},
			answers:  []task.Kind{task.KindApprove, task.KindApprove},
			wantRuns: []task.RunOutcome{task.OutcomeFailed, task.OutcomePassed}, wantReopened: 1},
		{name: "rejected: the pull request stays a draft", config: "require_passing: make check\n",
			answers: []task.Kind{task.KindReject}, wantRuns: []task.RunOutcome{task.OutcomeRejected}, wantDraft: true},
		{name: "the sandbox failed: a draft, and the agent is not sent back", config: "require_passing: make check\n",
			runs:    []pullwright.RunResult{{ExitCode: -1, Output: "the run was interrupted before it finished"}},
			answers: []task.Kind{task.KindApprove}, wantRuns: []task.RunOutcome{task.OutcomeInterrupted}, wantDraft: true},
		{name: "failing, and the agent's budget runs out: a draft", config: "require_passing: make check\nauto_approve:\n  - command: make check\n",
			script:  []tasktest.Turn{{Err: fmt.Errorf("%w: 40 of 40 turns", task.ErrBudget)}},
			runs:    []pullwright.RunResult{{ExitCode: 1, Output: "FAIL\n"}},
			answers: []task.Kind{""}, wantRuns: []task.RunOutcome{task.OutcomeFailed}, wantDraft: true, wantReopened: 1},
		{name: "failing and the agent changes nothing: a draft", config: "require_passing: make check\n",
			script:  []tasktest.Turn{finish("Fix the README typo", nil)},
			runs:    []pullwright.RunResult{{ExitCode: 1, Output: "FAIL\n"}},
			answers: []task.Kind{task.KindApprove}, wantRuns: []task.RunOutcome{task.OutcomeFailed}, wantDraft: true, wantReopened: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.gh.SetFile("main", ".github/pullwright.yml", c.config)
			w.agent.Script = append([]tasktest.Turn{finish("Fix the README typo", map[string]string{"README.md": "# widget\n\nNo typo.\n"})}, c.script...)
			for _, r := range c.runs {
				w.runner.Script = append(w.runner.Script, tasktest.Run{Result: r})
			}
			fix := w.fix("fix the typo")
			w.drain()
			for i, kind := range c.answers {
				if kind == "" {
					continue // auto_approve answered
				}
				parked := w.want(fix.ID, task.AwaitingApproval)
				r := tasktest.Job(parked).Request
				if !r.Required || r.Command != required || r.SHA != tasktest.Job(parked).HeadSHA {
					t.Fatalf("answer %d: the waiting request is %+v on %s, want the required command on the head", i+1, r, tasktest.Job(parked).HeadSHA)
				}
				if len(w.gh.Opened) != 1 || !w.gh.Opened[0].Draft {
					t.Fatalf("while the required command waits, pull requests = %+v, want one draft", w.gh.Opened)
				}
				w.clock.Advance(time.Minute)
				w.answer(kind, "maint", int64(20+i), r.ID)
				w.drain()
			}
			done := w.want(fix.ID, task.Done)
			var outcomes []task.RunOutcome
			for _, r := range tasktest.Job(done).Runs {
				if !r.Required || r.Command != required {
					t.Errorf("record %+v is not the required command's", r)
				}
				outcomes = append(outcomes, r.Outcome)
			}
			if !slices.Equal(outcomes, c.wantRuns) {
				t.Errorf("records = %q, want %q", outcomes, c.wantRuns)
			}
			last := tasktest.Job(done).Runs[len(tasktest.Job(done).Runs)-1]
			if last.Outcome == task.OutcomePassed && last.SHA != tasktest.Job(done).HeadSHA {
				t.Errorf("the passing run was on %s, the final commit is %s", last.SHA, tasktest.Job(done).HeadSHA)
			}
			reopened := 0
			for _, o := range w.agent.Outcomes {
				if o.Required != "" {
					if o.Required != required || o.Result == nil || o.Result.ExitCode == 0 {
						t.Errorf("the agent heard %+v", o)
					}
					reopened++
				} else {
					t.Errorf("the agent was handed an outcome of a request it did not make: %+v", o)
				}
			}
			if reopened != c.wantReopened {
				t.Errorf("the agent heard of %d failures, want %d", reopened, c.wantReopened)
			}
			if len(w.gh.Opened) != 1 {
				t.Fatalf("pull requests opened: %+v", w.gh.Opened)
			}
			pr := w.gh.Opened[0]
			if pr.Draft != c.wantDraft || tasktest.Job(done).Draft != c.wantDraft {
				t.Errorf("pull request draft %v (task %v), want %v", pr.Draft, tasktest.Job(done).Draft, c.wantDraft)
			}
			if !strings.Contains(pr.Body, "### Verification") || !strings.Contains(pr.Body, "`make check`") {
				t.Errorf("the pull request's body does not show the required run:\n%s", pr.Body)
			}
			report := w.gh.Comment(1, "task-1-done").Text()
			if c.wantDraft != strings.Contains(report, "stays a draft: the repository requires `make check` to pass") {
				t.Errorf("the report does not say why the pull request is a draft: %q", report)
			}
		})
	}
}

// TestModeIsCheckedAgainstTheRecord: a fix in a mode says in its pull
// request and its status what the record shows of each step of the mode,
// on the commits where the steps happened and what those changed, and
// which steps are missing.
func TestModeIsCheckedAgainstTheRecord(t *testing.T) {
	const test, fix = "main_test.go", "main.go"
	testOnly := map[string]string{test: "package main\n\nfunc TestEmpty(t *testing.T) {}\n"}
	fixed := map[string]string{fix: "package main\n\nfunc main() { println(\"fixed\") }\n"}
	both := map[string]string{test: testOnly[test], fix: fixed[fix]}
	pyTest := map[string]string{"tests/test_page.py": "def test_empty():\n    assert page(\"\") == 404\n"}
	narrowed := "package main\n\nimport \"flag\"\n\nfunc init() { flag.Set(\"test.run\", \"^$\") }\n\nfunc main() {}\n"
	// A debug task whose final commit changes only the tests' configuration.
	const notFixed = "**Mode debug**: the record shows `pytest` failed on <sha> (the base), then passed on <sha> (the final commit, changes tests only). Missing:\n- the same command passing on the final commit, with the fix\n\n"
	const pyproject = "[project]\nname = \"widget\"\ndependencies = [\"requests>=2.31\"]\n\n[tool.pytest.ini_options]\nminversion = \"7\"\n"
	cases := []struct {
		name   string
		mode   task.Mode
		script []tasktest.Turn
		runs   []pullwright.RunResult
		links  []string // paths the world's commits hold as symbolic links
		want   string
	}{
		{name: "tdd, in order", mode: task.ModeTDD,
			script: []tasktest.Turn{pending("go test ./...", testOnly), pending("go test ./...", fixed), finish("Fix it", nil)},
			runs:   []pullwright.RunResult{{ExitCode: 1, Output: "--- FAIL: TestEmpty\n"}, {ExitCode: 0, Output: "ok\n"}},
			want:   "**Mode tdd**: the record shows `go test ./...` failed on <sha> (changes tests only), then passed on <sha> (the final commit, changes tests and code; the tests as when they failed).\n\n"},
		{name: "tdd, test and fix together", mode: task.ModeTDD,
			script: []tasktest.Turn{pending("go test ./...", both), finish("Fix it", nil)},
			runs:   []pullwright.RunResult{{ExitCode: 0, Output: "ok\n"}},
			want:   "**Mode tdd**: the record shows `go test ./...` passed on <sha> (the final commit, changes tests and code). Missing:\n- a run that shows a new or changed test failing before the fix"},
		{name: "debug, reproduced on the base", mode: task.ModeDebug,
			script: []tasktest.Turn{pending("go test ./...", nil), pending("go test ./...", fixed), finish("Fix it", nil)},
			runs:   []pullwright.RunResult{{ExitCode: 1, Output: "FAIL\n"}, {ExitCode: 0, Output: "ok\n"}},
			want:   "**Mode debug**: the record shows `go test ./...` failed on <sha> (the base), then passed on <sha> (the final commit, changes code only).\n\n"},
		{name: "refactor, tests before and after", mode: task.ModeRefactor,
			script: []tasktest.Turn{pending("go test ./...", nil), pending("go test ./...", fixed), finish("Tidy it", nil)},
			want:   "**Mode refactor**: the record shows `go test ./...` passed on <sha> (the base), then passed on <sha> (the final commit, changes code only); the exported Go API of the changed files unchanged.\n\n"},
		// The final commit changes only what decides what the tests do:
		// no fix, whatever the runs say.
		{name: "tdd, the final commit only adds a conftest.py", mode: task.ModeTDD,
			script: []tasktest.Turn{pending("pytest", pyTest), pending("pytest", map[string]string{"conftest.py": "collect_ignore = [\"tests\"]\n"}), finish("Fix it", nil)},
			runs:   []pullwright.RunResult{{ExitCode: 1, Output: "1 failed\n"}, {ExitCode: 0, Output: "no tests ran\n"}},
			want:   "**Mode tdd**: the record shows `pytest` failed on <sha> (changes tests only), then passed on <sha> (the final commit, changes tests only; the tests changed since they failed). Missing:\n- the same command passing on the final commit, with the fix and the tests unchanged since they failed\n\n"},
		{name: "tdd, the final commit only narrows the tests in main.go's init", mode: task.ModeTDD,
			script: []tasktest.Turn{pending("go test ./...", testOnly), pending("go test ./...", map[string]string{fix: narrowed}), finish("Fix it", nil)},
			runs:   []pullwright.RunResult{{ExitCode: 1, Output: "--- FAIL: TestEmpty\n"}, {ExitCode: 0, Output: "ok\n"}},
			want:   "**Mode tdd**: the record shows `go test ./...` failed on <sha> (changes tests only), then passed on <sha> (the final commit, changes tests only; the tests changed since they failed). Missing:\n- the same command passing on the final commit, with the fix and the tests unchanged since they failed\n\n"},
		{name: "debug, the final commit only adds a pytest.ini", mode: task.ModeDebug,
			script: []tasktest.Turn{pending("pytest", nil), pending("pytest", map[string]string{"pytest.ini": "[pytest]\naddopts = -k \"not empty\"\n"}), finish("Fix it", nil)},
			runs:   []pullwright.RunResult{{ExitCode: 1, Output: "1 failed\n"}, {ExitCode: 0, Output: "1 deselected\n"}},
			want:   notFixed},
		{name: "debug, the final commit only changes pytest's options in pyproject.toml", mode: task.ModeDebug,
			script: []tasktest.Turn{pending("pytest", nil), pending("pytest", map[string]string{"pyproject.toml": pyproject + "addopts = \"-k 'not empty'\"\n"}), finish("Fix it", nil)},
			runs:   []pullwright.RunResult{{ExitCode: 1, Output: "1 failed\n"}, {ExitCode: 0, Output: "1 deselected\n"}},
			want:   notFixed},
		{name: "debug, the fix is a dependency in pyproject.toml", mode: task.ModeDebug,
			script: []tasktest.Turn{pending("pytest", nil), pending("pytest", map[string]string{"pyproject.toml": strings.Replace(pyproject, "2.31", "2.32", 1)}), finish("Fix it", nil)},
			runs:   []pullwright.RunResult{{ExitCode: 1, Output: "1 failed\n"}, {ExitCode: 0, Output: "1 passed\n"}},
			want:   "**Mode debug**: the record shows `pytest` failed on <sha> (the base), then passed on <sha> (the final commit, changes code only).\n\n"},
		{name: "debug, a pyproject.toml that cannot be read counts as test configuration", mode: task.ModeDebug, links: []string{"pyproject.toml"},
			script: []tasktest.Turn{pending("pytest", nil), pending("pytest", map[string]string{"pyproject.toml": strings.Replace(pyproject, "2.31", "2.32", 1)}), finish("Fix it", nil)},
			runs:   []pullwright.RunResult{{ExitCode: 1, Output: "1 failed\n"}, {ExitCode: 0, Output: "1 passed\n"}},
			want:   notFixed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.base = w.ws.Commit(cloneURL, "main", map[string]string{"pyproject.toml": pyproject}, "python too")
			w.ws.Links = c.links
			w.agent.Script = c.script
			for _, r := range c.runs {
				w.runner.Script = append(w.runner.Script, tasktest.Run{Result: r})
			}
			fixTask := w.ask(&task.Task{Kind: task.KindFix, Issue: 1, CommentID: 11, Requester: person("alice"), Instructions: "the empty page", Mode: c.mode})
			w.drain()
			for i := 0; i < 5; i++ {
				got := w.get(fixTask.ID)
				if got.State != task.AwaitingApproval {
					break
				}
				w.clock.Advance(time.Minute)
				w.answer(task.KindApprove, "maint", int64(20+i), tasktest.Job(got).Request.ID)
				w.drain()
			}
			done := w.want(fixTask.ID, task.Done)
			if w.agent.Briefs[0].Mode != string(c.mode) {
				t.Errorf("the agent's brief has mode %q", w.agent.Briefs[0].Mode)
			}
			for _, r := range tasktest.Job(done).Runs {
				if r.SHA != tasktest.Job(done).BaseSHA && !r.Tests && !r.Code {
					t.Errorf("record %s on %s says its commit changed nothing", r.RequestID, r.SHA)
				}
			}
			want := regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(c.want), "<sha>", "[0-9a-f]{12}"))
			if body := w.gh.Opened[0].Body; !want.MatchString(body) {
				t.Errorf("the pull request does not say %q:\n%s", c.want, body)
			}
			if status := w.status(done).Text(); !want.MatchString(status) {
				t.Errorf("the status comment does not say %q:\n%s", c.want, status)
			}
		})
	}
}
