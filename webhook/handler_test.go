package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

var (
	testSecret = []byte("test secret")
	testNow    = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
)

const botLogin = "pullwright[bot]"

// fakeRecorder is a stateful stand-in for task.Store's Record: it keeps
// deliveries and tasks, refuses a seen delivery id and a second active fix
// task per issue, and can be told to fail.
type fakeRecorder struct {
	mu         sync.Mutex
	deliveries map[string]task.Delivery
	tasks      []task.Task
	active     map[string]bool
	calls      int
	fail       error // returned (nothing written) while set
	failFix    error // returned for fix tasks only
	noDeadline bool  // a Record call arrived without a deadline
}

func newFakeRecorder() *fakeRecorder {
	return &fakeRecorder{deliveries: map[string]task.Delivery{}, active: map[string]bool{}}
}

func (f *fakeRecorder) Record(ctx context.Context, d task.Delivery, t *task.Task) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if _, ok := ctx.Deadline(); !ok {
		f.noDeadline = true
	}
	if f.fail != nil {
		return f.fail
	}
	if _, ok := f.deliveries[d.ID]; ok {
		return task.ErrDuplicate
	}
	if t != nil && t.Kind == task.KindFix {
		if f.failFix != nil {
			return f.failFix
		}
		if f.active[t.IssueKey()] {
			return task.ErrActive
		}
	}
	f.deliveries[d.ID] = d
	if t != nil {
		t.ID = int64(len(f.tasks) + 1)
		f.tasks = append(f.tasks, *t)
		if t.Kind == task.KindFix {
			f.active[t.IssueKey()] = true
		}
	}
	return nil
}

func (f *fakeRecorder) snapshot() (map[string]task.Delivery, []task.Task) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := make(map[string]task.Delivery, len(f.deliveries))
	for k, v := range f.deliveries {
		d[k] = v
	}
	return d, append([]task.Task(nil), f.tasks...)
}

// payload reads a real payload from testdata.
func payload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// variant derives a payload from a real one by editing its decoded JSON.
func variant(t *testing.T, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	return edited(t, payload(t, name), edit)
}

// edited applies edit to the decoded JSON of raw.
func edited(t *testing.T, raw []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	if edit == nil {
		return raw
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// obj returns m[key] as an object, for editing nested payload fields.
func obj(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

// commentBody sets the comment body of an issue_comment or
// pull_request_review_comment payload.
func commentBody(body string) func(map[string]any) {
	return func(m map[string]any) { obj(m, "comment")["body"] = body }
}

// onPR makes the issue of an issue_comment payload a pull request, with the
// pull_request object GitHub adds to it then (FACTS.md §4); the rest of
// the payload stays as GitHub sent it for a plain issue.
func onPR(m map[string]any) {
	obj(m, "issue")["pull_request"] = map[string]any{
		"url":       "https://api.github.com/repos/Codertocat/Hello-World/pulls/1",
		"html_url":  "https://github.com/Codertocat/Hello-World/pull/1",
		"diff_url":  "https://github.com/Codertocat/Hello-World/pull/1.diff",
		"patch_url": "https://github.com/Codertocat/Hello-World/pull/1.patch",
		"merged_at": nil,
	}
}

// then applies several edits in order.
func then(edits ...func(map[string]any)) func(map[string]any) {
	return func(m map[string]any) {
		for _, e := range edits {
			e(m)
		}
	}
}

func sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

type delivery struct {
	method   string // POST when empty
	event    string
	id       string
	body     []byte
	sig      *string // computed with testSecret when nil
	header   http.Header
	chunked  bool // hide the content length
	noHeader []string
}

func (d delivery) request() *http.Request {
	method := d.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader = bytes.NewReader(d.body)
	if d.chunked {
		body = io.MultiReader(body) // no known length
	}
	r := httptest.NewRequest(method, "/webhook", body)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	r.Header.Set("X-GitHub-Event", d.event)
	r.Header.Set("X-GitHub-Delivery", d.id)
	if d.sig == nil {
		r.Header.Set("X-Hub-Signature-256", sign(testSecret, d.body))
	} else if *d.sig != "" {
		r.Header.Set("X-Hub-Signature-256", *d.sig)
	}
	for k, v := range d.header {
		r.Header[k] = v
	}
	for _, k := range d.noHeader {
		r.Header.Del(k)
	}
	if d.chunked {
		r.ContentLength = -1
	}
	return r
}

func newHandler(t *testing.T, rec Recorder, edit func(*Config)) (*Handler, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	cfg := Config{
		Secret:   testSecret,
		BotLogin: botLogin,
		Recorder: rec,
		Logger:   slog.New(slog.NewJSONHandler(&logs, nil)),
		Now:      func() time.Time { return testNow },
	}
	if edit != nil {
		edit(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h, &logs
}

func serve(h http.Handler, d delivery) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, d.request())
	return w
}

func str(s string) *string { return &s }

// wantTask describes the task a delivery should create; Kind "" means none.
type wantTask struct {
	Kind         task.Kind
	Instructions string
	Mode         string
	RequestID    string
	Reply        string // substring of Reply
	IsPR         bool
}

func TestServeHTTP(t *testing.T) {
	created := "issue_comment.created.json"
	tests := []struct {
		name       string
		cfg        func(*Config)
		d          delivery
		file       string
		edit       func(map[string]any)
		wantStatus int
		wantBody   string
		// wantRecorded: the delivery reached the store (with or without a task).
		wantRecorded bool
		// wantHead: the pull request head the delivery is recorded with.
		wantHead *task.HeadPush
		want     wantTask
	}{
		// Transport checks, before any JSON is looked at.
		{name: "GET", d: delivery{method: http.MethodGet, event: "ping"}, file: "ping.json", wantStatus: 405},
		{name: "missing signature", d: delivery{event: "ping", sig: str("")}, file: "ping.json", wantStatus: 401},
		{name: "wrong signature", d: delivery{event: "ping", sig: str(sign([]byte("other"), []byte("{}")))}, file: "ping.json", wantStatus: 401},
		{name: "sha1 signature", d: delivery{event: "ping", sig: str("sha1=0123456789abcdef0123456789abcdef01234567")}, file: "ping.json", wantStatus: 401},
		{name: "signature without prefix", d: delivery{event: "ping", sig: str(strings.TrimPrefix(sign(testSecret, payload(t, "ping.json")), "sha256="))}, file: "ping.json", wantStatus: 401},
		{name: "signature not hex", d: delivery{event: "ping", sig: str("sha256=zz")}, file: "ping.json", wantStatus: 401},
		{name: "signature truncated", d: delivery{event: "ping", sig: str(sign(testSecret, payload(t, "ping.json"))[:40])}, file: "ping.json", wantStatus: 401},
		{name: "missing event", d: delivery{event: "ping", noHeader: []string{"X-Github-Event"}}, file: "ping.json", wantStatus: 400},
		{name: "missing delivery", d: delivery{event: "ping", noHeader: []string{"X-Github-Delivery"}}, file: "ping.json", wantStatus: 400},
		{name: "too large", cfg: func(c *Config) { c.MaxBody = 1024 }, d: delivery{event: "issue_comment"}, file: created, wantStatus: 413},
		{name: "too large without length", cfg: func(c *Config) { c.MaxBody = 1024 }, d: delivery{event: "issue_comment", chunked: true}, file: created, wantStatus: 413},
		{name: "exactly max body", cfg: func(c *Config) { c.MaxBody = int64(len(payload(t, "ping.json"))) }, d: delivery{event: "ping"}, file: "ping.json", wantStatus: 200, wantBody: "pong", wantRecorded: true},

		// Events other than comments.
		{name: "ping", d: delivery{event: "ping"}, file: "ping.json", wantStatus: 200, wantBody: "pong", wantRecorded: true},
		{name: "check_run requested_action of another app's button", d: delivery{event: "check_run"}, file: "check_run.requested_action.json", wantStatus: 200, wantBody: "ignored", wantRecorded: true},
		// A pull request's head is recorded with GitHub's time of it, for
		// the fork checks.
		{name: "pull_request opened", d: delivery{event: "pull_request"}, file: "pull_request.opened.json", wantStatus: 200, wantBody: "ignored", wantRecorded: true,
			wantHead: &task.HeadPush{PullKey: "codertocat/hello-world#2", SHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", At: time.Date(2019, 5, 15, 15, 20, 33, 0, time.UTC)}},
		{name: "pull_request synchronize", d: delivery{event: "pull_request"}, file: "pull_request.opened.json", wantStatus: 200, wantBody: "ignored", wantRecorded: true,
			edit: func(m map[string]any) {
				m["action"] = "synchronize"
				pr := obj(m, "pull_request")
				obj(pr, "head")["sha"], pr["updated_at"] = strings.Repeat("ab", 20), "2019-05-15T16:00:00Z"
			},
			wantHead: &task.HeadPush{PullKey: "codertocat/hello-world#2", SHA: strings.Repeat("ab", 20), At: time.Date(2019, 5, 15, 16, 0, 0, 0, time.UTC)}},
		{name: "pull_request edited moves no head", d: delivery{event: "pull_request"}, file: "pull_request.opened.json", wantStatus: 200, wantBody: "ignored", wantRecorded: true,
			edit: func(m map[string]any) { m["action"] = "edited" }},
		{name: "pull_request with a bad time records no head", d: delivery{event: "pull_request"}, file: "pull_request.opened.json", wantStatus: 200, wantBody: "ignored", wantRecorded: true,
			edit: func(m map[string]any) { obj(m, "pull_request")["updated_at"] = "yesterday" }},
		{name: "pull_request with a short sha records no head", d: delivery{event: "pull_request"}, file: "pull_request.opened.json", wantStatus: 200, wantBody: "ignored", wantRecorded: true,
			edit: func(m map[string]any) { obj(obj(m, "pull_request"), "head")["sha"] = "ec26c3e" }},
		{name: "issues opened", d: delivery{event: "issues"}, file: "issues.opened.json", wantStatus: 200, wantBody: "ignored", wantRecorded: true},
		{name: "unknown event with odd field types", d: delivery{event: "future_event"}, file: "ping.json",
			edit: func(m map[string]any) { m["action"] = 7; m["issue"] = "x" }, wantStatus: 200, wantBody: "ignored", wantRecorded: true},

		// Comments that ask for nothing.
		{name: "comment without command", d: delivery{event: "issue_comment"}, file: created, wantStatus: 200, wantBody: "ignored", wantRecorded: true},
		{name: "edited comment", d: delivery{event: "issue_comment"}, file: "issue_comment.edited.ghes.json", edit: commentBody("/agent fix it"), wantStatus: 200, wantRecorded: true},
		{name: "edited comment without installation", d: delivery{event: "issue_comment"}, file: "issue_comment.edited.json", edit: commentBody("/agent fix it"), wantStatus: 200, wantRecorded: true},
		{name: "deleted comment", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent fix it"), func(m map[string]any) { m["action"] = "deleted" }), wantStatus: 200, wantRecorded: true},
		{name: "comment by a bot", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent fix it"), func(m map[string]any) { obj(m, "sender")["type"] = "Bot" }), wantStatus: 200, wantRecorded: true},
		{name: "comment by ourselves", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent fix it"), func(m map[string]any) { obj(m, "sender")["login"] = "PullWright[bot]" }), wantStatus: 200, wantRecorded: true},
		{name: "comment with our marker", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("<!-- pullwright:task=1 step=2 -->\n/agent fix it"), wantStatus: 200, wantRecorded: true},
		{name: "created without installation", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent fix it"), func(m map[string]any) { delete(m, "installation") }), wantStatus: 200, wantRecorded: true},
		{name: "command in a quote", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("> /agent fix it\n\nno thanks"), wantStatus: 200, wantRecorded: true},

		// Comments that create a task.
		{name: "fix", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent fix the typo\nin the README"), wantStatus: 202, wantBody: "accepted", wantRecorded: true,
			want: wantTask{Kind: task.KindFix, Instructions: "the typo\nin the README"}},
		{name: "bare instructions", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("Thanks!\r\n\r\n/agent please fix the typo"), wantStatus: 202, wantRecorded: true,
			want: wantTask{Kind: task.KindFix, Instructions: "please fix the typo"}},
		{name: "fix in a mode", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent tdd the empty page"), wantStatus: 202, wantRecorded: true,
			want: wantTask{Kind: task.KindFix, Instructions: "the empty page", Mode: "tdd"}},
		{name: "fix on a pull request", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent fix it"), onPR),
			wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindFix, Instructions: "it", IsPR: true}},
		{name: "pull_request null is not a PR", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent fix it"), func(m map[string]any) { obj(m, "issue")["pull_request"] = nil }),
			wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindFix, Instructions: "it"}},
		{name: "empty fix with issue body", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent fix"), wantStatus: 202, wantRecorded: true,
			want: wantTask{Kind: task.KindFix}},
		{name: "empty fix with empty issue body", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent fix"), func(m map[string]any) { obj(m, "issue")["body"] = nil }),
			wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindReply, Reply: "What should I fix?"}},
		{name: "empty fix with blank issue body", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent fix"), func(m map[string]any) { obj(m, "issue")["body"] = " \r\n " }),
			wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindReply, Reply: "`/agent fix <instructions>`"}},
		{name: "locked issue", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent fix it"), func(m map[string]any) { obj(m, "issue")["locked"] = true }),
			wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindReply, Reply: "locked"}},
		{name: "cancel on locked issue still cancels", d: delivery{event: "issue_comment"}, file: created, edit: then(commentBody("/agent cancel"), func(m map[string]any) { obj(m, "issue")["locked"] = true }),
			wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindCancel}},
		{name: "help", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent help"), wantStatus: 202, wantRecorded: true,
			want: wantTask{Kind: task.KindReply, Reply: Usage("/agent")}},
		{name: "word alone", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent"), wantStatus: 202, wantRecorded: true,
			want: wantTask{Kind: task.KindReply, Reply: Usage("/agent")}},
		{name: "typo", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent stauts"), wantStatus: 202, wantRecorded: true,
			want: wantTask{Kind: task.KindReply, Reply: "did you mean `status`?"}},
		{name: "status", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent status"), wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindStatus}},
		{name: "cancel", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent cancel"), wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindCancel}},
		{name: "approve", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/approve r-17"), wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindApprove, RequestID: "r-17"}},
		{name: "reject", d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/reject use make test"), wantStatus: 202, wantRecorded: true, want: wantTask{Kind: task.KindReject, Instructions: "use make test"}},
		{name: "custom command word", cfg: func(c *Config) { c.Command = "/bot" }, d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/bot fix it"), wantStatus: 202, wantRecorded: true,
			want: wantTask{Kind: task.KindFix, Instructions: "it"}},
		{name: "default word off when custom", cfg: func(c *Config) { c.Command = "/bot" }, d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent fix it"), wantStatus: 200, wantRecorded: true},
		{name: "no bot login configured", cfg: func(c *Config) { c.BotLogin = "" }, d: delivery{event: "issue_comment"}, file: created, edit: commentBody("/agent fix it"), wantStatus: 202, wantRecorded: true,
			want: wantTask{Kind: task.KindFix, Instructions: "it"}},
		{name: "form-encoded body", d: delivery{event: "issue_comment", header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}, file: created, edit: commentBody("/agent fix it"), wantStatus: 202, wantRecorded: true,
			want: wantTask{Kind: task.KindFix, Instructions: "it"}},

		// Bad JSON after a good signature.
		{name: "truncated JSON", d: delivery{event: "issue_comment"}, file: created, edit: nil, wantStatus: 400},
		{name: "issue_comment with wrong field types", d: delivery{event: "issue_comment"}, file: created, edit: func(m map[string]any) { obj(m, "issue")["number"] = "one" }, wantStatus: 400},
		{name: "check_run with wrong field types", d: delivery{event: "check_run"}, file: "check_run.requested_action.json", edit: func(m map[string]any) {
			obj(m, "requested_action")["identifier"] = "approve"
			obj(m, "check_run")["external_id"] = "12-1"
			obj(m, "sender")["type"] = 2 // a zero Type must not pass for a person
		}, wantStatus: 400},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newFakeRecorder()
			h, logs := newHandler(t, rec, tt.cfg)
			d := tt.d
			d.id = fmt.Sprintf("delivery-%d", i)
			d.body = variant(t, tt.file, tt.edit)
			if tt.name == "truncated JSON" {
				d.body = d.body[:len(d.body)/2]
			}
			if tt.d.header.Get("Content-Type") == "application/x-www-form-urlencoded" {
				d.body = []byte(url.Values{"payload": {string(d.body)}}.Encode())
			}
			w := serve(h, d)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %q", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantBody != "" && strings.TrimSpace(w.Body.String()) != tt.wantBody {
				t.Errorf("body %q, want %q", w.Body, tt.wantBody)
			}
			deliveries, tasks := rec.snapshot()
			if got := len(deliveries) == 1; got != tt.wantRecorded {
				t.Fatalf("recorded %d deliveries, want recorded=%v", len(deliveries), tt.wantRecorded)
			}
			if tt.wantRecorded {
				got := deliveries[d.id]
				want := task.Delivery{ID: d.id, Event: d.event, Action: got.Action, ReceivedAt: testNow}
				head := got.Head
				got.Head = nil
				if got != want {
					t.Errorf("delivery %+v, want %+v", got, want)
				}
				if (head == nil) != (tt.wantHead == nil) || (head != nil && *head != *tt.wantHead) {
					t.Errorf("delivery's head %+v, want %+v", head, tt.wantHead)
				}
			}
			if tt.want.Kind == "" {
				if len(tasks) != 0 {
					t.Fatalf("got task %+v, want none", tasks[0])
				}
				return
			}
			if len(tasks) != 1 {
				t.Fatalf("got %d tasks, want 1", len(tasks))
			}
			checkTask(t, tasks[0], d.id, tt.want)
			if !strings.Contains(logs.String(), `"task_id":1`) {
				t.Errorf("log has no task_id: %s", logs)
			}
		})
	}
}

// checkTask compares a task made from issue_comment.created.json.
func checkTask(t *testing.T, got task.Task, deliveryID string, want wantTask) {
	t.Helper()
	if got.Kind != want.Kind {
		t.Fatalf("kind %q, want %q (reply %q)", got.Kind, want.Kind, got.Reply)
	}
	if got.Mode != task.Mode(want.Mode) {
		t.Errorf("mode %q, want %q", got.Mode, want.Mode)
	}
	if got.Instructions != want.Instructions {
		t.Errorf("instructions %q, want %q", got.Instructions, want.Instructions)
	}
	if got.Answering.RequestID != want.RequestID {
		t.Errorf("request id %q, want %q", got.Answering.RequestID, want.RequestID)
	}
	if want.Reply != "" && !strings.Contains(got.Reply, want.Reply) {
		t.Errorf("reply %q does not contain %q", got.Reply, want.Reply)
	}
	if want.Kind != task.KindReply && got.Reply != "" {
		t.Errorf("%s task with reply %q", got.Kind, got.Reply)
	}
	wantRepo := pullwright.Repo{InstallationID: 1, Owner: "Codertocat", Name: "Hello-World", CloneURL: "https://github.com/Codertocat/Hello-World.git", DefaultBranch: "master", ID: 186853002}
	if got.Repo != wantRepo {
		t.Errorf("repo %+v, want %+v", got.Repo, wantRepo)
	}
	if got.Issue != 1 || got.IsPR != want.IsPR || got.CommentID != 492700400 {
		t.Errorf("issue %d, is_pr %v, comment %d; want 1, %v, 492700400", got.Issue, got.IsPR, got.CommentID, want.IsPR)
	}
	if got.Requester != (task.Person{Login: "Codertocat", ID: 21031067}) {
		t.Errorf("requester %+v", got.Requester)
	}
	if got.DeliveryID != deliveryID || got.State != task.Queued || !got.CreatedAt.Equal(testNow) || !got.RunAfter.Equal(testNow) || got.ID == 0 {
		t.Errorf("delivery %q state %q created %v run after %v id %d", got.DeliveryID, got.State, got.CreatedAt, got.RunAfter, got.ID)
	}
}

// TestSignatureTestVector uses the example from GitHub's docs (FACTS.md §1).
func TestSignatureTestVector(t *testing.T) {
	const (
		secret = "It's a Secret to Everybody"
		body   = "Hello, World!"
		header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	)
	rec := newFakeRecorder()
	h, _ := newHandler(t, rec, func(c *Config) { c.Secret = []byte(secret) })
	if !h.validSignature([]byte(body), header) {
		t.Fatal("GitHub's test vector does not verify")
	}
	for _, bad := range []string{
		"", "sha256=", "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
		"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e18",
		"SHA256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
		"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e1700",
	} {
		if h.validSignature([]byte(body), bad) {
			t.Errorf("signature %q accepted", bad)
		}
	}
	if h.validSignature([]byte(body+"\n"), header) {
		t.Error("signature accepted for a different body")
	}
	// Through the handler: the signature passes, so the answer is about the
	// JSON (400), not the signature (401).
	w := serve(h, delivery{event: "ping", id: "v", body: []byte(body), sig: str(header)})
	if w.Code != http.StatusBadRequest {
		t.Errorf("status %d, want 400", w.Code)
	}
	if rec.calls != 0 {
		t.Errorf("store called %d times for invalid JSON", rec.calls)
	}
}

func TestNew(t *testing.T) {
	rec := newFakeRecorder()
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"no secret", Config{Recorder: rec}},
		{"empty secret", Config{Secret: []byte{}, Recorder: rec}},
		{"no recorder", Config{Secret: testSecret}},
		{"command with space", Config{Secret: testSecret, Recorder: rec, Command: "/agent fix"}},
		{"negative max body", Config{Secret: testSecret, Recorder: rec, MaxBody: -1}},
	} {
		if _, err := New(tt.cfg); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
	h, err := New(Config{Secret: testSecret, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if h.word != DefaultCommand || h.maxBody != DefaultMaxBody || h.now == nil || h.log == nil {
		t.Errorf("defaults not applied: %+v", h)
	}
}

func TestRedelivery(t *testing.T) {
	rec := newFakeRecorder()
	h, _ := newHandler(t, rec, nil)
	d := delivery{event: "issue_comment", id: "72d3162e-cc78-11e3-81ab-4c9367dc0958", body: variant(t, "issue_comment.created.json", commentBody("/agent fix it"))}
	if w := serve(h, d); w.Code != http.StatusAccepted {
		t.Fatalf("first: status %d", w.Code)
	}
	w := serve(h, d)
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != "duplicate delivery" {
		t.Fatalf("redelivery: status %d body %q", w.Code, w.Body)
	}
	if _, tasks := rec.snapshot(); len(tasks) != 1 {
		t.Fatalf("%d tasks after a redelivery, want 1", len(tasks))
	}
	// An ignored delivery is de-duplicated the same way.
	p := delivery{event: "ping", id: "p", body: payload(t, "ping.json")}
	serve(h, p)
	if w := serve(h, p); w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != "duplicate delivery" {
		t.Fatalf("ping redelivery: status %d body %q", w.Code, w.Body)
	}
}

func TestStoreFailure(t *testing.T) {
	rec := newFakeRecorder()
	rec.fail = errors.New("disk full")
	h, logs := newHandler(t, rec, nil)
	d := delivery{event: "issue_comment", id: "d1", body: variant(t, "issue_comment.created.json", commentBody("/agent fix it"))}
	w := serve(h, d)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", w.Code)
	}
	if strings.Contains(w.Body.String(), "disk full") {
		t.Errorf("internal error leaked to the response: %q", w.Body)
	}
	if deliveries, tasks := rec.snapshot(); len(deliveries)+len(tasks) != 0 {
		t.Fatalf("something was written: %v %v", deliveries, tasks)
	}
	if !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), "disk full") {
		t.Errorf("failure not logged as an error: %s", logs)
	}
	// GitHub's redelivery of the failed delivery works once the store is back.
	rec.mu.Lock()
	rec.fail = nil
	rec.mu.Unlock()
	if w := serve(h, d); w.Code != http.StatusAccepted {
		t.Fatalf("redelivery after failure: status %d", w.Code)
	}
	if _, tasks := rec.snapshot(); len(tasks) != 1 {
		t.Fatalf("%d tasks, want 1", len(tasks))
	}
}

func TestFixWhileActive(t *testing.T) {
	rec := newFakeRecorder()
	h, _ := newHandler(t, rec, nil)
	first := delivery{event: "issue_comment", id: "a", body: variant(t, "issue_comment.created.json", commentBody("/agent fix it"))}
	second := delivery{event: "issue_comment", id: "b", body: variant(t, "issue_comment.created.json", commentBody("/agent fix it again"))}
	if w := serve(h, first); w.Code != http.StatusAccepted {
		t.Fatalf("first: %d", w.Code)
	}
	if w := serve(h, second); w.Code != http.StatusAccepted {
		t.Fatalf("second: %d %q", w.Code, w.Body)
	}
	deliveries, tasks := rec.snapshot()
	if len(deliveries) != 2 || len(tasks) != 2 {
		t.Fatalf("%d deliveries, %d tasks; want 2, 2", len(deliveries), len(tasks))
	}
	// The worker answers it with a link to the running task.
	checkTask(t, tasks[1], "b", wantTask{Kind: task.KindBusy})

	// A status request on the same issue is not refused.
	status := delivery{event: "issue_comment", id: "c", body: variant(t, "issue_comment.created.json", commentBody("/agent status"))}
	if w := serve(h, status); w.Code != http.StatusAccepted {
		t.Fatalf("status: %d", w.Code)
	}
}

func TestFixWhileActiveReplyFails(t *testing.T) {
	rec := newFakeRecorder()
	rec.failFix = task.ErrActive
	h, _ := newHandler(t, rec, nil)
	d := delivery{event: "issue_comment", id: "a", body: variant(t, "issue_comment.created.json", commentBody("/agent fix it"))}
	// The fake refuses the fix with ErrActive; the reply that follows fails.
	h.rec = &failSecond{fakeRecorder: rec}
	if w := serve(h, d); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", w.Code)
	}
	if deliveries, tasks := rec.snapshot(); len(deliveries)+len(tasks) != 0 {
		t.Fatalf("something was written: %v %v", deliveries, tasks)
	}
}

// failSecond passes the first Record call through and fails the second.
type failSecond struct {
	*fakeRecorder
	n int
}

func (f *failSecond) Record(ctx context.Context, d task.Delivery, t *task.Task) error {
	f.n++
	if f.n == 2 {
		return errors.New("connection reset")
	}
	return f.fakeRecorder.Record(ctx, d, t)
}

func TestRecordHasDeadline(t *testing.T) {
	rec := newFakeRecorder()
	h, _ := newHandler(t, rec, nil)
	serve(h, delivery{event: "ping", id: "p", body: payload(t, "ping.json")})
	if rec.calls != 1 || rec.noDeadline {
		t.Fatalf("calls %d, no deadline %v", rec.calls, rec.noDeadline)
	}
}

func TestGHESPayload(t *testing.T) {
	rec := newFakeRecorder()
	h, _ := newHandler(t, rec, nil)
	body := variant(t, "issue_comment.edited.ghes.json", then(commentBody("/agent fix it"), func(m map[string]any) {
		m["action"] = "created"
		delete(m, "changes")
	}))
	if w := serve(h, delivery{event: "issue_comment", id: "g", body: body}); w.Code != http.StatusAccepted {
		t.Fatalf("status %d", w.Code)
	}
	_, tasks := rec.snapshot()
	want := pullwright.Repo{InstallationID: 5, Owner: "Codertocat", Name: "Hello-World", CloneURL: "https://octocoders.github.io/Codertocat/Hello-World.git", DefaultBranch: "master", ID: 118}
	if len(tasks) != 1 || tasks[0].Repo != want {
		t.Fatalf("tasks %+v, want repo %+v", tasks, want)
	}
}

// TestLogging checks the fields of the one log line per delivery, and that
// neither the body nor the secret reach the log.
func TestLogging(t *testing.T) {
	rec := newFakeRecorder()
	h, logs := newHandler(t, rec, nil)
	serve(h, delivery{event: "issue_comment", id: "log-1", body: variant(t, "issue_comment.created.json", commentBody("/agent fix the secret sauce"))})
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("want exactly one JSON log line: %v\n%s", err, logs)
	}
	want := map[string]any{
		"delivery_id": "log-1", "event": "issue_comment", "action": "created", "installation_id": 1.0,
		"repo": "Codertocat/Hello-World", "issue": 1.0, "outcome": "fix", "status": 202.0, "task_id": 1.0, "kind": "fix",
	}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("log %s = %v, want %v", k, line[k], v)
		}
	}
	if s := logs.String(); strings.Contains(s, "secret sauce") || strings.Contains(s, string(testSecret)) {
		t.Errorf("log leaks the body or the secret: %s", s)
	}
}

// TestConcurrentDeliveries sends the same and different deliveries at once;
// run with -race.
func TestConcurrentDeliveries(t *testing.T) {
	rec := newFakeRecorder()
	h, _ := newHandler(t, rec, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := variant(t, "issue_comment.created.json", commentBody("/agent status"))
	var wg sync.WaitGroup
	codes := make([]int, 40)
	for i := range codes {
		wg.Go(func() {
			d := delivery{event: "issue_comment", id: fmt.Sprintf("d-%d", i%20), body: body}
			r := d.request()
			r.RequestURI = ""
			u, _ := url.Parse(srv.URL + "/webhook")
			r.URL = u
			resp, err := srv.Client().Do(r)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	accepted, dup := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusAccepted:
			accepted++
		case http.StatusOK:
			dup++
		default:
			t.Errorf("status %d", c)
		}
	}
	if _, tasks := rec.snapshot(); accepted != 20 || dup != 20 || len(tasks) != 20 {
		t.Errorf("accepted %d, duplicates %d, tasks %d; want 20 each", accepted, dup, len(tasks))
	}
}

// The approval check run's buttons become answer tasks bound to the
// request (external_id) and the commit the run is on (head_sha).
func TestCheckRunButtons(t *testing.T) {
	button := func(identifier, externalID string) func(map[string]any) {
		return func(m map[string]any) {
			obj(m, "requested_action")["identifier"] = identifier
			obj(m, "check_run")["external_id"] = externalID
		}
	}
	tests := []struct {
		name       string
		edit       func(map[string]any)
		wantStatus int
		wantKind   task.Kind
	}{
		{"approve", button("approve", "12-1"), 202, task.KindApprove},
		{"reject", button("reject", "12-1"), 202, task.KindReject},
		{"another app's button", button("lgtm|26764", "12-1"), 200, ""},
		{"no external id", button("approve", ""), 200, ""},
		{"pressed by a bot", func(m map[string]any) {
			button("approve", "12-1")(m)
			obj(m, "sender")["type"] = "Bot"
		}, 200, ""},
		{"rerequested, not a button", func(m map[string]any) {
			button("approve", "12-1")(m)
			m["action"] = "rerequested"
		}, 200, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newFakeRecorder()
			h, _ := newHandler(t, rec, nil)
			d := delivery{event: "check_run", id: fmt.Sprint("cr-", i), body: variant(t, "check_run.requested_action.json", tc.edit)}
			if w := serve(h, d); w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d (%s)", w.Code, tc.wantStatus, w.Body)
			}
			_, tasks := rec.snapshot()
			if tc.wantKind == "" {
				if len(tasks) != 0 {
					t.Fatalf("task created: %+v", tasks)
				}
				return
			}
			if len(tasks) != 1 {
				t.Fatalf("%d tasks, want 1", len(tasks))
			}
			got := tasks[0]
			if got.Kind != tc.wantKind || got.Answering.RequestID != "12-1" || got.Answering.SHA == "" || got.Issue != 0 ||
				got.Repo.InstallationID != 690857 || got.Repo.FullName() != "electron/electron" || got.Requester.Login == "" {
				t.Fatalf("task = %+v", got)
			}
		})
	}
}
