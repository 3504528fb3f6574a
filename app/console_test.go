package app_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// consoleConfig is a bot whose console is configured as withConsole says,
// served at the address of ln.
func consoleConfig(t *testing.T, gh *fakegithub.Server, ln net.Listener, withConsole bool) app.Config {
	cfg := app.Config{
		DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "bot.db"),
		AppID:       gh.AppID, PrivateKey: gh.PrivateKeyPEM(), WebhookSecret: "s", APIURL: gh.URL,
		OpenAIKey: "sk-test", Model: "test-model", Runner: "local", WorkDir: t.TempDir(), Workers: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if withConsole {
		cfg.PublicURL = "http://" + ln.Addr().String()
		cfg.ClientID, cfg.ClientSecret = gh.ClientID, gh.ClientSecret
		cfg.SessionKey = []byte(strings.Repeat("s", 32))
	}
	return cfg
}

func TestConsoleIsServedOnlyWhenConfigured(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.AddInstallation(1, "o/r")
	gh.SetPermission("o", "r", "alice", "write")
	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[on], func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			bot, err := app.New(ctx, consoleConfig(t, gh, ln, on))
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- bot.Serve(ctx, ln) }()
			t.Cleanup(func() { cancel(); <-done; bot.Close() })
			base := "http://" + ln.Addr().String()

			tk := &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: 1,
				IssueTitle: "the console test's issue", RunAfter: time.Now().Add(time.Hour)}
			if err := bot.Store().Record(ctx, task.Delivery{ID: "d1"}, tk); err != nil {
				t.Fatal(err)
			}
			jar, _ := cookiejar.New(nil)
			client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
			gh.SignInBrowser("alice")
			resp, err := client.Get(base + "/console/login")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !on {
				if resp.StatusCode != http.StatusNotFound {
					t.Fatalf("console without configuration = %d", resp.StatusCode)
				}
				return
			}
			// Signed in through GitHub, back on the list, which shows the task.
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "the console test&#39;s issue") {
				t.Fatalf("after sign-in = %d %s", resp.StatusCode, body)
			}
			if resp.Request.URL.Path != "/console/" {
				t.Fatalf("landed on %s", resp.Request.URL)
			}
		})
	}
}

func TestConsoleHalfConfiguredIsRefused(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := consoleConfig(t, gh, ln, true)
	cfg.SessionKey = nil
	if bot, err := app.New(context.Background(), cfg); err == nil {
		bot.Close()
		t.Fatal("a console without a session key started")
	}
}

// csrfField is the value of the first hidden csrf field of a page.
var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// digestField is the digest a page's answer form names.
var digestField = regexp.MustCompile(`name="digest" value="([0-9a-f]+)"`)

// A maintainer signs in, follows the status comment's "View session" link,
// approves the waiting request from the page, and the command runs: the
// console's button is decided by the rules of the check run's.
func TestApproveFromTheConsoleRunsTheCommand(t *testing.T) {
	t.Parallel()
	const command = "grep -c commit README.md"
	e := newEnv(t, newRunLLM(t, command), withConsole)
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	e.gh.SetPermission(owner, repoName, "reader", "read")
	if code := e.comment("fix-1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
		t.Fatalf("fix = %d", code)
	}
	waiting := e.waitState(1, task.AwaitingApproval)
	status := e.waitComment(1, "View session")
	link := regexp.MustCompile(`\[View session\]\(([^)]+)\)`).FindStringSubmatch(status.Body)
	if link == nil || link[1] != e.url+"/console/tasks/"+strconv.FormatInt(waiting.ID, 10) {
		t.Fatalf("status comment link = %v, want the task's page at %s", link, e.url)
	}

	browser := func(login string) *http.Client { return e.browser(t, login) }
	page := func(c *http.Client) string {
		resp, err := c.Get(link[1])
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("task page = %d", resp.StatusCode)
		}
		return string(b)
	}

	// A reader sees the request but no button, and a forged form is refused.
	reader := browser("reader")
	body := page(reader)
	if !strings.Contains(body, tasktest.Job(waiting).Request.ID) || strings.Contains(body, "/approve\"") {
		t.Fatalf("the reader's page shows no request or shows the button")
	}
	csrf := csrfField.FindStringSubmatch(body)
	resp, err := reader.PostForm(link[1]+"/approve", url.Values{"csrf": {csrf[1]}, "request": {tasktest.Job(waiting).Request.ID}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the reader's forged approval = %d, want 403", resp.StatusCode)
	}

	maintainer := browser("maintainer")
	body = page(maintainer)
	if !strings.Contains(body, `action="/console/tasks/`+strconv.FormatInt(waiting.ID, 10)+`/approve"`) {
		t.Fatal("the maintainer's page has no Approve button")
	}
	csrf = csrfField.FindStringSubmatch(body)
	digest := digestField.FindStringSubmatch(body)
	if digest == nil || digest[1] != tasktest.Job(waiting).Request.Shown.Digest {
		t.Fatalf("the page's form names digest %q, the request's is %s", digest, tasktest.Job(waiting).Request.Shown.Digest)
	}
	resp, err = maintainer.PostForm(link[1]+"/approve", url.Values{"csrf": {csrf[1]}, "request": {tasktest.Job(waiting).Request.ID}, "digest": {digest[1]}})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The notice, unless a worker took the answer already (then the
	// request no longer waits, and the notice has nothing to say).
	if resp.StatusCode != http.StatusOK || (!strings.Contains(string(after), "Your approval was sent") && strings.Contains(string(after), `id="pending"`)) {
		t.Fatalf("approve = %d", resp.StatusCode)
	}

	done := e.waitState(1, task.Done)
	runs := checkRunsNamed(e.gh, task.RunCheck)
	if len(runs) != 1 || runs[0].Conclusion != "success" || runs[0].HeadSHA != tasktest.Job(waiting).Request.SHA {
		t.Fatalf("run check runs = %+v", runs)
	}
	if len(tasktest.Job(done).Runs) != 1 || tasktest.Job(done).Runs[0].By != "maintainer" || tasktest.Job(done).Runs[0].Verdict != task.Approved {
		t.Fatalf("the record = %+v", tasktest.Job(done).Runs)
	}
	ac := checkRunsNamed(e.gh, task.ApprovalCheck)
	if len(ac) != 1 || ac[0].Conclusion != "success" || !strings.Contains(ac[0].Title, "maintainer") {
		t.Fatalf("approval check runs = %+v", ac)
	}
}

// A maintainer starts a fix from the API with their own token, and it
// ends in a pull request as a "/agent fix" comment would: the console
// found the app's installation, the repository's clone URL and the issue
// with the maintainer's token, and the fix checked the trigger rule.
func TestStartFromTheConsoleOpensAPullRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.New(t, fixScript()...), withConsole)
	e.gh.CloneURL = e.git.CloneURL
	e.gh.SetPermission(owner, repoName, "maintainer", "write")
	post := func(login, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", e.url+"/api/tasks", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.gh.UserToken(login))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, out := post("maintainer", `{"repository":"`+owner+"/"+repoName+`","issue":1,"instructions":"fix the spelling of commit in the README"}`)
	if code != http.StatusAccepted {
		t.Fatalf("start = %d %v", code, out)
	}
	tk := e.waitTask(1)
	if tk.State != task.Done || tk.Requester.Login != "maintainer" || tk.Repo.InstallationID != installID {
		t.Fatalf("task = %s by %s on installation %d: %s\nlogs:\n%s", tk.State, tk.Requester.Login, tk.Repo.InstallationID, tk.Error, e.logs.String())
	}
	prs := e.gh.PullRequests(owner, repoName)
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "Fixes #1") {
		t.Fatalf("pull requests = %+v", prs)
	}
	// The installation was asked of GitHub with the app's JWT.
	found := false
	for _, r := range e.gh.Requests() {
		found = found || (r.Method == "GET" && r.Path == "/repos/"+owner+"/"+repoName+"/installation" && r.Auth == "jwt" && r.Status == http.StatusOK)
	}
	if !found {
		t.Error("the installation was not asked of GitHub with the app's JWT")
	}
	// Someone who cannot see the repository is told nothing of it.
	if code, out := post("stranger", `{"repository":"`+owner+"/"+repoName+`","issue":1}`); code != http.StatusNotFound {
		t.Errorf("a stranger's start = %d %v, want 404", code, out)
	}
}

// browser is a client signed in to the console as login, through GitHub's
// web flow (the fake's).
func (e *env) browser(t *testing.T, login string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	e.gh.SignInBrowser(login)
	resp, err := c.Get(e.url + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return c
}
