package main_test

// Upgrade tests: an earlier release, built from this repository's history,
// parks a task on a database; the operator stops it and starts the binary
// of this tree on the same database; the maintainer's answer, by comment
// or by the check run's button, runs the command and the task finishes.

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/pgtest"
	"github.com/pullwright/pullwright/internal/prereq"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// release is an earlier release a database may come from.
type release struct {
	name, commit string
	// undated is true for a release from before the clock rule: its
	// requests have no GitHub time (shown_at), which the upgrade reads
	// back from GitHub.
	undated bool
	// postgres is true when the release can run on Postgres.
	postgres bool
}

var releases = []release{
	{name: "before-the-clock-rule", commit: "5011ac2", undated: true},
	{name: "issue-29", commit: "5abe228", postgres: true},
	// The last release whose Task embedded a fix's Work: this one reads
	// it through Task.Job.
	{name: "before-job", commit: "cc0763d", postgres: true},
}

func TestUpgradeCarriesAWaitingTaskOn(t *testing.T) {
	for _, rel := range releases {
		t.Run(rel.name, func(t *testing.T) {
			old := previousRelease(t, rel.commit)
			databases := []string{"sqlite"}
			if rel.postgres {
				databases = append(databases, "postgres")
			}
			for _, db := range databases {
				for _, by := range []string{"comment", "button"} {
					t.Run(db+"/"+by, func(t *testing.T) {
						url := ""
						if db == "postgres" {
							url = pgtest.URL(t)
						}
						upgradeAndApprove(t, rel, old, url, by)
					})
				}
			}
		})
	}
}

var commentRead = regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/comments/\d+$`)

func upgradeAndApprove(t *testing.T, rel release, old, databaseURL, by string) {
	const command = "grep -c commit README.md"
	steps := []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": command, "reason": "check that the typo is gone"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit in the README", "summary": "Fixed and checked."})}},
	}
	llm := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		return steps[min(fakellm.Turn(req), len(steps)-1)]
	})
	h := startKillTest(t, llm, botproc.Options{DatabaseURL: databaseURL, Binary: old}, "/agent fix the typo")
	h.GitHub.SetPermission(botproc.Owner, botproc.Repo, "maintainer", "write")

	// Parked by the old release. Read with SQL alone: this tree's store
	// would migrate the database before the new binary does.
	h.Eventually(60*time.Second, func() bool { return h.Parked() == 1 }, func() string { return "the old release never parked the task" })
	ac := h.CheckRuns(task.ApprovalCheck)
	if len(ac) != 1 || ac[0].Conclusion != "action_required" || ac[0].ExternalID == "" {
		t.Fatalf("approval check runs of the old release = %+v", ac)
	}
	requestID, sha := ac[0].ExternalID, ac[0].HeadSHA
	if undated := !shownAtStored(t, h); undated != rel.undated {
		t.Fatalf("the old release's request has no GitHub time: %v, want %v", undated, rel.undated)
	}
	h.Bot.Stop()

	cur, err := botproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	h.Bot.Upgrade(cur)
	if st := h.Latest(1); st == nil || st.State != task.AwaitingApproval || tasktest.Job(st).Request == nil || tasktest.Job(st).Request.ID != requestID {
		t.Fatalf("after the upgrade the store holds %s", botproc.Describe(st))
	}

	reads := h.Posts(http.MethodGet, commentRead)
	switch by {
	case "comment":
		if code := h.Comment("approve-1", 1, "maintainer", "/approve"); code != http.StatusAccepted {
			t.Fatalf("/approve answered %d", code)
		}
	case "button":
		if code := h.Button("approve-1", "maintainer", "approve", requestID, sha); code != http.StatusAccepted {
			t.Fatalf("the button answered %d", code)
		}
	}
	done := h.WaitState(1, task.Done)
	if r := tasktest.Job(done).Request; r == nil || r.ID != requestID || r.Answer == nil || r.Answer.Verdict != task.Approved || r.Answer.By != "maintainer" {
		t.Fatalf("done: %s", botproc.Describe(done))
	}
	runs := h.CheckRuns(task.RunCheck)
	if len(runs) != 1 || runs[0].Conclusion != "success" || runs[0].HeadSHA != sha {
		t.Fatalf("run check runs = %+v", runs)
	}
	if ac := h.CheckRuns(task.ApprovalCheck); len(ac) != 1 || ac[0].Conclusion != "success" {
		t.Fatalf("approval check runs = %+v", ac)
	}
	if n := llm.Calls(); n != 3 {
		t.Errorf("the model was called %d times, want 3 (edit, run, finish)", n)
	}
	// Only an undated request answered by comment is read back from GitHub.
	want := 0
	if rel.undated && by == "comment" {
		want = 2 // the request's comment on the issue and on the pull request
	}
	if n := h.Posts(http.MethodGet, commentRead) - reads; n != want {
		t.Errorf("the bot read %d comments back from GitHub, want %d", n, want)
	}
	if by == "comment" && tasktest.Job(done).Request.ShownAt.IsZero() {
		t.Errorf("the request still has no GitHub time")
	}
	for _, c := range h.GitHub.Comments(botproc.Owner, botproc.Repo, 1) {
		if strings.Contains(c.Body, "is not known") {
			t.Errorf("the bot refused the answer: %q", c.Body)
		}
	}
}

// shownAtStored reports whether the waiting fix task's request, as the
// database holds it, has GitHub's time (shown_at): read with SQL, as the
// old release wrote it.
func shownAtStored(t *testing.T, h *botproc.Harness) bool {
	t.Helper()
	driver, dsn, query := "pgx", h.DatabaseURL, `SELECT data->'request'->'shown_at' IS NOT NULL FROM tasks WHERE kind = 'fix' AND state = 'awaiting_approval'`
	if h.DatabasePath != "" {
		driver, dsn, query = "sqlite", "file:"+h.DatabasePath+"?_pragma=busy_timeout(10000)",
			`SELECT json_extract(data, '$.request.shown_at') IS NOT NULL FROM tasks WHERE kind = 'fix' AND state = 'awaiting_approval'`
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored bool
	if err := db.QueryRow(query).Scan(&stored); err != nil {
		t.Fatalf("read the waiting request: %v", err)
	}
	return stored
}

// ---------------------------------------------------------------------------
// Building an earlier release

var builds sync.Map // full commit → *releaseBuild

type releaseBuild struct {
	once sync.Once
	path string
	err  error
}

// previousRelease is the bot binary built from commit of this repository's
// history, cached under the user's cache directory by commit. Without the
// commit (a shallow clone) the test fails under CI=true, which runs from a
// clone with history, and is skipped elsewhere.
func previousRelease(t *testing.T, commit string) string {
	t.Helper()
	root, err := botproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", commit+"^{commit}").Output()
	if err != nil {
		prereq.Missing(t, "git history", fmt.Sprintf("commit %s is not in this clone's history (a shallow clone? git fetch --unshallow): %v", commit, err))
	}
	full := strings.TrimSpace(string(out))
	v, _ := builds.LoadOrStore(full, &releaseBuild{})
	b := v.(*releaseBuild)
	b.once.Do(func() { b.path, b.err = buildRelease(root, full) })
	if b.err != nil {
		t.Fatalf("build the release of %s: %v", commit, b.err)
	}
	return b.path
}

// buildRelease builds ./cmd/bot of commit into the cache, unless it is
// there already: the tree comes out with git archive into a directory of
// its own, and the binary is renamed into place once whole.
func buildRelease(root, commit string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("user cache dir: %w", err)
	}
	dir := filepath.Join(cache, "pullwright", "releases", commit)
	bin := filepath.Join(dir, "bot")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src, err := os.MkdirTemp("", "pullwright-release-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	var archiveErr, untarErr strings.Builder
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		return "", fmt.Errorf("tar: %w", err)
	}
	if err := archive.Run(); err != nil {
		untar.Wait()
		return "", fmt.Errorf("git archive %s: %w: %s", commit, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("tar: %w: %s", err, untarErr.String())
	}
	tmp, err := os.CreateTemp(dir, "bot-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	build := exec.Command("go", "build", "-o", tmp.Name(), "./cmd/bot")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/bot at %s: %w\n%s", commit, err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}
