package gitserver_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/gitserver"
)

const token = "ghs_ServerTestToken42"

func newServer(t *testing.T) *gitserver.Server {
	t.Helper()
	return gitserver.New(t, gitserver.Options{Auth: func(u, p string) bool {
		return u == "x-access-token" && p == token
	}})
}

// git runs the git CLI hermetically in dir.
func git(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestAuth(t *testing.T) {
	s := newServer(t)
	u := s.CreateRepo(t, "acme", "widgets", "main", map[string]string{"a": "a\n"})
	anyPass := gitserver.New(t, gitserver.Options{})
	anyURL := anyPass.CreateRepo(t, "acme", "widgets", "main", map[string]string{"a": "a\n"})

	tests := []struct {
		name       string
		url        string
		user, pass string
		noAuth     bool
		want       int
	}{
		{name: "valid token", url: u, user: "x-access-token", pass: token, want: 200},
		{name: "no credentials", url: u, noAuth: true, want: 401},
		{name: "wrong token", url: u, user: "x-access-token", pass: "nope", want: 401},
		{name: "wrong user", url: u, user: "someone", pass: token, want: 401},
		{name: "nil Auth accepts any password", url: anyURL, user: "whoever", pass: "x", want: 200},
		{name: "nil Auth still needs a password", url: anyURL, user: "whoever", pass: "", want: 401},
		{name: "missing repository", url: s.CloneURL("acme", "nothing"), user: "x-access-token", pass: token, want: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", tt.url+"/info/refs?service=git-upload-pack", nil)
			if !tt.noAuth {
				req.SetBasicAuth(tt.user, tt.pass)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.want)
			}
			if tt.want == 401 && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
			}
			if tt.want == 200 && res.Header.Get("Content-Type") != "application/x-git-upload-pack-advertisement" {
				t.Errorf("Content-Type = %q", res.Header.Get("Content-Type"))
			}
		})
	}
	reqs := s.Requests()
	if len(reqs) == 0 {
		t.Fatal("no requests recorded")
	}
	first := reqs[0]
	if first.Method != "GET" || first.Path != "/acme/widgets.git/info/refs" || first.Query != "service=git-upload-pack" || first.User != "x-access-token" || first.Status != 200 {
		t.Errorf("first request = %+v", first)
	}
}

func TestHelpersAndCLI(t *testing.T) {
	s := newServer(t)
	u := s.CreateRepo(t, "acme", "widgets", "trunk", map[string]string{
		"README.md":   "hello\n",
		"src/main.go": "package main\n",
	})
	if u != s.URL+"/acme/widgets.git" || u != s.CloneURL("acme", "widgets") {
		t.Fatalf("clone URL %q", u)
	}
	if fi, err := os.Stat(filepath.Join(s.BareDir("acme", "widgets"), "HEAD")); err != nil || fi.IsDir() {
		t.Fatalf("BareDir is not a bare repository: %v", err)
	}
	if got, err := s.ReadFile(t, "acme", "widgets", "trunk", "src/main.go"); err != nil || got != "package main\n" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if _, err := s.ReadFile(t, "acme", "widgets", "trunk", "missing"); err == nil {
		t.Fatal("ReadFile of a missing file succeeded")
	}
	seed, err := s.RevParse(t, "acme", "widgets", "trunk")
	if err != nil || len(seed) != 40 {
		t.Fatalf("RevParse = %q, %v", seed, err)
	}
	if _, err := s.RevParse(t, "acme", "widgets", "nope"); err == nil {
		t.Fatal("RevParse of a missing ref succeeded")
	}
	cs := s.Commits(t, "acme", "widgets", "trunk")
	if len(cs) != 1 || cs[0] != (gitserver.Commit{SHA: seed, Subject: "Initial commit", AuthorName: "Seed", AuthorEmail: "seed@example.com", CommitterName: "Seed"}) {
		t.Fatalf("Commits = %+v", cs)
	}

	p := s.Push(t, "acme", "widgets", "trunk", map[string]string{"README.md": "hello again\n", "src/main.go": ""}, "Person edit\n\nWith a body.")
	cs = s.Commits(t, "acme", "widgets", "trunk")
	if len(cs) != 2 || cs[0].SHA != p || cs[0].Subject != "Person edit" || cs[0].Body != "With a body." || cs[0].AuthorName != "Person" || cs[1].SHA != seed {
		t.Fatalf("after Push: %+v", cs)
	}
	if _, err := s.ReadFile(t, "acme", "widgets", "trunk", "src/main.go"); err == nil {
		t.Error("Push did not delete src/main.go")
	}
	feat := s.Push(t, "acme", "widgets", "feature", map[string]string{"f": "f\n"}, "New branch")
	if cs := s.Commits(t, "acme", "widgets", "feature"); len(cs) != 3 || cs[0].SHA != feat || cs[1].SHA != p {
		t.Errorf("new branch history: %+v", cs)
	}
	if len(s.Requests()) != 0 {
		t.Errorf("helpers went through HTTP: %+v", s.Requests())
	}

	// The real git CLI clones and pushes over HTTP.
	dir := t.TempDir()
	authURL := strings.Replace(u, "http://", "http://x-access-token:"+token+"@", 1)
	if out, err := git(t, dir, "clone", "--quiet", "--depth", "1", "--branch", "trunk", authURL, "."); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "cli.txt"), []byte("cli\n"), 0o644)
	if out, err := git(t, dir, "add", "."); err != nil {
		t.Fatal(err, out)
	}
	if out, err := git(t, dir, "commit", "-qm", "From the CLI"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := git(t, dir, "push", "--quiet", "origin", "HEAD:refs/heads/cli"); err != nil {
		t.Fatalf("git push: %v\n%s", err, out)
	}
	if got, err := s.ReadFile(t, "acme", "widgets", "cli", "cli.txt"); err != nil || got != "cli\n" {
		t.Fatalf("pushed file = %q, %v", got, err)
	}
	var sawPush bool
	for _, r := range s.Requests() {
		if r.Method == "POST" && r.Path == "/acme/widgets.git/git-receive-pack" && r.Status == 200 && r.User == "x-access-token" {
			sawPush = true
		}
	}
	if !sawPush {
		t.Errorf("no successful receive-pack recorded: %+v", s.Requests())
	}
	if out, err := s.Git("acme", "widgets", "fsck", "--strict"); err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
}

func TestSetDown(t *testing.T) {
	s := newServer(t)
	u := s.CreateRepo(t, "acme", "widgets", "main", map[string]string{"a": "a\n"})
	s.SetDown(true)
	req, _ := http.NewRequest("GET", u+"/info/refs?service=git-upload-pack", nil)
	req.SetBasicAuth("x-access-token", token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d while down", res.StatusCode)
	}
	s.SetDown(false)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("status %d after coming back", res.StatusCode)
	}
}

// TestBackendEnvironment checks what http-backend and its hooks see: not the
// test process's environment, and not the credentials.
func TestBackendEnvironment(t *testing.T) {
	t.Setenv("PULLWRIGHT_TEST_SECRET", "s3cr3t-from-the-test-process")
	s := newServer(t)
	u := s.CreateRepo(t, "acme", "widgets", "main", map[string]string{"a": "a\n"})
	envFile := filepath.Join(t.TempDir(), "env")
	hook := filepath.Join(s.BareDir("acme", "widgets"), "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nenv > '"+envFile+"'\ncat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	authURL := strings.Replace(u, "http://", "http://x-access-token:"+token+"@", 1)
	if out, err := git(t, dir, "clone", "--quiet", authURL, "."); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if out, err := git(t, dir, "commit", "-q", "--allow-empty", "-m", "x"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := git(t, dir, "push", "--quiet", "origin", "HEAD:refs/heads/x"); err != nil {
		t.Fatalf("git push: %v\n%s", err, out)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatalf("hook did not run: %v", err)
	}
	for _, bad := range []string{"s3cr3t-from-the-test-process", token, "HTTP_AUTHORIZATION"} {
		if strings.Contains(string(env), bad) {
			t.Errorf("hook environment contains %q:\n%s", bad, env)
		}
	}
	if !strings.Contains(string(env), "REMOTE_USER=x-access-token") {
		t.Errorf("hook environment lacks REMOTE_USER:\n%s", env)
	}
}

func TestStartClose(t *testing.T) {
	s, err := gitserver.Start(gitserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.InitRepo("acme", "w", "main", map[string]string{"a": "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InitRepo("acme", "w", "main", nil); err == nil {
		t.Error("InitRepo of an existing repository succeeded")
	}
	for _, bad := range [][2]string{{"..", "x"}, {"a/b", "x"}, {"a", ""}, {"a", "-x"}} {
		if _, err := s.InitRepo(bad[0], bad[1], "main", nil); err == nil {
			t.Errorf("InitRepo(%q, %q) succeeded", bad[0], bad[1])
		}
	}
	// A path that tries to leave the worktree is kept inside it.
	if _, err := s.InitRepo("acme", "esc", "main", map[string]string{"../../x": "x"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadFile(t, "acme", "esc", "main", "x"); err != nil || got != "x" {
		t.Errorf("x = %q, %v", got, err)
	}
	dir := s.BareDir("acme", "w")
	s.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", dir, err)
	}
}

func TestFile(t *testing.T) {
	s := newServer(t)
	s.CreateRepo(t, "acme", "widgets", "main", map[string]string{
		".github/pullwright.yml": "version: 1\n",
		"README.md":              "hello\n",
		"empty":                  "",
		"bin/data":               "a\x00b\xff",
		"*.md":                   "a file named like a glob\n",
	})
	seed, err := s.RevParse(t, "acme", "widgets", "main")
	if err != nil {
		t.Fatal(err)
	}
	s.Push(t, "acme", "widgets", "main", map[string]string{"README.md": "changed\n"}, "Change README")
	if out, err := s.Git("acme", "widgets", "tag", "v1", seed); err != nil {
		t.Fatal(err, out)
	}

	// A symbolic link and a submodule, committed with the real CLI and pushed
	// to the bare repository directly.
	dir := t.TempDir()
	if out, err := git(t, dir, "clone", "--quiet", s.BareDir("acme", "widgets"), "."); err != nil {
		t.Fatal(err, out)
	}
	if err := os.Symlink("README.md", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if out, err := git(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+seed+",sub"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := git(t, dir, "add", "link"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := git(t, dir, "commit", "-qm", "link and submodule"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := git(t, dir, "push", "--quiet", "origin", "HEAD:refs/heads/odd"); err != nil {
		t.Fatal(err, out)
	}

	tests := []struct {
		name, owner, repo, ref, path string
		want                         string
		found                        bool
	}{
		{"file at branch", "acme", "widgets", "main", "README.md", "changed\n", true},
		{"file at commit", "acme", "widgets", seed, "README.md", "hello\n", true},
		{"file at tag", "acme", "widgets", "v1", "README.md", "hello\n", true},
		{"full ref name", "acme", "widgets", "refs/heads/main", "README.md", "changed\n", true},
		{"nested file", "acme", "widgets", "main", ".github/pullwright.yml", "version: 1\n", true},
		{"leading slash", "acme", "widgets", "main", "/.github/pullwright.yml", "version: 1\n", true},
		{"empty file", "acme", "widgets", "main", "empty", "", true},
		{"binary file", "acme", "widgets", "main", "bin/data", "a\x00b\xff", true},
		{"glob characters are literal", "acme", "widgets", "main", "*.md", "a file named like a glob\n", true},
		{"glob does not match others", "acme", "widgets", "main", "READ*", "", false},
		{"missing path", "acme", "widgets", "main", "nope.yml", "", false},
		{"missing ref", "acme", "widgets", "nope", "README.md", "", false},
		{"empty ref", "acme", "widgets", "", "README.md", "", false},
		{"missing repository", "acme", "nothing", "main", "README.md", "", false},
		{"invalid repository name", "..", "widgets", "main", "README.md", "", false},
		{"directory", "acme", "widgets", "main", ".github", "", false},
		{"root", "acme", "widgets", "main", "", "", false},
		{"symbolic link", "acme", "widgets", "odd", "link", "", false},
		{"submodule", "acme", "widgets", "odd", "sub", "", false},
		{"file next to them", "acme", "widgets", "odd", "README.md", "changed\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := s.File(tt.owner, tt.repo, tt.ref, tt.path)
			if err != nil || found != tt.found || string(got) != tt.want {
				t.Errorf("File(%s/%s, %q, %q) = %q, %v, %v; want %q, %v, nil", tt.owner, tt.repo, tt.ref, tt.path, got, found, err, tt.want, tt.found)
			}
		})
	}
	if len(s.Requests()) != 0 {
		t.Errorf("File went through HTTP: %+v", s.Requests())
	}
}
