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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pullwright/pullwright/internal/browsertest"
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

// The demo serves the console over its recorded tasks to whoever opens
// it, with no GitHub: a task waiting for approval of a fork's command
// with changed manifests, one done with its pull request and its
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
	var api struct {
		Tasks []struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
		} `json:"tasks"`
	}
	_, body := get(t, base+"/api/tasks")
	if err := json.Unmarshal([]byte(body), &api); err != nil || len(api.Tasks) != 3 {
		t.Fatalf("GET /api/tasks = %s (%v)", body, err)
	}
	ids := map[string]int64{}
	for _, tk := range api.Tasks {
		ids[tk.State] = tk.ID
	}
	page := func(state string) string {
		t.Helper()
		code, p := get(t, base+"/console/tasks/"+itoa(ids[state]))
		if code != http.StatusOK {
			t.Fatalf("the %s task's page = %d", state, code)
		}
		return p
	}
	waiting := page("awaiting_approval")
	for _, want := range []string{"go test ./cmd/widgetctl/...", "This runs code from a fork.", "The manifests' changes", "golang.org/x/exp", `name="approve"`, `name="reject"`} {
		if !strings.Contains(waiting, want) {
			t.Errorf("the waiting task's page has no %q", want)
		}
	}
	done := page("done")
	for _, want := range []string{"https://github.com/acme/widgets/pull/44", "<h2>Verification</h2>", "Verified: the last run of each command", "after 2.9s"} {
		if !strings.Contains(done, want) {
			t.Errorf("the done task's page has no %q", want)
		}
	}
	if failed := page("failed"); !strings.Contains(failed, "rejected by @li") {
		t.Error("the failed task's page has no error")
	}

	m := demoCSRF.FindStringSubmatch(waiting)
	if m == nil {
		t.Fatal("no CSRF token on the waiting task's page")
	}
	rid := regexp.MustCompile(`name="request" value="([^"]+)"`).FindStringSubmatch(waiting)
	resp, err := http.PostForm(base+"/console/tasks/"+itoa(ids["awaiting_approval"])+"/approve", url.Values{"csrf": {m[1]}, "request": {rid[1]}, "digest": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(answer), "this is a demo") {
		t.Errorf("an approval in the demo = %d:\n%s", resp.StatusCode, answer)
	}
	if _, after := get(t, base+"/api/tasks/"+itoa(ids["awaiting_approval"])); !strings.Contains(after, `"state":"awaiting_approval"`) {
		t.Errorf("the demo's task moved: %s", after)
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
