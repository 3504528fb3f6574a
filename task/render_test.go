package task

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/golden"
	"github.com/pullwright/pullwright/policy"
)

func sampleTask() *Task {
	return &Task{
		ID: 12, Kind: KindFix, Issue: 1,
		Repo:         pullwright.Repo{Owner: "Codertocat", Name: "Hello-World", DefaultBranch: "master"},
		Requester:    Person{Login: "Codertocat", ID: 21031067},
		Instructions: "fix the spelling of 'commit' in the README\nand keep the rest",
		agentWork: &Work{
			Branch: "agent/1-spelling-error-in-the-readme-file",
			Turns:  4, Tokens: 5321,
			Spend: pullwright.Spend{Models: []pullwright.ModelSpend{{Model: "o3", Calls: 4, PromptTokens: 5000, CachedTokens: 1200,
				CompletionTokens: 321, USD: pullwright.Price{Input: 2, Output: 8, CachedInput: 0.5}.Cost(5000, 1200, 321)}}},
			Plan: []pullwright.PlanItem{
				{Title: "Find the misspelling", Status: "done"},
				{Title: "Fix it", Status: "in_progress"},
				{Title: "Summarise", Status: "pending"},
			},
			Steps:   []string{"grep `comitt` (1 match)", "read README.md", "edited README.md"},
			Title:   "Fix the spelling of commit in the README",
			Summary: "The README said `comitt`; it now says `commit`.",
		},
	}
}

func TestRenderGolden(t *testing.T) {
	working := sampleTask()
	working.State = Working
	working.agentWork.Guidance = &GuidanceUsed{SHA: "4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f", More: 2, Files: []GuidanceNote{
		{Path: "AGENTS.md"}, {Path: "docs/AGENTS.md", Cut: true},
		{Path: "CLAUDE.md", Skipped: "it is a symbolic link, which is not followed"},
		{Path: "z/AGENTS.md", Skipped: "the guidance's total bound of 32 KiB was reached"},
	}}

	done := sampleTask()
	done.State = Done
	done.agentWork.PRNumber, done.agentWork.PRURL = 2, "https://github.com/Codertocat/Hello-World/pull/2"
	done.agentWork.ChangedFiles = []pullwright.FileStat{{Path: "README.md", Added: 1, Deleted: 1}}

	failed := sampleTask()
	failed.State = Failed
	failed.Error = "cloning https://github.com/Codertocat/Hello-World.git failed"

	required := sampleTask()
	required.State = AwaitingApproval
	required.Settings = &policy.Settings{RequirePassing: "make check"}
	required.agentWork.HeadSHA = "4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f"
	required.agentWork.Request = &ExecRequest{ID: "12-2", Command: "make check", Required: true, SHA: required.agentWork.HeadSHA}
	required.agentWork.Runs = []RunRecord{{RequestID: "12-1", Command: "make check", SHA: "1111111111111111111111111111111111111111", Verdict: Approved, Outcome: OutcomeFailed, ExitCode: 2}}

	estimated := sampleTask()
	estimated.State = Working
	// A task saved before it kept its spend shows its tokens alone.
	estimated.agentWork.TokensEstimated, estimated.agentWork.Spend = true, pullwright.Spend{}

	// A fix in a mode, done: its status says what the record shows.
	tdd := sampleTask()
	tdd.State, tdd.Mode, tdd.agentWork.Final = Done, ModeTDD, true
	tdd.agentWork.PRNumber, tdd.agentWork.PRURL = 2, "https://github.com/Codertocat/Hello-World/pull/2"
	tdd.agentWork.BaseSHA, tdd.agentWork.HeadSHA = "0000000000000000000000000000000000000000", "2222222222222222222222222222222222222222"
	tdd.agentWork.Runs = []RunRecord{
		{RequestID: "12-1", Command: "go test ./...", SHA: "1111111111111111111111111111111111111111", Verdict: Approved, Outcome: OutcomeFailed, ExitCode: 1, Tests: true},
		{RequestID: "12-2", Command: "go test ./...", SHA: tdd.agentWork.HeadSHA, Verdict: Approved, Outcome: OutcomePassed, Tests: true, Code: true},
	}

	cancelled := sampleTask()
	cancelled.State = Cancelled
	cancelled.CancelledBy = "octocat"

	tests := []struct {
		name string
		got  string
	}{
		{"status-working", RenderStatus(job(working), "/agent")},
		{"status-done", RenderStatus(job(done), "/agent")},
		{"status-failed", RenderStatus(job(failed), "/agent")},
		{"status-cancelled", RenderStatus(job(cancelled), "/agent")},
		{"pull-request", RenderPullRequest(job(done))},
		{"commit-message", CommitMessage(job(done))},
		{"status-line-done", StatusLine(job(done))},
		{"status-estimated-tokens", RenderStatus(job(estimated), "/agent")},
		{"status-required-asked", RenderStatus(job(required), "/agent")},
		{"status-mode-done", RenderStatus(job(tdd), "/agent")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { golden.Check(t, "testdata/"+tc.name+".golden", tc.got) })
	}
}

func TestRenderStatusListsOnlyRecentSteps(t *testing.T) {
	tk := sampleTask()
	tk.State = Working
	tk.agentWork.Steps = nil
	for i := range 40 {
		tk.agentWork.Steps = append(tk.agentWork.Steps, "step "+string(rune('a'+i%26)))
	}
	golden.Check(t, "testdata/status-many-steps.golden", RenderStatus(job(tk), "/agent"))
}

func TestDefang(t *testing.T) {
	tests := []struct{ in, want string }{
		{"thanks @octocat and @org/team", "thanks @\u200doctocat and @\u200dorg/team"},
		{"Fixes #12", "Fixes\u200d #12"},
		{"this closes: #3 and resolves other/repo#4", "this closes\u200d: #3 and resolves\u200d other/repo#4"},
		{"fixed #9", "fixed\u200d #9"},
		{"prefix a@b.c email stays", "prefix a@\u200db.c email stays"},
		{"a fix for #12 is not a keyword use", "a fix for #12 is not a keyword use"},
		{"nothing here", "nothing here"},
	}
	for _, tc := range tests {
		if got := defang(tc.in); got != tc.want {
			t.Errorf("defang(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A command, or a changed file's name, never shows as something other than
// what it holds: characters that reorder or hide text are written as their
// code points wherever the request is shown.
func TestRequestShowsUnshownCharactersEscaped(t *testing.T) {
	const rlo = "\u202e"
	tk := &Task{Kind: KindFix, ID: 7, Issue: 2, State: AwaitingApproval, Requester: Person{Login: "alice"}, agentWork: &Work{Branch: "agent/2-x",
		Request: &ExecRequest{ID: "7-1", Command: "echo ok " + rlo + "; rm -rf . #", Reason: "why", SHA: "0123456789abcdef"}}}
	files := []pullwright.FileStat{{Path: "x" + rlo + "og.sh", Added: 1}}
	for name, got := range map[string]string{
		"comment":   RenderRequest(ShowRequest(job(tk), files, ManifestChanges{}, false)),
		"check run": RenderRequestSummary(job(tk)),
		"status":    RenderStatus(job(tk), "/agent"),
	} {
		if strings.Contains(got, rlo) {
			t.Errorf("the %s holds U+202E as is:\n%s", name, got)
		}
		if !strings.Contains(got, "echo ok <U+202E>; rm -rf . #") {
			t.Errorf("the %s does not show the command escaped:\n%s", name, got)
		}
	}
	if got := RenderRequest(ShowRequest(job(tk), files, ManifestChanges{}, false)); !strings.Contains(got, "x<U+202E>og.sh") {
		t.Errorf("the file name is not shown escaped:\n%s", got)
	}
}

// The agent's reason is its own text, steered perhaps by the issue: in a
// request it shows as written and cannot fold away the facts after it.
func TestRequestShowsTheReasonInert(t *testing.T) {
	tk := &Task{Kind: KindFix, ID: 7, Issue: 2, Requester: Person{Login: "alice"}, agentWork: &Work{Branch: "agent/2-x",
		Request: &ExecRequest{ID: "7-1", Command: "make test", SHA: "0123456789abcdef",
			Reason: "checks it <details><summary>more</summary> <!-- x --> \u202eok fixes #3 @acme/admins ![big](https://evil.test/tall.png) [Approve](https://evil.test)"}}}
	files := []pullwright.FileStat{{Path: "Makefile", Added: 1}}
	for name, got := range map[string]string{"comment": RenderRequest(ShowRequest(job(tk), files, ManifestChanges{}, false)), "check run": RenderRequestSummary(job(tk))} {
		if strings.Contains(got, "<details><summary>more") || strings.Contains(got, "<!--") || strings.Contains(got, "\u202e") {
			t.Errorf("the %s shows the reason's markup live:\n%s", name, got)
		}
		if !strings.Contains(got, "&lt;details&gt;") || !strings.Contains(got, "&lt;U+202E&gt;ok") || !strings.Contains(got, "@\u200dacme") ||
			!strings.Contains(got, `\!\[big\]\(https://evil.test/tall.png\)`) || strings.Contains(got, "[Approve](") {
			t.Errorf("the %s does not show the reason as written:\n%s", name, got)
		}
	}
}

// A request whose changes touch a dependency manifest says that the
// repository's setup runs first with them, so that the approval covers
// both; and the status says what a setup did, hosts shown as code.
func TestRequestAndStatusShowTheSetup(t *testing.T) {
	tk := &Task{Kind: KindFix, ID: 7, Issue: 2, State: Running, Requester: Person{Login: "alice"},
		Repo:      pullwright.Repo{Owner: "o", Name: "r", DefaultBranch: "main"},
		agentWork: &Work{Branch: "agent/2-x", Request: &ExecRequest{ID: "7-1", Command: "go test ./...", SHA: "0123456789abcdef"}}}
	files := []pullwright.FileStat{{Path: "main.go", Added: 1}, {Path: "go.mod", Added: 2, Deleted: 1}}
	plain := RenderRequest(ShowRequest(job(tk), files, ManifestChanges{}, false))
	if strings.Contains(plain, "setup") {
		t.Errorf("a request with no manifest change speaks of setup:\n%s", plain)
	}
	// The manifests' diff is shown as it is: a fence in it does not end
	// the block, and a character that hides text is written as its code.
	diff := "diff --git a/go.mod b/go.mod\n--- a/go.mod\n+++ b/go.mod\n@@ -1 +1,2 @@\n module x\n+require evil.test/m v1.0.0 // ```\u202e\n"
	changed := RenderRequest(ShowRequest(job(tk), files, ManifestChanges{Files: files[1:], Diff: diff}, false))
	if !strings.Contains(changed, "setup runs first, with these manifests") || !strings.Contains(changed, "change `go.mod` (+2 −1) against `main`") ||
		!strings.Contains(changed, "```diff\ndiff --git a/go.mod b/go.mod\n") || !strings.Contains(changed, "+require evil.test/m v1.0.0 // `\u200d``<U+202E>\n```") {
		t.Errorf("a request with a changed go.mod:\n%s", changed)
	}
	// A pull request's are compared with its base branch.
	pr := *tk.Clone()
	pr.agentWork.Pull = &PullWork{Info: pullwright.Pull{Number: 3, BaseRef: "release-1", BaseSHA: "feedface"}}
	if got := RenderRequest(ShowRequest(job(&pr), nil, ManifestChanges{Files: files[1:]}, false)); !strings.Contains(got, "change `go.mod` (+2 −1) against `release-1`") {
		t.Errorf("a pull request's changed go.mod:\n%s", got)
	}
	if got := RenderRequest(ShowRequest(job(tk), files, ManifestChanges{Err: errors.New("fetch failed")}, false)); !strings.Contains(got, "could not be compared** with `main`") {
		t.Errorf("manifests that could not be read:\n%s", got)
	}
	if got := RenderRequest(ShowRequest(job(tk), files, ManifestChanges{Files: files[1:]}, true)); strings.Contains(got, "setup") {
		t.Errorf("the local runner runs no setup, and its request speaks of one:\n%s", got)
	}
	tk.agentWork.Request.Setup = &pullwright.SetupRecord{Steps: []string{"go mod download"}, Failed: true, ExitCode: 1, Duration: 3200 * time.Millisecond,
		Reached: []string{"mirror.test:443"}, Blocked: []string{"x`@acme/admins`:443"}}
	status := RenderStatus(job(tk), "/agent")
	if !strings.Contains(status, "📦 Setup **failed** (exit code 1) in 3.2s: `go mod download` · reached `mirror.test:443` · **blocked** `` x`@acme/admins`:443 ``") {
		t.Errorf("status:\n%s", status)
	}
	if got := setupFailure(tk.agentWork.Request.Setup); !strings.Contains(got, "the command was not run") || !strings.Contains(got, "blocked: x`@acme/admins`:443") {
		t.Errorf("what the agent learns of a failed setup:\n%s", got)
	}
	// A monorepo's many steps are named up to a bound.
	var steps []string
	for i := range maxStepsShown + 3 {
		steps = append(steps, fmt.Sprintf("(cd m%d && go mod download)", i))
	}
	if got := setupLine(&pullwright.SetupRecord{Steps: steps}); !strings.HasSuffix(strings.SplitN(got, "\n", 2)[0], "`(cd m7 && go mod download)`; and 3 more") {
		t.Errorf("setup line of %d steps: %s", len(steps), got)
	}
}

// An auto_approve rule that matches but may not answer (a fork's code,
// changed manifests) is named in the request, with why it did not answer.
func TestRequestNamesTheRuleThatDidNotAnswer(t *testing.T) {
	settings := &policy.Settings{AutoApprove: []policy.AutoRule{{Command: "make lint"}, {Pattern: "go test .*"}}}
	tk := &Task{Kind: KindFix, ID: 7, Issue: 2, Requester: Person{Login: "alice"}, Settings: settings,
		Repo:      pullwright.Repo{Owner: "o", Name: "r", DefaultBranch: "main"},
		agentWork: &Work{Branch: "agent/2-x", Request: &ExecRequest{ID: "7-1", Command: "go test ./...", SHA: "0123456789abcdef"}}}
	fork := *tk.Clone()
	fork.agentWork.Pull = &PullWork{Info: pullwright.Pull{Number: 2, Fork: true, HeadRepo: "mallory/r", Author: "mallory", BaseRef: "main", BaseSHA: "feed"}}
	tests := []struct {
		name      string
		t         *Task
		manifests ManifestChanges
		want      string
	}{
		{"a fork's code", &fork, ManifestChanges{}, "a rule never answers for a fork's code"},
		{"changed manifests", tk, ManifestChanges{Files: []pullwright.FileStat{{Path: "go.mod", Added: 1}}}, "changed dependency manifests"},
	}
	for _, tt := range tests {
		v := ShowRequest(job(tt.t), nil, tt.manifests, false)
		if a := v.AutoApprove; a == nil || a.Matched != "pattern go test .*" || !strings.Contains(a.Why, tt.want) {
			t.Errorf("%s: auto_approve shown as %+v", tt.name, v.AutoApprove)
		}
		if got := RenderRequest(v); !strings.Contains(got, "the rule pattern `go test .*` matches this command but does not answer it") {
			t.Errorf("%s: the comment does not name the rule:\n%s", tt.name, got)
		}
	}
}
