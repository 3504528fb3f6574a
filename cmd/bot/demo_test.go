package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/internal/browsertest"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
)

// startDemo serves the demo on a loopback port of its own for the test.
func startDemo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- demo(ctx, ln, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

var demoCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// demoTask is a task as GET /api/tasks/{id} answers it, as far as the
// demo's tests read it.
type demoTask struct {
	ID      int64                 `json:"id"`
	State   string                `json:"state"`
	Issue   int                   `json:"issue"`
	Branch  string                `json:"branch"`
	PRURL   string                `json:"pr_url"`
	Error   string                `json:"error"`
	Plan    []pullwright.PlanItem `json:"plan"`
	Steps   []string              `json:"steps"`
	Runs    []task.RunRecord      `json:"runs"`
	Pending *struct {
		Setup *approval.Setup `json:"setup"`
	} `json:"pending"`
}

// demoTasks are the demo's tasks, whole, by issue.
func demoTasks(t *testing.T, base string) map[int]demoTask {
	t.Helper()
	var list struct {
		Tasks []struct {
			ID int64 `json:"id"`
		} `json:"tasks"`
	}
	_, body := get(t, base+"/api/tasks")
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("GET /api/tasks = %s (%v)", body, err)
	}
	out := map[int]demoTask{}
	for _, tk := range list.Tasks {
		var d demoTask
		_, body := get(t, base+"/api/tasks/"+itoa(tk.ID))
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatalf("GET /api/tasks/%d = %s (%v)", tk.ID, body, err)
		}
		out[d.Issue] = d
	}
	return out
}

// The demo serves the console over its recorded tasks to whoever opens
// it, with no GitHub: a task waiting for approval of a fork's command
// with changed manifests, two done with their pull requests and their
// verification, one failed; its buttons are shown, and an answer is
// refused as a demo's.
func TestDemoServesTheConsole(t *testing.T) {
	base := startDemo(t)
	code, list := get(t, base+"/")
	if code != http.StatusOK || !strings.Contains(list, "Demo: recorded tasks") {
		t.Fatalf("GET / = %d:\n%s", code, list)
	}
	for _, want := range []string{"waiting for approval", "done", "failed"} {
		if !strings.Contains(list, `">`+want+`</td>`) {
			t.Errorf("the list has no task %s", want)
		}
	}
	tasks := demoTasks(t, base)
	if len(tasks) != 4 {
		t.Fatalf("the demo has %d tasks, want 4", len(tasks))
	}
	page := func(issue int) string {
		t.Helper()
		code, p := get(t, base+"/console/tasks/"+itoa(tasks[issue].ID))
		if code != http.StatusOK {
			t.Fatalf("the page of #%d's task = %d", issue, code)
		}
		return p
	}
	waiting := page(52)
	for _, want := range []string{"go test ./cmd/widgetctl/...", "This runs code from a fork.", "The manifests' changes", "golang.org/x/exp", `name="approve"`, `name="reject"`, "(in progress)"} {
		if !strings.Contains(waiting, want) {
			t.Errorf("the waiting task's page has no %q", want)
		}
	}
	done := page(41)
	for _, want := range []string{"https://github.com/acme/widgets/pull/44", "<h2>Verification</h2>", "Verified: the last run of each command", "after 2.9s"} {
		if !strings.Contains(done, want) {
			t.Errorf("the done task's page has no %q", want)
		}
	}
	if failed := page(35); !strings.Contains(failed, "nothing to propose") {
		t.Error("the failed task's page has no error")
	}

	m := demoCSRF.FindStringSubmatch(waiting)
	if m == nil {
		t.Fatal("no CSRF token on the waiting task's page")
	}
	rid := regexp.MustCompile(`name="request" value="([^"]+)"`).FindStringSubmatch(waiting)
	wid := itoa(tasks[52].ID)
	resp, err := http.PostForm(base+"/console/tasks/"+wid+"/approve", url.Values{"csrf": {m[1]}, "request": {rid[1]}, "digest": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(answer), "this is a demo") {
		t.Errorf("an approval in the demo = %d:\n%s", resp.StatusCode, answer)
	}
	if _, after := get(t, base+"/api/tasks/"+wid); !strings.Contains(after, `"state":"awaiting_approval"`) {
		t.Errorf("the demo's task moved: %s", after)
	}
}

// The demo tells the README's story and the real flow's: the bot's
// branches are named with the bot's default prefix, as the real flow names
// them for a repository that sets none; a rejected command is handed to
// the agent, which goes on without it to a pull request; every task has
// its plan and steps; and the waiting request's diff shows every manifest
// its setup sentence names.
func TestDemoTellsTheRealStory(t *testing.T) {
	base := startDemo(t)
	tasks := demoTasks(t, base)
	settings, err := policy.DefaultOperator().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for issue, tk := range tasks {
		if len(tk.Plan) == 0 || len(tk.Steps) == 0 {
			t.Errorf("#%d's task (%s) has %d plan items and %d steps", issue, tk.State, len(tk.Plan), len(tk.Steps))
		}
		if tk.State == "failed" && strings.Contains(tk.Error, "rejected") {
			t.Errorf("#%d's task failed on a rejection: %s", issue, tk.Error)
		}
		for _, r := range tk.Runs {
			if !strings.HasPrefix(r.RequestID, itoa(tk.ID)+"-") {
				t.Errorf("#%d's task %d has a run of request %s", issue, tk.ID, r.RequestID)
			}
		}
	}
	// The bot's own branches, not a fork's pull request's.
	for _, issue := range []int{35, 38, 41} {
		tk := tasks[issue]
		if !strings.HasPrefix(tk.Branch, settings.BranchPrefix+itoa(int64(issue))+"-") {
			t.Errorf("#%d's branch is %q, not under the default prefix %q", issue, tk.Branch, settings.BranchPrefix)
		}
	}
	if p := settings.BranchPrefix; p != "agent/" {
		t.Errorf("the default branch prefix is %q; the README says agent/<issue>-<slug>", p)
	}

	// After the rejection the agent went on: it asked nothing again, and
	// the task ended in a pull request with steps after the request.
	wentOn := tasks[38]
	var rejected *task.RunRecord
	for i, r := range wentOn.Runs {
		if r.Verdict == task.Rejected {
			rejected = &wentOn.Runs[i]
		}
	}
	switch {
	case rejected == nil:
		t.Fatal("no demo task has a rejected run")
	case wentOn.State != "done" || wentOn.PRURL == "":
		t.Errorf("the task whose command was rejected ended %s, with pull request %q", wentOn.State, wentOn.PRURL)
	}
	asked := slices.Index(wentOn.Steps, "asked to run `"+rejected.Command+"`")
	if asked < 0 || asked == len(wentOn.Steps)-1 {
		t.Fatalf("the agent did not go on after asking for %q: %q", rejected.Command, wentOn.Steps)
	}
	for _, s := range wentOn.Steps[asked+1:] {
		if s == wentOn.Steps[asked] {
			t.Errorf("the agent asked again for the rejected %q", rejected.Command)
		}
	}
	if last := wentOn.Steps[len(wentOn.Steps)-1]; !strings.HasPrefix(last, "finished: ") {
		t.Errorf("the task's last step is %q, not its finish", last)
	}

	w := tasks[52].Pending
	if w == nil || w.Setup == nil || len(w.Setup.Manifests) < 2 {
		t.Fatalf("the waiting task's request has no setup with manifests: %+v", w)
	}
	if un := w.Setup.Unshown(); len(un) > 0 {
		t.Errorf("the waiting request names manifests its diff does not show: %q", un)
	}
}

func TestDemoListensOnLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:0": true, "[::1]:8080": true,
		":8080": false, "0.0.0.0:8080": false, "192.168.1.5:8080": false, "nonsense": false,
	} {
		if err := loopbackOnly(addr); (err == nil) != ok {
			t.Errorf("loopbackOnly(%q) = %v", addr, err)
		}
	}
	if err := run(context.Background(), []string{"demo", "--addr", ":0"}, env(nil), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Errorf("bot demo --addr :0 = %v", err)
	}
}

// The demo in a real browser; PULLWRIGHT_SCREENSHOTS=DIR writes the
// pages docs/console.md shows.
func TestDemoInABrowser(t *testing.T) {
	base := startDemo(t)
	b := browsertest.New(t)
	const wait = 30 * time.Second
	shot := func(name string) {
		if dir := os.Getenv("PULLWRIGHT_SCREENSHOTS"); dir != "" {
			if _, err := browsertest.Screenshot(b, dir, name); err != nil {
				t.Errorf("screenshot %s: %v", name, err)
			}
		}
	}
	if err := browsertest.Do(b, wait, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("td.state-awaiting_approval"))); err != nil {
		t.Fatalf("open the demo: %v", err)
	}
	shot("console-demo-tasks.png")
	if err := browsertest.Do(b, wait,
		chromedp.Click(chromedp.CSS(`a[href^="/console/tasks/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#pending button[name="approve"]`))); err != nil {
		t.Fatalf("open the waiting task: %v", err)
	}
	shot("console-demo-waiting.png")
	// Cancel asks once more: its button shows only once its confirmation
	// is opened, apart from the request's answers.
	visible, err := browsertest.Eval[bool](b, wait, `document.querySelector('button[name="cancel"]').checkVisibility()`)
	if err != nil || visible {
		t.Errorf("the cancel button is visible before its confirmation is opened (%v)", err)
	}
	if err := browsertest.Do(b, wait,
		chromedp.Click(chromedp.CSS("#cancel-confirm summary")),
		chromedp.WaitVisible(chromedp.CSS(`#cancel button[name="cancel"]`))); err != nil {
		t.Fatalf("open the cancel's confirmation: %v", err)
	}
	shot("console-demo-cancel.png")
	if err := browsertest.Do(b, wait,
		chromedp.Click(chromedp.CSS(`#pending button[name="approve"]`)),
		// The answer's page, which has no request on it.
		chromedp.WaitNotPresent(chromedp.CSS("#pending")),
		chromedp.WaitVisible(chromedp.CSS("main p"))); err != nil {
		t.Fatalf("approve: %v", err)
	}
	text, err := browsertest.Eval[string](b, wait, `document.querySelector("main").innerText`)
	if err != nil || !strings.Contains(text, "this is a demo") {
		t.Errorf("the answer's page says %q (%v)", text, err)
	}
}
