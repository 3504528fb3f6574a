package app_test

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/internal/browsertest"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// The console in a real browser (headless Chromium): a maintainer signs in
// through the fake GitHub's OAuth pages, opens a task while the agent
// works, and sees the request for approval arrive without a reload;
// approves it from the page and sees the command's result arrive the same
// way. A reader's page of the same waiting task has no buttons, and a
// POST forged in their browser is refused. PULLWRIGHT_SCREENSHOTS=DIR
// writes the pages the docs show (docs/console.md).
func TestConsoleInABrowser(t *testing.T) {
	const command = "grep -c commit README.md"
	steps := []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": command, "reason": "check that the typo is gone"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit in the README", "summary": "Fixed and checked."})}},
	}
	// The second model call waits until the page is open, so that what it
	// brings arrives while the page shows the task working.
	gate := make(chan struct{})
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(release)
	llm := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		n := fakellm.Turn(req)
		if n == 1 {
			<-gate
		}
		return steps[min(n, len(steps)-1)]
	})
	e := newEnv(t, llm, withConsole)
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	e.gh.SetPermission(owner, repoName, "reader", "read")

	maintainer := browsertest.New(t)
	reader := browsertest.New(t)
	shots := os.Getenv("PULLWRIGHT_SCREENSHOTS")
	shot := func(b context.Context, name string) {
		if shots == "" {
			return
		}
		if _, err := browsertest.Screenshot(b, shots, name); err != nil {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
	const wait = 30 * time.Second
	signIn := func(b context.Context, login string) {
		t.Helper()
		e.gh.SignInBrowser(login)
		if err := browsertest.Do(b, wait,
			chromedp.Navigate(e.url+"/console/login"),
			chromedp.WaitVisible(chromedp.CSS("form.signout"))); err != nil {
			t.Fatalf("%s signs in: %v", login, err)
		}
	}

	if code := e.comment("fix-1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
		t.Fatalf("fix = %d", code)
	}
	// The first turn is done and the second call waits.
	var working *task.Task
	deadline := time.Now().Add(wait)
	for working == nil || tasktest.Job(working).Turns < 1 || len(tasktest.Job(working).Steps) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the task never got through its first turn: %v", working)
		}
		working = e.waitState(1, task.Working)
		time.Sleep(20 * time.Millisecond)
	}
	page := e.url + "/console/tasks/" + strconv.FormatInt(working.ID, 10)

	signIn(maintainer, "maintainer")
	if err := browsertest.Do(maintainer, wait,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS("span.state-working"))); err != nil {
		t.Fatalf("open the working task: %v", err)
	}
	shot(maintainer, "console-task-working.png")
	// A mark in the page's own memory: a reload would lose it.
	if _, err := browsertest.Eval[bool](maintainer, wait, `window.pullwrightMark = true`); err != nil {
		t.Fatal(err)
	}

	// The model goes on; the request arrives in the open page.
	release()
	if err := browsertest.Do(maintainer, wait, chromedp.WaitVisible(chromedp.CSS(`button[name="approve"]`))); err != nil {
		t.Fatalf("the request never appeared in the open page: %v", err)
	}
	waiting := e.waitState(1, task.AwaitingApproval)
	if kept, err := browsertest.Eval[bool](maintainer, wait, `window.pullwrightMark === true`); err != nil || !kept {
		t.Fatalf("the page was reloaded to show the request (%v)", err)
	}
	text, err := browsertest.Eval[string](maintainer, wait, `document.querySelector("section.pending").innerText`)
	if err != nil || !strings.Contains(text, command) || !strings.Contains(text, tasktest.Job(waiting).Request.ID) {
		t.Fatalf("the pending section says %q (%v)", text, err)
	}
	shot(maintainer, "console-task-waiting.png")

	// The reader sees the same request and no button; a POST they forge
	// with their own session and CSRF token is refused.
	signIn(reader, "reader")
	if err := browsertest.Do(reader, wait, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("section.pending"))); err != nil {
		t.Fatalf("the reader opens the task: %v", err)
	}
	if n, err := browsertest.Eval[int](reader, wait, `document.querySelectorAll('form[action*="/console/tasks/"]').length`); err != nil || n != 0 {
		t.Fatalf("the reader's page has %d task forms (%v)", n, err)
	}
	forged, err := browsertest.Eval[int](reader, wait, `fetch(location.pathname + "/approve", {method: "POST", body: new URLSearchParams({
		csrf: document.querySelector('input[name="csrf"]').value, request: `+strconv.Quote(tasktest.Job(waiting).Request.ID)+`})}).then(r => r.status)`)
	if err != nil || forged != http.StatusForbidden {
		t.Fatalf("the reader's forged approval = %d (%v), want 403", forged, err)
	}

	// The maintainer approves from the page; the result arrives live.
	if err := browsertest.Do(maintainer, wait,
		chromedp.Click(chromedp.CSS(`button[name="approve"]`)),
		// The notice, or (a worker quicker than the page) the run.
		chromedp.WaitVisible(chromedp.CSS("p#sent, section.run"))); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if _, err := browsertest.Eval[bool](maintainer, wait, `window.pullwrightMark = true`); err != nil {
		t.Fatal(err)
	}
	if err := browsertest.Do(maintainer, wait, chromedp.WaitVisible(chromedp.CSS("section.run pre.output"))); err != nil {
		t.Fatalf("the command's result never appeared in the open page: %v", err)
	}
	out, err := browsertest.Eval[string](maintainer, wait, `document.querySelector("section.run").innerText`)
	if err != nil || !strings.Contains(out, "Exit code 0") || !strings.Contains(out, "maintainer") {
		t.Fatalf("the run shows %q (%v)", out, err)
	}
	if kept, err := browsertest.Eval[bool](maintainer, wait, `window.pullwrightMark === true`); err != nil || !kept {
		t.Fatalf("the page was reloaded to show the result (%v)", err)
	}
	done := e.waitState(1, task.Done)
	if err := browsertest.Do(maintainer, wait, chromedp.WaitVisible(chromedp.CSS("span.state-done"))); err != nil {
		t.Fatalf("the page never showed the task done: %v", err)
	}
	shot(maintainer, "console-task-done.png")
	if len(tasktest.Job(done).Runs) != 1 || tasktest.Job(done).Runs[0].By != "maintainer" {
		t.Fatalf("the record = %+v", tasktest.Job(done).Runs)
	}
}

// A page open on a request while the task asks another on the same commit
// (the first rejected on GitHub) keeps the form the person was shown,
// marked replaced, with the new request after it; a click on the old
// Approve answers nothing and the answer page shows the new request.
func TestTheLivePageKeepsTheFormItShowed(t *testing.T) {
	const first, second = "grep -c commit README.md", "wc -l README.md"
	e := newEnv(t, newTwoRunLLM(t, first, second), withConsole)
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	b := browsertest.New(t)
	const wait = 30 * time.Second
	e.gh.SignInBrowser("maintainer")
	if err := browsertest.Do(b, wait, chromedp.Navigate(e.url+"/console/login"), chromedp.WaitVisible(chromedp.CSS("form.signout"))); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	if code := e.comment("fix-1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
		t.Fatalf("fix = %d", code)
	}
	asked := e.waitState(1, task.AwaitingApproval)
	page := e.url + "/console/tasks/" + strconv.FormatInt(asked.ID, 10)
	if err := browsertest.Do(b, wait, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`#pending button[name="approve"]`))); err != nil {
		t.Fatalf("open the request: %v", err)
	}
	// GitHub's clock must show the rejection after the request's comment.
	e.waitComment(1, "asks to run a command")
	time.Sleep(1100 * time.Millisecond)
	e.comment("reject-1", 1, owner, "/reject not that one")
	if err := browsertest.Do(b, wait, chromedp.WaitVisible(chromedp.CSS(`#pending-replaced`))); err != nil {
		t.Fatalf("the replaced request was not kept: %v", err)
	}
	now := e.waitState(1, task.AwaitingApproval)
	if tasktest.Job(now).Request.ID == tasktest.Job(asked).Request.ID || tasktest.Job(now).Request.SHA != tasktest.Job(asked).Request.SHA {
		t.Fatalf("the second request %s on %s, the first %s on %s", tasktest.Job(now).Request.ID, tasktest.Job(now).Request.SHA, tasktest.Job(asked).Request.ID, tasktest.Job(asked).Request.SHA)
	}
	kept, err := browsertest.Eval[string](b, wait, `document.querySelector("#pending-replaced").innerText`)
	if err != nil || !strings.Contains(kept, first) || !strings.Contains(kept, "no longer the one waiting") {
		t.Fatalf("the kept section says %q (%v)", kept, err)
	}
	fresh, err := browsertest.Eval[string](b, wait, `document.querySelector("#pending").innerText`)
	if err != nil || !strings.Contains(fresh, second) {
		t.Fatalf("the new request's section says %q (%v)", fresh, err)
	}
	if err := browsertest.Do(b, wait,
		chromedp.Click(chromedp.CSS(`#pending-replaced button[name="approve"]`)),
		chromedp.WaitVisible(chromedp.CSS("#changed"))); err != nil {
		t.Fatalf("approve the replaced request: %v", err)
	}
	shows, err := browsertest.Eval[string](b, wait, `document.querySelector("#pending").innerText`)
	if err != nil || !strings.Contains(shows, second) {
		t.Fatalf("the refusal page shows %q (%v)", shows, err)
	}
	e.waitIdle()
	if tk := e.waitState(1, task.AwaitingApproval); tasktest.Job(tk).Request.ID != tasktest.Job(now).Request.ID || tasktest.Job(tk).Request.Answer != nil {
		t.Fatalf("the second request was answered: %+v", tasktest.Job(tk).Request.Answer)
	}
}
