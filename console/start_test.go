package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/task"
)

// installs is a stateful fake of Installations: the app's installation
// per "owner/name", and every repository it was asked about.
type installs struct {
	mu    sync.Mutex
	ids   map[string]int64
	asked []string
}

func (i *installs) RepoInstallation(_ context.Context, owner, name string) (int64, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	k := owner + "/" + name
	i.asked = append(i.asked, k)
	id, ok := i.ids[k]
	if !ok {
		return 0, fmt.Errorf("%s: %w", k, ErrNotInstalled)
	}
	return id, nil
}

func (i *installs) askedAbout() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.asked)
}

func TestStartTaskFollowsPermission(t *testing.T) {
	f := newFixture(t)
	f.gh.AddIssue("o", "private", fakegithub.Issue{Number: 5, Title: "Crash on start", Body: "It crashes."})
	f.gh.AddIssue("o", "private", fakegithub.Issue{Number: 6, Title: "Empty"})
	f.gh.AddIssue("o", "private", fakegithub.Issue{Number: 7, Title: "Heated", Body: "x", Locked: true})
	f.gh.AddIssue("o", "readonly", fakegithub.Issue{Number: 5, Title: "Read only", Body: "x"})
	f.gh.AddIssue("o", "secret", fakegithub.Issue{Number: 5, Title: "Secret", Body: "x"})
	alice, carol, mallory := f.signIn(t, "alice"), f.signIn(t, "carol"), f.signIn(t, "mallory")
	session := func(ck *http.Cookie) http.Header {
		return http.Header{"Cookie": {ck.Name + "=" + ck.Value}, "X-Csrf-Token": {f.csrfOf(t, ck)}, "Content-Type": {"application/json"}}
	}
	tests := []struct {
		name   string
		header http.Header
		body   string
		want   int
	}{
		{"read-only user", session(carol), `{"repository":"o/readonly","issue":5}`, http.StatusForbidden},
		{"non-member", session(mallory), `{"repository":"o/secret","issue":5}`, http.StatusNotFound},
		{"another repository", session(alice), `{"repository":"o/secret","issue":5}`, http.StatusNotFound},
		{"missing CSRF token", http.Header{"Cookie": {alice.Name + "=" + alice.Value}}, `{"repository":"o/private","issue":5}`, http.StatusForbidden},
		{"another session's CSRF token", http.Header{"Cookie": {alice.Name + "=" + alice.Value}, "X-Csrf-Token": {f.csrfOf(t, carol)}}, `{"repository":"o/private","issue":5}`, http.StatusForbidden},
		{"unauthenticated", nil, `{"repository":"o/private","issue":5}`, http.StatusUnauthorized},
		{"unknown field", session(alice), `{"repository":"o/private","issue":5,"admin":true}`, http.StatusBadRequest},
		{"not owner/name", session(alice), `{"repository":"o/../secret","issue":5}`, http.StatusUnprocessableEntity},
		{"no issue number", session(alice), `{"repository":"o/private"}`, http.StatusUnprocessableEntity},
		{"unknown mode", session(alice), `{"repository":"o/private","issue":5,"mode":"yolo"}`, http.StatusUnprocessableEntity},
		{"no such issue", session(alice), `{"repository":"o/private","issue":99}`, http.StatusNotFound},
		{"locked issue", session(alice), `{"repository":"o/private","issue":7}`, http.StatusConflict},
		{"nothing to fix", session(alice), `{"repository":"o/private","issue":6}`, http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.serveJSON(t, "/api/tasks", tt.body, tt.header)
			if w.Code != tt.want {
				t.Errorf("POST /api/tasks %s = %d, want %d: %s", tt.body, w.Code, tt.want, w.Body.String())
			}
		})
	}
	if got := f.recorded(t); len(got) != 0 {
		t.Fatalf("refused starts recorded %d tasks: %+v", len(got), got[0])
	}
	// Nobody refused on their own rights got as far as the installation.
	if asked := f.inst.askedAbout(); len(asked) != 0 {
		t.Errorf("installations asked about %v, want none", asked)
	}
}

// A start records the fix a "/agent fix" comment records, as the caller,
// for the worker to decide by the repository's rules.
func TestStartTaskRecordsAFix(t *testing.T) {
	f := newFixture(t)
	f.gh.AddIssue("o", "private", fakegithub.Issue{Number: 5, Title: "Crash on start", Body: "It crashes."})
	alice := f.signIn(t, "alice")
	bearer := http.Header{"Authorization": {"Bearer " + f.gh.UserToken("alice")}, "Content-Type": {"application/json"}}
	w := f.serveJSON(t, "/api/tasks", `{"repository":"o/private","issue":5,"instructions":"  handle a missing config  ","mode":"tdd"}`, bearer)
	if w.Code != http.StatusAccepted {
		t.Fatalf("start = %d: %s", w.Code, w.Body.String())
	}
	got := f.recorded(t)
	if len(got) != 1 {
		t.Fatalf("recorded %d tasks, want 1", len(got))
	}
	fix := got[0]
	if w.Header().Get("Location") != "/api/tasks/"+itoa(fix.ID) {
		t.Errorf("Location = %q", w.Header().Get("Location"))
	}
	r := fix.Repo
	if fix.Kind != task.KindFix || fix.State != task.Queued || r.FullName() != "o/private" || r.InstallationID != 1 ||
		r.ID == 0 || r.CloneURL == "" || r.DefaultBranch == "" || fix.Issue != 5 || fix.IsPR || fix.IssueTitle != "Crash on start" ||
		fix.Requester.Login != "alice" || fix.Requester.ID == 0 || fix.Instructions != "handle a missing config" || fix.Mode != task.ModeTDD {
		t.Errorf("recorded %+v", fix)
	}
	if fix.AskedAt.IsZero() {
		t.Error("AskedAt is zero, want GitHub's time of the answer")
	}
	if asked := f.inst.askedAbout(); !slices.Equal(asked, []string{"o/private"}) {
		t.Errorf("installations asked about %v", asked)
	}

	// A second start on the issue, while the first is active, is refused
	// as a second comment is.
	sess := http.Header{"Cookie": {alice.Name + "=" + alice.Value}, "X-Csrf-Token": {f.csrfOf(t, alice)}}
	if w := f.serveJSON(t, "/api/tasks", `{"repository":"o/private","issue":5}`, sess); w.Code != http.StatusConflict {
		t.Errorf("second start = %d, want 409: %s", w.Code, w.Body.String())
	}
	// An installation the operator does not serve, as for a delivery.
	f.gh.AddIssue("o", "private", fakegithub.Issue{Number: 9, Title: "Unserved", Body: "x"})
	var served []string
	f.c.cfg.Serves = func(inst int64, owner string) bool {
		served = append(served, fmt.Sprint(inst, owner))
		return false
	}
	if w := f.serveJSON(t, "/api/tasks", `{"repository":"o/private","issue":9}`, sess); w.Code != http.StatusForbidden || !slices.Equal(served, []string{"1o"}) {
		t.Errorf("start where the operator does not serve = %d (asked %v), want 403: %s", w.Code, served, w.Body.String())
	}
	f.c.cfg.Serves = nil
	// A repository the app is not installed on.
	f.inst.mu.Lock()
	delete(f.inst.ids, "o/private")
	f.inst.mu.Unlock()
	f.gh.AddIssue("o", "private", fakegithub.Issue{Number: 8, Title: "Other", Body: "x"})
	if w := f.serveJSON(t, "/api/tasks", `{"repository":"o/private","issue":8}`, sess); w.Code != http.StatusConflict {
		t.Errorf("start where the app is not installed = %d, want 409: %s", w.Code, w.Body.String())
	}
	if n := len(f.recorded(t)); n != 1 {
		t.Errorf("recorded %d tasks, want still 1", n)
	}
}
