package main_test

import (
	"bytes"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
)

var manifestForm = regexp.MustCompile(`<form method="post" action="([^"]+)">\s*<input type="hidden" name="manifest" value="([^"]+)">`)

// A bot started with no GitHub App serves the setup page; the operator
// creates the app through GitHub's manifest flow, and the same process
// goes on as the bot, webhook and console, with the saved credentials;
// a restart reads them.
func TestFirstRunCreatesTheApp(t *testing.T) {
	bin, err := botproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	gh := fakegithub.New(t)
	llm := fakellm.New(t)
	dir := filepath.Join(t.TempDir(), "app")
	addr := botproc.FreeAddr(t)
	pub := "http://" + addr
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(),
		"GITHUB_API_URL=" + gh.URL,
		"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + llm.URL, "BOT_MODEL=test-model",
		"BOT_DATABASE_URL=sqlite://" + filepath.Join(t.TempDir(), "bot.db"),
		"BOT_RUNNER=local", "BOT_WORKDIR=" + t.TempDir(), "BOT_LOG_FORMAT=json",
		"BOT_APP_DIR=" + dir, "BOT_PUBLIC_URL=" + pub,
	}
	bot := botproc.StartBotOn(t, bin, env, addr)

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	token, err := os.ReadFile(filepath.Join(dir, "setup-token"))
	if err != nil {
		t.Fatalf("no setup token: %v\n%s", err, bot.Logs())
	}
	if !strings.Contains(bot.Logs(), pub+"/setup") {
		t.Errorf("the log does not say where the setup page is:\n%s", bot.Logs())
	}
	if strings.Contains(bot.Logs(), strings.TrimSpace(string(token))) {
		t.Error("the log holds the setup token")
	}
	resp, err := browser.PostForm(pub+"/setup", url.Values{"token": {strings.TrimSpace(string(token))}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := manifestForm.FindStringSubmatch(string(page))
	if m == nil {
		t.Fatalf("no manifest form (%d):\n%s", resp.StatusCode, page)
	}
	// GitHub's page creates the app and sends the browser back.
	resp, err = browser.PostForm(html.UnescapeString(m[1]), url.Values{"manifest": {html.UnescapeString(m[2])}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "is created") {
		t.Fatalf("back from GitHub = %d:\n%s\n%s", resp.StatusCode, page, bot.Logs())
	}

	// The same process now takes GitHub's deliveries, signed with the new
	// app's secret, and serves the console.
	ping := func() int {
		body := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
		req, _ := http.NewRequest("POST", pub+"/webhook", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", "ping")
		req.Header.Set("X-GitHub-Delivery", "ping-1")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hub-Signature-256", botproc.SignWith(gh.WebhookSecret(), body))
		resp, err := browser.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(60 * time.Second)
	for ping() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("the bot never took the new app's ping:\n%s", bot.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := bot.Get("/console/signin"); !strings.Contains(got, "Sign in with GitHub") {
		t.Errorf("the console is not on after the setup:\n%.300s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "setup-token")); !os.IsNotExist(err) {
		t.Errorf("the setup token outlived the setup: %v", err)
	}

	bot.Stop()
	bot.Restart()
	if code := ping(); code != http.StatusOK {
		t.Fatalf("after a restart the ping = %d:\n%s", code, bot.Logs())
	}
}
