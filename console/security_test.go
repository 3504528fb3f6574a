package console

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// record adds a fix task of repo to the fixture's store and returns its id.
func (f *fixture) record(t *testing.T, repo pullwright.Repo, delivery string) int64 {
	t.Helper()
	st := f.c.cfg.Store.(interface {
		Record(context.Context, task.Delivery, *task.Task) error
	})
	tk := &task.Task{Kind: task.KindFix, Repo: repo, Issue: 7, Requester: task.Person{Login: "dave"}}
	if err := st.Record(context.Background(), task.Delivery{ID: delivery}, tk); err != nil {
		t.Fatal(err)
	}
	return tk.ID
}

// A private repository renamed or deleted, and a public one created under
// its old name: the tasks of the old one must not go to the new one's
// readers. The task keeps the id of its repository; the name now leads to
// another id.
func TestRepositoryNameReuse(t *testing.T) {
	f := newFixture(t)
	oldID := f.gh.RepoID("o", "secret")
	withID := f.record(t, pullwright.Repo{InstallationID: 1, Owner: "o", Name: "secret", ID: oldID}, "secret-with-id")
	f.ids["secret-with-id"] = withID
	dave := f.signIn(t, "dave")
	if w := f.serve(t, "GET", "/api/tasks/"+itoa(withID), nil, []*http.Cookie{dave}, nil); w.Code != http.StatusOK {
		t.Fatalf("dave, admin of the repository the task is of = %d", w.Code)
	}
	if newID := f.gh.RecreateRepo("o", "secret", true); newID == oldID {
		t.Fatal("the fake gave the new repository the old id")
	}
	f.clock.Add(time.Minute + time.Second)
	mallory := f.signIn(t, "mallory")
	if w := f.serve(t, "GET", "/api/tasks/"+itoa(withID), nil, []*http.Cookie{mallory}, nil); w.Code != http.StatusNotFound {
		t.Errorf("mallory reads the old repository's task through the reused name: %d %.200s", w.Code, w.Body)
	}
	if got := f.listed(t, f.serve(t, "GET", "/api/tasks?repo=o/secret", nil, []*http.Cookie{mallory}, nil), true); len(got) != 1 || got[0] != "secret" {
		// Only the task without an id (recorded before ids were kept) is
		// checked by name, as docs/console.md says.
		t.Errorf("mallory's list of o/secret = %v, want only the task without a repository id", got)
	}
}
