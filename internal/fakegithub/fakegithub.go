// Package fakegithub is a stateful fake of the part of GitHub's REST API that
// Pullwright uses, served by net/http/httptest so that the production code
// paths (go-github, ghinstallation, ghapp) run unchanged against it.
//
// It owns: a GitHub App with a freshly generated RSA key, installations and the
// installation tokens minted for them (with a recognisable prefix if a test
// asks, SetTokenPrefix), issues, issue comments, reactions, pull requests
// (drafts included; a pull request is also an issue of the same number, as on
// GitHub), whether opened by the app or seeded (AddPullRequest, with a head
// branch in the same repository or in a fork, SetPullHead), their diffs
// (served by the Diffs hook, or refused as too large, DiffTooLarge), review
// (line) comments and their threads (AddReviewComment, replies, edits,
// reactions, ResolveThread), the GraphQL mutation markPullRequestReadyForReview
// and query reviewThreads, check runs, collaborator permissions, team
// memberships, file contents at a ref (stored with SetFile, or served by the
// Files hook, for example from a real repository of internal/gitserver), a
// log of every request it answered, and fault injection (FailNext,
// FailNextAfterApply, FailNextGraphQL). The Files, Refs, Diffs and CloneURL
// hooks let a real repository of internal/gitserver answer for content,
// commits, diffs and clone addresses.
//
// It also plays GitHub's side of a GitHub App's user authorization (the
// web flow at /login/oauth/…, GET /user, and GET /repos/{owner}/{repo}
// with the user's token: oauth.go), for the console's sign-in.
//
// It checks authentication the way GitHub does: app endpoints need a JWT
// signed RS256 by the app key, repository endpoints and GraphQL need an
// installation token, minted for an installation that includes the repository
// (organisation endpoints: one repository of the organisation). A repository
// outside the installation is "Not Found", unless it is public (SetPublic):
// then it can be read but writes are refused with 403 "Resource not
// accessible by integration", which is also the answer to opening a pull
// request in any repository outside the installation (a fork, typically).
// GraphQL is served where GitHub serves it relative to the REST base: base +
// "/graphql", or /api/graphql next to an "/api/v3" prefix (see GraphQLURL).
//
// It must not be used outside tests, and it does not try to be GitHub: only the
// endpoints and fields Pullwright reads are modelled. HTML URLs point at
// https://github.com (for example https://github.com/o/r/pull/3), whatever
// address the fake listens on, so golden files stay stable.
package fakegithub

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// HTMLBase is the host used in html_url fields.
const HTMLBase = "https://github.com"

// BotUserID is the user id of the app's bot account ("<slug>[bot]").
const BotUserID int64 = 41000001

// Issue is an issue (or pull request) seeded with AddIssue.
type Issue struct {
	Number int // 0: the next free number
	Title  string
	Body   string
	Author string // login; defaults to "octocat"
	Locked bool
	IsPR   bool
	Labels []string // names
}

// Comment is an issue comment as the fake currently stores it.
type Comment struct {
	ID         int64
	Author     string
	AuthorType string // "User" or "Bot"
	Body       string
	Edits      int // successful PATCHes
	CreatedAt  time.Time
}

// PullRequest is a pull request as the fake currently stores it.
type PullRequest struct {
	Number  int
	NodeID  string // GraphQL global id, "PR_kw…"
	Title   string
	Body    string
	Author  string // login; the app's bot for the pull requests it opened
	Head    string // branch name as sent (without "owner:")
	Base    string
	Draft   bool
	State   string // "open" or "closed"
	HTMLURL string
	// HeadOwner/HeadRepo is the repository of the head branch: the base
	// repository, or a fork of it.
	HeadOwner, HeadRepo string
	// HeadSHA and BaseSHA are as seeded (or set with SetPullHead); empty
	// for the pull requests the app opened, whose commits the Refs hook
	// reports.
	HeadSHA, BaseSHA    string
	MaintainerCanModify bool
	Merged              bool
	Locked              bool // the conversation is locked (the issue's Locked)
	// HeadRepoDeleted is true when the fork was deleted: GitHub then
	// answers "head": {"repo": null}.
	HeadRepoDeleted bool
}

// CheckRun is a check run as the fake currently stores it.
type CheckRun struct {
	ID          int64
	Repo        string // "owner/name", lower case
	Name        string
	HeadSHA     string
	Status      string // "queued", "in_progress" or "completed"
	Conclusion  string
	ExternalID  string
	DetailsURL  string
	Title       string // output.title
	Summary     string // output.summary
	Text        string // output.text
	Actions     []CheckAction
	Updates     int // successful PATCHes
	CompletedAt time.Time

	// App is the slug of the app that reported the run; "" is the fake's
	// own app. ActionsApp makes it a GitHub Actions job (AddCheckRun),
	// whose log Log holds; LogExpired answers its log 410, as GitHub does
	// once a repository's log retention has passed.
	App         string
	Annotations []Annotation
	Log         string
	LogExpired  bool
}

// Annotation is a check run's annotation, as GitHub lists it.
type Annotation struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Level     string `json:"annotation_level"` // notice, warning or failure
	Title     string `json:"title"`
	Message   string `json:"message"`
}

// CheckAction is a requested-action button of a check run.
type CheckAction struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

// Request is one request the fake received, in arrival order.
type Request struct {
	Method string
	Path   string // API path without the server's prefix, e.g. "/repos/o/r/issues/1"; "/api/graphql" for GraphQL next to an "/api/v3" prefix
	Query  string // raw query
	Body   []byte
	Auth   string // "jwt", "token" (installation), "user" (user access token), "none" or "bad"
	Status int    // status answered
}

// Server is a running fake. Create it with New or NewWithPrefix.
type Server struct {
	URL string // API base URL (includes the prefix, no trailing slash)
	// WebURL is the address of GitHub's web pages, where the user
	// authorization flow lives (/login/oauth/…): the fake's root, outside
	// the API's prefix, as on GitHub Enterprise Server.
	WebURL string
	// ClientID and ClientSecret are the app's OAuth credentials, for the
	// user authorization flow (oauth.go).
	ClientID, ClientSecret string
	// CallbackURL is the app's registered callback URL. When set,
	// authorize refuses another redirect_uri as GitHub does: it sends the
	// browser to the registered callback with error=redirect_uri_mismatch,
	// never to the address asked for. Empty: any redirect_uri is taken.
	CallbackURL string
	GraphQLURL  string // GraphQL endpoint: URL+"/graphql", or …/api/graphql for an "/api/v3" prefix
	AppID       int64
	AppSlug     string

	// Files, when set, serves the contents endpoint for paths that SetFile
	// and SetSymlink did not store: content and true for a regular file at
	// ref, false (404) for anything else, an error (500) when it cannot
	// tell. ref is as requested, or the default branch. Set it before the
	// first request; a real repository can answer through
	// internal/gitserver: fake.Files = git.File.
	Files func(owner, repo, ref, path string) ([]byte, bool, error)

	// Refs, when set, gives the commit a branch points at (true) or says
	// that there is no such branch (false), for the head.sha and base.sha
	// of GET /repos/{o}/{r}/pulls/{n} when the pull request has none of
	// its own (the ones the app opens). Set it before the first request:
	// fake.Refs = git.Ref (internal/gitserver).
	Refs func(owner, repo, ref string) (string, bool, error)

	// Diffs, when set, serves a pull request's diff (GET
	// /repos/{o}/{r}/pulls/{n} with Accept: application/vnd.github.diff)
	// in the base repository owner/repo, from the base branch to head:
	// the head SHA, or, when the fake knows none, the head branch (same
	// repository) or refs/pull/{n}/head (fork). Without it a diff request
	// is answered 501. Set it before the first request:
	// fake.Diffs = git.Diff (internal/gitserver).
	Diffs func(owner, repo, base, head string) (string, error)

	// CloneURL, when set, gives the clone_url of the repositories in pull
	// request answers (head.repo, base.repo); by default
	// https://github.com/owner/repo.git. Set it before the first request:
	// fake.CloneURL = git.CloneURL (internal/gitserver).
	CloneURL func(owner, repo string) string

	srv         *httptest.Server
	key         *rsa.PrivateKey
	prefix      string
	graphqlPath string // full path of the GraphQL endpoint
	mux         *http.ServeMux

	mu            sync.Mutex
	lastComment   time.Time // the created_at of the newest comment (commentTimeLocked)
	installations map[int64]map[string]bool
	tokens        map[string]tokenInfo
	issues        map[string]map[int]*issue // repo key → number → issue
	comments      map[int64]*comment
	reactions     map[int64][]reaction
	pulls         map[string][]*pullRequest
	checkRuns     map[int64]*CheckRun
	checkOrder    map[string][]int64            // repo key → check run ids in creation order
	checkRefs     map[string]map[string][]int64 // refKey → app slug → check run ids in creation order
	checkNames    map[string][]string           // "repo key\x00sha" → names of its check runs
	graphqlFaults []string                      // messages for the next GraphQL answers
	perms         map[string]map[string]string  // repo key → user → role
	users         map[string]int64
	files         map[string]map[string]map[string]entry // repo key → ref → path → entry
	defaultBranch map[string]string                      // repo key → branch
	teams         map[string]map[string]string           // "org/team" lower case → user → state
	public        map[string]bool                        // repo key → readable by any installation
	repoIDs       map[string]int64                       // repo key → repository id (RepoID, RecreateRepo)
	forbidden     map[string]bool                        // repo key → user tokens get 403 (ForbidRepo)
	forkParent    map[string]string                      // fork's repo key → its parent's
	diffTooLarge  map[string]bool                        // "repo key#n" → answer diffs 406
	noActions     map[int64]bool                         // installations without actions: read
	blobs         map[string]blob                        // download token → job log
	review        map[int64]*reviewComment               // review (line) comments by id
	pullReviews   map[string][]*pullReview               // reviews by pull key, oldest first
	reviewOrder   map[string][]int64                     // "repo key#n" → review comment ids, oldest first
	resolved      map[int64]bool                         // root review comment id → thread resolved
	tokenPrefix   string
	userTokens    map[string]userToken // user access token → whose
	codes         map[string]oauthCode // authorization code → what it trades for
	browserUser   string               // who authorizes the app (SignInBrowser)
	manifests     []Manifest
	manifestCodes map[string]manifestCode
	webhookSecret string // handed out by the manifest conversion
	// reqMu guards requests apart from mu: a request is recorded while its
	// handler may still hold mu.
	reqMu       sync.Mutex
	requests    []Request
	faults      []fault
	nextID      int64
	privateMode bool

	t           testing.TB
	storageOnce sync.Once
	storage     *storage // attachments.go, started on first use
}

type tokenInfo struct {
	installation int64
	expires      time.Time
}

type issue struct {
	Issue
	createdAt time.Time
	comments  []int64
}

type comment struct {
	Comment
	repo   string
	issue  int
	isPR   bool
	update time.Time
}

type reaction struct {
	id      int64
	user    string
	content string
}

type pullRequest struct {
	PullRequest
}

type fault struct {
	method, prefix string
	n, status      int
	header         http.Header
	apply          bool // handle the request, then answer the fault
}

// New starts a fake serving the API at the root of its URL. The server is
// closed by t.Cleanup.
func New(t testing.TB) *Server { return NewWithPrefix(t, "") }

// NewWithPrefix starts a fake serving the API under prefix (for example
// "/api/v3", like GitHub Enterprise Server). Requests outside the prefix get
// 404. URL includes the prefix.
func NewWithPrefix(t testing.TB, prefix string) *Server {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("fakegithub: generate key: %v", err)
	}
	s := &Server{
		t:             t,
		AppID:         4242,
		AppSlug:       "pullwright-test",
		key:           key,
		prefix:        strings.TrimRight(prefix, "/"),
		installations: map[int64]map[string]bool{},
		tokens:        map[string]tokenInfo{},
		issues:        map[string]map[int]*issue{},
		comments:      map[int64]*comment{},
		reactions:     map[int64][]reaction{},
		pulls:         map[string][]*pullRequest{},
		checkRuns:     map[int64]*CheckRun{},
		checkOrder:    map[string][]int64{},
		checkRefs:     map[string]map[string][]int64{},
		checkNames:    map[string][]string{},
		perms:         map[string]map[string]string{},
		users:         map[string]int64{},
		files:         map[string]map[string]map[string]entry{},
		defaultBranch: map[string]string{},
		teams:         map[string]map[string]string{},
		public:        map[string]bool{},
		repoIDs:       map[string]int64{},
		forbidden:     map[string]bool{},
		forkParent:    map[string]string{},
		diffTooLarge:  map[string]bool{},
		noActions:     map[int64]bool{},
		blobs:         map[string]blob{},
		review:        map[int64]*reviewComment{},
		reviewOrder:   map[string][]int64{},
		resolved:      map[int64]bool{},
		tokenPrefix:   "ghs_",
		nextID:        1000,
		userTokens:    map[string]userToken{},
		codes:         map[string]oauthCode{},
		manifestCodes: map[string]manifestCode{},
		ClientID:      "Iv23li" + randomToken("")[:14],
		ClientSecret:  randomToken(""),
	}
	s.graphqlPath = s.prefix + "/graphql"
	if b, ok := strings.CutSuffix(s.prefix, "/api/v3"); ok {
		s.graphqlPath = b + "/api/graphql"
	}
	s.routes()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + s.prefix
	s.WebURL = s.srv.URL
	s.GraphQLURL = s.srv.URL + s.graphqlPath
	t.Cleanup(s.srv.Close)
	return s
}

// PrivateKeyPEM returns the app's private key, PKCS#1 PEM encoded, as GitHub
// hands it out.
func (s *Server) PrivateKeyPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(s.key)})
}

// BotLogin is the login of the app's bot account: "<slug>[bot]".
func (s *Server) BotLogin() string { return s.AppSlug + "[bot]" }

// AddInstallation adds (or extends) an installation with repositories given
// as "owner/name".
func (s *Server) AddInstallation(id int64, repos ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.installations[id] == nil {
		s.installations[id] = map[string]bool{}
	}
	for _, r := range repos {
		s.installations[id][strings.ToLower(r)] = true
	}
}

// SetPrivateMode makes GET /users/{login} require an installation token, like
// a GitHub Enterprise Server in private mode.
func (s *Server) SetPrivateMode(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.privateMode = on
}

// AddIssue seeds an issue (or, with IsPR, the issue half of a pull request).
// It returns the issue's number.
func (s *Server) AddIssue(owner, repo string, is Issue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	if is.Number == 0 {
		is.Number = s.nextNumberLocked(k)
	}
	if is.Author == "" {
		is.Author = "octocat"
	}
	s.userLocked(is.Author)
	if s.issues[k] == nil {
		s.issues[k] = map[int]*issue{}
	}
	s.issues[k][is.Number] = &issue{Issue: is, createdAt: time.Now().UTC()}
	return is.Number
}

// AddComment seeds a comment on an existing issue and returns its id. Authors
// ending in "[bot]" get type "Bot".
func (s *Server) AddComment(owner, repo string, number int, author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	is := s.issues[k][number]
	if is == nil {
		panic(fmt.Sprintf("fakegithub: AddComment: no issue %s#%d", k, number))
	}
	typ := "User"
	if strings.HasSuffix(author, "[bot]") {
		typ = "Bot"
	}
	return s.addCommentLocked(k, is, author, typ, body).ID
}

// SetPermission sets a user's role on a repository: "admin", "maintain",
// "write", "triage", "read" or "none".
func (s *Server) SetPermission(owner, repo, user, perm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	if s.perms[k] == nil {
		s.perms[k] = map[string]string{}
	}
	s.perms[k][strings.ToLower(user)] = perm
	s.userLocked(user)
}

// ValidToken reports whether token is a live installation token and for which
// installation (for the git server's auth check).
func (s *Server) ValidToken(token string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ti, ok := s.tokens[token]
	if !ok || time.Now().After(ti.expires) {
		return 0, false
	}
	return ti.installation, true
}

// IssuedTokens returns every installation token the fake minted, so a test
// can check that none of them leaked into logs, files or messages.
func (s *Server) IssuedTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.tokens))
	for tok := range s.tokens {
		out = append(out, tok)
	}
	return out
}

// TokenCanAccess reports whether token is live and its installation includes
// the repository "owner/name".
func (s *Server) TokenCanAccess(token, ownerRepo string) bool {
	inst, ok := s.ValidToken(token)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.installations[inst][strings.ToLower(ownerRepo)]
}

// Comments returns the current comments of an issue, oldest first.
func (s *Server) Comments(owner, repo string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issues[repoKey(owner, repo)][number]
	if is == nil {
		return nil
	}
	out := make([]Comment, 0, len(is.comments))
	for _, id := range is.comments {
		out = append(out, s.comments[id].Comment)
	}
	return out
}

// Reactions returns the reaction contents on a comment, in creation order.
func (s *Server) Reactions(owner, repo string, commentID int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.comments[commentID]
	if c == nil || c.repo != repoKey(owner, repo) {
		return nil
	}
	return s.reactionContentsLocked(commentID)
}

// reactionContentsLocked lists the reaction contents on comment id (issue
// or review comment), in creation order.
func (s *Server) reactionContentsLocked(id int64) []string {
	var out []string
	for _, r := range s.reactions[id] {
		out = append(out, r.content)
	}
	return out
}

// PullRequests returns the repository's pull requests in creation order.
func (s *Server) PullRequests(owner, repo string) []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	var out []PullRequest
	for _, p := range s.pulls[k] {
		out = append(out, s.pullViewLocked(k, p))
	}
	return out
}

// CheckRuns returns the repository's check runs in creation order.
func (s *Server) CheckRuns(owner, repo string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, id := range s.checkOrder[repoKey(owner, repo)] {
		out = append(out, s.checkRuns[id].clone())
	}
	return out
}

// CheckRun returns one check run by id.
func (s *Server) CheckRun(id int64) (CheckRun, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cr, ok := s.checkRuns[id]
	if !ok {
		return CheckRun{}, false
	}
	return cr.clone(), true
}

func (c *CheckRun) clone() CheckRun {
	out := *c
	out.Actions = append([]CheckAction(nil), c.Actions...)
	out.Annotations = append([]Annotation(nil), c.Annotations...)
	return out
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// FailNext makes the next n requests whose method matches (empty: any) and
// whose API path (without the server prefix) starts with pathPrefix be
// answered with status and header, without touching any state. Faults are
// consumed in the order they were added.
func (s *Server) FailNext(method, pathPrefix string, n, status int, header http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{method: method, prefix: pathPrefix, n: n, status: status, header: header.Clone()})
}

// FailNextAfterApply is FailNext for a request that GitHub applied but whose
// answer was lost: the next n matching requests are handled normally (state
// changes), then answered with status and header instead of the real reply.
func (s *Server) FailNextAfterApply(method, pathPrefix string, n, status int, header http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{method: method, prefix: pathPrefix, n: n, status: status, header: header.Clone(), apply: true})
}

// FailNextGraphQL makes the next n GraphQL requests be answered like GitHub
// answers a failed query: 200 OK with {"data": null, "errors": [{message}]},
// without touching any state. It is applied after authentication.
func (s *Server) FailNextGraphQL(n int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.graphqlFaults = append(s.graphqlFaults, message)
	}
}

// ---- plumbing ----

type ctxKey struct{}

// reqInfo travels with a request through the mux.
type reqInfo struct {
	auth         string
	installation int64
	user         string // the login of a user token ("user")
	fullPath     string // path as received, with prefix
}

// statusWriter records the request the moment its status is sent, before
// the client can see the answer, so a test that inspects Requests right
// after a call returns always finds that call.
type statusWriter struct {
	http.ResponseWriter
	status int
	record func(status int)
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.record(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	info := &reqInfo{fullPath: r.URL.Path}
	info.auth, info.installation = s.classifyAuth(r.Header.Get("Authorization"))
	if info.auth == "bad" {
		if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok {
			if login, ok := s.userTokenLogin(cred); ok {
				info.auth, info.user = "user", login
			}
		}
	}

	// path is what Requests records and faults match; muxPath is what the
	// mux routes, "" when nothing is served there.
	path := r.URL.Path
	inPrefix := s.prefix == "" || path == s.prefix || strings.HasPrefix(path, s.prefix+"/")
	if inPrefix {
		path = strings.TrimPrefix(path, s.prefix)
		if path == "" {
			path = "/"
		}
	}
	muxPath := ""
	switch {
	case r.URL.Path == s.graphqlPath:
		muxPath = "/graphql"
	case strings.HasPrefix(r.URL.Path, "/login/oauth/"), strings.HasPrefix(r.URL.Path, attachmentPrefix):
		// GitHub's web host, outside the API's prefix.
		muxPath = r.URL.Path
	case inPrefix && path != "/graphql":
		muxPath = path
	}
	sw := &statusWriter{ResponseWriter: w, record: func(status int) {
		s.reqMu.Lock()
		s.requests = append(s.requests, Request{
			Method: r.Method, Path: path, Query: r.URL.RawQuery, Body: body,
			Auth: info.auth, Status: status,
		})
		s.reqMu.Unlock()
	}}
	defer func() {
		if sw.status == 0 {
			sw.WriteHeader(http.StatusOK)
		}
	}()

	if strings.HasPrefix(r.URL.Path, blobPrefix) {
		// The download host of job logs: outside the API and its auth.
		s.serveBlob(sw, r)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = muxPath
	r2.URL.RawPath = ""
	r2 = r2.WithContext(contextWith(r2, info))
	if f, ok := s.takeFault(r.Method, path); ok {
		if f.apply && muxPath != "" {
			s.mux.ServeHTTP(httptest.NewRecorder(), r2)
		}
		for k, vs := range f.header {
			for _, v := range vs {
				sw.Header().Add(k, v)
			}
		}
		writeJSON(sw, f.status, map[string]string{"message": http.StatusText(f.status)})
		return
	}
	if muxPath == "" {
		notFound(sw)
		return
	}
	s.mux.ServeHTTP(sw, r2)
}

func (s *Server) takeFault(method, path string) (fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.faults {
		f := &s.faults[i]
		if f.n <= 0 || (f.method != "" && f.method != method) || !strings.HasPrefix(path, f.prefix) {
			continue
		}
		f.n--
		out := *f
		if f.n == 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return out, true
	}
	return fault{}, false
}

// classifyAuth returns the auth kind and, for "token", the installation id.
func (s *Server) classifyAuth(h string) (string, int64) {
	if h == "" {
		return "none", 0
	}
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || cred == "" {
		return "bad", 0
	}
	switch strings.ToLower(scheme) {
	case "bearer":
		if strings.Count(cred, ".") == 2 {
			if err := s.verifyJWT(cred, time.Now()); err != nil {
				return "bad", 0
			}
			return "jwt", 0
		}
		fallthrough
	case "token":
		if inst, ok := s.ValidToken(cred); ok {
			return "token", inst
		}
	}
	return "bad", 0
}

// UserID is login's account id, as GitHub's API gives it (made on first
// use, like every account of the fake).
func (s *Server) UserID(login string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userLocked(login)
}

func (s *Server) userLocked(login string) int64 {
	if id, ok := s.users[strings.ToLower(login)]; ok {
		return id
	}
	s.nextID++
	s.users[strings.ToLower(login)] = s.nextID
	return s.nextID
}

func (s *Server) nextNumberLocked(k string) int {
	n := 0
	for num := range s.issues[k] {
		n = max(n, num)
	}
	return n + 1
}

// commentTimeLocked is GitHub's created_at for a new comment: the time in
// whole seconds, as GitHub's API gives it, and a second after the comment
// made before it when both fall in one second. People do not answer within
// the second a comment appeared; the tests that do (a request answered at
// once) would otherwise see an order GitHub shows only to scripts. A test
// of two comments in one second sets created_at in the delivery itself.
func (s *Server) commentTimeLocked() time.Time {
	now := time.Now().UTC().Truncate(time.Second)
	if !now.After(s.lastComment) {
		now = s.lastComment.Add(time.Second)
	}
	s.lastComment = now
	return now
}

// Comment returns an issue comment by id, as it is now.
func (s *Server) Comment(id int64) (Comment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.comments[id]
	if !ok {
		return Comment{}, false
	}
	return c.Comment, true
}

func (s *Server) addCommentLocked(k string, is *issue, author, typ, body string) *comment {
	s.nextID++
	now := s.commentTimeLocked()
	c := &comment{
		Comment: Comment{ID: s.nextID, Author: author, AuthorType: typ, Body: body, CreatedAt: now},
		repo:    k, issue: is.Number, isPR: is.IsPR, update: now,
	}
	s.comments[c.ID] = c
	is.comments = append(is.comments, c.ID)
	if typ != "Bot" {
		s.userLocked(author)
	}
	return c
}

func repoKey(owner, repo string) string { return strings.ToLower(owner + "/" + repo) }

func randomToken(prefix string) string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]string{
		"message":           "Not Found",
		"documentation_url": "https://docs.github.com/rest",
	})
}

func errorJSON(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg})
}
