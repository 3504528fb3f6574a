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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/console"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/repo"
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

// seedDemo records the demo's tasks, as the real flow would have left
// them for a repository that sets nothing (the default branch prefix,
// the agent's own step lines): one done with its pull request and the
// runs that verify it; one done after its maintainer rejected a command,
// which the agent was told and went on without, as the README says; one
// failed, with the plan and steps that led there; and one waiting for
// approval of a command on a fork's code with changed manifests.
func seedDemo(ctx context.Context, store *sqlite.Store, now time.Time) error {
	sha := func(c byte) string { return strings.Repeat(string(c), 40) }
	at := func(ago time.Duration) time.Time { return now.Add(-ago) }
	// The bot's branches are named as the real flow names them for a
	// repository with no settings: policy's default prefix, and the
	// issue's number and title (repo.BranchName, which app wires in).
	settings, err := policy.DefaultOperator().Resolve(nil)
	if err != nil {
		return fmt.Errorf("the default settings: %w", err)
	}
	branch := func(issue int, title string) string { return repo.BranchName(settings.BranchPrefix, issue, title) }
	// The tasks are recorded in this order, so that the first is task 1:
	// a request's id is its task's id, a dash and a number.
	const wentOnID, doneID, failedID = 1, 2, 3

	wentOn := &task.Task{Kind: task.KindFix, State: task.Done, Repo: demoRepo, Issue: 38,
		IssueTitle: "Upgrade the protobuf code generator", Requester: task.Person{Login: "li"},
		Instructions: "regenerate the protobuf code with the new generator", CreatedAt: at(26 * time.Hour), RunAfter: at(26 * time.Hour)}
	gj, _ := wentOn.Job()
	gj.Branch, gj.PRURL, gj.HeadSHA, gj.Final = branch(wentOn.Issue, wentOn.IssueTitle), "https://github.com/acme/widgets/pull/45", sha('f'), true
	gj.Turns, gj.Tokens = 11, 38940
	gj.Plan = []pullwright.PlanItem{
		{Title: "Pin the new protoc-gen-go in tools/go.mod", Status: pullwright.PlanDone},
		{Title: "Make `make generate` run the pinned generator", Status: pullwright.PlanDone},
		{Title: "Run the tests", Status: pullwright.PlanDone},
		{Title: "Regenerate the code (`make generate` was rejected: left to a maintainer)", Status: pullwright.PlanPending},
	}
	// The rejection is the run request's tool result (agent.Rejected):
	// the agent read why, did not ask for the command again, and went on.
	gj.Steps = []string{
		"read Makefile", "read tools/go.mod", "updated the plan (0/3 done)",
		"asked to run `make generate`",
		"read tools/tools.go", "edited tools/go.mod", "edited Makefile", "updated the plan (2/4 done)",
		"asked to run `go test ./...`", "updated the plan (3/4 done)",
		"finished: Pin the new protoc-gen-go in tools/go.mod and run it from `make generate`",
	}
	gj.Runs = []task.RunRecord{
		{RequestID: req(wentOnID, 1), Command: "make generate", Reason: "regenerate the code", SHA: sha('d'), AskedAt: at(25 * time.Hour),
			Verdict: task.Rejected, By: "li", Why: "the generator must come from the pinned tools module", Outcome: task.OutcomeRejected},
		{RequestID: req(wentOnID, 2), Command: "go test ./...", Reason: "the Makefile and the tools module changed: the tests should still pass", SHA: sha('f'), AskedAt: at(24 * time.Hour),
			Verdict: task.Approved, Auto: "go test ./...", Outcome: task.OutcomePassed, Duration: 8412 * time.Millisecond,
			Output: "ok  \tgithub.com/acme/widgets/widget\t0.398s\nok  \tgithub.com/acme/widgets/cmd/widgetctl\t0.512s"},
	}

	done := &task.Task{Kind: task.KindFix, State: task.Done, Repo: demoRepo, Issue: 41,
		IssueTitle: "Parsing a widget with an empty name panics", Requester: task.Person{Login: "maria"},
		Instructions: "fix the panic on an empty name and add a test", CreatedAt: at(3 * time.Hour), RunAfter: at(3 * time.Hour)}
	dj, _ := done.Job()
	dj.Branch, dj.PRURL, dj.HeadSHA, dj.Final = branch(done.Issue, done.IssueTitle), "https://github.com/acme/widgets/pull/44", sha('c'), true
	dj.Turns, dj.Tokens = 9, 48210
	dj.Plan = []pullwright.PlanItem{
		{Title: "Reproduce the panic with a test", Status: pullwright.PlanDone},
		{Title: "Return an error for an empty name", Status: pullwright.PlanDone},
		{Title: "Run the package's tests", Status: pullwright.PlanDone},
	}
	dj.Steps = []string{
		"read widget/parse.go", "updated the plan (0/3 done)", "edited widget/parse_test.go",
		"asked to run `go test ./widget/...`", "edited widget/parse.go", "updated the plan (2/3 done)",
		"asked to run `go test ./widget/...`", "updated the plan (3/3 done)",
		"finished: Return an error for a widget with an empty name",
	}
	dj.Runs = []task.RunRecord{
		{RequestID: req(doneID, 1), Command: "go test ./widget/...", Reason: "check that the new test fails before the fix", SHA: sha('b'), AskedAt: at(170 * time.Minute),
			Verdict: task.Approved, By: "maria", Outcome: task.OutcomeFailed, ExitCode: 1, Duration: 3236 * time.Millisecond,
			Output: "--- FAIL: TestParseEmptyName (0.00s)\npanic: runtime error: index out of range [0] with length 0\nFAIL\tgithub.com/acme/widgets/widget\t0.412s"},
		{RequestID: req(doneID, 2), Command: "go test ./widget/...", Reason: "the fix is in: the tests should pass", SHA: sha('c'), AskedAt: at(160 * time.Minute),
			Verdict: task.Approved, Auto: "go test ./...", Outcome: task.OutcomePassed, Duration: 2871 * time.Millisecond,
			Output: "ok  \tgithub.com/acme/widgets/widget\t0.398s"},
	}

	// A task fails when there is nothing to propose: the agent found the
	// issue already fixed and changed no file.
	failed := &task.Task{Kind: task.KindFix, State: task.Failed, Repo: demoRepo, Issue: 35,
		IssueTitle: "widgetctl ignores WIDGET_CONFIG", Requester: task.Person{Login: "maria"},
		Instructions: "make widgetctl read its config file from WIDGET_CONFIG", CreatedAt: at(50 * time.Hour), RunAfter: at(50 * time.Hour)}
	fj, _ := failed.Job()
	fj.Branch, fj.Turns, fj.Tokens = branch(failed.Issue, failed.IssueTitle), 6, 17240
	failed.Error = "the agent finished without changing any file, so there is nothing to propose"
	fj.Plan = []pullwright.PlanItem{
		{Title: "Find where widgetctl reads its config", Status: pullwright.PlanDone},
		{Title: "Reproduce the issue with a test", Status: pullwright.PlanDone},
	}
	fj.Steps = []string{
		"grep `WIDGET_CONFIG` (3 matches)", "read cmd/widgetctl/config.go", "read cmd/widgetctl/config_test.go", "updated the plan (1/2 done)",
		"asked to run `go test -run TestConfigFromEnv ./cmd/widgetctl/`", "updated the plan (2/2 done)",
		"finished: WIDGET_CONFIG is read already (since v1.4); nothing to change",
	}
	fj.Runs = []task.RunRecord{{RequestID: req(failedID, 1), Command: "go test -run TestConfigFromEnv ./cmd/widgetctl/", Reason: "see whether WIDGET_CONFIG is read on main",
		SHA: sha('a'), AskedAt: at(49 * time.Hour), Verdict: task.Approved, By: "maria", Outcome: task.OutcomePassed, Duration: 1904 * time.Millisecond,
		Output: "ok  \tgithub.com/acme/widgets/cmd/widgetctl\t0.211s"}}

	waiting := &task.Task{Kind: task.KindFix, State: task.AwaitingApproval, Repo: demoRepo, Issue: 52, IsPR: true,
		IssueTitle: "Add a --json flag to widgetctl list", Requester: task.Person{Login: "maria"},
		Instructions: "make the flaky TestListJSON pass", CreatedAt: at(12 * time.Minute), RunAfter: at(12 * time.Minute)}
	wj, _ := waiting.Job()
	wj.Branch, wj.HeadSHA, wj.Turns, wj.Tokens = "contributor/json-flag", sha('e'), 5, 21877
	wj.Plan = []pullwright.PlanItem{
		{Title: "Find why TestListJSON fails", Status: pullwright.PlanDone},
		{Title: "Sort the widgets before encoding", Status: pullwright.PlanDone},
		{Title: "Run the command's tests", Status: pullwright.PlanInProgress},
	}
	wj.Steps = []string{"read cmd/widgetctl/list.go", "updated the plan (1/3 done)", "edited cmd/widgetctl/list.go", "edited go.mod", "edited go.sum",
		"updated the plan (2/3 done)", "asked to run `go test ./cmd/widgetctl/...`"}
	return recordDemo(ctx, store, now, []*task.Task{wentOn, done, failed}, waiting, func(id int64) *task.ExecRequest {
		rq := &task.ExecRequest{ID: req(id, 1), Command: "go test ./cmd/widgetctl/...",
			Reason: "check that the sorted output makes TestListJSON pass", SHA: sha('e'), AskedAt: at(2 * time.Minute),
			Deadline: at(2 * time.Minute).Add(24 * time.Hour), Asked: true, CheckRunID: 9001}
		// The diff has a part for each manifest the request names, as
		// the real flow's (repo's DiffOf of those paths) has.
		shown := approval.Seal(approval.Request{ID: rq.ID, Command: rq.Command, Reason: rq.Reason, Commit: rq.SHA, Branch: wj.Branch,
			Files: []pullwright.FileStat{{Path: "cmd/widgetctl/list.go", Added: 6, Deleted: 1}, {Path: "go.mod", Added: 1}, {Path: "go.sum", Added: 2}},
			Where: approval.Where{Sandbox: true, Image: "golang:1.26"},
			Fork:  &approval.Fork{Pull: 52, HeadRepo: "contributor/widgets", Author: "contributor"},
			Setup: &approval.Setup{Base: "main", Manifests: []pullwright.FileStat{{Path: "go.mod", Added: 1}, {Path: "go.sum", Added: 2}},
				Diff: demoManifestsDiff},
		})
		rq.Shown = &shown
		return rq
	})
}

// demoManifestsDiff is the waiting request's diff of its manifests, in
// the form the real flow's has (go-git's unified encoder).
const demoManifestsDiff = `diff --git a/go.mod b/go.mod
index 3b1f2c4..9a7e5d0 100644
--- a/go.mod
+++ b/go.mod
@@ -6,2 +6,3 @@ require (
 	github.com/spf13/cobra v1.9.1
+	golang.org/x/exp v0.0.0-20250620022241-b7579e27df2b
 )
diff --git a/go.sum b/go.sum
index 5c0e8f1..e2d4a93 100644
--- a/go.sum
+++ b/go.sum
@@ -12,3 +12,5 @@ github.com/spf13/pflag v1.0.6 h1:jFzHGLGAlb3ruxLB8MhbI6A8+AQX/2eW4qeyNZXNp2o=
 github.com/spf13/pflag v1.0.6/go.mod h1:McXfInJRrz4CZXVZOBLb0bTZqETkiAhM9Iw0y3An2Bg=
+golang.org/x/exp v0.0.0-20250620022241-b7579e27df2b h1:M2rDM6z3Fhozi9O7NWsxAkg/yqS/lQJ6PmkyIV3YP+o=
+golang.org/x/exp v0.0.0-20250620022241-b7579e27df2b/go.mod h1:4ApMBpMDTvpUyTSMIfw4jMBfPnlLE8gvsStw3O4jgRA=
 gopkg.in/yaml.v3 v3.0.1 h1:fxVm/GzAzEWjGZkl3rCMR7MAovEMpiC1fmNVJ5cb9Ag=
`

// req is the id of request n of task id.
func req(id int64, n int) string { return fmt.Sprintf("%d-%d", id, n) }

// recordDemo records the ended tasks in their order, then the waiting
// one, with the request ask makes for its id (a request names its task).
func recordDemo(ctx context.Context, store *sqlite.Store, now time.Time, ended []*task.Task, waiting *task.Task, ask func(int64) *task.ExecRequest) error {
	for i, t := range append(slices.Clone(ended), waiting) {
		d := task.Delivery{ID: fmt.Sprintf("demo-%d", i+1), Event: "issue_comment", Action: "created", ReceivedAt: t.CreatedAt}
		if err := store.Record(ctx, d, t); err != nil {
			return err
		}
		// Their runs' request ids were written for these task ids.
		if j, ok := t.Job(); ok && t != waiting {
			for _, r := range j.Runs {
				if !strings.HasPrefix(r.RequestID, fmt.Sprintf("%d-", t.ID)) {
					return fmt.Errorf("task %d has a run of request %s, which names another task", t.ID, r.RequestID)
				}
			}
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
