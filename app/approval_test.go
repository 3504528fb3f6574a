package app_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/golden"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// newRunLLM is a model that fixes the README, asks to run command, and
// finishes once it has the answer. Its answer depends only on how far the
// conversation got, so a replayed or resumed turn gets the same one.
func newRunLLM(t *testing.T, command string) *fakellm.Server {
	steps := []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": command, "reason": "check that the typo is gone"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit in the README", "summary": "Fixed and checked."})}},
	}
	return fakellm.NewByTurn(t, steps...)
}

// newTwoRunLLM is newRunLLM asking to run first, then second.
func newTwoRunLLM(t *testing.T, first, second string) *fakellm.Server {
	steps := []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": first, "reason": "check that the typo is gone"})}},
		{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": second, "reason": "count the lines"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit in the README", "summary": "Fixed and checked."})}},
	}
	return fakellm.NewByTurn(t, steps...)
}

// waitState waits until the issue's latest fix task is in state s.
func (e *env) waitState(issue int, s task.State) *task.Task {
	e.t.Helper()
	key := (&task.Task{Repo: pullwright.Repo{InstallationID: installID, Owner: owner, Name: repoName}, Issue: issue}).IssueKey()
	deadline := time.Now().Add(patience)
	for {
		tk, err := e.bot.Store().Latest(context.Background(), key)
		if err == nil && tk.State == s {
			return tk
		}
		if err == nil && tk.State.Terminal() && !s.Terminal() {
			e.t.Fatalf("task ended %s (%s) while waiting for %s\n%s", tk.State, tk.Error, s, e.logs.String())
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("task never reached %s: %s\n%s", s, botproc.Describe(tk), e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// comment delivers an issue comment by user on issue.
func (e *env) comment(id string, issue int, user, body string) int {
	e.t.Helper()
	return e.deliver(id, "issue_comment", e.commentPayload(issue, user, body))
}

// commentPayload makes an issue comment by user on issue, as GitHub would,
// and returns the delivery that tells of it, to be delivered when a test
// wants.
func (e *env) commentPayload(issue int, user, body string) []byte {
	e.t.Helper()
	return e.payload(body, func(p map[string]any) {
		p["issue"].(map[string]any)["number"] = issue
		if user != owner {
			p["sender"].(map[string]any)["login"] = user
			p["sender"].(map[string]any)["id"] = botproc.UserID(user)
		}
		p["comment"].(map[string]any)["user"].(map[string]any)["login"] = user
	})
}

// button delivers a press of an approval check run button.
func (e *env) button(id, user, identifier, externalID, headSHA string) int {
	e.t.Helper()
	return e.deliver(id, "check_run", botproc.ButtonPayload(e.t, e.git.CloneURL(owner, repoName), user, identifier, externalID, headSHA, botproc.ApprovalRunID(e.gh, externalID)))
}

func checkRunsNamed(gh *fakegithub.Server, name string) []fakegithub.CheckRun {
	var out []fakegithub.CheckRun
	for _, cr := range gh.CheckRuns(owner, repoName) {
		if cr.Name == name {
			out = append(out, cr)
		}
	}
	return out
}

// lastToolResult is the content of the last tool message the model got.
func lastToolResult(llm *fakellm.Server) string {
	reqs := llm.Requests()
	msgs := reqs[len(reqs)-1].Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == openai.ChatMessageRoleTool {
			return msgs[i].Content
		}
	}
	return ""
}

func TestApprovedCommandRunsAndTheDraftBecomesReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newRunLLM(t, "grep -c commit README.md"))
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	if code := e.comment("d1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
		t.Fatalf("fix answered %d", code)
	}
	waiting := e.waitState(1, task.AwaitingApproval)
	r := tasktest.Job(waiting).Request
	if r == nil || r.ID != fmt.Sprintf("%d-1", waiting.ID) || r.Command != "grep -c commit README.md" || r.SHA == "" || r.SHA != tasktest.Job(waiting).PushedSHA {
		t.Fatalf("request = %+v (pushed %s)", r, tasktest.Job(waiting).PushedSHA)
	}
	// The checkpoint is on the branch, a draft pull request is open, and
	// the request is shown on the issue, the pull request and a check run.
	if got, _ := e.git.RevParse(t, owner, repoName, tasktest.Job(waiting).Branch); got != r.SHA {
		t.Fatalf("branch at %s, request bound to %s", got, r.SHA)
	}
	prs := e.gh.PullRequests(owner, repoName)
	if len(prs) != 1 || !prs[0].Draft {
		t.Fatalf("pull requests = %+v, want one draft", prs)
	}
	issueReq := e.waitComment(1, "request `"+r.ID+"`")
	for _, want := range []string{"grep -c commit README.md", "check that the typo is gone", "/approve " + r.ID, "/reject", "`README.md` (+1 −1)"} {
		if !strings.Contains(issueReq.Body, want) {
			t.Errorf("request comment lacks %q:\n%s", want, issueReq.Body)
		}
	}
	e.waitComment(prs[0].Number, "request `"+r.ID+"`")
	approvals := checkRunsNamed(e.gh, task.ApprovalCheck)
	if len(approvals) != 1 {
		t.Fatalf("%d approval check runs", len(approvals))
	}
	ac := approvals[0]
	if ac.HeadSHA != r.SHA || ac.Status != "completed" || ac.Conclusion != "action_required" || ac.ExternalID != r.ID ||
		ac.DetailsURL == "" || len(ac.Actions) != 2 || ac.Actions[0].Identifier != "approve" || ac.Actions[1].Identifier != "reject" {
		t.Fatalf("approval check run = %+v", ac)
	}
	if n := e.llm.Calls(); n != 2 {
		t.Fatalf("the model was called %d times while waiting, want 2", n)
	}

	if code := e.comment("d2", 1, "maintainer", "/approve"); code != http.StatusAccepted {
		t.Fatalf("approve answered %d", code)
	}
	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s\n%s", done.State, done.Error, e.logs.String())
	}
	// The model got the command's real output, from the checkpoint commit.
	reqs := e.llm.Requests()
	var result string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == openai.ChatMessageRoleTool && strings.Contains(m.Content, "exit code") {
			result = m.Content
		}
	}
	if !strings.Contains(result, "exit code 0") || !strings.Contains(result, "1\n") {
		t.Fatalf("the model's run result = %q", result)
	}
	runs := checkRunsNamed(e.gh, task.RunCheck)
	if len(runs) != 1 || runs[0].HeadSHA != r.SHA || runs[0].Conclusion != "success" || runs[0].Updates != 1 {
		t.Fatalf("run check runs = %+v", runs)
	}
	if ac := checkRunsNamed(e.gh, task.ApprovalCheck)[0]; ac.Conclusion != "success" || !strings.Contains(ac.Title, "maintainer") {
		t.Fatalf("approval check run after approval = %+v", ac)
	}
	prs = e.gh.PullRequests(owner, repoName)
	if len(prs) != 1 || prs[0].Draft || !strings.Contains(prs[0].Body, "Fixes #1") || prs[0].Title != "Fix the spelling of commit in the README" {
		t.Fatalf("pull request at the end = %+v", prs)
	}
	commits := e.git.Commits(t, owner, repoName, tasktest.Job(done).Branch)
	if len(commits) != 2 || commits[0].SHA != r.SHA {
		t.Fatalf("branch history %+v: want the base and the one checkpoint (the finish had nothing new)", commits)
	}
	// The pull request's record of what was tested: the run, on the final
	// commit, with its check run's page on this GitHub.
	body := prs[0].Body
	verification := body[strings.Index(body, "### Verification"):strings.Index(body, "\n---\n")]
	verification = strings.NewReplacer(r.SHA[:12], "<final commit>", fmt.Sprint(runs[0].ID), "<check run id>",
		e.gh.URL, "<github>", r.ID, "<request>").Replace(verification)
	verification = regexp.MustCompile(`exit code 0, [0-9hms.]+\)`).ReplaceAllString(verification, "exit code 0, <duration>)")
	golden.Check(t, "testdata/approved-run-verification.golden", verification)
}

func TestRejectedWithTheButtonAndTheAgentGoesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newRunLLM(t, "make test"))
	e.gh.SetPermission(owner, repoName, "maintainer", "maintain")
	e.comment("d1", 1, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	if code := e.button("b1", "maintainer", "reject", r.ID, r.SHA); code != http.StatusAccepted {
		t.Fatalf("button answered %d", code)
	}
	if done := e.waitTask(1); done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	if got := lastToolResult(e.llm); !strings.HasPrefix(got, "rejected by @maintainer: ") {
		t.Fatalf("the model got %q", got)
	}
	if runs := checkRunsNamed(e.gh, task.RunCheck); len(runs) != 0 {
		t.Fatalf("a rejected command ran: %+v", runs)
	}
	if ac := checkRunsNamed(e.gh, task.ApprovalCheck)[0]; ac.Conclusion != "neutral" {
		t.Fatalf("approval check run after rejection = %+v", ac)
	}
}

func TestUnansweredRequestTimesOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newRunLLM(t, "make test"), func(c *app.Config) { c.ApprovalTimeout = 500 * time.Millisecond })
	e.comment("d1", 1, owner, "/agent fix the typo")
	if done := e.waitTask(1); done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	if got := lastToolResult(e.llm); !strings.HasPrefix(got, "approval timed out") {
		t.Fatalf("the model got %q", got)
	}
	e.waitComment(1, "got no answer within")
	if ac := checkRunsNamed(e.gh, task.ApprovalCheck)[0]; ac.Conclusion != "timed_out" {
		t.Fatalf("approval check run after the timeout = %+v", ac)
	}
}

// Answers that must not run anything, each refused with a reply.
func TestRefusedAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newRunLLM(t, "make test"))
	e.gh.SetPermission(owner, repoName, "reader", "read")
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	e.comment("d1", 1, owner, "/agent fix the typo")
	waiting := e.waitState(1, task.AwaitingApproval)
	r := tasktest.Job(waiting).Request

	e.comment("a1", 1, "reader", "/approve")
	e.waitComment(1, "@reader sorry: approving commands needs write permission or higher")
	e.comment("a2", 1, "maintainer", "/approve 999-1")
	e.waitComment(1, "@maintainer request `999-1` is not the one waiting; the current request is `"+r.ID+"`")
	e.button("a3", "maintainer", "approve", r.ID, strings.Repeat("0", 40))
	e.waitComment(1, "that button belongs to an older commit")
	// The bot's own comment is never an answer.
	if code := e.deliver("a4", "issue_comment", e.payload("/approve", func(p map[string]any) {
		p["sender"].(map[string]any)["login"] = e.gh.BotLogin()
		p["sender"].(map[string]any)["type"] = "Bot"
	})); code != http.StatusOK {
		t.Fatalf("the bot's /approve answered %d, want 200 (ignored)", code)
	}
	// A person pushes to the work branch: the request is stale.
	e.git.Push(t, owner, repoName, tasktest.Job(waiting).Branch, map[string]string{"NOTES.md": "mine\n"}, "A person's commit")
	e.comment("a5", 1, "maintainer", "/approve "+r.ID)
	e.waitComment(1, "is stale: branch `"+tasktest.Job(waiting).Branch+"` moved")

	e.waitIdle()
	if runs := checkRunsNamed(e.gh, task.RunCheck); len(runs) != 0 {
		t.Fatalf("a refused answer ran the command: %+v", runs)
	}
	if st := e.waitState(1, task.AwaitingApproval); tasktest.Job(st).Request.Answer != nil {
		t.Fatalf("a refused answer was recorded: %+v", tasktest.Job(st).Request.Answer)
	}
	if n := e.llm.Calls(); n != 2 {
		t.Fatalf("the model was called %d times, want 2", n)
	}
}

// Two approvals at once (a comment and a button) run the command once.
func TestConcurrentApprovalsRunOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newRunLLM(t, "grep -c commit README.md"))
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	e.comment("d1", 1, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	var wg sync.WaitGroup
	wg.Go(func() { e.comment("a1", 1, "maintainer", "/approve") })
	wg.Go(func() { e.button("a2", owner, "approve", r.ID, r.SHA) })
	wg.Go(func() { e.comment("a3", 1, owner, "/approve "+r.ID) })
	wg.Wait()
	if done := e.waitTask(1); done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	e.waitComment(1, "was already answered")
	if runs := checkRunsNamed(e.gh, task.RunCheck); len(runs) != 1 {
		t.Fatalf("%d run check runs, want 1", len(runs))
	}
	var results int
	for _, m := range e.llm.Requests()[e.llm.Calls()-1].Messages {
		if m.Role == openai.ChatMessageRoleTool && strings.Contains(m.Content, "exit code") {
			results++
		}
	}
	if results != 1 {
		t.Fatalf("the model got %d run results, want 1", results)
	}
}

func TestCancelAndStatusWhileWaiting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newRunLLM(t, "make test"))
	e.comment("d1", 1, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	e.comment("s1", 1, owner, "/agent status")
	e.waitComment(1, "request `"+r.ID+"` asks to run `make test`")
	e.comment("c1", 1, owner, "/agent cancel")
	if done := e.waitTask(1); done.State != task.Cancelled {
		t.Fatalf("task ended %s, want cancelled", done.State)
	}
	e.waitComment(1, "🛑 Cancelled")
	if ac := checkRunsNamed(e.gh, task.ApprovalCheck)[0]; ac.Conclusion != "cancelled" {
		t.Fatalf("approval check run after cancel = %+v", ac)
	}
	// Now a second fix is welcome again.
	e.comment("d2", 1, owner, "/agent fix it again")
	e.waitState(1, task.AwaitingApproval)
}

func TestSecondFixWhileOneRunsLinksIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newRunLLM(t, "make test"))
	e.comment("d1", 1, owner, "/agent fix the typo")
	first := e.waitState(1, task.AwaitingApproval)
	e.comment("d2", 1, owner, "/agent fix something else")
	c := e.waitComment(1, "is already working on this issue")
	if !strings.Contains(c.Body, fmt.Sprintf("[task %d](%s)", first.ID, first.StatusCommentURL)) {
		t.Fatalf("busy reply does not link the running task: %q", c.Body)
	}
}

// The common loop: edit, run the tests, fix what they show, finish. What the
// agent changed after the run must reach the branch and the pull request.
func TestWorkAfterTheRunIsPublished(t *testing.T) {
	t.Parallel()
	steps := []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": "grep -c commit README.md", "reason": "check"})}},
		{ToolCalls: []fakellm.ToolCall{call("write_file", map[string]any{"path": "AFTER.md", "content": "written after the run\n"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix and note", "summary": "Fixed, checked, noted."})}},
	}
	e := newEnv(t, fakellm.NewByTurn(t, steps...))
	e.comment("d1", 1, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	e.comment("a1", 1, owner, "/approve "+r.ID)
	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	if got, err := e.git.ReadFile(t, owner, repoName, tasktest.Job(done).Branch, "AFTER.md"); err != nil || got != "written after the run\n" {
		t.Fatalf("AFTER.md on the branch = %q, %v", got, err)
	}
	commits := e.git.Commits(t, owner, repoName, tasktest.Job(done).Branch)
	if len(commits) != 3 || commits[1].SHA != r.SHA || commits[0].Subject != "Fix and note" {
		t.Fatalf("branch history = %+v; want base, the checkpoint, the final commit", commits)
	}
	prs := e.gh.PullRequests(owner, repoName)
	if len(prs) != 1 || prs[0].Draft || !strings.Contains(prs[0].Body, "`AFTER.md` (+1 −0)") {
		t.Fatalf("pull request = %+v", prs)
	}
	if n := len(checkRunsNamed(e.gh, task.ApprovalCheck)); n != 1 {
		t.Fatalf("%d approval check runs", n)
	}
}

// An answer naming a request of another issue's task does not answer it.
func TestAnswerOnAnotherIssueIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newRunLLM(t, "make test"))
	e.gh.AddIssue(owner, repoName, fakegithub.Issue{Number: 2, Title: "Another", Body: "x", Author: owner})
	e.comment("d1", 1, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	e.comment("a1", 2, owner, "/approve "+r.ID)
	e.waitComment(2, "there is no execution request waiting for an answer here")
	if st := e.waitState(1, task.AwaitingApproval); tasktest.Job(st).Request.Answer != nil {
		t.Fatalf("an answer on #2 answered #1's request: %+v", tasktest.Job(st).Request.Answer)
	}
}

// Two bare /approves in a row answer one request: the second, however late
// it reaches the bot, was written before the next request was shown, so the
// next request's command does not run on it; nor does the first's comment,
// delivered again.
func TestAnApprovalAnswersOneRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newTwoRunLLM(t, "grep -c commit README.md", "wc -l README.md"))
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	e.comment("d1", 1, owner, "/agent fix the typo")
	first := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request

	// Both write /approve on seeing the first request; the second
	// maintainer's delivery is late.
	mine := e.commentPayload(1, owner, "/approve")
	theirs := e.commentPayload(1, "maintainer", "/approve")
	if code := e.deliver("a1", "issue_comment", mine); code != http.StatusAccepted {
		t.Fatalf("first /approve answered %d", code)
	}
	second := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	for second.ID == first.ID {
		time.Sleep(20 * time.Millisecond)
		second = tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	}
	if second.Command != "wc -l README.md" || !second.ShownAt.After(first.ShownAt) {
		t.Fatalf("second request = %+v (first shown at %v)", second, first.ShownAt)
	}
	if code := e.deliver("a2", "issue_comment", theirs); code != http.StatusAccepted {
		t.Fatalf("second /approve answered %d", code)
	}
	e.waitComment(1, "@maintainer your answer was written before request `"+second.ID+"`")
	// A redelivery of the first /approve under a new delivery id.
	if code := e.deliver("a1-again", "issue_comment", mine); code != http.StatusAccepted {
		t.Fatalf("redelivered /approve answered %d", code)
	}
	e.waitComment(1, "@"+owner+" that answer was already used for an earlier request, so it does not answer request `"+second.ID+"`")

	if st := e.waitState(1, task.AwaitingApproval); tasktest.Job(st).Request.ID != second.ID || tasktest.Job(st).Request.Answer != nil {
		t.Fatalf("the second request was answered: %+v", tasktest.Job(st).Request)
	}
	runs := checkRunsNamed(e.gh, task.RunCheck)
	if len(runs) != 1 || !strings.Contains(runs[0].Summary, "grep -c commit README.md") {
		t.Fatalf("run check runs = %+v, want only the first request's", runs)
	}
	// A bare answer written after it was shown could have been meant for
	// the first request, and answers nothing; one naming it runs it.
	e.comment("a3", 1, "maintainer", "/approve")
	e.waitComment(1, "`/approve` alone could answer one you did not read")
	if st := e.waitState(1, task.AwaitingApproval); tasktest.Job(st).Request.Answer != nil {
		t.Fatalf("a bare approval answered the second request: %+v", tasktest.Job(st).Request.Answer)
	}
	e.comment("a4", 1, "maintainer", "/approve "+second.ID)
	if done := e.waitTask(1); done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	if runs := checkRunsNamed(e.gh, task.RunCheck); len(runs) != 2 {
		t.Fatalf("%d run check runs after a fresh approval, want 2", len(runs))
	}
}

// A command that would show as something other than what runs (Trojan
// Source) is never shown for approval: the model is told why, and only the
// plain command it asks next reaches the comment and the check run.
func TestACommandThatHidesTextIsNeverShown(t *testing.T) {
	t.Parallel()
	const hidden = "echo ok \u202e; rm -rf . #"
	e := newEnv(t, fakellm.NewByTurn(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": hidden, "reason": "check"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": "grep -c commit README.md", "reason": "check"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the typo", "summary": "Fixed."})}},
	))
	e.comment("d1", 1, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	if r.Command != "grep -c commit README.md" {
		t.Fatalf("request = %+v, want the plain command", r)
	}
	if got := lastToolResult(e.llm); !strings.Contains(got, "U+202E") {
		t.Fatalf("the model was told %q", got)
	}
	e.waitComment(1, "request `"+r.ID+"`")
	for _, c := range e.gh.Comments(owner, repoName, 1) {
		if strings.Contains(c.Body, "\u202e") || strings.Contains(c.Body, "rm -rf") {
			t.Errorf("a comment shows the hidden command:\n%s", c.Body)
		}
	}
	for _, cr := range e.gh.CheckRuns(owner, repoName) {
		if strings.Contains(cr.Title+cr.Summary+cr.Text, "rm -rf") {
			t.Errorf("check run %q shows the hidden command", cr.Name)
		}
	}
}
