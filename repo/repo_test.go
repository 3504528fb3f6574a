package repo_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/gitserver"
	"github.com/pullwright/pullwright/repo"
)

const (
	token = "ghs_TestToken0123456789abcdef"
	owner = "acme"
	name  = "widgets"
)

var (
	bot   = pullwright.Identity{Name: "pullwright[bot]", Email: "123+pullwright[bot]@users.noreply.github.com"}
	alice = pullwright.Identity{Name: "Alice Maintainer", Email: "alice@example.com"}
)

func newServer(t testing.TB) *gitserver.Server {
	t.Helper()
	return gitserver.New(t, gitserver.Options{Auth: func(u, p string) bool {
		return u == "x-access-token" && p == token
	}})
}

// seed creates acme/widgets on main with four commits of history and returns
// the clone URL and the tip SHA.
func seed(t *testing.T, s *gitserver.Server) (string, string) {
	t.Helper()
	u := s.CreateRepo(t, owner, name, "main", map[string]string{
		"README.md":       "# widgets\n",
		"pager/pager.go":  "package pager\n\nfunc Last(n, size int) int {\n\treturn n / size\n}\n",
		"docs/old.txt":    "obsolete\n",
		".gitignore":      "*.log\nbuild/\n",
		"cmd/main.go":     "package main\n\nfunc main() {}\n",
		"data/blob.bin":   "\x00\x01\x02binary\x00",
		"docs/keep.md":    "keep\n",
		"z/last/file.txt": "z\n",
	})
	s.Push(t, owner, name, "main", map[string]string{"CHANGELOG.md": "v1\n"}, "Add changelog")
	s.Push(t, owner, name, "main", map[string]string{"CHANGELOG.md": "v1\nv2\n"}, "Update changelog")
	tip := s.Push(t, owner, name, "main", map[string]string{"pager/util.go": "package pager\n"}, "Add util")
	return u, tip
}

func clone(t *testing.T, u string) *repo.Workspace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := repo.Clone(ctx, repo.CloneOptions{URL: u, Branch: "main", Token: token, Dir: filepath.Join(t.TempDir(), "ws")})
	if err != nil {
		t.Fatalf("Clone: %v", err)
	}
	return w
}

func write(t *testing.T, w *repo.Workspace, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(w.Dir(), filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func remove(t *testing.T, w *repo.Workspace, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Remove(filepath.Join(w.Dir(), filepath.FromSlash(p))); err != nil {
			t.Fatal(err)
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestPushFromShallowClone is the end-to-end path: shallow clone (depth 1) of
// a repository with history, new branch, edit, commit with a co-author,
// push of the new branch, and the server's view of the result.
func TestPushFromShallowClone(t *testing.T) {
	s := newServer(t)
	u, base := seed(t, s)
	w := clone(t, u)

	shallow, err := os.ReadFile(filepath.Join(w.Dir(), ".git", "shallow"))
	if err != nil {
		t.Fatalf("clone is not shallow: %v", err)
	}
	if got := strings.TrimSpace(string(shallow)); got != base {
		t.Fatalf(".git/shallow = %q, want %q", got, base)
	}
	if h, _ := w.Head(); h != base {
		t.Fatalf("Head = %s, want %s", h, base)
	}

	branch := repo.BranchName("", 12, "Fix off-by-one in pagination")
	if err := w.CreateBranch(branch); err != nil {
		t.Fatal(err)
	}
	write(t, w, map[string]string{
		"pager/pager.go":      "package pager\n\nfunc Last(n, size int) int {\n\treturn (n + size - 1) / size\n}\n",
		"pager/pager_test.go": "package pager\n",
		"debug.log":           "ignored\n",
	})
	remove(t, w, "docs/old.txt")

	sha, err := w.CommitAll("Fix off-by-one in pagination\n\nCloses #12.", bot, alice)
	if err != nil {
		t.Fatal(err)
	}
	// main moves on the server while the agent works: the advertised main
	// is a commit the shallow clone has never seen.
	newMain := s.Push(t, owner, name, "main", map[string]string{"CHANGELOG.md": "v1\nv2\nv3\n"}, "Meanwhile on main")
	if err := w.Push(ctxT(t), token, branch); err != nil {
		t.Fatalf("Push from shallow clone: %v", err)
	}

	got, err := s.RevParse(t, owner, name, branch)
	if err != nil || got != sha {
		t.Fatalf("server %s = %q (%v), want %s", branch, got, err, sha)
	}
	commits := s.Commits(t, owner, name, branch)
	if len(commits) != 5 {
		t.Fatalf("server history has %d commits, want 5 (4 seeded + 1)", len(commits))
	}
	c := commits[0]
	want := gitserver.Commit{
		SHA:           sha,
		Subject:       "Fix off-by-one in pagination",
		Body:          "Closes #12.\n\nCo-authored-by: Alice Maintainer <alice@example.com>",
		AuthorName:    bot.Name,
		AuthorEmail:   bot.Email,
		CommitterName: bot.Name,
	}
	if c != want {
		t.Errorf("pushed commit:\n got %+v\nwant %+v", c, want)
	}
	if commits[1].SHA != base {
		t.Errorf("parent = %s, want base %s", commits[1].SHA, base)
	}
	if out, err := s.Git(owner, name, "log", "-1", "--format=%(trailers:key=Co-authored-by,valueonly)", sha); err != nil || strings.TrimSpace(out) != "Alice Maintainer <alice@example.com>" {
		t.Errorf("git does not parse the co-author trailer: %q %v", out, err)
	}

	for path, want := range map[string]string{
		"pager/pager.go":      "package pager\n\nfunc Last(n, size int) int {\n\treturn (n + size - 1) / size\n}\n",
		"pager/pager_test.go": "package pager\n",
		"README.md":           "# widgets\n",
		"CHANGELOG.md":        "v1\nv2\n",
	} {
		if got, err := s.ReadFile(t, owner, name, branch, path); err != nil || got != want {
			t.Errorf("%s on server = %q (%v), want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"docs/old.txt", "debug.log"} {
		if _, err := s.ReadFile(t, owner, name, branch, path); err == nil {
			t.Errorf("%s exists on the server branch", path)
		}
	}
	if out, err := s.Git(owner, name, "fsck", "--strict", "--no-dangling"); err != nil {
		t.Fatalf("git fsck on the server: %v\n%s", err, out)
	}
	if main, _ := s.RevParse(t, owner, name, "main"); main != newMain {
		t.Errorf("main moved to %s", main)
	}

	var pushes int
	for _, r := range s.Requests() {
		if r.User != "x-access-token" {
			t.Errorf("request %s %s as user %q", r.Method, r.Path, r.User)
		}
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/git-receive-pack") {
			pushes++
		}
	}
	if pushes != 1 {
		t.Errorf("%d receive-pack POSTs, want 1", pushes)
	}

	// Pushing again is a no-op that succeeds without sending a pack.
	if err := w.Push(ctxT(t), token, branch); err != nil {
		t.Fatalf("second Push: %v", err)
	}
	n := 0
	for _, r := range s.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/git-receive-pack") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("second Push sent a pack (%d receive-pack POSTs)", n)
	}

	// The workspace reopened (after a restart) continues on the branch.
	w2, err := repo.Open(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := w2.Head(); h != sha {
		t.Errorf("reopened Head = %s, want %s", h, sha)
	}
	if err := w2.CreateBranch(branch); err != nil {
		t.Errorf("CreateBranch of the checked-out branch: %v", err)
	}
	write(t, w2, map[string]string{"README.md": "# widgets\n\nmore\n"})
	sha2, err := w2.CommitAll("Second checkpoint", bot)
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Push(ctxT(t), token, branch); err != nil {
		t.Fatalf("fast-forward Push: %v", err)
	}
	if got, _ := s.RevParse(t, owner, name, branch); got != sha2 {
		t.Errorf("server branch = %s, want %s", got, sha2)
	}
	if out, err := s.Git(owner, name, "fsck", "--strict", "--no-dangling"); err != nil {
		t.Fatalf("git fsck after second push: %v\n%s", err, out)
	}
}

func TestPushDeeperClone(t *testing.T) {
	s := newServer(t)
	u, base := seed(t, s)
	ctx := ctxT(t)
	w, err := repo.Clone(ctx, repo.CloneOptions{URL: u, Branch: "main", Token: token, Dir: t.TempDir(), Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CreateBranch("agent/deep"); err != nil {
		t.Fatal(err)
	}
	write(t, w, map[string]string{"new.txt": "x\n"})
	if _, err := w.CommitAll("Add new", bot); err != nil {
		t.Fatal(err)
	}
	if err := w.Push(ctx, token, "agent/deep"); err != nil {
		t.Fatal(err)
	}
	if cs := s.Commits(t, owner, name, "agent/deep"); len(cs) != 5 || cs[1].SHA != base {
		t.Fatalf("server history: %+v", cs)
	}
	if out, err := s.Git(owner, name, "fsck", "--strict"); err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
}

func TestTokenNeverOnDisk(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	w := clone(t, u)
	if err := w.CreateBranch("agent/1-x"); err != nil {
		t.Fatal(err)
	}
	write(t, w, map[string]string{"a.txt": "a\n"})
	if _, err := w.CommitAll("a", bot); err != nil {
		t.Fatal(err)
	}
	if err := w.Push(ctxT(t), token, "agent/1-x"); err != nil {
		t.Fatal(err)
	}
	var files int
	err := filepath.WalkDir(w.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(token)) || bytes.Contains(b, []byte("x-access-token")) {
			t.Errorf("%s contains credentials", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("walked only %d files", files)
	}
	cfg, err := os.ReadFile(filepath.Join(w.Dir(), ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "url = "+u+"\n") {
		t.Errorf(".git/config does not hold the plain clone URL:\n%s", cfg)
	}
}

// hangingURL is a server that accepts connections and never answers.
func hangingURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/acme/widgets.git"
}

func TestCloneErrors(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	down := newServer(t)
	downURL, _ := seed(t, down)
	down.SetDown(true)
	nonEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(nonEmpty, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		opts    repo.CloneOptions
		timeout time.Duration
		is      error  // errors.Is target, if any
		want    string // substring of the message
	}{
		{name: "wrong token", opts: repo.CloneOptions{URL: u, Branch: "main", Token: "ghs_WrongToken999"}, is: repo.ErrAuthFailed, want: "clone " + u},
		{name: "no token", opts: repo.CloneOptions{URL: u, Branch: "main"}, is: repo.ErrAuthFailed, want: "authentication"},
		{name: "server down", opts: repo.CloneOptions{URL: downURL, Branch: "main", Token: token}, want: "503"},
		{name: "server never answers", opts: repo.CloneOptions{URL: hangingURL(t), Branch: "main", Token: token}, timeout: 500 * time.Millisecond, is: context.DeadlineExceeded, want: "clone http://127.0.0.1"},
		{name: "connection refused", opts: repo.CloneOptions{URL: "http://127.0.0.1:1/a/b.git", Branch: "main", Token: token}, want: "connection refused"},
		{name: "missing branch", opts: repo.CloneOptions{URL: u, Branch: "nope", Token: token}, want: "nope"},
		{name: "missing repository", opts: repo.CloneOptions{URL: s.CloneURL(owner, "nothing"), Branch: "main", Token: token}, want: "clone " + s.CloneURL(owner, "nothing")},
		{name: "credentials in URL", opts: repo.CloneOptions{URL: strings.Replace(u, "http://", "http://x-access-token:"+token+"@", 1), Branch: "main", Token: token}, want: "must not contain user information"},
		{name: "token as URL user", opts: repo.CloneOptions{URL: strings.Replace(u, "http://", "http://"+token+"@", 1), Branch: "main"}, want: "must not contain user information"},
		{name: "not http", opts: repo.CloneOptions{URL: "file:///tmp/x", Branch: "main"}, want: "scheme"},
		{name: "bad branch name", opts: repo.CloneOptions{URL: u, Branch: "a..b", Token: token}, want: "invalid branch"},
		{name: "dir not empty", opts: repo.CloneOptions{URL: u, Branch: "main", Token: token, Dir: nonEmpty}, want: "not empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 20 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if tt.opts.Dir == "" {
				tt.opts.Dir = filepath.Join(t.TempDir(), "ws")
			}
			start := time.Now()
			w, err := repo.Clone(ctx, tt.opts)
			if err == nil {
				t.Fatalf("Clone succeeded: %s", w.Dir())
			}
			if el := time.Since(start); el > timeout+5*time.Second {
				t.Errorf("Clone took %v", el)
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if strings.Contains(msg, token) || strings.Contains(msg, "ghs_WrongToken999") {
				t.Errorf("error contains the token: %s", msg)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(err, %v) = false", tt.is)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not contain %q", msg, tt.want)
			}
			if tt.name != "dir not empty" {
				if entries, _ := os.ReadDir(tt.opts.Dir); len(entries) != 0 {
					t.Errorf("failed clone left %d entries in %s", len(entries), tt.opts.Dir)
				}
			}
		})
	}
}

func TestPushErrors(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	w := clone(t, u)
	const branch = "agent/7-thing"
	if err := w.CreateBranch(branch); err != nil {
		t.Fatal(err)
	}
	write(t, w, map[string]string{"a.txt": "a\n"})
	if _, err := w.CommitAll("a", bot); err != nil {
		t.Fatal(err)
	}

	t.Run("wrong token", func(t *testing.T) {
		err := w.Push(ctxT(t), "ghs_WrongToken999", branch)
		if !errors.Is(err, repo.ErrAuthFailed) {
			t.Fatalf("err = %v, want ErrAuthFailed", err)
		}
		if strings.Contains(err.Error(), "ghs_WrongToken999") || !strings.Contains(err.Error(), "push "+u+" "+branch) {
			t.Errorf("bad message: %s", err)
		}
		if _, err := s.RevParse(t, owner, name, branch); err == nil {
			t.Error("branch was pushed with a wrong token")
		}
	})
	t.Run("server down", func(t *testing.T) {
		s.SetDown(true)
		defer s.SetDown(false)
		err := w.Push(ctxT(t), token, branch)
		if err == nil || !strings.Contains(err.Error(), "503") || strings.Contains(err.Error(), token) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unknown local branch", func(t *testing.T) {
		if err := w.Push(ctxT(t), token, "agent/none"); err == nil {
			t.Fatal("no error")
		}
	})

	// Someone pushes to the branch after our first push.
	if err := w.Push(ctxT(t), token, branch); err != nil {
		t.Fatal(err)
	}
	person := s.Push(t, owner, name, branch, map[string]string{"person.txt": "mine\n"}, "Person's fix")
	write(t, w, map[string]string{"b.txt": "b\n"})
	if _, err := w.CommitAll("b", bot); err != nil {
		t.Fatal(err)
	}
	t.Run("person pushed meanwhile", func(t *testing.T) {
		err := w.Push(ctxT(t), token, branch)
		if !errors.Is(err, pullwright.ErrPushRejected) {
			t.Fatalf("err = %v, want pullwright.ErrPushRejected", err)
		}
		t.Logf("error: %v", err)
		if got, _ := s.RevParse(t, owner, name, branch); got != person {
			t.Errorf("server branch = %s, want the person's %s", got, person)
		}
		if got, err := s.ReadFile(t, owner, name, branch, "person.txt"); err != nil || got != "mine\n" {
			t.Errorf("person.txt = %q, %v", got, err)
		}
	})

	// A person created the branch before we ever pushed it.
	w2 := clone(t, u)
	const other = "agent/8-other"
	s.Push(t, owner, name, other, map[string]string{"p.txt": "p\n"}, "Person first")
	if err := w2.CreateBranch(other); err != nil {
		t.Fatal(err)
	}
	write(t, w2, map[string]string{"q.txt": "q\n"})
	if _, err := w2.CommitAll("q", bot); err != nil {
		t.Fatal(err)
	}
	t.Run("branch created by someone else", func(t *testing.T) {
		if err := w2.Push(ctxT(t), token, other); !errors.Is(err, pullwright.ErrPushRejected) {
			t.Fatalf("err = %v, want pullwright.ErrPushRejected", err)
		}
	})
	t.Run("remote already has the commit", func(t *testing.T) {
		// main on the server is exactly the clone's HEAD commit.
		w3 := clone(t, u)
		if err := w3.Push(ctxT(t), token, "main"); err != nil {
			t.Fatalf("Push of an up-to-date branch: %v", err)
		}
	})
	if out, err := s.Git(owner, name, "fsck", "--strict"); err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
}

func TestChangesAndCommitAll(t *testing.T) {
	s := newServer(t)
	u, base := seed(t, s)
	w := clone(t, u)

	if cs, err := w.Changes(); err != nil || len(cs) != 0 {
		t.Fatalf("fresh clone Changes = %v, %v", cs, err)
	}
	if _, err := w.CommitAll("nothing", bot); !errors.Is(err, pullwright.ErrNoChanges) {
		t.Fatalf("CommitAll on a clean tree: %v", err)
	}
	write(t, w, map[string]string{
		"README.md":       "# widgets\nchanged\n",
		"new/dir/file.go": "package dir\n",
		"app.log":         "ignored\n",
		"build/out.bin":   "ignored\n",
	})
	remove(t, w, "docs/old.txt")
	// Touch without change: not a change.
	write(t, w, map[string]string{"docs/keep.md": "keep\n"})

	want := []pullwright.Change{
		{Path: "README.md", Status: "modified"},
		{Path: "docs/old.txt", Status: "deleted"},
		{Path: "new/dir/file.go", Status: "added"},
	}
	cs, err := w.Changes()
	if err != nil || !reflect.DeepEqual(cs, want) {
		t.Fatalf("Changes = %+v, %v\nwant %+v", cs, err, want)
	}

	tests := []struct {
		name      string
		msg       string
		author    pullwright.Identity
		co        []pullwright.Identity
		wantError bool
	}{
		{name: "empty message", msg: "  ", author: bot, wantError: true},
		{name: "no author email", msg: "x", author: pullwright.Identity{Name: "x"}, wantError: true},
		{name: "newline in co-author", msg: "x", author: bot, co: []pullwright.Identity{{Name: "a\nSigned-off-by: b", Email: "a@b"}}, wantError: true},
		{name: "angle bracket in email", msg: "x", author: bot, co: []pullwright.Identity{{Name: "a", Email: "a>@b"}}, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.CommitAll(tt.msg, tt.author, tt.co...)
			if (err != nil) != tt.wantError {
				t.Fatalf("err = %v", err)
			}
		})
	}

	bob := pullwright.Identity{Name: "Bob", Email: "bob@example.com"}
	sha, err := w.CommitAll("Checkpoint\n", bot, alice, bob, alice, bot)
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := w.Changes(); err != nil || len(cs) != 0 {
		t.Fatalf("Changes after commit = %v, %v", cs, err)
	}
	if _, err := w.CommitAll("again", bot); !errors.Is(err, pullwright.ErrNoChanges) {
		t.Fatalf("second CommitAll: %v", err)
	}
	if h, _ := w.Head(); h != sha {
		t.Fatalf("Head = %s, want %s", h, sha)
	}

	// The commit, as git itself sees it.
	gitOut := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = w.Dir()
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if got, want := gitOut("log", "-1", "--format=%B"), "Checkpoint\n\nCo-authored-by: Alice Maintainer <alice@example.com>\nCo-authored-by: Bob <bob@example.com>\n\n"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if got, want := gitOut("diff-tree", "--no-commit-id", "--name-status", "-r", base, sha), "M\tREADME.md\nD\tdocs/old.txt\nA\tnew/dir/file.go\n"; got != want {
		t.Errorf("committed changes:\n%s\nwant\n%s", got, want)
	}
	if got := gitOut("status", "--porcelain"); got != "" {
		t.Errorf("git status after CommitAll:\n%s", got)
	}
}

func TestCreateBranch(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	w := clone(t, u)
	write(t, w, map[string]string{"wip.txt": "keep me\n"})
	if err := w.CreateBranch("agent/1-a"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(w.Dir(), "wip.txt")); err != nil || string(b) != "keep me\n" {
		t.Fatalf("uncommitted file lost: %q %v", b, err)
	}
	if err := w.CreateBranch("agent/1-a"); err != nil {
		t.Fatalf("again: %v", err)
	}
	head, _ := os.ReadFile(filepath.Join(w.Dir(), ".git", "HEAD"))
	if string(head) != "ref: refs/heads/agent/1-a\n" {
		t.Fatalf("HEAD = %q", head)
	}
	if _, err := w.CommitAll("wip", bot); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "a..b", "x y", "-x", "a.lock", "a/", "a~1", "a:b"} {
		if err := w.CreateBranch(bad); err == nil {
			t.Errorf("CreateBranch(%q) succeeded", bad)
		}
	}
	// main exists at another commit than HEAD now.
	if err := w.CreateBranch("main"); err == nil {
		t.Error("CreateBranch(main) succeeded with main at another commit")
	}
}

func TestDiff(t *testing.T) {
	s := newServer(t)
	u, base := seed(t, s)
	w := clone(t, u)
	if err := w.CreateBranch("agent/3-diff"); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Diff(base); err != nil || d != "" {
		t.Fatalf("Diff of a clean clone = %q, %v", d, err)
	}

	// Committed part.
	write(t, w, map[string]string{"pager/pager.go": "package pager\n\nfunc Last(n, size int) int {\n\treturn (n + size - 1) / size\n}\n"})
	remove(t, w, "docs/old.txt")
	if _, err := w.CommitAll("checkpoint", bot); err != nil {
		t.Fatal(err)
	}
	// Uncommitted part.
	write(t, w, map[string]string{
		"README.md":     "# widgets\n\nA widget library.\n",
		"a/new.txt":     "one\ntwo\n",
		"ignored.log":   "not in the diff\n",
		"data/blob.bin": "\x00changed\x00",
	})
	remove(t, w, "cmd/main.go")
	if err := os.Chmod(filepath.Join(w.Dir(), "z", "last", "file.txt"), 0o755); err != nil {
		t.Fatal(err)
	}

	looseBefore := countLoose(t, w.Dir())
	d, err := w.Diff(base)
	if err != nil {
		t.Fatal(err)
	}
	if n := countLoose(t, w.Dir()); n != looseBefore {
		t.Errorf("Diff wrote %d objects", n-looseBefore)
	}
	t.Logf("diff:\n%s", d)
	d2, _ := w.Diff(base)
	if d != d2 {
		t.Error("Diff is not deterministic")
	}

	var headers []string
	for _, line := range strings.Split(d, "\n") {
		if strings.HasPrefix(line, "diff --git ") {
			headers = append(headers, line)
		}
	}
	wantHeaders := []string{
		"diff --git a/README.md b/README.md",
		"diff --git a/a/new.txt b/a/new.txt",
		"diff --git a/cmd/main.go b/cmd/main.go",
		"diff --git a/data/blob.bin b/data/blob.bin",
		"diff --git a/docs/old.txt b/docs/old.txt",
		"diff --git a/pager/pager.go b/pager/pager.go",
		"diff --git a/z/last/file.txt b/z/last/file.txt",
	}
	if !reflect.DeepEqual(headers, wantHeaders) {
		t.Errorf("file headers:\n%s\nwant\n%s", strings.Join(headers, "\n"), strings.Join(wantHeaders, "\n"))
	}
	for _, want := range []string{
		"new file mode 100644\n",
		"--- /dev/null\n+++ b/a/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n",
		"deleted file mode 100644\n",
		"--- a/docs/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-obsolete\n",
		"-\treturn n / size\n+\treturn (n + size - 1) / size\n",
		"old mode 100644\nnew mode 100755\n",
		"Binary files a/data/blob.bin and b/data/blob.bin differ\n",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q", want)
		}
	}
	if strings.Contains(d, "ignored.log") {
		t.Error("diff contains an ignored file")
	}

	// The diff, applied to the base by git itself, gives the workspace.
	applyCheck(t, s.BareDir(owner, name), base, d, w.Dir())

	stats, err := w.DiffStat(base)
	if err != nil {
		t.Fatal(err)
	}
	wantStats := []pullwright.FileStat{
		{Path: "README.md", Added: 2, Deleted: 0},
		{Path: "a/new.txt", Added: 2, Deleted: 0},
		{Path: "cmd/main.go", Added: 0, Deleted: 3},
		{Path: "data/blob.bin", Added: 0, Deleted: 0},
		{Path: "docs/old.txt", Added: 0, Deleted: 1},
		{Path: "pager/pager.go", Added: 1, Deleted: 1},
		{Path: "z/last/file.txt", Added: 0, Deleted: 0},
	}
	if !reflect.DeepEqual(stats, wantStats) {
		t.Errorf("DiffStat:\n got %+v\nwant %+v", stats, wantStats)
	}

	// DiffOf: the named files' changes only, a deleted one included, in
	// the same format.
	some, err := w.DiffOf(base, "README.md", "docs/old.txt", "not/there")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(some, "diff --git a/README.md b/README.md\n") || !strings.Contains(some, "diff --git a/docs/old.txt b/docs/old.txt\ndeleted file mode") ||
		strings.Count(some, "diff --git") != 2 || !strings.Contains(d, some[:strings.Index(some, "diff --git a/docs")]) {
		t.Errorf("DiffOf:\n%s", some)
	}

	if _, err := w.Diff("not-a-sha"); err == nil {
		t.Error("Diff(not-a-sha) succeeded")
	}
	if _, err := w.Diff(strings.Repeat("ab", 20)); err == nil {
		t.Error("Diff(unknown sha) succeeded")
	}
}

func countLoose(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(dir, ".git", "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && len(filepath.Base(filepath.Dir(p))) == 2 {
			n++
		}
		return nil
	})
	return n
}

// applyCheck checks out base from bare with the git CLI, applies the diff
// and compares every file with the workspace.
func applyCheck(t *testing.T, bare, base, diff, ws string) {
	t.Helper()
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	run := func(stdin string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("", "clone", "--quiet", "--no-checkout", bare, ".")
	run("", "checkout", "--quiet", base)
	// Binary hunks cannot be applied from a patch without --binary data;
	// take the binary file from the workspace.
	run(diff, "apply", "--exclude=data/blob.bin", "-")
	b, err := os.ReadFile(filepath.Join(ws, "data", "blob.bin"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "data", "blob.bin"), b, 0o644)

	snapshot := func(root string) map[string]string {
		m := map[string]string{}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if err != nil || d.IsDir() || strings.HasSuffix(p, ".log") {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			fi, _ := d.Info()
			c, _ := os.ReadFile(p)
			m[filepath.ToSlash(rel)] = fi.Mode().String() + " " + string(c)
			return nil
		})
		return m
	}
	if got, want := snapshot(dir), snapshot(ws); !reflect.DeepEqual(got, want) {
		t.Errorf("base + diff != workspace\n got %v\nwant %v", got, want)
	}
}

func TestRemove(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	w := clone(t, u)
	if err := w.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("workspace still there: %v", err)
	}
	if _, err := repo.Open(w.Dir()); err == nil {
		t.Fatal("Open of a removed workspace succeeded")
	}
}
