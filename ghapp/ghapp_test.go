package ghapp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/syncbuf"
)

const (
	inst  = int64(7)
	owner = "acme"
	repo  = "widgets"
)

// waits records the retry waits instead of sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

type env struct {
	fake  *fakegithub.Server
	app   *App
	logs  *syncbuf.Buffer
	waits *waits
}

// newEnv starts a fake with one installation on acme/widgets and issue #1,
// and an App whose retry waits are recorded, not slept.
func newEnv(t *testing.T, mod ...func(*Config)) *env {
	t.Helper()
	return newEnvOn(t, fakegithub.New(t), mod...)
}

func newEnvOn(t *testing.T, fake *fakegithub.Server, mod ...func(*Config)) *env {
	t.Helper()
	fake.AddInstallation(inst, owner+"/"+repo)
	fake.AddIssue(owner, repo, fakegithub.Issue{Number: 1, Title: "Off by one", Body: "pagination skips a row", Author: "alice"})
	logs := &syncbuf.Buffer{}
	cfg := Config{
		AppID:      fake.AppID,
		PrivateKey: fake.PrivateKeyPEM(),
		BaseURL:    fake.URL,
		Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		MinBackoff: time.Millisecond,
	}
	for _, m := range mod {
		m(&cfg)
	}
	app, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	w := &waits{}
	app.rt.sleep = w.sleep
	return &env{fake: fake, app: app, logs: logs, waits: w}
}

// count returns how many recorded requests match method and path exactly.
func (e *env) count(method, path string) int {
	n := 0
	for _, r := range e.fake.Requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

func TestNewErrors(t *testing.T) {
	fake := fakegithub.New(t)
	ecKey := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: mustPKCS8EC(t)})
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no app id", Config{PrivateKey: fake.PrivateKeyPEM()}, "missing GitHub App ID"},
		{"no key", Config{AppID: 1}, "missing GitHub App private key"},
		{"not pem", Config{AppID: 1, PrivateKey: []byte("hello")}, "not PEM encoded"},
		{"bad der", Config{AppID: 1, PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("junk")})}, "neither a PKCS#1 nor a PKCS#8"},
		{"not rsa", Config{AppID: 1, PrivateKey: ecKey}, "GitHub Apps use RSA keys"},
		{"bad base url", Config{AppID: 1, PrivateKey: fake.PrivateKeyPEM(), BaseURL: "ftp://x"}, "base URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := New(Config{AppID: 1, PrivateKey: fake.PrivateKeyPEM()}); err != nil {
		t.Fatalf("New with defaults: %v", err)
	}
}

func TestToken(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tok, err := e.app.Token(ctx, inst)
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	if !strings.HasPrefix(tok, "ghs_") {
		t.Errorf("token %q does not look like an installation token", tok)
	}
	if id, ok := e.fake.ValidToken(tok); !ok || id != inst {
		t.Errorf("fake ValidToken = %d, %v; want %d, true", id, ok, inst)
	}
	again, err := e.app.Token(ctx, inst)
	if err != nil || again != tok {
		t.Errorf("second Token = %q, %v; want the cached token", again, err)
	}
	reqs := e.fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %+v, want exactly one token mint", reqs)
	}
	if r := reqs[0]; r.Method != "POST" || r.Path != fmt.Sprintf("/app/installations/%d/access_tokens", inst) || r.Auth != "jwt" || r.Status != http.StatusCreated {
		t.Errorf("token request = %+v, want POST access_tokens with a valid JWT answered 201", r)
	}

	if _, err := e.app.Token(ctx, 999); err == nil || !strings.Contains(err.Error(), "installation 999") {
		t.Errorf("Token(unknown installation) error = %v", err)
	}
	if _, err := e.app.Token(ctx, 0); err == nil {
		t.Error("Token(0) succeeded")
	}
}

func TestTokenWrongKeyRefused(t *testing.T) {
	fake := fakegithub.New(t)
	fake.AddInstallation(inst, owner+"/"+repo)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	app, err := New(Config{
		AppID:      fake.AppID,
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)}),
		BaseURL:    fake.URL,
		Logger:     slog.New(slog.DiscardHandler),
		MinBackoff: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Token(context.Background(), inst); err == nil {
		t.Fatal("Token with a key GitHub does not know succeeded")
	} else if StatusCode(err) != http.StatusUnauthorized {
		t.Errorf("StatusCode(%v) = %d, want 401", err, StatusCode(err))
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Auth != "bad" || reqs[0].Status != http.StatusUnauthorized {
		t.Errorf("requests = %+v, want one refused JWT", reqs)
	}
}

func TestIdentity(t *testing.T) {
	for _, private := range []bool{false, true} {
		t.Run(fmt.Sprintf("private=%v", private), func(t *testing.T) {
			e := newEnv(t)
			e.fake.SetPrivateMode(private)
			want := pullwright.Identity{
				Login: e.fake.AppSlug + "[bot]",
				Name:  e.fake.AppSlug + "[bot]",
				Email: fmt.Sprintf("%d+%s[bot]@users.noreply.github.com", fakegithub.BotUserID, e.fake.AppSlug),
				ID:    fakegithub.BotUserID,
			}
			for range 2 {
				got, err := e.app.Identity(context.Background())
				if err != nil {
					t.Fatalf("Identity: %v", err)
				}
				if got != want {
					t.Errorf("Identity = %+v, want %+v", got, want)
				}
			}
			if n := e.count("GET", "/app"); n != 1 {
				t.Errorf("GET /app made %d times, want 1 (cached)", n)
			}
			for _, r := range e.fake.Requests() {
				if r.Path == "/app" && r.Auth != "jwt" {
					t.Errorf("GET /app auth = %s, want jwt", r.Auth)
				}
			}
			wantUserGets := 1
			if private {
				wantUserGets = 2 // refused without credentials, then with a token
			}
			if n := e.count("GET", "/users/"+want.Login); n != wantUserGets {
				t.Errorf("GET /users/%s made %d times, want %d", want.Login, n, wantUserGets)
			}
		})
	}
}

func TestAddReaction(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cid := e.fake.AddComment(owner, repo, 1, "alice", "/agent fix it")
	for range 2 { // the second one is a no-op on GitHub (200)
		if err := e.app.AddReaction(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, cid, "eyes"); err != nil {
			t.Fatalf("AddReaction: %v", err)
		}
	}
	if got := e.fake.Reactions(owner, repo, cid); len(got) != 1 || got[0] != "eyes" {
		t.Errorf("reactions = %v, want [eyes]", got)
	}
	path := fmt.Sprintf("/repos/%s/%s/issues/comments/%d/reactions", owner, repo, cid)
	for _, r := range e.fake.Requests() {
		if r.Path == path && r.Auth != "token" {
			t.Errorf("reaction request auth = %s, want token", r.Auth)
		}
	}
	err := e.app.AddReaction(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 424242, "eyes")
	if err == nil || !strings.Contains(err.Error(), "add reaction \"eyes\" to comment 424242 in acme/widgets") {
		t.Errorf("AddReaction(missing comment) error = %v", err)
	}
	if err := e.app.AddReaction(ctx, pullwright.Repo{InstallationID: inst, Owner: "acme", Name: "secret"}, cid, "eyes"); StatusCode(err) != http.StatusNotFound {
		t.Errorf("AddReaction on a repo outside the installation: error %v, want 404", err)
	}
}

func TestUpsertComment(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bot := e.fake.AppSlug + "[bot]"
	mk := Marker("task-1/status")

	// A human quoting the marker must never be edited.
	human := e.fake.AddComment(owner, repo, 1, "mallory", "look: "+mk)

	id, err := postedID(e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "task-1/status", 0, "Working on it\n"))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	cs := e.fake.Comments(owner, repo, 1)
	if len(cs) != 2 || cs[1].ID != id || cs[1].Author != bot || cs[1].AuthorType != "Bot" {
		t.Fatalf("after create comments = %+v, want a second one by %s with id %d", cs, bot, id)
	}
	if want := "Working on it\n\n" + mk; cs[1].Body != want {
		t.Errorf("body = %q, want %q", cs[1].Body, want)
	}

	steps := []struct {
		name      string
		commentID int64
		body      string
		wantNew   bool
	}{
		{"edit by id", id, "Step 2", false},
		{"id 0 finds the marker", 0, "Step 3", false},
		{"gone id (404) creates a new one", 987654, "Step 4", true},
	}
	for _, st := range steps {
		got, err := postedID(e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "task-1/status", st.commentID, st.body))
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if (got != id) != st.wantNew {
			t.Errorf("%s: id = %d (first %d), want new=%v", st.name, got, id, st.wantNew)
		}
	}
	cs = e.fake.Comments(owner, repo, 1)
	if len(cs) != 3 {
		t.Fatalf("comments = %+v, want human + 2 bot comments", cs)
	}
	if cs[0].ID != human || cs[0].Edits != 0 {
		t.Errorf("human comment was touched: %+v", cs[0])
	}
	if cs[1].Edits != 2 || !strings.HasPrefix(cs[1].Body, "Step 3") {
		t.Errorf("bot comment = %+v, want 2 edits and body Step 3", cs[1])
	}
	if n := e.count("POST", "/repos/acme/widgets/issues/1/comments"); n != 2 {
		t.Errorf("POST comments made %d times, want 2", n)
	}

	// Another marker key is another comment; "task-1" is not a prefix match of "task-10".
	if _, err := e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "task-1", 0, "x"); err != nil {
		t.Fatal(err)
	}
	if got := len(e.fake.Comments(owner, repo, 1)); got != 4 {
		t.Errorf("different marker: %d comments, want 4", got)
	}

	// A bot comment that quotes another task's marker (a fork's file name
	// in a failure, say) is not that task's comment: only the marker that
	// ends a comment tags it.
	quoting, err := postedID(e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "task-2/status", 0, "failed: `"+Marker("task-9/status")+"` is protected"))
	if err != nil {
		t.Fatal(err)
	}
	nine, err := postedID(e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "task-9/status", 0, "Task 9 working"))
	if err != nil {
		t.Fatal(err)
	}
	if nine == quoting {
		t.Errorf("task 9's status edited task 2's comment, which quotes its marker")
	}
	if cs := e.fake.Comments(owner, repo, 1); len(cs) != 6 || !strings.HasPrefix(cs[4].Body, "failed: ") {
		t.Errorf("comments after the quoted marker = %+v", cs)
	}

	if _, err := e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 99, "k", 0, "x"); err == nil ||
		!strings.Contains(err.Error(), "acme/widgets#99") {
		t.Errorf("comment on a missing issue: error %v", err)
	}
}

func TestUpsertCommentLockedIssue(t *testing.T) {
	e := newEnv(t)
	n := e.fake.AddIssue(owner, repo, fakegithub.Issue{Title: "locked", Locked: true})
	if _, err := e.app.UpsertComment(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, n, "k", 0, "hi"); err != nil {
		t.Fatalf("comment on a locked issue: %v", err)
	}
}

func TestUpsertCommentTooLong(t *testing.T) {
	e := newEnv(t)
	for _, unit := range []string{"a", "é", "🙂"} {
		body := strings.Repeat(unit, MaxBodyChars+10)
		id, err := postedID(e.app.UpsertComment(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "long-"+unit, 0, body))
		if err != nil {
			t.Fatalf("UpsertComment(%q×%d): %v", unit, MaxBodyChars+10, err)
		}
		var got string
		for _, c := range e.fake.Comments(owner, repo, 1) {
			if c.ID == id {
				got = c.Body
			}
		}
		if n := utf8.RuneCountInString(got); n > MaxBodyChars || n < MaxBodyChars-200 {
			t.Errorf("%q: body has %d code points, want just under %d", unit, n, MaxBodyChars)
		}
		if !utf8.ValidString(got) || !strings.Contains(got, "This text was cut") || !strings.HasSuffix(got, Marker("long-"+unit)) {
			t.Errorf("%q: cut body lacks the note or the marker: ...%q", unit, got[len(got)-200:])
		}
	}
}

func TestMarker(t *testing.T) {
	tests := []struct{ key, want string }{
		{"task-1/step-2", "<!-- pullwright:task-1/step-2 -->"},
		{"a-->b", "<!-- pullwright:a--_b -->"},
		{"x\ny<z", "<!-- pullwright:x_y_z -->"},
	}
	for _, tt := range tests {
		if got := Marker(tt.key); got != tt.want {
			t.Errorf("Marker(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestIssue(t *testing.T) {
	tests := []struct {
		name          string
		comments      int
		pageSize, cap int
		wantFirst     int // index (0-based, creation order) of the first comment returned
		wantListCalls int
	}{
		{"no comments", 0, 3, 5, 0, 1},
		{"one page", 3, 3, 5, 0, 1},
		{"all fit in cap", 5, 3, 5, 0, 2},
		{"capped, small pages", 12, 3, 5, 7, 4},               // pages 2..4 after page 1
		{"capped, pages skipped", 20, 3, 5, 15, 4},            // pages 5..7 after page 1
		{"capped, real sizes", 130, 100, 100, 30, 2},          // pages 1 and 2
		{"capped, real cap small pages", 130, 30, 100, 30, 5}, // pages 1, 2..5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.app.pageSize, e.app.commentCap = tt.pageSize, tt.cap
			n := e.fake.AddIssue(owner, repo, fakegithub.Issue{Title: "T", Body: "B", Author: "bob", Locked: true, IsPR: true, Labels: []string{"pullwright", "good first issue"}})
			var ids []int64
			for i := range tt.comments {
				author := "alice"
				if i%2 == 1 {
					author = "dependabot[bot]"
				}
				ids = append(ids, e.fake.AddComment(owner, repo, n, author, fmt.Sprintf("c%d", i)))
			}
			got, err := e.app.Issue(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, n)
			if err != nil {
				t.Fatalf("Issue: %v", err)
			}
			if got.Number != n || got.Title != "T" || got.Body != "B" || got.Author != "bob" || !got.Locked || !got.IsPR ||
				!slices.Equal(got.Labels, []string{"pullwright", "good first issue"}) {
				t.Errorf("Issue = %+v", got)
			}
			want := ids[tt.wantFirst:]
			if len(got.Comments) != len(want) {
				t.Fatalf("%d comments, want %d", len(got.Comments), len(want))
			}
			for i, c := range got.Comments {
				if c.ID != want[i] {
					t.Fatalf("comment %d id = %d, want %d", i, c.ID, want[i])
				}
				idx := tt.wantFirst + i
				if wantType := map[bool]string{false: "User", true: "Bot"}[idx%2 == 1]; c.AuthorType != wantType || c.Body != fmt.Sprintf("c%d", idx) || c.CreatedAt.IsZero() {
					t.Errorf("comment %d = %+v", i, c)
				}
			}
			if calls := e.count("GET", fmt.Sprintf("/repos/%s/%s/issues/%d/comments", owner, repo, n)); calls != tt.wantListCalls {
				t.Errorf("list comments called %d times, want %d", calls, tt.wantListCalls)
			}
		})
	}

	e := newEnv(t)
	if _, err := e.app.Issue(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 404); StatusCode(err) != http.StatusNotFound ||
		!strings.Contains(err.Error(), "get issue acme/widgets#404") {
		t.Errorf("missing issue: error %v", err)
	}
	plain, err := e.app.Issue(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1)
	if err != nil || plain.IsPR || plain.Locked || plain.Author != "alice" || plain.Labels != nil {
		t.Errorf("plain issue = %+v, %v", plain, err)
	}
}

func TestOpenPullRequest(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{
		Title: "Fix pagination", Body: "Closes #1", Head: "pullwright/task-1", Base: "main", Draft: true,
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !first.Created || first.Number == 0 || first.URL != fmt.Sprintf("https://github.com/acme/widgets/pull/%d", first.Number) {
		t.Errorf("first = %+v", first)
	}
	second, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{
		Title: "Fix pagination (v2)", Body: "Closes #1, again", Head: "pullwright/task-1", Base: "main",
	})
	if err != nil {
		t.Fatalf("second: %v", err)
	}
	if second.Created || second.Number != first.Number || second.URL != first.URL {
		t.Errorf("second = %+v, want the same PR with Created=false", second)
	}
	prs := e.fake.PullRequests(owner, repo)
	if len(prs) != 1 {
		t.Fatalf("pull requests = %+v, want one", prs)
	}
	if p := prs[0]; p.Title != "Fix pagination (v2)" || p.Body != "Closes #1, again" || p.Head != "pullwright/task-1" || p.Base != "main" || !p.Draft || p.State != "open" {
		t.Errorf("pull request = %+v", p)
	}
	if n := e.count("POST", "/repos/acme/widgets/pulls"); n != 1 {
		t.Errorf("POST pulls made %d times, want 1", n)
	}
	for _, r := range e.fake.Requests() {
		if r.Method == "GET" && r.Path == "/repos/acme/widgets/pulls" && !strings.Contains(r.Query, "head=acme%3Apullwright%2Ftask-1") {
			t.Errorf("PR lookup query %q does not filter on head=acme:pullwright/task-1", r.Query)
		}
	}

	if _, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Head: "x", Base: "main"}); err == nil {
		t.Error("PR without a title accepted")
	}
}

// TestLostAnswers covers a POST that GitHub applied but whose answer was a
// 5xx: it is not retried, and the caller's retry of the whole step finds the
// comment or pull request instead of making a second one.
func TestLostAnswers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	e.fake.FailNextAfterApply("POST", "/repos/acme/widgets/issues/1/comments", 1, http.StatusBadGateway, nil)
	if _, err := e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "task-9", 0, "v1"); StatusCode(err) != http.StatusBadGateway {
		t.Fatalf("first upsert: %v, want the 502", err)
	}
	if _, err := e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "task-9", 0, "v2"); err != nil {
		t.Fatalf("retried upsert: %v", err)
	}
	if cs := e.fake.Comments(owner, repo, 1); len(cs) != 1 || !strings.HasPrefix(cs[0].Body, "v2") || cs[0].Edits != 1 {
		t.Errorf("comments = %+v, want one, edited to v2", cs)
	}

	pr := pullwright.NewPullRequest{Title: "t", Body: "b", Head: "feature", Base: "main"}
	e.fake.FailNextAfterApply("POST", "/repos/acme/widgets/pulls", 1, http.StatusGatewayTimeout, nil)
	if _, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr); StatusCode(err) != http.StatusGatewayTimeout {
		t.Fatalf("first open: %v, want the 504", err)
	}
	pr.Title = "t2"
	out, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr)
	if err != nil || out.Created {
		t.Fatalf("retried open = %+v, %v; want the existing PR", out, err)
	}
	if prs := e.fake.PullRequests(owner, repo); len(prs) != 1 || prs[0].Title != "t2" {
		t.Errorf("pull requests = %+v, want one titled t2", prs)
	}
	if n := e.count("POST", "/repos/acme/widgets/pulls"); n != 1 {
		t.Errorf("POST pulls made %d times, want 1", n)
	}
}

func TestPermission(t *testing.T) {
	e := newEnv(t)
	for _, role := range []string{"admin", "maintain", "write", "triage", "read"} {
		e.fake.SetPermission(owner, repo, "u-"+role, role)
	}
	tests := []struct{ user, want string }{
		{"u-admin", "admin"},
		{"u-maintain", "maintain"},
		{"u-write", "write"},
		{"u-triage", "triage"},
		{"u-read", "read"},
		{"stranger", "none"}, // 404
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			got, err := e.app.Permission(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, tt.user)
			if err != nil || got != tt.want {
				t.Errorf("Permission(%s) = %q, %v; want %q", tt.user, got, err, tt.want)
			}
		})
	}
	// A user not asked about yet: u-admin's answer is cached.
	e.fake.SetPermission(owner, repo, "u-admin2", "admin")
	e.fake.FailNext("GET", "/repos/acme/widgets/collaborators", 1, http.StatusForbidden, nil)
	if _, err := e.app.Permission(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, "u-admin2"); StatusCode(err) != http.StatusForbidden {
		t.Errorf("403 answered: error %v, want a 403 error (not \"none\")", err)
	}
}

func TestRetries(t *testing.T) {
	getIssue := func(ctx context.Context, a *App) error {
		_, err := a.Issue(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1)
		return err
	}
	postComment := func(ctx context.Context, a *App) error {
		_, err := a.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "m", 0, "hello")
		return err
	}
	editComment := func(ctx context.Context, a *App) error {
		id, err := postedID(a.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "m", 0, "first"))
		if err != nil {
			return err
		}
		_, err = a.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "m", id, "second")
		return err
	}
	mintToken := func(ctx context.Context, a *App) error {
		_, err := a.Token(ctx, inst)
		return err
	}
	const issuePath = "/repos/acme/widgets/issues/1"
	const commentsPath = "/repos/acme/widgets/issues/1/comments"
	tokenPath := fmt.Sprintf("/app/installations/%d/access_tokens", inst)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	// The transport's clock is held at base, so the waits these headers
	// ask for do not shrink while the table runs on a loaded machine.
	base := time.Now()
	resetHeader := fmt.Sprint(base.Add(2 * time.Second).Unix())
	httpDate := base.Add(3 * time.Second).UTC().Format(http.TimeFormat)

	tests := []struct {
		name       string
		maxRetries int
		method     string
		path       string
		n, status  int
		header     http.Header
		call       func(context.Context, *App) error
		wantErr    []string // substrings; nil: success
		wantCalls  int      // requests to method+path
		checkWaits func(t *testing.T, w []time.Duration)
	}{
		{
			name: "502 on GET retried", method: "GET", path: issuePath, n: 2, status: 502,
			call: getIssue, wantCalls: 3,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if len(w) != 2 || w[0] <= 0 || w[0] > time.Millisecond || w[1] > 2*time.Millisecond {
					t.Errorf("waits = %v, want 2 backoffs from 1ms", w)
				}
			},
		},
		{
			name: "500 on PATCH retried", method: "PATCH", path: "/repos/acme/widgets/issues/comments/", n: 1, status: 500,
			call: editComment, wantCalls: -1,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if len(w) != 1 {
					t.Errorf("waits = %v, want one retry of the PATCH", w)
				}
			},
		},
		{
			name: "502 on POST not retried", method: "POST", path: commentsPath, n: 1, status: 502,
			call: postComment, wantErr: []string{"create comment on acme/widgets#1", "502"}, wantCalls: 1,
		},
		{
			name: "429 Retry-After 0", method: "GET", path: issuePath, n: 1, status: 429, header: h("Retry-After", "0"),
			call: getIssue, wantCalls: 2,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if len(w) != 1 || w[0] != 0 {
					t.Errorf("waits = %v, want [0s]", w)
				}
			},
		},
		{
			name: "429 Retry-After 1 on POST", method: "POST", path: commentsPath, n: 1, status: 429, header: h("Retry-After", "1"),
			call: postComment, wantCalls: 2,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if len(w) != 1 || w[0] != time.Second {
					t.Errorf("waits = %v, want [1s]", w)
				}
			},
		},
		{
			name: "secondary limit 403 with Retry-After as HTTP date", method: "POST", path: commentsPath, n: 1, status: 403,
			header: h("Retry-After", httpDate), call: postComment, wantCalls: 2,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if len(w) != 1 || w[0] <= 0 || w[0] > 3*time.Second {
					t.Errorf("waits = %v, want one in (0, 3s]", w)
				}
			},
		},
		{
			name: "primary limit 403 waits for reset", method: "GET", path: issuePath, n: 1, status: 403,
			header: h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", resetHeader), call: getIssue, wantCalls: 2,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if len(w) != 1 || w[0] <= 0 || w[0] > 2*time.Second {
					t.Errorf("waits = %v, want one in (0, 2s]", w)
				}
			},
		},
		{
			name: "plain 403 not retried", method: "GET", path: issuePath, n: 1, status: 403,
			header: h("X-RateLimit-Remaining", "4999"), call: getIssue, wantErr: []string{"403"}, wantCalls: 1,
		},
		{
			name: "404 not retried", method: "GET", path: issuePath, n: 1, status: 404,
			call: getIssue, wantErr: []string{"get issue acme/widgets#1", "404"}, wantCalls: 1,
		},
		{
			name: "budget exhausted", maxRetries: 2, method: "GET", path: issuePath, n: 10, status: 503,
			call: getIssue, wantErr: []string{"get issue acme/widgets#1", "503 Service Unavailable", "retry budget exhausted", "3 attempt"}, wantCalls: 3,
		},
		{
			name: "Retry-After beyond MaxWait", method: "GET", path: issuePath, n: 1, status: 429, header: h("Retry-After", "3600"),
			call: getIssue, wantErr: []string{"429", "wait 1h0m0s", "more than the 1m0s allowed"}, wantCalls: 1,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if len(w) != 0 {
					t.Errorf("slept %v, want no sleep", w)
				}
			},
		},
		{
			name: "reset beyond MaxWait", method: "GET", path: issuePath, n: 1, status: 403,
			header: h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", fmt.Sprint(time.Now().Add(time.Hour).Unix())),
			call:   getIssue, wantErr: []string{"403", "more than the 1m0s allowed"}, wantCalls: 1,
		},
		{
			name: "token minting retried on 429", method: "POST", path: tokenPath, n: 1, status: 429, header: h("Retry-After", "0"),
			call: mintToken, wantCalls: 2,
		},
		{
			name: "token minting not retried on 502", method: "POST", path: tokenPath, n: 1, status: 502,
			call: mintToken, wantErr: []string{"installation token for installation 7", "502"}, wantCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) {
				if tt.maxRetries != 0 {
					c.MaxRetries = tt.maxRetries
				}
			})
			e.app.rt.now = func() time.Time { return base }
			e.fake.FailNext(tt.method, tt.path, tt.n, tt.status, tt.header)
			err := tt.call(context.Background(), e.app)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("error: %v", err)
			}
			for _, s := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("error = %v, want it to contain %q", err, s)
				}
			}
			if tt.wantCalls >= 0 {
				if got := e.count(tt.method, tt.path); got != tt.wantCalls {
					t.Errorf("%s %s requested %d times, want %d", tt.method, tt.path, got, tt.wantCalls)
				}
			}
			if tt.checkWaits != nil {
				tt.checkWaits(t, e.waits.all())
			}
			if tt.wantErr == nil && len(e.waits.all()) > 0 && !strings.Contains(e.logs.String(), "github request retry") {
				t.Errorf("retries were not logged: %s", e.logs.String())
			}
		})
	}
}

func TestRetryLogLine(t *testing.T) {
	e := newEnv(t)
	e.fake.FailNext("GET", "/repos/acme/widgets/issues/1", 1, 502, nil)
	if _, err := e.app.Issue(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1); err != nil {
		t.Fatal(err)
	}
	logs := e.logs.String()
	for _, want := range []string{"github request retry", "method=GET", "path=/repos/acme/widgets/issues/1", "status=502", "wait="} {
		if !strings.Contains(logs, want) {
			t.Errorf("log %q lacks %q", logs, want)
		}
	}
}

func TestWaitPastDeadline(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CallTimeout = 5 * time.Second })
	e.fake.FailNext("GET", "/repos/acme/widgets/issues/1", 1, 429, http.Header{"Retry-After": {"20"}})
	_, err := e.app.Issue(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1)
	if err == nil || !strings.Contains(err.Error(), "would pass the call's deadline") {
		t.Errorf("error = %v, want a deadline refusal", err)
	}
	if w := e.waits.all(); len(w) != 0 {
		t.Errorf("slept %v", w)
	}
}

func TestCancelDuringWait(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxWait = time.Hour; c.CallTimeout = time.Hour })
	waiting := make(chan struct{})
	e.app.rt.sleep = func(ctx context.Context, d time.Duration) error {
		close(waiting)
		return sleepCtx(ctx, d) // really wait, for up to an hour
	}
	e.fake.FailNext("GET", "/repos/acme/widgets/issues/1", 1, 429, http.Header{"Retry-After": {"3000"}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-waiting
		cancel()
	}()
	_, err := e.app.Issue(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if n := e.count("GET", "/repos/acme/widgets/issues/1"); n != 1 {
		t.Errorf("issue requested %d times, want 1", n)
	}
}

// TestNoTokenInErrorsOrLogs drives failures after a token was minted and
// checks that neither error strings nor log lines carry it.
func TestNoTokenInErrorsOrLogs(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxRetries = 1 })
	ctx := context.Background()
	tok, err := e.app.Token(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	collect := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	e.fake.FailNext("", "/repos/", 6, 502, nil)
	_, err = e.app.Issue(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1)
	collect(err)
	_, err = e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "m", 0, "x")
	collect(err)
	e.fake.FailNext("", "/repos/", 2, 401, nil)
	collect(e.app.AddReaction(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "eyes"))
	_, err = e.app.Permission(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, "bob")
	collect(err)
	e.fake.FailNext("", "/repos/", 1, 429, http.Header{"Retry-After": {"99999"}})
	_, err = e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Title: "t", Head: "h", Base: "main"})
	collect(err)
	_, err = e.app.Token(ctx, 31337)
	collect(err)
	if len(errs) < 5 {
		t.Fatalf("only %d calls failed: %v", len(errs), errs)
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), "ghs_") {
			t.Errorf("error leaks the token: %v", err)
		}
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "github request retry") {
		t.Errorf("expected retry logs, got %q", logs)
	}
	if strings.Contains(logs, tok) || strings.Contains(logs, "ghs_") || strings.Contains(strings.ToLower(logs), "authorization") || strings.Contains(logs, "Bearer") {
		t.Errorf("logs leak credentials: %s", logs)
	}
}

func TestEnterpriseBaseURL(t *testing.T) {
	fake := fakegithub.NewWithPrefix(t, "/api/v3")
	e := newEnvOn(t, fake)
	ctx := context.Background()
	if !strings.HasSuffix(fake.URL, "/api/v3") {
		t.Fatalf("fake URL %q", fake.URL)
	}
	if _, err := e.app.Identity(ctx); err != nil {
		t.Fatalf("Identity: %v", err)
	}
	if _, err := e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "m", 0, "hi"); err != nil {
		t.Fatalf("UpsertComment: %v", err)
	}
	if _, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Title: "t", Head: "h", Base: "main"}); err != nil {
		t.Fatalf("OpenPullRequest: %v", err)
	}
	e.app.pageSize = 1
	e.fake.AddComment(owner, repo, 1, "alice", "two")
	if is, err := e.app.Issue(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1); err != nil || len(is.Comments) != 2 {
		t.Fatalf("Issue over paginated prefixed URLs: %+v, %v", is, err)
	}
	for _, r := range fake.Requests() {
		if r.Status >= 400 {
			t.Errorf("request %s %s answered %d", r.Method, r.Path, r.Status)
		}
	}

	// The same fake reached without the prefix refuses everything: the prefix is really used.
	root := strings.TrimSuffix(fake.URL, "/api/v3")
	bad, err := New(Config{AppID: fake.AppID, PrivateKey: fake.PrivateKeyPEM(), BaseURL: root, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Token(ctx, inst); StatusCode(err) != http.StatusNotFound {
		t.Errorf("token without the prefix: %v, want 404", err)
	}
}

func TestConcurrentInstallations(t *testing.T) {
	e := newEnv(t)
	e.fake.AddInstallation(8, "acme/gadgets")
	e.fake.AddIssue("acme", "gadgets", fakegithub.Issue{Number: 1, Title: "g"})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 10 {
		wg.Go(func() {
			id, r := inst, repo
			if i%2 == 1 {
				id, r = 8, "gadgets"
			}
			if _, err := e.app.UpsertComment(context.Background(), pullwright.Repo{InstallationID: id, Owner: owner, Name: r}, 1, fmt.Sprintf("k%d", i), 0, "x"); err != nil {
				errs <- err
			}
			if _, err := e.app.Identity(context.Background()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.count("POST", "/app/installations/7/access_tokens") + e.count("POST", "/app/installations/8/access_tokens"); n != 2 {
		t.Errorf("%d tokens minted, want one per installation", n)
	}
}

func mustPKCS8EC(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// postedID is UpsertComment's answer as the comment's id alone.
func postedID(p pullwright.Posted, err error) (int64, error) { return p.ID, err }

func TestReadComment(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r := pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}
	p, err := e.app.UpsertComment(ctx, r, 1, "task-1-request-1-1", 0, "May I run `make`?")
	if err != nil {
		t.Fatal(err)
	}
	made, _ := e.fake.Comment(p.ID)
	got, err := e.app.ReadComment(ctx, r, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != p.ID || got.Author != e.fake.AppSlug+"[bot]" || got.AuthorType != "Bot" || !strings.HasPrefix(got.Body, "May I run") ||
		!got.CreatedAt.Equal(made.CreatedAt) || !got.CreatedAt.Equal(p.CreatedAt) {
		t.Errorf("ReadComment = %+v; GitHub holds %+v", got, made)
	}
	if _, err := e.app.ReadComment(ctx, r, p.ID+1000); !errors.Is(err, pullwright.ErrGone) {
		t.Errorf("a comment that is not there = %v, want ErrGone", err)
	}
}
