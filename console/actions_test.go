package console

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// recorded is every task the console recorded: those whose delivery is
// the console's.
func (f *fixture) recorded(t *testing.T) []*task.Task {
	t.Helper()
	var out []*task.Task
	for id := int64(1); ; id++ {
		tk, err := f.store.Get(t.Context(), id)
		if err != nil {
			return out
		}
		if strings.HasPrefix(tk.DeliveryID, "console-") {
			out = append(out, tk)
		}
	}
}

func TestButtonsOnlyForWriters(t *testing.T) {
	f := newFixture(t)
	alice, carol := f.signIn(t, "alice"), f.signIn(t, "carol")
	w := f.serve(t, "GET", "/console/tasks/"+itoa(f.ids["hostile"]), nil, []*http.Cookie{alice}, nil)
	for _, want := range []string{`action="/console/tasks/4/approve"`, `action="/console/tasks/4/reject"`, `action="/console/tasks/4/cancel"`, `name="request" value="4-2"`} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("alice's page lacks %s", want)
		}
	}
	w = f.serve(t, "GET", "/console/tasks/"+itoa(f.ids["readonly"]), nil, []*http.Cookie{carol}, nil)
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), "<form method=\"post\" action=\"/console/tasks/") {
		t.Errorf("carol's page (read only) = %d, with a form: %v", w.Code, strings.Contains(w.Body.String(), "/cancel"))
	}
}

func TestActionsFollowPermissionAndCSRF(t *testing.T) {
	f := newFixture(t)
	alice, carol, mallory := f.signIn(t, "alice"), f.signIn(t, "carol"), f.signIn(t, "mallory")
	hostile, readonly := itoa(f.ids["hostile"]), itoa(f.ids["readonly"])
	form := func(ck *http.Cookie, extra url.Values) url.Values {
		v := url.Values{"csrf": {f.csrfOf(t, ck)}, "request": {"4-2"}, "digest": {f.digest}}
		for k, vs := range extra {
			v[k] = vs
		}
		return v
	}
	tests := []struct {
		name   string
		method string
		target string
		body   url.Values
		cookie *http.Cookie
		header http.Header
		want   int
	}{
		{"read-only user, forged form", "POST", "/console/tasks/" + readonly + "/cancel", form(carol, nil), carol, nil, http.StatusForbidden},
		{"read-only user, API", "POST", "/api/tasks/" + readonly + "/cancel", nil, carol, http.Header{"X-Csrf-Token": {f.csrfOf(t, carol)}}, http.StatusForbidden},
		{"non-member", "POST", "/console/tasks/" + hostile + "/approve", form(mallory, nil), mallory, nil, http.StatusNotFound},
		{"another repository's task", "POST", "/console/tasks/" + itoa(f.ids["secret"]) + "/cancel", form(alice, nil), alice, nil, http.StatusNotFound},
		{"missing CSRF token", "POST", "/console/tasks/" + hostile + "/approve", url.Values{"request": {"4-2"}}, alice, nil, http.StatusForbidden},
		{"another session's CSRF token", "POST", "/console/tasks/" + hostile + "/approve", url.Values{"csrf": {f.csrfOf(t, carol)}, "request": {"4-2"}}, alice, nil, http.StatusForbidden},
		{"API without CSRF header", "POST", "/api/requests/4-2/approve", nil, alice, nil, http.StatusForbidden},
		{"a request that is not waiting", "POST", "/console/tasks/" + hostile + "/approve", form(alice, url.Values{"request": {"4-1"}}), alice, nil, http.StatusConflict},
		{"a digest other than the one the page showed", "POST", "/console/tasks/" + hostile + "/approve", form(alice, url.Values{"digest": {strings.Repeat("b", 64)}}), alice, nil, http.StatusConflict},
		{"a digest cut shorter than twelve characters", "POST", "/console/tasks/" + hostile + "/approve", form(alice, url.Values{"digest": {f.digest[:11]}}), alice, nil, http.StatusConflict},
		{"no digest", "POST", "/console/tasks/" + hostile + "/approve", form(alice, url.Values{"digest": {""}}), alice, nil, http.StatusBadRequest},
		{"API without a digest", "POST", "/api/requests/4-2/approve", nil, alice, http.Header{"X-Csrf-Token": {f.csrfOf(t, alice)}}, http.StatusBadRequest},
		{"an unknown verb", "POST", "/console/tasks/" + hostile + "/merge", form(alice, nil), alice, nil, http.StatusNotFound},
		{"unauthenticated API", "POST", "/api/requests/4-2/approve", nil, nil, nil, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cks []*http.Cookie
			if tt.cookie != nil {
				cks = append(cks, tt.cookie)
			}
			w := f.serve(t, tt.method, tt.target, tt.body, cks, tt.header)
			if w.Code != tt.want {
				t.Errorf("%s %s = %d, want %d: %s", tt.method, tt.target, w.Code, tt.want, w.Body.String())
			}
		})
	}
	if got := f.recorded(t); len(got) != 0 {
		t.Fatalf("refused actions recorded %d tasks: %+v", len(got), got[0])
	}
}

// What a button records is what the check run's button records: the
// worker then decides it by the same rules.
func TestActionsRecordWhatTheButtonsDo(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	hostile := itoa(f.ids["hostile"])
	w := f.serve(t, "POST", "/console/tasks/"+hostile+"/approve", url.Values{"csrf": {f.csrfOf(t, alice)}, "request": {"4-2"}, "digest": {f.digest}}, []*http.Cookie{alice}, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/tasks/"+hostile+"?sent=approve" {
		t.Fatalf("approve = %d %s", w.Code, w.Header().Get("Location"))
	}
	w = f.serve(t, "GET", w.Header().Get("Location"), nil, []*http.Cookie{alice}, nil)
	if !strings.Contains(w.Body.String(), "Your approval was sent") {
		t.Error("the page after approving does not say it was sent")
	}
	// The API, with alice's own token: no CSRF token needed.
	bearer := http.Header{"Authorization": {"Bearer " + f.gh.UserToken("alice")}, "Content-Type": {"application/json"}}
	if w := f.serveJSON(t, "/api/requests/4-2/reject", `{"reason": 1}`, bearer); w.Code != http.StatusBadRequest {
		t.Errorf("reject with a malformed body = %d, want 400", w.Code)
	}
	w = f.serveJSON(t, "/api/requests/4-2/reject", `{"digest":"`+f.digest+`","reason":"no\u0007 thanks\n, not now"}`, bearer)
	if w.Code != http.StatusAccepted {
		t.Fatalf("API reject = %d: %s", w.Code, w.Body.String())
	}
	var out struct {
		Accepted bool  `json:"accepted"`
		TaskID   int64 `json:"task_id"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || !out.Accepted || out.TaskID == 0 {
		t.Fatalf("API reject answered %s", w.Body.String())
	}
	w = f.serve(t, "POST", "/api/tasks/"+hostile+"/cancel", nil, []*http.Cookie{alice}, http.Header{"X-Csrf-Token": {f.csrfOf(t, alice)}})
	if w.Code != http.StatusAccepted {
		t.Fatalf("API cancel = %d: %s", w.Code, w.Body.String())
	}

	got := f.recorded(t)
	if len(got) != 3 {
		t.Fatalf("recorded %d tasks, want 3", len(got))
	}
	sha := strings.Repeat("a", 40)
	approve, reject, cancel := got[0], got[1], got[2]
	if approve.Kind != task.KindApprove || approve.Answering != (task.AnswerRef{RequestID: "4-2", SHA: sha, Run: 77, Digest: f.digest}) ||
		approve.Requester.Login != "alice" || approve.Repo.FullName() != "o/hostile" || approve.Issue != 0 {
		t.Errorf("approve recorded %+v", approve)
	}
	if reject.Kind != task.KindReject || reject.Answering.RequestID != "4-2" || reject.Instructions != "no thanks , not now" {
		t.Errorf("reject recorded %+v (reason %q)", reject, reject.Instructions)
	}
	if cancel.Kind != task.KindCancel || cancel.Issue != 4 || cancel.Requester.Login != "alice" {
		t.Errorf("cancel recorded %+v", cancel)
	}
}

// serveJSON posts a JSON body through the console.
func (f *fixture) serveJSON(t *testing.T, target, body string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("POST", "https://console.example"+target, strings.NewReader(body))
	for k, vs := range header {
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	f.c.Handler().ServeHTTP(w, r)
	return w
}

// The page and the API show the request whole, as the request comment
// does: every sentence (the fork, the network, the rule that did not
// answer, the setup with its manifests), the manifests' diff and the
// files, all from the one value whose digest the forms carry.
func TestPendingShowsTheWholeRequest(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	id := itoa(f.ids["hostile"])
	w := f.serve(t, "GET", "/console/tasks/"+id, nil, []*http.Cookie{alice}, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("page = %d", w.Code)
	}
	text := readText(w.Body.String())
	tk, err := f.store.Get(context.Background(), f.ids["hostile"])
	if err != nil {
		t.Fatal(err)
	}
	shown := *tasktest.Job(tk).Request.Shown
	kinds := map[string]bool{}
	for _, s := range shown.Sentences() {
		kinds[s.Kind] = true
		words := strings.Join(strings.Fields(strings.ReplaceAll(approval.PlainText(s), "`", "")), " ")
		if !strings.Contains(text, words) {
			t.Errorf("the page lacks the sentence %q", words)
		}
	}
	for _, kind := range []string{approval.KindFork, approval.KindNetwork, approval.KindAutoApprove, approval.KindSetup} {
		if !kinds[kind] {
			t.Errorf("the fixture's request has no %s sentence", kind)
		}
	}
	for _, want := range []string{"+require evil.test/m v1.0.0 // " + hostile, hostile + " (+2 −0)", shown.Digest[:12]} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(w.Body.String(), `name="digest" value="`+shown.Digest+`"`); n != 2 {
		t.Errorf("the page's two answer forms carry the digest %d times", n)
	}
	pending, _ := f.apiPending(t, id, "alice")
	if !pending.Sealed() || pending.Digest != shown.Digest || len(pending.Sentences) != len(shown.Sentences()) {
		t.Errorf("the API's pending is not the value shown: %+v", pending)
	}
}

// A request that would run without a sandbox (BOT_RUNNER=local) says so,
// as a warning, on the page and in the API's pending: the value task
// builds for the local runner, which drops the image and network a
// sandbox would have had.
func TestPendingWarnsOfNoSandbox(t *testing.T) {
	f := newFixture(t)
	tk := tasktest.WithWork(&task.Task{Kind: task.KindFix, State: task.AwaitingApproval, Issue: 30,
		Repo:      pullwright.Repo{InstallationID: 1, Owner: "o", Name: "private", DefaultBranch: "main"},
		Requester: task.Person{Login: "dave"}, Instructions: "fix it",
		Settings: &policy.Settings{Sandbox: policy.Sandbox{Image: "golang:1.26", Network: "bridge"}},
	}, task.Work{Branch: "agent/30-x", Request: &task.ExecRequest{ID: "5-1", Command: "make test", Reason: "check it",
		SHA: strings.Repeat("b", 40), Asked: true}})
	shown := task.ShowRequest(tasktest.Job(tk), []pullwright.FileStat{{Path: "Makefile", Added: 1}}, task.ManifestChanges{}, true)
	tasktest.Job(tk).Request.Shown = &shown
	if err := f.store.Record(t.Context(), task.Delivery{ID: "local"}, tk); err != nil {
		t.Fatal(err)
	}
	var warning approval.Sentence
	for _, s := range shown.Sentences() {
		if s.Kind == approval.KindNoSandbox {
			warning = s
		}
		if s.Kind == approval.KindNetwork {
			t.Errorf("a request without a sandbox speaks of a sandbox's network: %q", approval.PlainText(s))
		}
	}
	if !warning.Warning || shown.Where.Sandbox {
		t.Fatalf("task shows the local runner's request as %+v", shown)
	}
	id := itoa(tk.ID)
	w := f.serve(t, "GET", "/console/tasks/"+id, nil, []*http.Cookie{f.signIn(t, "alice")}, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("page = %d", w.Code)
	}
	text := readText(w.Body.String())
	words := strings.Join(strings.Fields(strings.ReplaceAll(approval.PlainText(warning), "`", "")), " ")
	if !strings.Contains(text, words) || !strings.Contains(text, "BOT_RUNNER=local") {
		t.Errorf("the page lacks the warning %q:\n%s", words, text)
	}
	pending, body := f.apiPending(t, id, "alice")
	warned := false
	for _, s := range pending.Sentences {
		warned = warned || s.Kind == approval.KindNoSandbox && s.Warning && strings.Contains(s.Text, "BOT_RUNNER=local")
	}
	if !warned || pending.Where.Sandbox || pending.Digest != shown.Digest || !pending.Sealed() {
		t.Errorf("the API's pending does not warn that it runs without a sandbox: %s", body)
	}
}

// A page shows a request, and the task then asks another on the same
// commit: an answer from that page, whatever id its form names, answers
// nothing, and the page that answers shows the request that waits now.
func TestAnAnswerToARequestNotShownIsRefused(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	hostile := itoa(f.ids["hostile"])
	old := f.digest
	// The agent asks 4-3 on the same commit: the task is claimed (the
	// others on the way are left claimed) and saved as a worker would.
	var tk *task.Task
	for tk == nil || tk.ID != f.ids["hostile"] {
		var err error
		if tk, err = f.store.Claim(context.Background(), "worker", time.Minute); err != nil {
			t.Fatalf("claim the hostile task: %v", err)
		}
	}
	next := *tasktest.Job(tk).Request
	next.ID, next.Command = "4-3", "go test -run TestX ./..."
	shown := hostileShown(&next)
	next.Shown = &shown
	tasktest.Job(tk).Request = &next
	if err := f.store.Save(context.Background(), tk, "worker"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"4-2", "4-3"} {
		w := f.serve(t, "POST", "/console/tasks/"+hostile+"/approve", url.Values{"csrf": {f.csrfOf(t, alice)}, "request": {id}, "digest": {old}}, []*http.Cookie{alice}, nil)
		if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), `id="changed"`) || !strings.Contains(w.Body.String(), `value="`+shown.Digest+`"`) {
			t.Errorf("an approval of %s with the old digest = %d; the page:\n%s", id, w.Code, w.Body.String())
		}
	}
	bearer := http.Header{"Authorization": {"Bearer " + f.gh.UserToken("alice")}, "Content-Type": {"application/json"}}
	w := f.serveJSON(t, "/api/requests/4-3/approve", `{"digest":"`+old+`"}`, bearer)
	var out struct {
		Error   string
		Pending approval.Request
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != http.StatusConflict || out.Pending.Digest != shown.Digest {
		t.Errorf("the API's approval with the old digest = %d %s", w.Code, w.Body.String())
	}
	if got := f.recorded(t); len(got) != 0 {
		t.Fatalf("refused answers recorded %d tasks", len(got))
	}
}

// readText is a page's text as a person reads it: tags dropped, entities
// read, runs of space one.
func readText(page string) string {
	text := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, ""))
	return strings.Join(strings.Fields(text), " ")
}

// apiPending is the pending request of task id as the API gives it to
// login, with its sentences, and the answer's body.
func (f *fixture) apiPending(t *testing.T, id, login string) (pending apiRequest, body string) {
	t.Helper()
	w := f.serve(t, "GET", "/api/tasks/"+id, nil, nil, http.Header{"Authorization": {"Bearer " + f.gh.UserToken(login)}})
	var v struct {
		Pending apiRequest `json:"pending"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, w.Body.String())
	}
	return v.Pending, w.Body.String()
}

// apiRequest is a request in the API: the value shown, and its sentences.
type apiRequest struct {
	approval.Request
	Sentences []struct {
		Kind, Text string
		Warning    bool
	} `json:"sentences"`
}
