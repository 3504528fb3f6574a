package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/pgtest"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// onPostgres runs the bot on a Postgres database of the test's own
// (internal/pgtest: skipped without PULLWRIGHT_TEST_POSTGRES, failed with
// CI=true).
func onPostgres(t *testing.T) envOption {
	url := pgtest.URL(t)
	return func(c *app.Config) { c.DatabaseURL = url }
}

// A fix served end to end with its tasks in Postgres; then /readyz tells
// the load balancer when the database is gone.
func TestFixOnPostgres(t *testing.T) {
	e := newEnv(t, fakellm.New(t, fixScript()...), onPostgres(t))
	if code := e.deliver("d1", "issue_comment", e.payload("/agent fix the spelling of commit in the README", nil)); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d, want 202", code)
	}
	tk := e.waitTask(1)
	if tk.State != task.Done {
		t.Fatalf("task ended %s: %s\nlogs:\n%s", tk.State, tk.Error, e.logs.String())
	}
	readme, err := e.git.ReadFile(t, owner, repoName, tasktest.Job(tk).Branch, "README.md")
	if err != nil || readme != "# Hello-World\n\nRemember to commit your work.\n" {
		t.Fatalf("README on the branch = %q, %v", readme, err)
	}
	if prs := e.gh.PullRequests(owner, repoName); len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	// A redelivery is seen as one by this store too.
	if code := e.deliver("d1", "issue_comment", e.payload("/agent fix the spelling of commit in the README", nil)); code != http.StatusOK {
		t.Fatalf("redelivery answered %d, want 200", code)
	}
	if got := e.get("/readyz"); !strings.Contains(got, "ready") {
		t.Fatalf("/readyz = %q", got)
	}

	pgtest.Drop(t, e.cfg.DatabaseURL)
	resp, err := http.Get(e.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz without its database = %d, want 503", resp.StatusCode)
	}
}

func TestTaskSurvivesRestartOnPostgres(t *testing.T) { taskSurvivesRestart(t, onPostgres(t)) }

func TestOpenStoreRefusesBadURLs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tests := []struct {
		name, url, want string
	}{
		{"unknown scheme", "mysql://u:secret@db/bot", `scheme "mysql"`},
		{"no file", "sqlite://", "names no file"},
		{"postgres that does not answer", "postgres://u:secret@127.0.0.1:1/bot?connect_timeout=5", "open postgres 127.0.0.1:1/bot"},
		{"postgresql that does not answer", "postgresql://u:secret@127.0.0.1:1/bot?connect_timeout=5", "open postgres 127.0.0.1:1/bot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := app.OpenStore(ctx, tc.url)
			if err == nil {
				s.Close()
			}
			// The message says what is wrong and never the password.
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("OpenStore(%s) = %v, want an error with %q and no password", tc.name, err, tc.want)
			}
		})
	}
}
