// Package gitserver is a real git smart-HTTP server for tests: `git
// http-backend` behind net/http/cgi, serving bare repositories kept in a
// temporary directory, with HTTP Basic authentication on every request.
//
// Tests use New, which ties the server's lifetime to the test. Programs that
// are not tests (the clone benchmark) use Start and Close, and the
// error-returning InitRepo and CommitFiles instead of the testing.TB helpers.
//
// Besides serving repositories it does, on the bare repositories directly,
// what GitHub does around pull requests (pulls.go): forks (Fork), the
// refs/pull/N/head ref that makes a fork's commits reachable in the base
// repository (MirrorPullHead, SetRef), a pull request's diff (Diff) and the
// commit a ref points at (Ref), so that fakegithub can answer with real
// content through its hooks.
//
// Nothing of the calling process's environment reaches the git processes the
// server starts: they get a minimal environment with their own HOME and no
// system or global git configuration, and the Authorization header is removed
// before a request is handed to http-backend.
package gitserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Options configures a Server.
type Options struct {
	// Auth decides whether a Basic-auth user and password may use the
	// server. Nil accepts any request that carries a non-empty password.
	Auth func(user, pass string) bool
	// Stderr receives git http-backend's error output; nil discards it.
	Stderr io.Writer
}

// Request is one HTTP request the server answered. The password is never
// recorded.
type Request struct {
	Method string
	Path   string
	Query  string
	User   string
	Status int
}

// Commit is one commit as read back from a bare repository.
type Commit struct {
	SHA           string
	Subject       string
	Body          string
	AuthorName    string
	AuthorEmail   string
	CommitterName string
}

// Server is a running git smart-HTTP server.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:41234 (no trailing slash).
	URL string

	root    string // GIT_PROJECT_ROOT: <root>/<owner>/<name>.git
	home    string // HOME of every git process
	tmp     string // removed by Close
	backend string // path of git-http-backend
	gitBin  string
	auth    func(user, pass string) bool
	stderr  io.Writer
	srv     *httptest.Server
	down    atomic.Bool

	mu   sync.Mutex
	reqs []Request
}

// New starts a server for the duration of the test.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a server; the caller must Close it.
func Start(opts Options) (*Server, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("git CLI not found: %w", err)
	}
	out, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return nil, fmt.Errorf("git-http-backend: %w", err)
	}
	tmp, err := os.MkdirTemp("", "gitserver-")
	if err != nil {
		return nil, err
	}
	s := &Server{
		root:    filepath.Join(tmp, "repos"),
		home:    filepath.Join(tmp, "home"),
		tmp:     tmp,
		backend: backend,
		gitBin:  gitBin,
		auth:    opts.Auth,
		stderr:  opts.Stderr,
	}
	if s.stderr == nil {
		s.stderr = io.Discard
	}
	for _, d := range []string{s.root, s.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	return s, nil
}

// Close stops the server and removes its repositories.
func (s *Server) Close() {
	s.srv.Close()
	os.RemoveAll(s.tmp)
}

// SetDown makes every request fail with 503 while down is true.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Requests returns the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// CloneURL is the HTTP clone URL of owner/name (without credentials).
func (s *Server) CloneURL(owner, name string) string {
	return s.URL + "/" + owner + "/" + name + ".git"
}

// BareDir is the bare repository's directory on disk.
func (s *Server) BareDir(owner, name string) string {
	return filepath.Join(s.root, owner, name+".git")
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, hasAuth := r.BasicAuth()
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		st := rec.status
		if st == 0 {
			st = http.StatusOK
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, User: user, Status: st})
		s.mu.Unlock()
	}()

	if s.down.Load() {
		http.Error(rec, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	ok := hasAuth && pass != ""
	if ok && s.auth != nil {
		ok = s.auth(user, pass)
	}
	if !ok {
		rec.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
		http.Error(rec, "authentication required", http.StatusUnauthorized)
		return
	}
	if strings.Contains(r.URL.Path, "..") {
		http.Error(rec, "bad path", http.StatusBadRequest)
		return
	}

	// The credentials stop here: http-backend gets the user name only.
	r.Header.Del("Authorization")
	h := &cgi.Handler{
		Path: s.backend,
		Root: "/",
		Dir:  s.root,
		Env: append(s.gitEnv(),
			"GIT_PROJECT_ROOT="+s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER="+user,
			// Enable receive-pack (pushes) regardless of REMOTE_USER handling.
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.receivepack",
			"GIT_CONFIG_VALUE_0=true",
		),
		Stderr: s.stderr,
	}
	h.ServeHTTP(rec, r)
}

// gitEnv is the whole environment of every git process the server starts.
func (s *Server) gitEnv() []string {
	return []string{
		"PATH=" + filepath.Dir(s.gitBin) + ":/usr/bin:/bin",
		"HOME=" + s.home,
		"XDG_CONFIG_HOME=" + filepath.Join(s.home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ATTR_NOSYSTEM=1",
		"LC_ALL=C",
		"TZ=UTC",
	}
}

// git runs the git CLI in dir with the server's hermetic environment plus
// extra, returning stdout.
func (s *Server) git(dir string, extra []string, args ...string) (string, error) {
	cmd := exec.Command(s.gitBin, args...)
	cmd.Dir = dir
	cmd.Env = append(s.gitEnv(), extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func checkName(owner, name string) error {
	for _, n := range []string{owner, name} {
		if !nameRE.MatchString(n) || strings.Contains(n, "..") {
			return fmt.Errorf("invalid owner or repository name %q", n)
		}
	}
	return nil
}

// seedIdentity is the author and committer of CreateRepo's commit.
var seedIdentity = []string{
	"GIT_AUTHOR_NAME=Seed", "GIT_AUTHOR_EMAIL=seed@example.com",
	"GIT_COMMITTER_NAME=Seed", "GIT_COMMITTER_EMAIL=seed@example.com",
}

// personIdentity is the author and committer of Push's commits.
var personIdentity = []string{
	"GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.com",
	"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.com",
}

// InitRepo creates the bare repository owner/name whose default branch is
// branch, seeded with one commit of files by "Seed <seed@example.com>", and
// returns its clone URL.
func (s *Server) InitRepo(owner, name, branch string, files map[string]string) (string, error) {
	if err := checkName(owner, name); err != nil {
		return "", err
	}
	if branch == "" {
		branch = "main"
	}
	bare := s.BareDir(owner, name)
	if _, err := os.Stat(bare); err == nil {
		return "", fmt.Errorf("repository %s/%s already exists", owner, name)
	}
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		return "", err
	}
	if _, err := s.git(s.root, nil, "init", "--quiet", "--bare", "--initial-branch="+branch, bare); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(s.tmp, "seed-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if _, err := s.git(work, nil, "init", "--quiet", "--initial-branch="+branch, "."); err != nil {
		return "", err
	}
	if err := writeFiles(work, files); err != nil {
		return "", err
	}
	if _, err := s.commitAndPush(work, seedIdentity, "Initial commit", bare, branch); err != nil {
		return "", err
	}
	return s.CloneURL(owner, name), nil
}

// CommitFiles adds a commit by "Person <person@example.com>" on top of branch
// (created from the default branch if it does not exist), writing files (an
// empty value deletes the file), and returns the new commit's SHA. It works on the bare
// repository directly, so it does not appear in Requests.
func (s *Server) CommitFiles(owner, name, branch string, files map[string]string, msg string) (string, error) {
	if err := checkName(owner, name); err != nil {
		return "", err
	}
	bare := s.BareDir(owner, name)
	work, err := os.MkdirTemp(s.tmp, "person-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if _, err := s.git(work, nil, "clone", "--quiet", "--no-local", bare, "."); err != nil {
		return "", err
	}
	if _, err := s.git(work, nil, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+branch); err == nil {
		_, err = s.git(work, nil, "checkout", "--quiet", "-B", branch, "refs/remotes/origin/"+branch)
		if err != nil {
			return "", err
		}
	} else if _, err := s.git(work, nil, "checkout", "--quiet", "-b", branch); err != nil {
		return "", err
	}
	writes := map[string]string{}
	for p, content := range files {
		if content != "" {
			writes[p] = content
			continue
		}
		full, err := safeJoin(work, p)
		if err != nil {
			return "", err
		}
		if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	if err := writeFiles(work, writes); err != nil {
		return "", err
	}
	return s.commitAndPush(work, personIdentity, msg, bare, branch)
}

func (s *Server) commitAndPush(work string, ident []string, msg, bare, branch string) (string, error) {
	if _, err := s.git(work, nil, "add", "--all"); err != nil {
		return "", err
	}
	if _, err := s.git(work, ident, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", msg); err != nil {
		return "", err
	}
	if _, err := s.git(work, nil, "push", "--quiet", bare, "HEAD:refs/heads/"+branch); err != nil {
		return "", err
	}
	out, err := s.git(work, nil, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

func safeJoin(root, p string) (string, error) {
	clean := path.Clean("/" + filepath.ToSlash(p))[1:]
	if clean == "" || clean == ".git" || strings.HasPrefix(clean, ".git/") {
		return "", fmt.Errorf("invalid file path %q", p)
	}
	return filepath.Join(root, filepath.FromSlash(clean)), nil
}

func writeFiles(root string, files map[string]string) error {
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		full, err := safeJoin(root, p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CreateRepo is InitRepo for tests.
func (s *Server) CreateRepo(t testing.TB, owner, name, branch string, files map[string]string) string {
	t.Helper()
	u, err := s.InitRepo(owner, name, branch, files)
	if err != nil {
		t.Fatalf("gitserver: create %s/%s: %v", owner, name, err)
	}
	return u
}

// Push is CommitFiles for tests: a person commits on top of branch.
func (s *Server) Push(t testing.TB, owner, name, branch string, files map[string]string, msg string) string {
	t.Helper()
	sha, err := s.CommitFiles(owner, name, branch, files, msg)
	if err != nil {
		t.Fatalf("gitserver: push to %s/%s %s: %v", owner, name, branch, err)
	}
	return sha
}

// ReadFile returns the content of path at ref in owner/name; a missing file
// is an error like any other (File tells the two apart).
func (s *Server) ReadFile(t testing.TB, owner, name, ref, p string) (string, error) {
	t.Helper()
	return s.git(s.BareDir(owner, name), nil, "cat-file", "blob", ref+":"+p)
}

// File returns the content of the regular file p at ref (a branch, tag or
// commit SHA) in owner/name, read from the bare repository with the git CLI,
// so a fake API (fakegithub's Files hook) can serve the repository's real
// content: fake.Files = git.File.
//
// found is false, with a nil error, when the repository, the ref or the path
// does not exist, and also when p names something other than a regular file
// (a directory, a symbolic link or a submodule): none of those has content a
// caller could use as the file's. An error means git itself failed.
func (s *Server) File(owner, name, ref, p string) (content []byte, found bool, err error) {
	if checkName(owner, name) != nil || ref == "" || strings.HasPrefix(ref, "-") {
		return nil, false, nil
	}
	p = strings.Trim(p, "/")
	if p == "" {
		return nil, false, nil // the root is a tree
	}
	bare := s.BareDir(owner, name)
	if _, err := os.Stat(bare); errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	commit, err := s.git(bare, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		// --verify --quiet exits 1, silently, for a ref that does not exist.
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("read %s at %s in %s/%s: %w", p, ref, owner, name, err)
	}
	commit = strings.TrimSpace(commit)
	// ls-tree gives the entry's mode, which cat-file alone does not: a
	// symbolic link is a blob too. Literal pathspecs, so that a path like
	// ":(glob)*" or "*.yml" names exactly that path.
	out, err := s.git(bare, []string{"GIT_LITERAL_PATHSPECS=1"}, "ls-tree", "-z", "--full-tree", commit, "--", p)
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s in %s/%s: %w", p, ref, owner, name, err)
	}
	for _, entry := range strings.Split(out, "\x00") {
		meta, entryPath, ok := strings.Cut(entry, "\t")
		if !ok || entryPath != p {
			continue
		}
		f := strings.Fields(meta) // mode, type, object
		if len(f) != 3 || f[1] != "blob" || (f[0] != "100644" && f[0] != "100755") {
			return nil, false, nil
		}
		blob, err := s.git(bare, nil, "cat-file", "blob", f[2])
		if err != nil {
			return nil, false, fmt.Errorf("read %s at %s in %s/%s: %w", p, ref, owner, name, err)
		}
		return []byte(blob), true, nil
	}
	return nil, false, nil
}

// RevParse resolves ref to a commit SHA; it is an error if ref is missing.
func (s *Server) RevParse(t testing.TB, owner, name, ref string) (string, error) {
	t.Helper()
	out, err := s.git(s.BareDir(owner, name), nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("rev-parse %s in %s/%s: %w", ref, owner, name, err)
	}
	return strings.TrimSpace(out), nil
}

// Commits lists the commits reachable from ref, newest first.
func (s *Server) Commits(t testing.TB, owner, name, ref string) []Commit {
	t.Helper()
	out, err := s.git(s.BareDir(owner, name), nil, "log", "--format=%H%x00%s%x00%b%x00%an%x00%ae%x00%cn%x1e", "--end-of-options", ref)
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	var cs []Commit
	for _, rec := range strings.Split(out, "\x1e") {
		rec = strings.TrimLeft(rec, "\n")
		if rec == "" {
			continue
		}
		f := strings.Split(rec, "\x00")
		if len(f) != 6 {
			t.Fatalf("gitserver: unexpected log record %q", rec)
		}
		cs = append(cs, Commit{SHA: f[0], Subject: f[1], Body: strings.TrimRight(f[2], "\n"), AuthorName: f[3], AuthorEmail: f[4], CommitterName: f[5]})
	}
	return cs
}

// Git runs the git CLI against owner/name's bare repository with the
// server's hermetic environment (e.g. "fsck", "--strict") and returns stdout.
func (s *Server) Git(owner, name string, args ...string) (string, error) {
	return s.git(s.BareDir(owner, name), nil, args...)
}
