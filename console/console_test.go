package console

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// clock is a settable clock for sessions and caches.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const hostile = `"><script>alert(1)</script><img src=x onerror=alert(2)>`

type fixture struct {
	gh    *fakegithub.Server
	c     *Console
	clock *clock
	store *tasktest.Store
	ids   map[string]int64 // "private", "readonly", "secret", "hostile"
	inst  *installs
	// digest is that of the hostile task's waiting request, 4-2.
	digest string
}

// newFixture: tasks in three repositories the app is installed on.
// alice writes to o/private and o/hostile; carol only reads o/readonly;
// mallory is in none; o/secret is nobody's but dave's.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	gh := fakegithub.New(t)
	gh.CallbackURL = "https://console.example/console/callback"
	gh.AddInstallation(1, "o/private", "o/readonly", "o/secret", "o/hostile")
	gh.SetPermission("o", "private", "alice", "write")
	gh.SetPermission("o", "hostile", "alice", "write")
	gh.SetPermission("o", "readonly", "carol", "read")
	gh.SetPermission("o", "secret", "dave", "admin")
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	store := tasktest.NewStore(clk.Now)
	f := &fixture{gh: gh, clock: clk, store: store, ids: map[string]int64{}, inst: &installs{ids: map[string]int64{"o/private": 1, "o/readonly": 1, "o/secret": 1, "o/hostile": 1}}}
	for i, name := range []string{"private", "readonly", "secret", "hostile"} {
		tk := &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: name}, Issue: i + 1,
			IssueTitle: "fix " + name, Requester: task.Person{Login: "dave"}, Instructions: "do " + name}
		if name == "hostile" {
			tk.IssueTitle, tk.Instructions, tk.Error = hostile, hostile, hostile
			tk.State = task.AwaitingApproval
			tasktest.Job(tk).PRURL = "javascript:alert(3)"
			tasktest.Job(tk).Plan = []pullwright.PlanItem{{Title: hostile, Status: "pending"}}
			tasktest.Job(tk).Steps = []string{hostile}
			tasktest.Job(tk).Runs = []task.RunRecord{{RequestID: "4-1", Command: hostile, Output: hostile, Verdict: task.Approved, By: "alice", Outcome: "failed", Duration: time.Second}}
			tasktest.Job(tk).Request = &task.ExecRequest{ID: "4-2", Command: "go test ./... " + hostile, Reason: hostile, SHA: strings.Repeat("a", 40), Asked: true, CheckRunID: 77}
			shown := hostileShown(tasktest.Job(tk).Request)
			tasktest.Job(tk).Request.Shown, f.digest = &shown, shown.Digest
		}
		if err := store.Record(context.Background(), task.Delivery{ID: name}, tk); err != nil {
			t.Fatal(err)
		}
		f.ids[name] = tk.ID
	}
	// A reply is no fix: never shown.
	reply := &task.Task{Kind: task.KindReply, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "private"}, Issue: 9, Reply: "hi"}
	if err := store.Record(context.Background(), task.Delivery{ID: "reply"}, reply); err != nil {
		t.Fatal(err)
	}
	f.ids["reply"] = reply.ID
	c, err := New(Config{
		Store: store, APIURL: gh.URL, PublicURL: "https://console.example",
		ClientID: gh.ClientID, ClientSecret: gh.ClientSecret,
		SessionKey: []byte(strings.Repeat("k", 32)), Now: clk.Now, Installations: f.inst, TraceURL: "https://traces.example/trace/{trace_id}",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	return f
}

// serve runs one request through the console.
func (f *fixture) serve(t *testing.T, method, target string, body url.Values, cookies []*http.Cookie, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(body.Encode())
	}
	r := httptest.NewRequest(method, "https://console.example"+target, rd)
	if body != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, vs := range header {
		r.Header[k] = vs
	}
	for _, ck := range cookies {
		r.AddCookie(ck)
	}
	w := httptest.NewRecorder()
	f.c.Handler().ServeHTTP(w, r)
	return w
}

func cookieNamed(w *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, ck := range w.Result().Cookies() {
		if ck.Name == name {
			return ck
		}
	}
	return nil
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// signIn runs the web flow as login's browser and returns the session cookie.
func (f *fixture) signIn(t *testing.T, login string) *http.Cookie {
	t.Helper()
	f.gh.SignInBrowser(login)
	w := f.serve(t, "GET", "/console/login", nil, nil, nil)
	state := cookieNamed(w, "__Host-pullwright-signin")
	if w.Code != http.StatusFound || state == nil {
		t.Fatalf("login = %d, state cookie %v", w.Code, state)
	}
	resp, err := noRedirect.Get(w.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize = %d %v", resp.StatusCode, err)
	}
	if !strings.HasPrefix(back.String(), "https://console.example/console/callback?") {
		t.Fatalf("GitHub sent the browser to %s", back)
	}
	w = f.serve(t, "GET", back.RequestURI(), nil, []*http.Cookie{state}, nil)
	s := cookieNamed(w, "__Host-pullwright-session")
	if w.Code != http.StatusSeeOther || s == nil {
		t.Fatalf("callback = %d %s", w.Code, w.Body)
	}
	return s
}

func TestSignInCookies(t *testing.T) {
	f := newFixture(t)
	s := f.signIn(t, "alice")
	if !s.Secure || !s.HttpOnly || s.SameSite != http.SameSiteLaxMode || s.Path != "/" || s.MaxAge <= 0 || s.MaxAge > 8*3600 {
		t.Fatalf("session cookie %+v", s)
	}
	for _, tok := range f.gh.IssuedUserTokens() {
		if strings.Contains(s.Value, tok) {
			t.Fatal("the session cookie shows the user token")
		}
	}
	// A cookie changed by one byte is no session.
	bad := *s
	bad.Value = s.Value[:len(s.Value)-2] + "AA"
	if bad.Value == s.Value {
		bad.Value = s.Value[:len(s.Value)-2] + "BB"
	}
	if w := f.serve(t, "GET", "/api/tasks", nil, []*http.Cookie{&bad}, nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("changed cookie = %d", w.Code)
	}
}

func TestSignInRefusesForeignState(t *testing.T) {
	f := newFixture(t)
	f.gh.SignInBrowser("mallory")
	// Mallory's own sign-in, whose callback she would make alice's browser follow.
	w := f.serve(t, "GET", "/console/login", nil, nil, nil)
	resp, err := noRedirect.Get(w.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := url.Parse(resp.Header.Get("Location"))
	aliceState := cookieNamed(f.serve(t, "GET", "/console/login", nil, nil, nil), "__Host-pullwright-signin")
	tests := []struct {
		name    string
		cookies []*http.Cookie
		advance time.Duration
	}{
		{"no sign-in started in this browser", nil, 0},
		{"another sign-in's state", []*http.Cookie{aliceState}, 0},
		{"state cookie too old", []*http.Cookie{cookieNamed(w, "__Host-pullwright-signin")}, 11 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.clock.Add(tc.advance)
			w := f.serve(t, "GET", back.RequestURI(), nil, tc.cookies, nil)
			if w.Code != http.StatusBadRequest || cookieNamed(w, "__Host-pullwright-session") != nil {
				t.Fatalf("callback = %d, session %v", w.Code, cookieNamed(w, "__Host-pullwright-session"))
			}
		})
	}
}

// listed returns the task ids a list page or answer shows.
func (f *fixture) listed(t *testing.T, w *httptest.ResponseRecorder, api bool) []string {
	t.Helper()
	var out []string
	for name, id := range f.ids {
		if api {
			var v struct {
				Tasks []taskView `json:"tasks"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
				t.Fatalf("%v: %s", err, w.Body)
			}
			for _, tv := range v.Tasks {
				if tv.ID == id {
					out = append(out, name)
				}
			}
		} else if strings.Contains(w.Body.String(), `href="/console/tasks/`+itoa(id)+`"`) {
			out = append(out, name)
		}
	}
	return sorted(out)
}

func TestWhoSeesWhat(t *testing.T) {
	f := newFixture(t)
	alice, carol, mallory := f.signIn(t, "alice"), f.signIn(t, "carol"), f.signIn(t, "mallory")
	aliceToken := f.gh.UserToken("alice")
	tests := []struct {
		name    string
		cookies []*http.Cookie
		header  http.Header
		status  int // of the lists
		see     []string
	}{
		{"writer", []*http.Cookie{alice}, nil, 200, []string{"hostile", "private"}},
		{"read-only user", []*http.Cookie{carol}, nil, 200, []string{"readonly"}},
		{"non-member", []*http.Cookie{mallory}, nil, 200, nil},
		{"writer's own token", nil, http.Header{"Authorization": {"Bearer " + aliceToken}}, 200, []string{"hostile", "private"}},
		{"a token GitHub does not know", nil, http.Header{"Authorization": {"Bearer ghu_nope"}}, 401, nil},
		{"nobody", nil, nil, 401, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := f.serve(t, "GET", "/api/tasks", nil, tc.cookies, tc.header)
			if w.Code != tc.status {
				t.Fatalf("GET /api/tasks = %d %s", w.Code, w.Body)
			}
			if tc.status == 200 {
				if got := f.listed(t, w, true); strings.Join(got, ",") != strings.Join(tc.see, ",") {
					t.Fatalf("API lists %v, want %v", got, tc.see)
				}
			}
			if tc.header == nil {
				w := f.serve(t, "GET", "/console/", nil, tc.cookies, nil)
				if tc.cookies == nil {
					if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/signin" {
						t.Fatalf("page without a session = %d %s", w.Code, w.Header().Get("Location"))
					}
				} else if got := f.listed(t, w, false); strings.Join(got, ",") != strings.Join(tc.see, ",") {
					t.Fatalf("page lists %v, want %v", got, tc.see)
				}
			}
			// Each task page: seen exactly when listed; otherwise not found.
			for name, id := range f.ids {
				want := http.StatusNotFound
				if tc.status == 401 {
					want = 401
				}
				for _, s := range tc.see {
					if s == name {
						want = 200
					}
				}
				if w := f.serve(t, "GET", "/api/tasks/"+itoa(id), nil, tc.cookies, tc.header); w.Code != want {
					t.Errorf("GET /api/tasks/%d (%s) = %d, want %d", id, name, w.Code, want)
				}
				if tc.header != nil {
					continue
				}
				pw := f.serve(t, "GET", "/console/tasks/"+itoa(id), nil, tc.cookies, nil)
				if want == 401 {
					want = http.StatusSeeOther
				}
				if pw.Code != want {
					t.Errorf("page of task %d (%s) = %d, want %d", id, name, pw.Code, want)
				}
			}
		})
	}
}

func TestFilters(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	tests := []struct {
		query  string
		status int
		see    []string
	}{
		{"repo=O/Private", 200, []string{"private"}},
		{"state=awaiting_approval", 200, []string{"hostile"}},
		{"repo=o/secret", 200, nil}, // not hers: nothing, as for a repository without tasks
		{"state=nonsense", 400, nil},
		{"repo=nonsense", 400, nil},
		{"before=" + itoa(f.ids["hostile"]), 200, []string{"private"}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			w := f.serve(t, "GET", "/api/tasks?"+tc.query, nil, []*http.Cookie{alice}, nil)
			if w.Code != tc.status {
				t.Fatalf("= %d %s", w.Code, w.Body)
			}
			if tc.status == 200 {
				if got := f.listed(t, w, true); strings.Join(got, ",") != strings.Join(tc.see, ",") {
					t.Fatalf("lists %v, want %v", got, tc.see)
				}
			}
		})
	}
}

func TestExpiredSession(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	f.clock.Add(8*time.Hour + time.Second)
	if w := f.serve(t, "GET", "/api/tasks", nil, []*http.Cookie{alice}, nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("API with an expired session = %d", w.Code)
	}
	if w := f.serve(t, "GET", "/console/tasks/"+itoa(f.ids["private"]), nil, []*http.Cookie{alice}, nil); w.Code != http.StatusSeeOther {
		t.Fatalf("page with an expired session = %d", w.Code)
	}
}

func TestSignOutNeedsTheSessionsCSRFToken(t *testing.T) {
	f := newFixture(t)
	alice, mallory := f.signIn(t, "alice"), f.signIn(t, "mallory")
	csrfOf := func(ck *http.Cookie) string {
		var s session
		if err := f.c.cookies.sealer.open(ck.Name, ck.Value, &s); err != nil {
			t.Fatal(err)
		}
		return s.CSRF
	}
	page := f.serve(t, "GET", "/console/", nil, []*http.Cookie{alice}, nil)
	if !strings.Contains(page.Body.String(), `name="csrf" value="`+csrfOf(alice)+`"`) {
		t.Fatalf("the sign-out form carries no CSRF token: %s", page.Body)
	}
	tests := []struct {
		name   string
		form   url.Values
		status int
	}{
		{"missing token", url.Values{}, http.StatusForbidden},
		{"wrong token", url.Values{"csrf": {"nope"}}, http.StatusForbidden},
		{"another session's token", url.Values{"csrf": {csrfOf(mallory)}}, http.StatusForbidden},
		{"the session's token", url.Values{"csrf": {csrfOf(alice)}}, http.StatusSeeOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := f.serve(t, "POST", "/console/logout", tc.form, []*http.Cookie{alice}, nil)
			if w.Code != tc.status {
				t.Fatalf("= %d", w.Code)
			}
			cleared := cookieNamed(w, "__Host-pullwright-session")
			if (cleared != nil && cleared.MaxAge < 0) != (tc.status == http.StatusSeeOther) {
				t.Fatalf("session cookie %v", cleared)
			}
		})
	}
}

func TestHostileTextIsEscaped(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	for _, target := range []string{"/console/", "/console/tasks/" + itoa(f.ids["hostile"])} {
		w := f.serve(t, "GET", target, nil, []*http.Cookie{alice}, nil)
		body := w.Body.String()
		if w.Code != 200 {
			t.Fatalf("%s = %d", target, w.Code)
		}
		for _, bad := range []string{"<script>", "<img", `href="javascript:`} {
			if strings.Contains(body, bad) {
				t.Errorf("%s shows %q unescaped", target, bad)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s does not show the hostile text escaped", target)
		}
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-") || !strings.Contains(csp, "script-src 'self';") {
			t.Errorf("CSP %q", csp)
		}
	}
	// The API's JSON escapes it too, for a client that pastes it in a page.
	w := f.serve(t, "GET", "/api/tasks/"+itoa(f.ids["hostile"]), nil, []*http.Cookie{alice}, nil)
	if strings.Contains(w.Body.String(), "<script>") {
		t.Error("the API answers raw markup")
	}
	var v taskView
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Pending == nil || v.Pending.ID != "4-2" || len(v.Runs) != 1 || v.Instructions != hostile {
		t.Fatalf("task = %+v, %v", v, err)
	}
}

func TestUnauthenticatedGetsOnlyTheSignInPage(t *testing.T) {
	f := newFixture(t)
	w := f.serve(t, "GET", "/console/signin", nil, nil, nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `href="/console/login"`) || strings.Contains(w.Body.String(), "do private") {
		t.Fatalf("sign-in page = %d %s", w.Code, w.Body)
	}
	for _, target := range []string{"/console/", "/console/tasks/1"} {
		if w := f.serve(t, "GET", target, nil, nil, nil); w.Code != http.StatusSeeOther {
			t.Errorf("%s = %d", target, w.Code)
		}
	}
	for _, target := range []string{"/api/tasks", "/api/tasks/1"} {
		if w := f.serve(t, "GET", target, nil, nil, nil); w.Code != http.StatusUnauthorized {
			t.Errorf("%s = %d", target, w.Code)
		}
	}
}

func TestPermissionAnswersAreCachedBriefly(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	asked := func() int {
		n := 0
		for _, r := range f.gh.Requests() {
			if r.Path == "/repos/o/private" {
				n++
			}
		}
		return n
	}
	target := "/api/tasks/" + itoa(f.ids["private"])
	for range 3 {
		if w := f.serve(t, "GET", target, nil, []*http.Cookie{alice}, nil); w.Code != 200 {
			t.Fatal(w.Code)
		}
	}
	if n := asked(); n != 1 {
		t.Fatalf("asked GitHub %d times within the TTL", n)
	}
	// Her access revoked: once the answer is stale, she sees nothing.
	f.gh.SetPermission("o", "private", "alice", "none")
	f.clock.Add(31 * time.Second)
	if w := f.serve(t, "GET", target, nil, []*http.Cookie{alice}, nil); w.Code != http.StatusNotFound {
		t.Fatalf("after revocation = %d", w.Code)
	}
}

func TestWebURL(t *testing.T) {
	for _, tc := range []struct{ api, web string }{
		{"https://api.github.com", "https://github.com"},
		{"https://ghe.example/api/v3/", "https://ghe.example"},
		{"https://api.octocorp.ghe.com", "https://octocorp.ghe.com"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
	} {
		if got, err := WebURL(tc.api); err != nil || got != tc.web {
			t.Errorf("WebURL(%s) = %s, %v; want %s", tc.api, got, err, tc.web)
		}
	}
}

// "Waiting for my answer" lists the open requests the person may answer
// by the approve rule each task started with.
func TestWaitingForMyAnswer(t *testing.T) {
	f := newFixture(t)
	park := func(name, repo, requester string, approve policy.Approvers, asked bool) int64 {
		t.Helper()
		tk := &task.Task{Kind: task.KindFix, State: task.AwaitingApproval, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: repo},
			Issue: 20 + len(f.ids), Requester: task.Person{Login: requester}, Instructions: name, Settings: &policy.Settings{Approve: approve}}
		tasktest.Job(tk).Request = &task.ExecRequest{ID: name + "-1", Command: "make test", Asked: asked}
		if err := f.store.Record(context.Background(), task.Delivery{ID: name}, tk); err != nil {
			t.Fatal(err)
		}
		f.ids[name] = tk.ID
		return tk.ID
	}
	park("own", "private", "alice", policy.Approvers{ExcludeRequester: true}, true)
	park("others", "private", "alice", policy.Approvers{Who: policy.Who{Users: []string{"bob"}}}, true)
	park("admins", "private", "dave", policy.Approvers{Who: policy.Who{Permission: "admin"}}, true)
	park("triagers", "readonly", "dave", policy.Approvers{Who: policy.Who{Permission: "triage"}}, true)
	park("unasked", "private", "dave", policy.Approvers{}, false)
	alice, carol := f.signIn(t, "alice"), f.signIn(t, "carol")
	tests := []struct {
		who    *http.Cookie
		query  string
		status int
		see    []string
	}{
		// alice writes to o/private and o/hostile: hostile's request is
		// hers to answer; her own is not (four eyes), nor one for bob,
		// nor one for admins, nor one not yet asked on GitHub.
		{alice, "waiting=me", 200, []string{"hostile"}},
		{alice, "waiting=me&state=awaiting_approval", 200, []string{"hostile"}},
		{alice, "waiting=me&repo=o/private", 200, nil},
		// carol only reads o/readonly, whose rule asks for triage.
		{carol, "waiting=me", 200, nil},
		{alice, "waiting=me&state=done", 400, nil},
		{alice, "waiting=yes", 400, nil},
	}
	for _, tc := range tests {
		w := f.serve(t, "GET", "/api/tasks?"+tc.query, nil, []*http.Cookie{tc.who}, nil)
		if w.Code != tc.status {
			t.Errorf("%s = %d %s", tc.query, w.Code, w.Body)
			continue
		}
		if tc.status == 200 {
			if got := f.listed(t, w, true); strings.Join(got, ",") != strings.Join(tc.see, ",") {
				t.Errorf("%s lists %v, want %v", tc.query, got, tc.see)
			}
		}
	}
	// The page's filter is the same, and says it is on.
	w := f.serve(t, "GET", "/console/?waiting=me", nil, []*http.Cookie{alice}, nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `value="me" checked`) || strings.Join(f.listed(t, w, false), ",") != "hostile" {
		t.Errorf("the page with waiting=me = %d, lists %v", w.Code, f.listed(t, w, false))
	}
}

// hostileShown is request r as task would show it, with every warning,
// each carrying hostile text where a repository or a person chose it.
func hostileShown(r *task.ExecRequest) approval.Request {
	return approval.Seal(approval.Request{ID: r.ID, Command: r.Command, Reason: r.Reason, Commit: r.SHA, Branch: "agent/4-" + hostile,
		Files:       []pullwright.FileStat{{Path: "go.mod", Added: 1}, {Path: hostile, Added: 2}},
		Where:       approval.Where{Sandbox: true, Image: hostile, Network: true},
		Fork:        &approval.Fork{Pull: 4, HeadRepo: "mallory/" + hostile, Author: hostile},
		Setup:       &approval.Setup{Base: "main", Manifests: []pullwright.FileStat{{Path: "go.mod", Added: 1}}, Diff: "+require evil.test/m v1.0.0 // " + hostile + "\n"},
		AutoApprove: &approval.AutoApprove{Rules: []string{"go test ./...", "pattern " + hostile}, Matched: "go test ./...", Why: "a rule never answers for a fork's code"},
	})
}
