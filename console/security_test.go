package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
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

// csrfOf reads a session cookie's CSRF token.
func (f *fixture) csrfOf(t *testing.T, ck *http.Cookie) string {
	t.Helper()
	var s session
	if err := f.c.cookies.sealer.open(ck.Name, ck.Value, &s); err != nil {
		t.Fatal(err)
	}
	return s.CSRF
}

// Sign-out revokes the token on GitHub: a copy of the cookie kept from
// before (a shared machine, a proxy's log) is no session afterwards, in
// the API and in the pages, and is cleared there.
func TestSignOutRevokesTheToken(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	if w := f.serve(t, "GET", "/api/tasks/"+itoa(f.ids["private"]), nil, []*http.Cookie{alice}, nil); w.Code != http.StatusOK {
		t.Fatalf("before sign-out = %d", w.Code)
	}
	if w := f.serve(t, "POST", "/console/logout", map[string][]string{"csrf": {f.csrfOf(t, alice)}}, []*http.Cookie{alice}, nil); w.Code != http.StatusSeeOther {
		t.Fatalf("sign-out = %d", w.Code)
	}
	if n := len(f.gh.IssuedUserTokens()); n != 0 {
		t.Fatalf("%d user tokens still live on GitHub after sign-out", n)
	}
	w := f.serve(t, "GET", "/api/tasks/"+itoa(f.ids["private"]), nil, []*http.Cookie{alice}, nil)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("API with the old cookie = %d %.100s, want 401", w.Code, w.Body)
	}
	w = f.serve(t, "GET", "/console/", nil, []*http.Cookie{alice}, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/signin" {
		t.Errorf("page with the old cookie = %d to %q, want the sign-in page", w.Code, w.Header().Get("Location"))
	}
	if ck := cookieNamed(w, "__Host-pullwright-session"); ck == nil || ck.MaxAge >= 0 {
		t.Errorf("the dead session's cookie is not cleared: %v", ck)
	}
}

// A token GitHub refuses (expired, revoked elsewhere) ends the session
// rather than showing a "GitHub did not answer" error page.
func TestRefusedTokenEndsTheSession(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	for _, tok := range f.gh.IssuedUserTokens() {
		f.gh.ExpireUserToken(tok)
	}
	w := f.serve(t, "GET", "/console/tasks/"+itoa(f.ids["private"]), nil, []*http.Cookie{alice}, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/signin" {
		t.Errorf("task page with a refused token = %d to %q", w.Code, w.Header().Get("Location"))
	}
}

// One repository GitHub answers 403 for (SAML enforcement, an IP allow
// list) is one alice cannot read, cached as such: it does not break her
// list. A 403 of a rate limit stays an error: the list leaves that
// repository out and says so, a task page fails closed.
func TestForbiddenRepositoryDoesNotBreakTheList(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	f.gh.ForbidRepo("o", "hostile", true)
	for range 2 {
		w := f.serve(t, "GET", "/api/tasks", nil, []*http.Cookie{alice}, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("list = %d %s", w.Code, w.Body)
		}
		if got := f.listed(t, w, true); len(got) != 1 || got[0] != "private" {
			t.Errorf("list = %v, want [private]", got)
		}
	}
	calls := 0
	for _, rq := range f.gh.Requests() {
		if rq.Path == "/repos/o/hostile" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("GitHub asked %d times about the 403 repository, want 1 (cached)", calls)
	}
	if w := f.serve(t, "GET", "/api/tasks/"+itoa(f.ids["hostile"]), nil, []*http.Cookie{alice}, nil); w.Code != http.StatusNotFound {
		t.Errorf("task of the 403 repository = %d, want 404", w.Code)
	}

	f.clock.Add(time.Minute + time.Second)
	f.gh.ForbidRepo("o", "hostile", false)
	limited := http.Header{"X-Ratelimit-Remaining": {"0"}}
	f.gh.FailNext("GET", "/repos/o/hostile", 1, http.StatusForbidden, limited)
	w := f.serve(t, "GET", "/api/tasks", nil, []*http.Cookie{alice}, nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"unchecked_repos":1`) {
		t.Errorf("list while rate limited on one repository = %d %s, want 200 saying one was not checked", w.Code, w.Body)
	}
	page := f.serve(t, "GET", "/console/", nil, []*http.Cookie{alice}, nil)
	if page.Code != http.StatusOK {
		t.Errorf("page = %d", page.Code)
	}
	f.gh.FailNext("GET", "/repos/o/hostile", 1, http.StatusForbidden, limited)
	f.clock.Add(time.Minute + time.Second)
	if w := f.serve(t, "GET", "/api/tasks/"+itoa(f.ids["hostile"]), nil, []*http.Cookie{alice}, nil); w.Code != http.StatusBadGateway {
		t.Errorf("task while rate limited = %d, want 502 (fail closed)", w.Code)
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Made-up Bearer tokens cost one call to GitHub each, not one a request.
func TestRefusedBearerTokensAreCached(t *testing.T) {
	f := newFixture(t)
	var n atomic.Int64
	f.c.gh.client = &http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
		n.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	for i := range 50 {
		w := f.serve(t, "GET", "/api/tasks", nil, nil, http.Header{"Authorization": {"Bearer junk" + itoa(int64(i%2))}})
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("made-up token = %d", w.Code)
		}
	}
	if n.Load() != 2 {
		t.Errorf("50 requests with 2 made-up tokens = %d calls to GitHub, want 2", n.Load())
	}
}

// One list request asks GitHub about at most maxRepos repositories, says
// it was cut, and the next page goes on where it stopped.
func TestListChecksBoundedRepositories(t *testing.T) {
	f := newFixture(t)
	for i := range 60 {
		f.record(t, pullwright.Repo{InstallationID: 1, Owner: "x", Name: "r" + itoa(int64(i))}, "many"+itoa(int64(i)))
	}
	alice := f.signIn(t, "alice")
	before := len(f.gh.Requests())
	w := f.serve(t, "GET", "/api/tasks", nil, []*http.Cookie{alice}, nil)
	var v struct {
		Next int64 `json:"next_before"`
		Cut  bool  `json:"cut"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != http.StatusOK {
		t.Fatalf("list = %d %s", w.Code, w.Body)
	}
	if got := len(f.gh.Requests()) - before; got > maxRepos {
		t.Errorf("one list request made %d calls to GitHub, want at most %d", got, maxRepos)
	}
	if !v.Cut || v.Next == 0 {
		t.Fatalf("list not marked cut: %s", w.Body)
	}
	w = f.serve(t, "GET", "/api/tasks?before="+itoa(v.Next), nil, []*http.Cookie{alice}, nil)
	if got := f.listed(t, w, true); len(got) != 2 || got[0] != "hostile" || got[1] != "private" {
		t.Errorf("the page after the cut = %v %s, want alice's tasks", got, w.Body)
	}
	page := f.serve(t, "GET", "/console/", nil, []*http.Cookie{alice}, nil)
	if !strings.Contains(page.Body.String(), "stops early") {
		t.Errorf("the page does not say it was cut")
	}
}

// A GitHub that hangs costs a request at most its time budget.
func TestRequestTimeBudget(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	f.c.budget = 200 * time.Millisecond
	f.c.gh.client = &http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return nil, r.Context().Err()
	})}
	start := time.Now()
	w := f.serve(t, "GET", "/api/tasks", nil, []*http.Cookie{alice}, nil)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("list with a hanging GitHub took %v", d)
	}
	if w.Code != http.StatusOK && w.Code != http.StatusBadGateway {
		t.Errorf("list with a hanging GitHub = %d %s", w.Code, w.Body)
	}
}

// The API takes a Bearer token of this app only: another app's token (or
// a personal one) reaches what that app reaches, not what this one does.
func TestBearerTokenOfAnotherAppIsRefused(t *testing.T) {
	f := newFixture(t)
	theirs := f.gh.ForeignUserToken("alice")
	w := f.serve(t, "GET", "/api/tasks/"+itoa(f.ids["private"]), nil, nil, http.Header{"Authorization": {"Bearer " + theirs}})
	if w.Code != http.StatusUnauthorized {
		t.Errorf("another app's token = %d %.100s, want 401", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), theirs) {
		t.Error("the answer shows the token")
	}
	ours := f.gh.UserToken("alice")
	for range 3 {
		if w := f.serve(t, "GET", "/api/tasks/"+itoa(f.ids["private"]), nil, nil, http.Header{"Authorization": {"Bearer " + ours}}); w.Code != http.StatusOK {
			t.Fatalf("this app's token = %d %.100s", w.Code, w.Body)
		}
	}
	checks := 0
	for _, rq := range f.gh.Requests() {
		if rq.Method == http.MethodPost && strings.HasPrefix(rq.Path, "/applications/") {
			checks++
		}
	}
	if checks != 2 {
		t.Errorf("%d token checks for 2 tokens over 4 requests, want 2 (cached)", checks)
	}
}

// One person listing many repositories must not empty everyone's cache:
// they evict their own oldest answers, and a full cache loses its oldest
// entries, never all of them.
func TestOneCallerCannotFlushTheCache(t *testing.T) {
	f := newFixture(t)
	f.c.gh.maxCacheAnswer, f.c.gh.maxPerToken = 50, 20
	alice := f.signIn(t, "alice")
	f.serve(t, "GET", "/api/tasks", nil, []*http.Cookie{alice}, nil)
	for i := range 60 {
		f.record(t, pullwright.Repo{InstallationID: 1, Owner: "x", Name: "r" + itoa(int64(i))}, "many"+itoa(int64(i)))
	}
	f.clock.Add(time.Second)
	mallory := f.signIn(t, "mallory")
	f.serve(t, "GET", "/api/tasks", nil, []*http.Cookie{mallory}, nil)
	f.serve(t, "GET", "/api/tasks?before="+itoa(f.ids["hostile"]+61), nil, []*http.Cookie{mallory}, nil)
	mid := len(f.gh.Requests())
	f.serve(t, "GET", "/api/tasks?repo=o/private", nil, []*http.Cookie{alice}, nil)
	if got := len(f.gh.Requests()) - mid; got > 0 {
		t.Errorf("alice's cached answers were flushed by mallory: %d new GitHub calls", got)
	}
	if n := len(f.c.gh.roles); n > 50 {
		t.Errorf("role cache holds %d answers, bound 50", n)
	}
}

func TestFullCacheLosesItsOldestOnly(t *testing.T) {
	f := newFixture(t)
	g := f.c.gh
	g.maxCacheAnswer, g.maxPerToken = 20, 0
	for i := range 45 {
		f.clock.Add(time.Millisecond)
		g.remember(g.roles, "t"+itoa(int64(i)), cached{role: "read"})
		if len(g.roles) > 20 || (i >= 20 && len(g.roles) < 18) {
			t.Fatalf("after %d answers the cache holds %d", i+1, len(g.roles))
		}
	}
	if _, ok := g.roles["t44"]; !ok {
		t.Error("the newest answer was evicted")
	}
	if _, ok := g.roles["t0"]; ok {
		t.Error("the oldest answer is still there")
	}
}
