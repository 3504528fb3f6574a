// Package botproc runs the real `bot serve` binary as a child process against
// the test servers (internal/fakegithub, internal/gitserver, internal/fakellm),
// so that tests and benchmarks can do what only a separate process allows:
// kill it with SIGKILL in the middle of its work, start it again on the same
// database (a SQLite file, or Postgres: Options.DatabaseURL), and read its
// own /metrics and /proc figures.
//
// The binary is built once per test binary (or program) with `go build`,
// with -race when the caller itself was built with it. Each Bot runs in a
// process group of its own; Kill sends SIGKILL to the whole group, with no
// chance to clean up. Deliveries are GitHub's real payloads from
// webhook/testdata, rewritten with a JSON round-trip to point at the test
// servers and signed with HMAC-SHA256, as app/e2e_test.go does in-process.
//
// It owns nothing outside tests and benchmarks.
package botproc

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for a bot on Postgres
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver, as task uses

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/gitserver"
	"github.com/pullwright/pullwright/internal/pgtest"
	"github.com/pullwright/pullwright/task"
)

// The repository every harness seeds, as named in the real payloads.
const (
	Owner     = "Codertocat"
	Repo      = "Hello-World"
	InstallID = 1
	Secret    = "It's a Secret to Everybody"
	// IssueTitle and IssueBody are those of the real issue_comment payload,
	// so every seeded issue agrees with what a delivery says about it.
	IssueTitle = "Spelling error in the README file"
	IssueBody  = "It looks like you accidently spelled 'commit' with two 't's."
)

// Files of the seeded repository's default branch, master.
var Files = map[string]string{
	"README.md": "# Hello-World\n\nRemember to comitt your work.\n",
	"main.go":   "package main\n\nfunc main() {}\n",
}

// ---------------------------------------------------------------------------
// Building the binary

var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// ModuleRoot is the directory holding the module's go.mod.
func ModuleRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root, nil
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the module: go env GOMOD is empty")
	}
	return filepath.Dir(gomod), nil
}

// Binary builds ./cmd/bot once per process and returns its path. The binary
// is built with -race when this process was. Call Cleanup (from TestMain)
// to remove it afterwards.
func Binary() (string, error) {
	build.once.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			build.err = err
			return
		}
		build.dir, err = os.MkdirTemp("", "botproc-")
		if err != nil {
			build.err = err
			return
		}
		build.path = filepath.Join(build.dir, "bot")
		args := []string{"build", "-o", build.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/bot")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	return build.path, build.err
}

// Cleanup removes the binary Binary built. Tests call it from TestMain after
// m.Run.
func Cleanup() {
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
}

// ---------------------------------------------------------------------------
// The bot process

// Bot is one `bot serve` child process, restartable on the same settings.
type Bot struct {
	t    testing.TB
	bin  string
	env  []string // without BOT_ADDR
	addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process has exited
	err  error         // its Wait error
	logs *logBuffer
	// URL is http://addr of the current process.
	url string
}

// StartBot starts bin with env (KEY=value, BOT_ADDR is chosen here on a free
// loopback port) and waits until /readyz answers. The bot is stopped with
// SIGTERM at the end of the test.
func StartBot(t testing.TB, bin string, env []string) *Bot {
	t.Helper()
	b := &Bot{t: t, bin: bin, env: env, logs: &logBuffer{}}
	for try := 0; ; try++ {
		b.addr = freeAddr(t)
		err := b.start()
		if err == nil {
			break
		}
		// Another process took the port between our pick and its listen.
		if try < 3 && strings.Contains(b.logs.String(), "address already in use") {
			continue
		}
		t.Fatalf("botproc: %v\nbot output:\n%s", err, b.Logs())
	}
	t.Cleanup(b.Stop)
	return b
}

// StartBotOn is StartBot on addr (from FreeAddr), for a test whose
// settings name the bot's own address (BOT_PUBLIC_URL).
func StartBotOn(t testing.TB, bin string, env []string, addr string) *Bot {
	t.Helper()
	b := &Bot{t: t, bin: bin, env: env, logs: &logBuffer{}, addr: addr}
	if err := b.start(); err != nil {
		t.Fatalf("botproc: %v\nbot output:\n%s", err, b.Logs())
	}
	t.Cleanup(b.Stop)
	return b
}

// FreeAddr is a loopback address with a port free a moment ago.
func FreeAddr(t testing.TB) string { return freeAddr(t) }

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("botproc: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (b *Bot) start() error {
	b.mu.Lock()
	bin := b.bin
	b.mu.Unlock()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(append([]string{}, b.env...), "BOT_ADDR="+b.addr)
	cmd.Stdout = b.logs
	cmd.Stderr = b.logs
	// A group of its own: Kill takes down whatever the bot started in it.
	// Pdeathsig (Linux) kills the bot if this process dies first.
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(b.logs, "botproc: starting %s serve on %s\n", bin, b.addr)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start bot: %w", err)
	}
	done := make(chan struct{})
	b.mu.Lock()
	b.cmd, b.done, b.err, b.url = cmd, done, nil, "http://"+b.addr
	b.mu.Unlock()
	go func() {
		err := cmd.Wait()
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
		close(done)
	}()
	return b.waitReady(done, 60*time.Second)
}

func (b *Bot) waitReady(done chan struct{}, d time.Duration) error {
	deadline := time.Now().Add(d)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-done:
			return fmt.Errorf("bot exited before it was ready: %v", b.exitErr())
		default:
		}
		resp, err := client.Get(b.URL() + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bot not ready after %s (last: %v)", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *Bot) exitErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// URL is the base URL of the running bot.
func (b *Bot) URL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.url
}

// PID is the process id of the current bot process.
func (b *Bot) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cmd.Process.Pid
}

// Logs is everything the bot processes wrote so far (JSON log lines), with
// a line of this package's before each start and after each kill or stop.
func (b *Bot) Logs() string { return b.logs.String() }

// Running reports whether the current process has not exited.
func (b *Bot) Running() bool {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the bot's process group (kill -9: no shutdown, no
// lease released, no buffer flushed) and waits for it to be gone.
func (b *Bot) Kill() {
	b.t.Helper()
	b.signal(syscall.SIGKILL)
	b.wait(10 * time.Second)
	fmt.Fprintf(b.logs, "botproc: killed with SIGKILL\n")
}

// Restart starts the bot again with the same environment, address and
// database, and waits until it is ready. The previous process must have
// exited (Kill or Stop).
func (b *Bot) Restart() {
	b.t.Helper()
	if b.Running() {
		b.t.Fatalf("botproc: Restart while the bot is still running")
	}
	if err := b.start(); err != nil {
		b.t.Fatalf("botproc: restart: %v\nbot output:\n%s", err, b.Logs())
	}
}

// Upgrade starts bin, another build of the bot, in place of the stopped
// one, with the same environment, address and database: what an operator
// does to upgrade.
func (b *Bot) Upgrade(bin string) {
	b.t.Helper()
	b.mu.Lock()
	b.bin = bin
	b.mu.Unlock()
	b.Restart()
}

// Stop sends SIGTERM and waits for a graceful exit (SIGKILL after 20 s). It
// fails the test if the bot exited with an error or the race detector
// reported a race in it. Stopping a stopped bot does nothing.
func (b *Bot) Stop() {
	if !b.Running() {
		b.checkRaces()
		return
	}
	b.signal(syscall.SIGTERM)
	if !b.wait(20 * time.Second) {
		b.t.Errorf("botproc: bot did not stop within 20s of SIGTERM; killing it\n%s", b.Logs())
		b.signal(syscall.SIGKILL)
		b.wait(10 * time.Second)
	}
	if err := b.exitErr(); err != nil {
		b.t.Errorf("botproc: bot exited with %v after SIGTERM\n%s", err, b.Logs())
	}
	fmt.Fprintf(b.logs, "botproc: stopped with SIGTERM\n")
	b.checkRaces()
}

func (b *Bot) checkRaces() {
	if strings.Contains(b.Logs(), "WARNING: DATA RACE") {
		b.t.Errorf("botproc: the race detector reported a race in the bot:\n%s", b.Logs())
	}
}

func (b *Bot) signal(sig syscall.Signal) {
	b.mu.Lock()
	pid := b.cmd.Process.Pid
	b.mu.Unlock()
	// The negative pid names the process group the bot leads.
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		b.t.Errorf("botproc: kill -%d -%d: %v", sig, pid, err)
	}
}

func (b *Bot) wait(d time.Duration) bool {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Get fetches path from the bot and returns the body; non-200 fails the test.
func (b *Bot) Get(path string) string {
	b.t.Helper()
	resp, err := http.Get(b.URL() + path)
	if err != nil {
		b.t.Fatalf("botproc: GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.t.Fatalf("botproc: GET %s = %d, %v", path, resp.StatusCode, err)
	}
	return string(body)
}

// Metric is the value of an unlabelled series on the bot's /metrics, such
// as go_goroutines or process_resident_memory_bytes.
func (b *Bot) Metric(name string) float64 {
	b.t.Helper()
	for line := range strings.Lines(b.Get("/metrics")) {
		rest, ok := strings.CutPrefix(line, name+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			b.t.Fatalf("botproc: metric %s = %q: %v", name, rest, err)
		}
		return v
	}
	b.t.Fatalf("botproc: /metrics has no %s", name)
	return 0
}

// ProcStatus returns fields of /proc/<pid>/status in bytes for the memory
// ones given in kB (VmRSS, VmHWM), as reported by the kernel.
func (b *Bot) ProcStatus(fields ...string) (map[string]int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.PID()))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.Lines(string(raw)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, f := range fields {
			if k != f {
				continue
			}
			parts := strings.Fields(v)
			n, err := strconv.ParseInt(parts[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc status %s: %q", k, v)
			}
			if len(parts) > 1 && parts[1] == "kB" {
				n *= 1024
			}
			out[k] = n
		}
	}
	return out, nil
}

// logBuffer collects the bot's output, keeping the last 64 MiB.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

const maxLogs = 64 << 20

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len()+len(p) > maxLogs {
		keep := l.b.Bytes()[l.b.Len()/2:]
		rest := append([]byte("botproc: [older output dropped]\n"), keep...)
		l.b.Reset()
		l.b.Write(rest)
	}
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ---------------------------------------------------------------------------
// The harness: fakes + bot

// Options configure a Harness.
type Options struct {
	// Workers is BOT_WORKERS (default 2).
	Workers int
	// ApprovalTimeout is BOT_APPROVAL_TIMEOUT (default 24h).
	ApprovalTimeout time.Duration
	// Issues is how many issues (1…Issues) the fake GitHub has (default 1).
	Issues int
	// Env holds extra KEY=value variables, applied last.
	Env []string
	// DatabaseURL is BOT_DATABASE_URL, such as a postgres:// URL from
	// internal/pgtest. Empty is a SQLite file of the test's own
	// (Harness.DatabasePath).
	DatabaseURL string
	// Binary is the bot to start first, such as an earlier release's
	// build; empty is this tree's (Binary).
	Binary string
}

// OnEachDatabase runs test as a subtest per database the bot can use,
// "sqlite" and "postgres", with the Options.DatabaseURL that puts the bot
// on it: "" for a SQLite file, and a Postgres database of the subtest's
// own from internal/pgtest (skipped without a server, failed with
// CI=true). What the bot promises after a kill it promises on both.
func OnEachDatabase(t *testing.T, test func(t *testing.T, databaseURL string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, "") })
	t.Run("postgres", func(t *testing.T) { test(t, pgtest.URL(t)) })
}

// Harness is a real bot process wired to a fake GitHub, a real git server
// and a scripted model.
type Harness struct {
	T      testing.TB
	GitHub *fakegithub.Server
	Git    *gitserver.Server
	LLM    *fakellm.Server
	Bot    *Bot
	// DatabaseURL is the bot's BOT_DATABASE_URL. DatabasePath is its
	// SQLite file, or "" on another database. WorkDir is its BOT_WORKDIR.
	DatabaseURL  string
	DatabasePath string
	WorkDir      string

	client *http.Client
	// env is the first bot's environment, which AddReplica starts more with.
	env      []string
	bin      string
	storeMu  sync.Mutex
	store    task.Store
	db       *sql.DB
	payloads map[string]map[string]any
}

// New seeds a fake GitHub (installation 1 on Codertocat/Hello-World, issues
// 1…opts.Issues, Codertocat an admin), a git server with the repository,
// and starts the bot binary against them and llm.
func New(t testing.TB, llm *fakellm.Server, opts Options) *Harness {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("botproc: build the bot: %v", err)
	}
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	if opts.Issues == 0 {
		opts.Issues = 1
	}
	gh := fakegithub.New(t)
	gh.AddInstallation(InstallID, Owner+"/"+Repo)
	for n := 1; n <= opts.Issues; n++ {
		gh.AddIssue(Owner, Repo, fakegithub.Issue{Number: n, Title: IssueTitle, Body: IssueBody, Author: Owner})
	}
	gh.SetPermission(Owner, Repo, Owner, "admin")
	git := gitserver.New(t, gitserver.Options{Auth: func(user, pass string) bool {
		return user == "x-access-token" && gh.TokenCanAccess(pass, Owner+"/"+Repo)
	}})
	git.CreateRepo(t, Owner, Repo, "master", Files)

	dir := t.TempDir()
	h := &Harness{
		T: t, GitHub: gh, Git: git, LLM: llm,
		DatabaseURL: opts.DatabaseURL,
		WorkDir:     filepath.Join(dir, "work"),
		client:      &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		payloads:    map[string]map[string]any{},
	}
	if h.DatabaseURL == "" {
		h.DatabasePath = filepath.Join(dir, "bot.db")
		h.DatabaseURL = "sqlite://" + h.DatabasePath
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"TMPDIR=" + os.TempDir(),
		"GITHUB_APP_ID=" + strconv.FormatInt(gh.AppID, 10),
		"GITHUB_APP_PRIVATE_KEY=" + string(gh.PrivateKeyPEM()),
		"GITHUB_WEBHOOK_SECRET=" + Secret,
		"GITHUB_API_URL=" + gh.URL,
		"OPENAI_API_KEY=sk-botproc",
		"OPENAI_BASE_URL=" + llm.URL,
		"BOT_MODEL=test-model",
		"BOT_DATABASE_URL=" + h.DatabaseURL,
		"BOT_RUNNER=local",
		"BOT_WORKDIR=" + h.WorkDir,
		"BOT_WORKERS=" + strconv.Itoa(opts.Workers),
		"BOT_LOG_FORMAT=json",
	}
	if opts.ApprovalTimeout > 0 {
		env = append(env, "BOT_APPROVAL_TIMEOUT="+opts.ApprovalTimeout.String())
	}
	if raceEnabled {
		// Report races, keep going, and exit 66 at the end: Stop reads the report.
		env = append(env, "GORACE=halt_on_error=0")
	}
	env = append(env, opts.Env...)
	h.env, h.bin = env, bin
	if opts.Binary != "" {
		bin = opts.Binary
	}
	h.Bot = StartBot(t, bin, env)
	t.Cleanup(h.closeStore)
	return h
}

// AddReplica starts another bot serve on the same database, fakes and
// settings, with a work directory of its own as on another machine. It is
// for databases several replicas can share (Postgres).
func (h *Harness) AddReplica() *Bot {
	h.T.Helper()
	env := slices.Clone(h.env)
	for i, kv := range env {
		if strings.HasPrefix(kv, "BOT_WORKDIR=") {
			env[i] = "BOT_WORKDIR=" + filepath.Join(h.T.TempDir(), "work")
		}
	}
	return StartBot(h.T, h.bin, env)
}

// ---------------------------------------------------------------------------
// Deliveries

// Sign is the X-Hub-Signature-256 value of body under Secret.
func Sign(body []byte) string { return SignWith(Secret, body) }

// SignWith is the X-Hub-Signature-256 value of body under secret.
func SignWith(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Deliver posts a signed delivery to the bot and returns the status code.
func (h *Harness) Deliver(id, event string, body []byte) int {
	h.T.Helper()
	code, err := h.TryDeliver(id, event, body)
	if err != nil {
		h.T.Fatalf("botproc: deliver %s: %v\nbot output:\n%s", id, err, h.Bot.Logs())
	}
	return code
}

// DeliverTo posts a signed delivery to bot b, one of the replicas.
func (h *Harness) DeliverTo(b *Bot, id, event string, body []byte) int {
	h.T.Helper()
	code, err := h.tryDeliver(b, id, event, body)
	if err != nil {
		h.T.Fatalf("botproc: deliver %s: %v\nbot output:\n%s", id, err, b.Logs())
	}
	return code
}

// TryDeliver is Deliver returning the error instead of failing the test;
// safe for concurrent use.
func (h *Harness) TryDeliver(id, event string, body []byte) (int, error) {
	return h.tryDeliver(h.Bot, id, event, body)
}

// TryDeliverTo is DeliverTo returning the error instead of failing the
// test; safe for concurrent use, as from a sender per replica.
func (h *Harness) TryDeliverTo(b *Bot, id, event string, body []byte) (int, error) {
	return h.tryDeliver(b, id, event, body)
}

func (h *Harness) tryDeliver(b *Bot, id, event string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, b.URL()+"/webhook", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", Sign(body))
	req.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// CloseIdleConnections drops this harness's keep-alive connections to the
// bot, so that they hold no goroutine in it.
func (h *Harness) CloseIdleConnections() { h.client.CloseIdleConnections() }

func (h *Harness) testdata(name string) map[string]any {
	h.T.Helper()
	h.storeMu.Lock()
	defer h.storeMu.Unlock()
	p, ok := h.payloads[name]
	if !ok {
		root, err := ModuleRoot()
		if err != nil {
			h.T.Fatalf("botproc: %v", err)
		}
		raw, err := os.ReadFile(filepath.Join(root, "webhook", "testdata", name))
		if err != nil {
			h.T.Fatalf("botproc: %v", err)
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			h.T.Fatalf("botproc: %s: %v", name, err)
		}
		h.payloads[name] = p
	}
	// A deep copy through JSON: callers edit theirs freely.
	raw, _ := json.Marshal(p)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out
}

// CommentPayload is GitHub's real issue_comment.created delivery for a
// comment by user on issue saying body, pointed at this harness's servers.
// The comment is also made on the fake GitHub first, as on GitHub.
func (h *Harness) CommentPayload(issue int, user, body string) []byte {
	h.T.Helper()
	p := h.testdata("issue_comment.created.json")
	c := p["comment"].(map[string]any)
	c["body"] = body
	id := h.GitHub.AddComment(Owner, Repo, issue, user, body)
	c["id"] = id
	// GitHub's clock, as GitHub sends it: the order of a request and its
	// answer is judged on it.
	if made, ok := h.GitHub.Comment(id); ok {
		c["created_at"] = made.CreatedAt.Format(time.RFC3339)
	}
	c["user"].(map[string]any)["login"] = user
	is := p["issue"].(map[string]any)
	is["number"], is["title"], is["body"] = issue, IssueTitle, IssueBody
	s := p["sender"].(map[string]any)
	s["login"] = user
	if user != Owner {
		s["id"] = UserID(user)
	}
	p["installation"].(map[string]any)["id"] = InstallID
	p["repository"].(map[string]any)["clone_url"] = h.Git.CloneURL(Owner, Repo)
	out, err := json.Marshal(p)
	if err != nil {
		h.T.Fatalf("botproc: %v", err)
	}
	return out
}

// Comment delivers a comment by user on issue and returns the status code.
func (h *Harness) Comment(id string, issue int, user, body string) int {
	h.T.Helper()
	return h.Deliver(id, "issue_comment", h.CommentPayload(issue, user, body))
}

// Button delivers a press by user of an approval check run button
// (identifier "approve" or "reject") from GitHub's real requested_action
// payload, for the request externalID on headSHA.
func (h *Harness) Button(id, user, identifier, externalID, headSHA string) int {
	h.T.Helper()
	return h.Deliver(id, "check_run", ButtonPayload(h.T, h.Git.CloneURL(Owner, Repo), user, identifier, externalID, headSHA, ApprovalRunID(h.GitHub, externalID)))
}

// ApprovalRunID is the id of the approval check run the fake GitHub holds
// for request externalID (the newest), or 0: a button press names the
// check run it is on.
func ApprovalRunID(gh *fakegithub.Server, externalID string) int64 {
	var id int64
	for _, cr := range gh.CheckRuns(Owner, Repo) {
		if cr.Name == task.ApprovalCheck && cr.ExternalID == externalID {
			id = cr.ID
		}
	}
	return id
}

// ButtonPayload is GitHub's real check_run requested_action delivery,
// rewritten into a press by user of the approval check run's button
// identifier, for request externalID on headSHA, in the seeded repository
// cloned from cloneURL. The in-process tests of package app use it too.
func ButtonPayload(t testing.TB, cloneURL, user, identifier, externalID, headSHA string, checkRunID int64) []byte {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatalf("botproc: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "webhook", "testdata", "check_run.requested_action.json"))
	if err != nil {
		t.Fatalf("botproc: %v", err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("botproc: %v", err)
	}
	p["installation"].(map[string]any)["id"] = InstallID
	r := p["repository"].(map[string]any)
	r["name"], r["full_name"], r["clone_url"], r["default_branch"] = Repo, Owner+"/"+Repo, cloneURL, "master"
	r["owner"].(map[string]any)["login"] = Owner
	cr := p["check_run"].(map[string]any)
	cr["external_id"], cr["head_sha"], cr["name"], cr["id"] = externalID, headSHA, task.ApprovalCheck, checkRunID
	p["requested_action"].(map[string]any)["identifier"] = identifier
	p["sender"].(map[string]any)["login"] = user
	p["sender"].(map[string]any)["id"] = UserID(user)
	if user == Owner {
		p["sender"].(map[string]any)["id"] = OwnerID
	}
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("botproc: %v", err)
	}
	return body
}

// ---------------------------------------------------------------------------
// The store, read from outside the bot

// Store opens (once) the bot's database through app.OpenStore, for reading
// tasks while the bot runs or after it died.
func (h *Harness) Store() task.Store {
	h.T.Helper()
	h.storeMu.Lock()
	defer h.storeMu.Unlock()
	if h.store == nil {
		s, err := app.OpenStore(context.Background(), h.DatabaseURL)
		if err != nil {
			h.T.Fatalf("botproc: open the bot's store: %v", err)
		}
		h.store = s
	}
	return h.store
}

// queryRow runs query, written with Postgres' $1 for its argument if any, on
// the bot's database, for the columns task.Store does not show (leases,
// crashes). Both stores name those columns alike.
func (h *Harness) queryRow(query string, arg ...any) *sql.Row {
	h.T.Helper()
	h.storeMu.Lock()
	defer h.storeMu.Unlock()
	if h.db == nil {
		var err error
		if h.DatabasePath != "" {
			h.db, err = sql.Open("sqlite", "file:"+h.DatabasePath+"?_pragma=busy_timeout(10000)")
		} else {
			h.db, err = sql.Open("pgx", h.DatabaseURL)
		}
		if err != nil {
			h.T.Fatalf("botproc: open the bot's database: %v", err)
		}
	}
	if h.DatabasePath != "" {
		query = strings.ReplaceAll(query, "$1", "?")
	}
	return h.db.QueryRow(query, arg...)
}

func (h *Harness) closeStore() {
	h.storeMu.Lock()
	defer h.storeMu.Unlock()
	if h.store != nil {
		h.store.Close()
	}
	if h.db != nil {
		h.db.Close()
	}
}

// IssueKey is the store's key of an issue of the seeded repository.
func IssueKey(issue int) string {
	return (&task.Task{Repo: pullwright.Repo{InstallationID: InstallID, Owner: Owner, Name: Repo}, Issue: issue}).IssueKey()
}

// Latest is the issue's latest fix task, or nil.
func (h *Harness) Latest(issue int) *task.Task {
	h.T.Helper()
	tk, err := h.Store().Latest(context.Background(), IssueKey(issue))
	if errors.Is(err, task.ErrNotFound) {
		return nil
	}
	if err != nil {
		h.T.Fatalf("botproc: %v", err)
	}
	return tk
}

// Parked counts fix tasks awaiting approval with no worker holding them:
// a row and nothing else.
func (h *Harness) Parked() int {
	h.T.Helper()
	var n int
	err := h.queryRow(`SELECT count(*) FROM tasks WHERE kind = 'fix' AND state = 'awaiting_approval' AND lease_owner = ''`).Scan(&n)
	if err != nil {
		h.T.Fatalf("botproc: count parked tasks: %v", err)
	}
	return n
}

// Leased reports whether a worker holds the task's lease.
func (h *Harness) Leased(id int64) bool {
	h.T.Helper()
	var owner string
	if err := h.queryRow(`SELECT lease_owner FROM tasks WHERE id = $1`, id).Scan(&owner); err != nil {
		h.T.Fatalf("botproc: lease of task %d: %v", id, err)
	}
	return owner != ""
}

// LeaseOwner is the worker holding the task's lease, or "".
func (h *Harness) LeaseOwner(id int64) string {
	h.T.Helper()
	var owner string
	if err := h.queryRow(`SELECT lease_owner FROM tasks WHERE id = $1`, id).Scan(&owner); err != nil {
		h.T.Fatalf("botproc: lease of task %d: %v", id, err)
	}
	return owner
}

// Holds reports whether a process of b (any since its first start) is the
// worker owner names: every lease owner starts with the id its pool logs
// at "workers started".
func (b *Bot) Holds(owner string) bool {
	if owner == "" {
		return false
	}
	for line := range strings.Lines(b.Logs()) {
		var l struct {
			Msg  string `json:"msg"`
			Pool string `json:"pool"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "workers started" && l.Pool != "" && strings.HasPrefix(owner, l.Pool+"-") {
			return true
		}
	}
	return false
}

// Crashes is how often the task was claimed after its worker vanished (the
// store's crashes column; task.Store's readers leave Task.Crashes zero).
func (h *Harness) Crashes(id int64) int {
	h.T.Helper()
	var n int
	if err := h.queryRow(`SELECT crashes FROM tasks WHERE id = $1`, id).Scan(&n); err != nil {
		h.T.Fatalf("botproc: crashes of task %d: %v", id, err)
	}
	return n
}

// ---------------------------------------------------------------------------
// Waiting and the fake GitHub

// Eventually polls cond every 20 ms until it holds, failing the test with
// what() and the bot's output after d.
func (h *Harness) Eventually(d time.Duration, cond func() bool, what func() string) {
	h.T.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			h.T.Fatalf("botproc: gave up after %s: %s\nbot output:\n%s", d, what(), h.Bot.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitState waits until the issue's latest fix task is in state s (and, for
// AwaitingApproval, no worker holds it any more).
func (h *Harness) WaitState(issue int, s task.State) *task.Task {
	h.T.Helper()
	var tk *task.Task
	h.Eventually(60*time.Second, func() bool {
		tk = h.Latest(issue)
		if tk != nil && tk.State.Terminal() && !s.Terminal() {
			h.T.Fatalf("botproc: task ended %s (%s) while waiting for %s\n%s", tk.State, tk.Error, s, h.Bot.Logs())
		}
		return tk != nil && tk.State == s && (s != task.AwaitingApproval || !h.Leased(tk.ID))
	}, func() string { return fmt.Sprintf("task on #%d never reached %s: %s", issue, s, Describe(tk)) })
	return tk
}

// Describe is a task in a line, for failure messages.
func Describe(t *task.Task) string {
	if t == nil {
		return "no task"
	}
	s := fmt.Sprintf("task %d %s %s (error %q, attempts %d", t.ID, t.Kind, t.State, t.Error, t.Attempts)
	j, ok := t.Job()
	if !ok {
		return s + ")"
	}
	s += fmt.Sprintf(", turns %d)", j.Turns)
	if r := j.Request; r != nil {
		s += fmt.Sprintf(" request %s %q asked %v answer %+v", r.ID, r.Command, r.Asked, r.Answer)
	}
	return s
}

var markerRE = regexp.MustCompile(`<!-- pullwright:([^ ]+) -->`)

// BotComments maps each hidden marker ("task-3-status") of the bot's
// comments on issue (or pull request) number to how many comments carry it.
// Comments by the bot without a marker count under "".
func (h *Harness) BotComments(number int) map[string]int {
	out := map[string]int{}
	for _, c := range h.GitHub.Comments(Owner, Repo, number) {
		if c.Author != h.GitHub.BotLogin() {
			continue
		}
		m := markerRE.FindStringSubmatch(c.Body)
		if m == nil {
			out[""]++
			continue
		}
		out[m[1]]++
	}
	return out
}

// CheckRuns are the fake's check runs named name.
func (h *Harness) CheckRuns(name string) []fakegithub.CheckRun {
	var out []fakegithub.CheckRun
	for _, cr := range h.GitHub.CheckRuns(Owner, Repo) {
		if cr.Name == name {
			out = append(out, cr)
		}
	}
	return out
}

// Posts counts the requests the fake GitHub answered with a 2xx for method
// and a path matching re: creations, when method is POST.
func (h *Harness) Posts(method string, re *regexp.Regexp) int {
	n := 0
	for _, r := range h.GitHub.Requests() {
		if r.Method == method && re.MatchString(r.Path) && r.Status/100 == 2 {
			n++
		}
	}
	return n
}

// OwnerID is the repository owner's user id in the recorded deliveries.
const OwnerID = 21031067

// UserID is the GitHub user id the test deliveries give login: the same
// for a login in every delivery, and different for different logins, as
// the bot compares people by id.
func UserID(login string) int64 {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(login)))
	return 1000 + int64(h.Sum32())
}
