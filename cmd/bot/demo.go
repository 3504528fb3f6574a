package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/console"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/sqlite"
)

// runDemo is `bot demo`: the console over a few recorded tasks, with no
// GitHub App and no model. Its store is a SQLite file of its own in a
// temporary directory, removed at the end: it reads no BOT_DATABASE_URL
// and can never touch a deployment's database. Whoever reaches it is let
// in, so it listens on loopback only.
func runDemo(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := demoFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loopbackOnly(*addr); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	// "localhost" is a name: what it resolved to is what was bound.
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return fmt.Errorf("--addr %q: it resolved to %s, which is not loopback; the demo lets in whoever reaches it", *addr, ln.Addr())
	}
	return demo(ctx, ln, slog.New(slog.NewTextHandler(stderr, nil)))
}

// demoFlags are bot demo's flags.
func demoFlags(fs *flag.FlagSet) (addr *string) {
	return fs.String("addr", "127.0.0.1:8080", "loopback address to listen on (the demo lets everyone who reaches it in)")
}

// loopbackOnly refuses an address other than this machine's loopback.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("--addr %q: the demo lets in whoever reaches it, so it listens on loopback only (127.0.0.1:PORT); to show it to another machine, forward the port (ssh -L)", addr)
}

// demo serves the demo console on ln until ctx ends.
func demo(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	defer ln.Close()
	dir, err := os.MkdirTemp("", "pullwright-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "demo.db"))
	if err != nil {
		return fmt.Errorf("demo: open its store: %w", err)
	}
	defer store.Close()
	if err := seedDemo(ctx, store, time.Now().UTC()); err != nil {
		return fmt.Errorf("demo: record its tasks: %w", err)
	}
	pub := "http://" + ln.Addr().String()
	con, err := console.New(console.Config{
		Demo: true, Store: store, APIURL: "https://api.github.com", PublicURL: pub,
		Logger: log.With("component", "console"),
	})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	mux := http.NewServeMux()
	h := con.Handler()
	mux.Handle("/console/", h)
	mux.Handle("/api/", h)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("demo console: recorded tasks, no GitHub App, no model; answers are not sent", "url", pub+"/console/")
	select {
	case err := <-served:
		return fmt.Errorf("demo: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// demoRepo is the repository the demo's tasks are of.
var demoRepo = pullwright.Repo{InstallationID: 1, Owner: "acme", Name: "widgets"}

// seedDemo records the demo's tasks, as the bot would have left them: one
// done with its pull request and the runs that verify it, one failed,
// and one waiting for approval of a command on a fork's code with
// changed manifests.
func seedDemo(ctx context.Context, store *sqlite.Store, now time.Time) error {
	sha := func(c byte) string { return strings.Repeat(string(c), 40) }
	at := func(ago time.Duration) time.Time { return now.Add(-ago) }

	done := &task.Task{Kind: task.KindFix, State: task.Done, Repo: demoRepo, Issue: 41,
		IssueTitle: "Parsing a widget with an empty name panics", Requester: task.Person{Login: "maria"},
		Instructions: "fix the panic on an empty name and add a test", CreatedAt: at(3 * time.Hour), RunAfter: at(3 * time.Hour)}
	dj, _ := done.Job()
	dj.Branch, dj.PRURL, dj.HeadSHA, dj.Final = "pullwright/41-empty-name", "https://github.com/acme/widgets/pull/44", sha('c'), true
	dj.Turns, dj.Tokens = 9, 48210
	dj.Plan = []pullwright.PlanItem{
		{Title: "Reproduce the panic with a test", Status: "done"},
		{Title: "Return an error for an empty name", Status: "done"},
		{Title: "Run the package's tests", Status: "done"},
	}
	dj.Steps = []string{"read widget/parse.go", "edited widget/parse.go", "edited widget/parse_test.go", "ran go test ./widget/...", "opened pull request #44"}
	dj.Runs = []task.RunRecord{
		{RequestID: "2-1", Command: "go test ./widget/...", Reason: "check that the new test fails before the fix", SHA: sha('b'), AskedAt: at(170 * time.Minute),
			Verdict: task.Approved, By: "maria", Outcome: task.OutcomeFailed, ExitCode: 1, Duration: 3236 * time.Millisecond,
			Output: "--- FAIL: TestParseEmptyName (0.00s)\npanic: runtime error: index out of range [0] with length 0\nFAIL\tgithub.com/acme/widgets/widget\t0.412s"},
		{RequestID: "2-2", Command: "go test ./widget/...", Reason: "the fix is in: the tests should pass", SHA: sha('c'), AskedAt: at(160 * time.Minute),
			Verdict: task.Approved, Auto: "go test ./...", Outcome: task.OutcomePassed, Duration: 2871 * time.Millisecond,
			Output: "ok  \tgithub.com/acme/widgets/widget\t0.398s"},
	}

	failed := &task.Task{Kind: task.KindFix, State: task.Failed, Repo: demoRepo, Issue: 38,
		IssueTitle: "Upgrade the protobuf code generator", Requester: task.Person{Login: "li"},
		Instructions: "regenerate the protobuf code with the new generator", CreatedAt: at(26 * time.Hour), RunAfter: at(26 * time.Hour)}
	fj, _ := failed.Job()
	fj.Turns, fj.Tokens = 4, 15630
	failed.Error = "the run of `make generate` was rejected by @li: the generator must come from the pinned tools module"
	fj.Runs = []task.RunRecord{{RequestID: "1-1", Command: "make generate", Reason: "regenerate the code", SHA: sha('d'), AskedAt: at(25 * time.Hour),
		Verdict: task.Rejected, By: "li", Why: "the generator must come from the pinned tools module", Outcome: task.OutcomeRejected}}

	waiting := &task.Task{Kind: task.KindFix, State: task.AwaitingApproval, Repo: demoRepo, Issue: 52, IsPR: true,
		IssueTitle: "Add a --json flag to widgetctl list", Requester: task.Person{Login: "maria"},
		Instructions: "make the flaky TestListJSON pass", CreatedAt: at(12 * time.Minute), RunAfter: at(12 * time.Minute)}
	wj, _ := waiting.Job()
	wj.Branch, wj.HeadSHA, wj.Turns, wj.Tokens = "contributor/json-flag", sha('e'), 5, 21877
	wj.Plan = []pullwright.PlanItem{
		{Title: "Find why TestListJSON fails", Status: "done"},
		{Title: "Sort the widgets before encoding", Status: "done"},
		{Title: "Run the command's tests", Status: "in_progress"},
	}
	wj.Steps = []string{"read cmd/widgetctl/list.go", "edited cmd/widgetctl/list.go", "edited go.mod"}
	return recordDemo(ctx, store, now, done, failed, waiting, func(id int64) *task.ExecRequest {
		rq := &task.ExecRequest{ID: fmt.Sprintf("%d-1", id), Command: "go test ./cmd/widgetctl/...",
			Reason: "check that the sorted output makes TestListJSON pass", SHA: sha('e'), AskedAt: at(2 * time.Minute),
			Deadline: at(2 * time.Minute).Add(24 * time.Hour), Asked: true, CheckRunID: 9001}
		shown := approval.Seal(approval.Request{ID: rq.ID, Command: rq.Command, Reason: rq.Reason, Commit: rq.SHA, Branch: wj.Branch,
			Files: []pullwright.FileStat{{Path: "cmd/widgetctl/list.go", Added: 6, Deleted: 1}, {Path: "go.mod", Added: 1}, {Path: "go.sum", Added: 2}},
			Where: approval.Where{Sandbox: true, Image: "golang:1.26"},
			Fork:  &approval.Fork{Pull: 52, HeadRepo: "contributor/widgets", Author: "contributor"},
			Setup: &approval.Setup{Base: "main", Manifests: []pullwright.FileStat{{Path: "go.mod", Added: 1}, {Path: "go.sum", Added: 2}},
				Diff: "--- a/go.mod\n+++ b/go.mod\n@@ -5,3 +5,4 @@ require (\n \tgithub.com/spf13/cobra v1.9.1\n+\tgolang.org/x/exp v0.0.0-20250620022241-b7579e27df2b\n )\n"},
		})
		rq.Shown = &shown
		return rq
	})
}

// recordDemo records the tasks, the last with the request ask makes for
// its id (a request names its task).
func recordDemo(ctx context.Context, store *sqlite.Store, now time.Time, done, failed, waiting *task.Task, ask func(int64) *task.ExecRequest) error {
	for i, t := range []*task.Task{failed, done, waiting} {
		d := task.Delivery{ID: fmt.Sprintf("demo-%d", i+1), Event: "issue_comment", Action: "created", ReceivedAt: t.CreatedAt}
		if err := store.Record(ctx, d, t); err != nil {
			return err
		}
	}
	// The request is asked once the task has its id: saved as a worker
	// saves it, under a lease of the demo's own.
	const owner = "demo"
	t, err := store.Claim(ctx, owner, time.Minute)
	if err != nil {
		return fmt.Errorf("claim the waiting task: %w", err)
	}
	if t.ID != waiting.ID {
		return fmt.Errorf("claimed task %d, not the waiting task %d", t.ID, waiting.ID)
	}
	j, ok := t.Job()
	if !ok {
		return fmt.Errorf("claimed task %d is a %s, not a fix", t.ID, t.Kind)
	}
	j.Request = ask(t.ID)
	t.RunAfter = now.Add(24 * time.Hour)
	if err := store.Save(ctx, t, owner); err != nil {
		return err
	}
	return store.Release(ctx, t.ID, owner)
}
