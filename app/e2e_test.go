package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/ghapp"
	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/gitserver"
	"github.com/pullwright/pullwright/internal/syncbuf"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// The repository and secret the subprocess harness uses too.
const (
	secret    = botproc.Secret
	owner     = botproc.Owner
	repoName  = botproc.Repo
	installID = botproc.InstallID
	// payloadFile is the real delivery GitHub's docs publish, unchanged
	// (see ../shared/testdata/github-webhooks/SOURCE.md).
	payloadFile = "../webhook/testdata/issue_comment.created.json"
)

// env is one bot wired to real git, a fake GitHub and a scripted model.
type env struct {
	t    *testing.T
	gh   *fakegithub.Server
	git  *gitserver.Server
	llm  *fakellm.Server
	bot  *app.App
	url  string
	logs *syncbuf.Buffer
	cfg  app.Config
	// cloneURL, when set, replaces the git server's in deliveries.
	cloneURL string
	// console, when set, turns the console on at the bot's own address.
	console bool
	cancel  context.CancelFunc
	done    chan error
}

type envOption func(*app.Config)

// consoleHere is the PublicURL withConsole sets: start replaces it with
// the bot's own address.
const consoleHere = "console at the listener"

// withConsole turns the console on, at the bot's own address.
func withConsole(c *app.Config) { c.PublicURL = consoleHere }

func newEnv(t *testing.T, llm *fakellm.Server, opts ...envOption) *env {
	t.Helper()
	gh := fakegithub.New(t)
	gh.AddInstallation(installID, owner+"/"+repoName)
	gh.AddIssue(owner, repoName, fakegithub.Issue{
		Number: 1,
		Title:  "Spelling error in the README file",
		Body:   "It looks like you accidently spelled 'commit' with two 't's.",
		Author: owner,
	})
	gh.SetPermission(owner, repoName, owner, "admin")

	git := newRepository(t, gh)

	logs := &syncbuf.Buffer{}
	cfg := app.Config{
		DatabaseURL:   "sqlite://" + filepath.Join(t.TempDir(), "bot.db"),
		AppID:         gh.AppID,
		PrivateKey:    gh.PrivateKeyPEM(),
		WebhookSecret: secret,
		APIURL:        gh.URL,
		OpenAIKey:     "sk-test",
		OpenAIBaseURL: llm.URL,
		Model:         "test-model",
		Runner:        "local",
		WorkDir:       t.TempDir(),
		Workers:       2,
		Poll:          20 * time.Millisecond,
		MaxAttempts:   3,
		Backoff:       func(int) time.Duration { return 10 * time.Millisecond },
		GitHubRetry:   time.Millisecond,
		// The pool's retries of a failed step are what these tests watch;
		// the agent's own retries of a call are tested in agent.
		LLMRetries: -1,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		// The fake's attachments redirect to its storage host, on
		// loopback as localhost: the bot takes it as GitHub's.
		ImageTest: &ghapp.ImageTest{Storage: []string{gh.StorageURL()}, Loopback: []netip.AddrPort{gh.StorageAddr()}},
	}
	for _, o := range opts {
		o(&cfg)
	}
	e := &env{t: t, gh: gh, git: git, llm: llm, logs: logs, cfg: cfg, console: cfg.PublicURL == consoleHere}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// newRepository is the tests' repository on a real git server that takes
// the tokens gh issues, with a typo in its README.
func newRepository(t *testing.T, gh *fakegithub.Server) *gitserver.Server {
	t.Helper()
	git := gitserver.New(t, gitserver.Options{Auth: func(user, pass string) bool {
		return user == "x-access-token" && gh.TokenCanAccess(pass, owner+"/"+repoName)
	}})
	git.CreateRepo(t, owner, repoName, "master", map[string]string{
		"README.md": "# Hello-World\n\nRemember to comitt your work.\n",
		"main.go":   "package main\n\nfunc main() {}\n",
	})
	// The contents API serves the real repository, so a configuration file
	// pushed to it is what the bot reads.
	gh.Files = git.File
	gh.SetDefaultBranch(owner, repoName, "master")
	return git
}

// start runs a bot on e.cfg; after stop, it runs a new one, as a restart.
func (e *env) start() {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if e.console {
		// Its address is the listener's, known only now.
		e.cfg.PublicURL = "http://" + ln.Addr().String()
		e.cfg.ClientID, e.cfg.ClientSecret = e.gh.ClientID, e.gh.ClientSecret
		e.cfg.SessionKey = []byte(strings.Repeat("s", 32))
	}
	bot, err := app.New(ctx, e.cfg)
	if err != nil {
		cancel()
		ln.Close()
		e.t.Fatalf("app.New: %v", err)
	}
	e.bot, e.url, e.cancel, e.done = bot, "http://"+ln.Addr().String(), cancel, make(chan error, 1)
	go func() { e.done <- bot.Serve(ctx, ln) }()
}

func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	if err := <-e.done; err != nil {
		e.t.Errorf("serve: %v", err)
	}
	e.bot.Close()
	e.cancel = nil
	// No log line may carry a credential the bot held.
	for _, tok := range e.gh.IssuedTokens() {
		if strings.Contains(e.logs.String(), tok) {
			e.t.Errorf("an installation token appears in the logs")
		}
	}
	if strings.Contains(e.logs.String(), "sk-test") {
		e.t.Errorf("the model API key appears in the logs")
	}
}

// payload is the real issue_comment delivery with its comment body and
// clone URL pointed at this test's servers. The comment is also made on the
// fake GitHub, as GitHub would have it before sending the delivery.
// commentTime is GitHub's created_at of comment id as a delivery carries
// it: the order of a request and its answer is judged on it, so a delivery
// must not carry the payload file's own.
func commentTime(t *testing.T, gh *fakegithub.Server, id int64) string {
	t.Helper()
	c, ok := gh.Comment(id)
	if !ok {
		t.Fatalf("no comment %d on the fake", id)
	}
	return c.CreatedAt.Format(time.RFC3339)
}

func (e *env) payload(body string, edit func(map[string]any)) []byte {
	e.t.Helper()
	raw, err := os.ReadFile(payloadFile)
	if err != nil {
		e.t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		e.t.Fatal(err)
	}
	p["comment"].(map[string]any)["body"] = body
	id := e.gh.AddComment(owner, repoName, 1, owner, body)
	p["comment"].(map[string]any)["id"] = id
	p["comment"].(map[string]any)["created_at"] = commentTime(e.t, e.gh, id)
	p["repository"].(map[string]any)["clone_url"] = e.git.CloneURL(owner, repoName)
	// GitHub's id of the repository, as the fake's API answers it: the
	// console matches a task to the repository a person can read by it.
	p["repository"].(map[string]any)["id"] = e.gh.RepoID(owner, repoName)
	if e.cloneURL != "" {
		p["repository"].(map[string]any)["clone_url"] = e.cloneURL
	}
	if edit != nil {
		edit(p)
	}
	out, err := json.Marshal(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// deliver posts a signed delivery and returns the status code.
func (e *env) deliver(id, event string, body []byte) int {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+"/webhook", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", botproc.Sign(body))
	req.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// patience is how long a wait for the bot gives up after: a wait returns
// as soon as what it waits for happens, so the bound only decides how
// long a stuck test takes to fail. It is generous because a setup
// compiles the repository's packages into the build cache and a run in
// the sandbox compiles, and CI's two cores run several packages at once.
const patience = 8 * time.Minute

// waitTask waits for the issue's fix task to end.
func (e *env) waitTask(issue int) *task.Task {
	e.t.Helper()
	key := (&task.Task{Repo: pullwright.Repo{InstallationID: installID, Owner: owner, Name: repoName}, Issue: issue}).IssueKey()
	deadline := time.Now().Add(patience)
	for {
		tk, err := e.bot.Store().Latest(context.Background(), key)
		if err == nil && tk.State.Terminal() {
			return tk
		}
		if err != nil && !errors.Is(err, task.ErrNotFound) {
			e.t.Fatal(err)
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("task on #%d did not finish: %s\nlogs:\n%s", issue, botproc.Describe(tk), e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitIdle waits until the bot has nothing left to do: every task it
// recorded has ended or waits, unanswered, for a person, as Pool.Drain
// waits (task.Due). A delivery's task is recorded before the delivery is
// answered, and an answer a task records makes the task it answers due,
// so once a delivery is answered, waitIdle returns only after the work
// it caused has been done: what it did not do by then, it will not do.
// (A failed task's report, posted after the task is saved as failed, may
// still be on its way; the tests here assert on what a task does before
// it ends.)
func (e *env) waitIdle() {
	e.t.Helper()
	due, ok := e.bot.Store().(task.Due)
	if !ok {
		e.t.Fatalf("the store %T cannot tell when the next task is due", e.bot.Store())
	}
	deadline := time.Now().Add(patience)
	for {
		at, busy, err := due.NextDue(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the bot still has a task due at %v\nlogs:\n%s", at, e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitComments waits until the issue has n comments by the bot.
func (e *env) waitComments(issue, n int) []fakegithub.Comment {
	e.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		var bot []fakegithub.Comment
		for _, c := range e.gh.Comments(owner, repoName, issue) {
			if c.Author == e.gh.BotLogin() {
				bot = append(bot, c)
			}
		}
		if len(bot) >= n {
			return bot
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("issue #%d has %d bot comments, want %d\nlogs:\n%s", issue, len(bot), n, e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitComment waits until a bot comment on the issue contains want.
func (e *env) waitComment(issue int, want string) fakegithub.Comment {
	e.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		var bot []fakegithub.Comment
		for _, c := range e.gh.Comments(owner, repoName, issue) {
			if c.Author != e.gh.BotLogin() {
				continue
			}
			if strings.Contains(c.Body, want) {
				return c
			}
			bot = append(bot, c)
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no bot comment on #%d says %q:\n%v\nlogs:\n%s", issue, want, bot, e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// silentURL is a clone URL whose server accepts connections and never answers.
func silentURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/" + owner + "/" + repoName + ".git"
}

func args(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func call(name string, v any) fakellm.ToolCall {
	return fakellm.ToolCall{Name: name, Arguments: args(v)}
}

// fixScript is the conversation of a model that fixes the README typo.
func fixScript() []fakellm.Step {
	return []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{
			call("plan", map[string]any{"items": []map[string]string{{"title": "Find the typo", "status": "in_progress"}, {"title": "Fix it", "status": "pending"}}}),
			call("grep", map[string]any{"pattern": "comitt"}),
		}},
		{ToolCalls: []fakellm.ToolCall{call("read_file", map[string]any{"path": "README.md"})}},
		{ToolCalls: []fakellm.ToolCall{
			call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"}),
			call("plan", map[string]any{"items": []map[string]string{{"title": "Find the typo", "status": "done"}, {"title": "Fix it", "status": "done"}}}),
		}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit in the README", "summary": "The README said `comitt`; it now says `commit`."})}},
	}
}

func TestFixCommentBecomesPullRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.New(t, fixScript()...))
	body := e.payload("Thanks!\n\n/agent fix the spelling of commit in the README", nil)

	if code := e.deliver("72d3162e-cc78-11e3-81ab-4c9367dc0958", "issue_comment", body); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d, want 202", code)
	}
	tk := e.waitTask(1)
	if tk.State != task.Done {
		t.Fatalf("task ended %s: %s\nlogs:\n%s", tk.State, tk.Error, e.logs.String())
	}

	// The branch is on the real git server with the fix, committed by the
	// app and co-authored by the requester.
	branch := "agent/1-spelling-error-in-the-readme-file"
	if tasktest.Job(tk).Branch != branch {
		t.Fatalf("branch = %q, want %q", tasktest.Job(tk).Branch, branch)
	}
	readme, err := e.git.ReadFile(t, owner, repoName, branch, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if readme != "# Hello-World\n\nRemember to commit your work.\n" {
		t.Fatalf("README on the branch = %q", readme)
	}
	commits := e.git.Commits(t, owner, repoName, branch)
	if len(commits) != 2 {
		t.Fatalf("branch has %d commits, want base + fix", len(commits))
	}
	fix := commits[0]
	if fix.AuthorName != e.gh.BotLogin() || !strings.Contains(fix.AuthorEmail, "+"+e.gh.BotLogin()+"@users.noreply.github.com") {
		t.Errorf("fix authored by %s <%s>, want the app's bot", fix.AuthorName, fix.AuthorEmail)
	}
	if !strings.Contains(fix.Body, "Co-authored-by: Codertocat <21031067+Codertocat@users.noreply.github.com>") {
		t.Errorf("commit message lacks the requester's trailer:\n%s", fix.Body)
	}

	// Exactly one pull request, linking the issue.
	prs := e.gh.PullRequests(owner, repoName)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	pr := prs[0]
	if pr.Head != branch || pr.Base != "master" || pr.Title != "Fix the spelling of commit in the README" {
		t.Errorf("pull request = %+v", pr)
	}
	for _, want := range []string{"Fixes #1", "`README.md` (+1 −1)", "it now says `commit`", "4 turns"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("pull request body lacks %q:\n%s", want, pr.Body)
		}
	}

	// The comment got a reaction; the status comment was edited in place to
	// its final state, and a reply links the pull request.
	var trigger map[string]any
	json.Unmarshal(body, &trigger)
	triggerID := int64(trigger["comment"].(map[string]any)["id"].(float64))
	if r := e.gh.Reactions(owner, repoName, triggerID); len(r) != 1 || r[0] != "eyes" {
		t.Errorf("reactions on the trigger comment = %v", r)
	}
	comments := e.waitComments(1, 2)
	if len(comments) != 2 {
		t.Fatalf("bot comments = %d, want status + link", len(comments))
	}
	status, link := comments[0], comments[1]
	if status.Edits < 3 || !strings.Contains(status.Body, "✅ Done") || !strings.Contains(status.Body, pr.HTMLURL) ||
		!strings.Contains(status.Body, "- [x] Fix it") {
		t.Errorf("status comment (%d edits) is not in its final state:\n%s", status.Edits, status.Body)
	}
	if !strings.Contains(link.Body, pr.HTMLURL) || !strings.Contains(link.Body, "@Codertocat") {
		t.Errorf("link comment = %q", link.Body)
	}

	// The model saw the maintainer's instructions and the issue, the latter
	// marked as untrusted data, and the results of its tool calls.
	reqs := e.llm.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model was called %d times, want 4", len(reqs))
	}
	first := reqs[0].Messages
	user := first[len(first)-1].Content
	for _, want := range []string{"the spelling of commit in the README", "Spelling error in the README file", "accidently spelled"} {
		if !strings.Contains(user, want) {
			t.Errorf("first prompt lacks %q:\n%s", want, user)
		}
	}
	last := reqs[3].Messages
	var sawRead bool
	for _, m := range last {
		if m.Role == "tool" && strings.Contains(m.Content, "Remember to comitt your work.") {
			sawRead = true
		}
	}
	if !sawRead {
		t.Errorf("the model never received the README's content")
	}

	// A redelivery of the same delivery creates nothing new.
	before := len(e.gh.Requests())
	if code := e.deliver("72d3162e-cc78-11e3-81ab-4c9367dc0958", "issue_comment", body); code != http.StatusOK {
		t.Fatalf("redelivery answered %d, want 200", code)
	}
	e.waitIdle()
	if got := e.gh.PullRequests(owner, repoName); len(got) != 1 {
		t.Errorf("redelivery made %d pull requests", len(got))
	}
	if after := len(e.gh.Requests()); after != before {
		t.Errorf("redelivery caused %d GitHub calls", after-before)
	}
	if n := e.llm.Calls(); n != 4 {
		t.Errorf("redelivery caused model calls: %d", n)
	}

	metrics := e.get("/metrics")
	for _, want := range []string{
		`pullwright_webhook_requests_total{code="202",event="issue_comment"} 1`,
		`pullwright_webhook_requests_total{code="200",event="issue_comment"} 1`,
		`pullwright_tasks_ended_total{kind="fix",state="done"} 1`,
		`pullwright_task_steps_total{kind="fix",result="ok",state="working"} 4`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// get fetches a path of the bot's HTTP server and returns the body.
func (e *env) get(path string) string {
	e.t.Helper()
	resp, err := http.Get(e.url + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET %s = %d, %v", path, resp.StatusCode, err)
	}
	return string(b)
}

func TestFailuresEndWithAClearComment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		llm     func(t *testing.T) *fakellm.Server
		setup   func(e *env)
		comment string
		want    string
	}{
		{
			name:    "clone URL that does not answer",
			llm:     func(t *testing.T) *fakellm.Server { return fakellm.New(t) },
			setup:   func(e *env) { e.git.SetDown(true) },
			comment: "/agent fix it",
			want:    "cloning",
		},
		{
			name: "clone URL that accepts connections and never answers",
			llm:  func(t *testing.T) *fakellm.Server { return fakellm.New(t) },
			setup: func(e *env) {
				e.cloneURL = silentURL(e.t)
				e.cfg.GitTimeout = 300 * time.Millisecond
				e.stop()
				e.start()
			},
			comment: "/agent fix it",
			want:    "cloning",
		},
		{
			name: "model endpoint answers 500",
			llm: func(t *testing.T) *fakellm.Server {
				return fakellm.New(t, fakellm.Step{Status: 500}, fakellm.Step{Status: 500}, fakellm.Step{Status: 500})
			},
			comment: "/agent fix it",
			want:    "the model endpoint did not answer",
		},
		{
			name:    "model answers garbage",
			llm:     func(t *testing.T) *fakellm.Server { return fakellm.New(t, fakellm.Step{RawBody: "<html>oops"}) },
			comment: "/agent fix it",
			want:    "unreadable",
		},
		{
			name: "agent finishes without changing anything",
			llm: func(t *testing.T) *fakellm.Server {
				return fakellm.New(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Nothing", "summary": "nothing to do"})}})
			},
			comment: "/agent fix it",
			want:    "without changing any file",
		},
		{
			name:    "requester without write access",
			llm:     func(t *testing.T) *fakellm.Server { return fakellm.New(t) },
			setup:   func(e *env) { e.gh.SetPermission(owner, repoName, owner, "read") },
			comment: "/agent fix it",
			want:    "asking me for changes needs write permission or higher",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.llm(t))
			if tc.setup != nil {
				tc.setup(e)
			}
			if code := e.deliver("d-"+tc.name, "issue_comment", e.payload(tc.comment, nil)); code != http.StatusAccepted {
				t.Fatalf("delivery answered %d", code)
			}
			e.waitTask(1)
			e.waitComment(1, tc.want)
			if prs := e.gh.PullRequests(owner, repoName); len(prs) != 0 {
				t.Errorf("a failed task opened %d pull requests", len(prs))
			}
		})
	}
}

// The model's malformed tool call comes back to it as an error, and the
// task carries on.
func TestMalformedToolCallIsReturnedToTheModel(t *testing.T) {
	t.Parallel()
	steps := append([]fakellm.Step{{ToolCalls: []fakellm.ToolCall{{Name: "edit_file", Arguments: `{"path": "README.md", "old_text": `}}}}, fixScript()...)
	e := newEnv(t, fakellm.New(t, steps...))
	if code := e.deliver("d1", "issue_comment", e.payload("/agent fix the typo", nil)); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d", code)
	}
	if tk := e.waitTask(1); tk.State != task.Done {
		t.Fatalf("task ended %s: %s", tk.State, tk.Error)
	}
	second := e.llm.Requests()[1].Messages
	if m := second[len(second)-1]; m.Role != "tool" || !strings.HasPrefix(m.Content, "error:") {
		t.Fatalf("after a malformed call the model got %s %q, want a tool error", m.Role, m.Content)
	}
}

func TestCommandsThatOnlyReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		comment string
		edit    func(map[string]any)
		want    string
	}{
		{"help", "/agent help", nil, "/agent fix"},
		{"unknown sub-command", "/agent stauts", nil, "status"},
		{"status with no task", "/agent status", nil, "No task has run on this issue yet"},
		{"cancel with no task", "/agent cancel", nil, "no running task"},
		{"locked issue", "/agent fix it", func(p map[string]any) { p["issue"].(map[string]any)["locked"] = true }, "locked"},
		{"empty fix on an empty issue", "/agent fix", func(p map[string]any) { p["issue"].(map[string]any)["body"] = "" }, "/agent fix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakellm.New(t))
			if code := e.deliver("d1", "issue_comment", e.payload(tc.comment, tc.edit)); code != http.StatusAccepted {
				t.Fatalf("delivery answered %d", code)
			}
			e.waitComment(1, tc.want)
			if e.llm.Calls() != 0 {
				t.Fatalf("a reply called the model")
			}
		})
	}
}

func TestIgnoredDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.New(t))
	tests := []struct {
		name  string
		event string
		body  []byte
	}{
		{"comment without a command", "issue_comment", e.payload("just a comment", nil)},
		{"comment by the bot itself", "issue_comment", e.payload("/agent fix it", func(p map[string]any) {
			p["sender"].(map[string]any)["login"] = e.gh.BotLogin()
			p["sender"].(map[string]any)["type"] = "Bot"
		})},
		{"edited comment", "issue_comment", e.payload("/agent fix it", func(p map[string]any) { p["action"] = "edited" })},
		{"event we do not handle", "workflow_run", e.payload("/agent fix it", nil)},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code := e.deliver(fmt.Sprint("ignored-", i), tc.event, tc.body); code != http.StatusOK {
				t.Fatalf("answered %d, want 200", code)
			}
		})
	}
	e.waitIdle()
	for _, c := range e.gh.Comments(owner, repoName, 1) {
		if c.Author == e.gh.BotLogin() {
			t.Fatalf("an ignored delivery made the bot comment: %q", c.Body)
		}
	}
	if n := e.llm.Calls(); n != 0 {
		t.Fatalf("ignored deliveries called the model %d times", n)
	}
}

func TestBadDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.New(t))
	good := e.payload("/agent fix it", nil)
	post := func(body []byte, sig string) int {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/webhook", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", "bad-1")
		if sig != "" {
			req.Header.Set("X-Hub-Signature-256", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	truncated := good[:len(good)/2]
	huge := bytes.Repeat([]byte(" "), 26<<20)
	tests := []struct {
		name string
		body []byte
		sig  string
		want int
	}{
		{"missing signature", good, "", http.StatusUnauthorized},
		{"wrong signature", good, "sha256=" + strings.Repeat("0", 64), http.StatusUnauthorized},
		{"signature of another body", good, botproc.Sign([]byte("x")), http.StatusUnauthorized},
		{"truncated JSON", truncated, botproc.Sign(truncated), http.StatusBadRequest},
		{"oversized body", huge, botproc.Sign(huge), http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := post(tc.body, tc.sig); got != tc.want {
				t.Fatalf("answered %d, want %d", got, tc.want)
			}
		})
	}
	// None of them was recorded: a good delivery with the same id still counts.
	if code := e.deliver("bad-1", "issue_comment", good); code != http.StatusAccepted {
		t.Fatalf("good delivery after bad ones answered %d", code)
	}
}

// A second fix on an issue whose first branch is still there gets a branch
// of its own instead of pushing over (or being refused by) the first.
func TestSecondFixOnAnIssueGetsItsOwnBranch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.New(t, append(fixScript(), secondFix()...)...))
	if code := e.deliver("d1", "issue_comment", e.payload("/agent fix the typo", nil)); code != http.StatusAccepted {
		t.Fatalf("first delivery answered %d", code)
	}
	first := e.waitTask(1)
	if code := e.deliver("d2", "issue_comment", e.payload("/agent fix also main.go", nil)); code != http.StatusAccepted {
		t.Fatalf("second delivery answered %d", code)
	}
	deadline := time.Now().Add(patience)
	var second *task.Task
	for second == nil || !second.State.Terminal() {
		if time.Now().After(deadline) {
			t.Fatalf("second task did not finish: %+v\n%s", second, e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
		second, _ = e.bot.Store().Get(context.Background(), first.ID+1)
	}
	if second.State != task.Done {
		t.Fatalf("second task ended %s: %s", second.State, second.Error)
	}
	if want := tasktest.Job(first).Branch + "-" + fmt.Sprint(second.ID); tasktest.Job(second).Branch != want {
		t.Fatalf("second branch = %q, want %q", tasktest.Job(second).Branch, want)
	}
	if prs := e.gh.PullRequests(owner, repoName); len(prs) != 2 {
		t.Fatalf("%d pull requests, want 2", len(prs))
	}
	if got, _ := e.git.ReadFile(t, owner, repoName, tasktest.Job(first).Branch, "main.go"); got != "package main\n\nfunc main() {}\n" {
		t.Fatalf("the first branch was changed by the second task: main.go = %q", got)
	}
}

func secondFix() []fakellm.Step {
	return []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("write_file", map[string]any{"path": "main.go", "content": "package main\n\n// main does nothing.\nfunc main() {}\n"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Document main", "summary": "Adds a comment."})}},
	}
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.New(t))
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "go_goroutines"} {
		if got := e.get(path); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want it to contain %q", path, got, want)
		}
	}
}

// The bot is stopped in the middle of a task and a new one, on another
// machine (a fresh work directory) but the same database, finishes it: the
// conversation and the files the agent changed come back from the store.
func TestTaskSurvivesRestartOnAnotherMachine(t *testing.T) {
	t.Parallel()
	taskSurvivesRestart(t)
}

// taskSurvivesRestart is TestTaskSurvivesRestartOnAnotherMachine on the
// store opts choose (onPostgres).
func taskSurvivesRestart(t *testing.T, opts ...envOption) {
	script := fixScript()
	gate := make(chan struct{})
	var (
		mu    sync.Mutex
		calls int
	)
	llm := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch {
		case n <= 3: // grep, read and edit, as in fixScript
			return script[n-1]
		case n == 4: // the first bot is stopped while waiting for this answer
			<-gate
			return fakellm.Step{Status: http.StatusServiceUnavailable}
		default:
			return script[3] // finish
		}
	})
	e := newEnv(t, llm, opts...)
	if code := e.deliver("d1", "issue_comment", e.payload("/agent fix the typo", nil)); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d", code)
	}
	key := (&task.Task{Repo: pullwright.Repo{InstallationID: installID, Owner: owner, Name: repoName}, Issue: 1}).IssueKey()
	deadline := time.Now().Add(patience)
	for {
		mu.Lock()
		n := calls
		mu.Unlock()
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the model was called %d times, want 4\n%s", n, e.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.stop()
	close(gate)

	saved, err := func() (*task.Task, error) {
		s, err := app.OpenStore(context.Background(), e.cfg.DatabaseURL)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return s.Latest(context.Background(), key)
	}()
	if err != nil {
		t.Fatal(err)
	}
	if saved.State != task.Working || tasktest.Job(saved).Turns != 3 || len(tasktest.Job(saved).Files) != 1 || tasktest.Job(saved).Files[0].Path != "README.md" {
		t.Fatalf("saved task = state %s, %d turns, files %+v", saved.State, tasktest.Job(saved).Turns, tasktest.Job(saved).Files)
	}

	// The first machine and its disk are gone.
	if err := os.RemoveAll(e.cfg.WorkDir); err != nil {
		t.Fatal(err)
	}
	e.cfg.WorkDir = t.TempDir()
	e.start()
	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("after restart the task ended %s: %s\n%s", done.State, done.Error, e.logs.String())
	}
	readme, err := e.git.ReadFile(t, owner, repoName, tasktest.Job(done).Branch, "README.md")
	if err != nil || readme != "# Hello-World\n\nRemember to commit your work.\n" {
		t.Fatalf("README on the branch = %q, %v", readme, err)
	}
	if prs := e.gh.PullRequests(owner, repoName); len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	if c := e.waitComments(1, 2); len(c) != 2 {
		t.Fatalf("%d bot comments after the restart, want status + link", len(c))
	}
	// The resumed conversation is the one the first bot had.
	reqs := e.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	var sawEdit bool
	for _, m := range last {
		for _, tc := range m.ToolCalls {
			if tc.Function.Name == "edit_file" {
				sawEdit = true
			}
		}
	}
	if !sawEdit {
		t.Fatalf("the resumed conversation lost the first bot's turns")
	}
	if !strings.Contains(e.logs.String(), "rebuilding workspace") {
		t.Fatalf("the workspace was not rebuilt from the store")
	}
}
