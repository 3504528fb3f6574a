package repo_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/gitserver"
	"github.com/pullwright/pullwright/repo"
)

// forkPR makes refs/pull/2/head in acme/widgets point at three commits on
// top of main that no branch contains, as GitHub keeps a pull request from
// a fork in the base repository. Like GitHub, the server does not show
// refs/pull/* to pushes, so a push cannot count on the server having the PR
// head. It returns the commits, oldest first.
func forkPR(t *testing.T, s *gitserver.Server) []string {
	t.Helper()
	var pr []string
	for i, c := range []string{"one\n", "one\ntwo\n", "one\ntwo\nthree\n"} {
		pr = append(pr, s.Push(t, owner, name, "fork-work", map[string]string{"feature.txt": c}, "PR commit "+string(rune('A'+i))))
	}
	for _, args := range [][]string{
		{"update-ref", "refs/pull/2/head", pr[2]},
		{"update-ref", "-d", "refs/heads/fork-work"},
		{"config", "receive.hideRefs", "refs/pull"},
	} {
		if out, err := s.Git(owner, name, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if out, err := s.Git(owner, name, "for-each-ref", "--contains", pr[0], "refs/heads/"); err != nil || out != "" {
		t.Fatalf("branches containing the PR's commits: %q, %v", out, err)
	}
	return pr
}

func TestClonePullHead(t *testing.T) {
	s := newServer(t)
	u, base := seed(t, s)
	pr := forkPR(t, s)
	ctx := ctxT(t)
	dir := filepath.Join(t.TempDir(), "ws")

	w, err := repo.Clone(ctx, repo.CloneOptions{URL: u, Branch: "refs/pull/2/head", Token: token, Dir: dir})
	if err != nil {
		t.Fatalf("Clone(refs/pull/2/head): %v", err)
	}
	if h, err := w.Head(); err != nil || h != pr[2] {
		t.Fatalf("Head = %s, %v; want the PR head %s", h, err, pr[2])
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "HEAD")); string(b) != "ref: refs/heads/"+repo.PullHeadBranch+"\n" {
		t.Errorf(".git/HEAD = %q, want the local branch %s", b, repo.PullHeadBranch)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".git", "shallow")); err != nil || strings.TrimSpace(string(b)) != pr[2] {
		t.Errorf(".git/shallow = %q, %v; want only %s", b, err, pr[2])
	}
	for p, want := range map[string]string{"feature.txt": "one\ntwo\nthree\n", "README.md": "# widgets\n", "pager/util.go": "package pager\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	if cs, err := w.Changes(); err != nil || len(cs) != 0 {
		t.Fatalf("fresh PR clone Changes = %+v, %v", cs, err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "url = "+u+"\n") || !strings.Contains(string(cfg), "fetch = +refs/pull/2/head:refs/remotes/origin/pull/2/head\n") {
		t.Errorf(".git/config lacks the plain URL or the PR refspec:\n%s", cfg)
	}
	if strings.Contains(string(cfg), token) || strings.Contains(string(cfg), "x-access-token") {
		t.Errorf(".git/config holds credentials:\n%s", cfg)
	}

	// The bot's change on a new branch, pushed as a branch of the base
	// repository, on top of a commit only refs/pull/2/head reaches.
	const branch = "agent/2-follow-up"
	if err := w.CreateBranch(branch); err != nil {
		t.Fatal(err)
	}
	write(t, w, map[string]string{"feature.txt": "one\ntwo\nthree\nfour\n"})
	sha, err := w.CommitAll("Follow up on #2", bot)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := w.DiffStat(pr[2]); err != nil || len(st) != 1 || st[0] != (pullwright.FileStat{Path: "feature.txt", Added: 1}) {
		t.Errorf("DiffStat(PR head) = %+v, %v", st, err)
	}
	if err := w.Push(ctx, token, branch); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if got, err := s.RevParse(t, owner, name, branch); err != nil || got != sha {
		t.Fatalf("server %s = %q, %v; want %s", branch, got, err, sha)
	}
	cs := s.Commits(t, owner, name, branch)
	if len(cs) != 8 || cs[0].SHA != sha || cs[1].SHA != pr[2] || cs[3].SHA != pr[0] || cs[4].SHA != base {
		t.Errorf("server history of %s: %+v", branch, cs)
	}
	if out, err := s.Git(owner, name, "fsck", "--strict", "--no-dangling"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	if got, _ := s.RevParse(t, owner, name, "refs/pull/2/head"); got != pr[2] {
		t.Errorf("refs/pull/2/head moved to %s", got)
	}

	// Deepening goes down the PR head's history with the remote's refspec.
	if _, err := w.Touched(pr[0], sha, []string{"feature.txt"}); err == nil {
		t.Fatal("Touched found a commit the depth-1 clone cannot have")
	}
	if err := w.Fetch(ctx, token, pr[0]); err != nil {
		t.Fatalf("Fetch of an older PR commit: %v", err)
	}
	if got, err := w.Touched(pr[0], sha, []string{"feature.txt", "README.md"}); err != nil || len(got) != 1 || got[0] != "feature.txt" {
		t.Errorf("Touched after deepening = %v, %v", got, err)
	}
	if err := w.ResetTo(ctx, token, pr[1]); err != nil {
		t.Fatalf("ResetTo(PR commit B): %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "feature.txt")); string(b) != "one\ntwo\n" {
		t.Errorf("feature.txt after ResetTo = %q", b)
	}
	// Work restarted from an older PR commit, with deeper history, pushes.
	if err := w.CreateBranch("agent/2-again"); err != nil {
		t.Fatal(err)
	}
	write(t, w, map[string]string{"other.txt": "x\n"})
	again, err := w.CommitAll("Again", bot)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(ctx, token, "agent/2-again"); err != nil {
		t.Fatalf("Push after deepening: %v", err)
	}
	if cs := s.Commits(t, owner, name, "agent/2-again"); len(cs) < 2 || cs[0].SHA != again || cs[1].SHA != pr[1] {
		t.Errorf("server history of agent/2-again: %+v", cs)
	}
	if out, err := s.Git(owner, name, "fsck", "--strict", "--no-dangling"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	if err := w.Fetch(ctx, token, strings.Repeat("ab", 20)); !errors.Is(err, pullwright.ErrBaseGone) {
		t.Errorf("Fetch of a commit the PR lacks = %v, want pullwright.ErrBaseGone", err)
	}

	// A restarted worker reopens it and carries on.
	w2, err := repo.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := w2.Head(); h != again {
		t.Errorf("reopened Head = %s, want %s", h, again)
	}
}

// A full branch ref name is the same as the short name.
func TestCloneFullBranchRef(t *testing.T) {
	s := newServer(t)
	u, tip := seed(t, s)
	w, err := repo.Clone(ctxT(t), repo.CloneOptions{URL: u, Branch: "refs/heads/main", Token: token, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := w.Head(); h != tip {
		t.Fatalf("Head = %s, want %s", h, tip)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Dir(), ".git", "HEAD")); string(b) != "ref: refs/heads/main\n" {
		t.Fatalf(".git/HEAD = %q", b)
	}
}

func TestClonePullHeadErrors(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	forkPR(t, s)
	empty := s.CreateRepo(t, owner, "empty", "main", nil)
	if out, err := s.Git(owner, "empty", "update-ref", "-d", "refs/heads/main"); err != nil {
		t.Fatalf("empty the repository: %v\n%s", err, out)
	}

	for _, tt := range []struct {
		name, url, ref, token string
		is                    error
		want                  string
		existingDir           bool
	}{
		{name: "missing PR", url: u, ref: "refs/pull/9/head", is: repo.ErrRefNotFound, want: "refs/pull/9/head"},
		{name: "missing PR, existing dir", url: u, ref: "refs/pull/9/head", is: repo.ErrRefNotFound, want: "refs/pull/9/head", existingDir: true},
		{name: "empty repository", url: empty, ref: "refs/pull/2/head", is: repo.ErrRefNotFound, want: "ref not found"},
		{name: "missing branch", url: u, ref: "nope", is: repo.ErrRefNotFound, want: "nope"},
		{name: "wrong token", url: u, ref: "refs/pull/2/head", token: "ghs_WrongToken999", is: repo.ErrAuthFailed, want: "clone " + u + " refs/pull/2/head"},
		{name: "server down", url: u, ref: "refs/pull/2/head", want: "503"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.token == "" {
				tt.token = token
			}
			dir := filepath.Join(t.TempDir(), "ws")
			if tt.existingDir {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tt.name == "server down" {
				s.SetDown(true)
				defer s.SetDown(false)
			}
			w, err := repo.Clone(ctxT(t), repo.CloneOptions{URL: tt.url, Branch: tt.ref, Token: tt.token, Dir: dir})
			if err == nil {
				t.Fatalf("Clone succeeded: %s", w.Dir())
			}
			t.Logf("error: %v", err)
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(err, %v) = false", tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not contain %q", tt.want)
			}
			if strings.Contains(err.Error(), tt.token) {
				t.Errorf("error contains the token")
			}
			entries, statErr := os.ReadDir(dir)
			switch {
			case tt.existingDir && (statErr != nil || len(entries) != 0):
				t.Errorf("failed clone left %d entries in the existing dir (%v)", len(entries), statErr)
			case !tt.existingDir && !errors.Is(statErr, os.ErrNotExist):
				t.Errorf("failed clone left the dir it created: %d entries, %v", len(entries), statErr)
			}
		})
	}
}

// Only branches and pull request heads get in; the rest is refused before
// anything touches the network or the disk.
func TestCloneRefRefused(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	for _, ref := range []string{
		"refs/pull/2/merge",
		"refs/pull/2",
		"refs/pull/2/head/x",
		"refs/pull/0/head",
		"refs/pull/02/head",
		"refs/pull/-2/head",
		"refs/pull/x/head",
		"refs/pull/*/head",
		"refs/pull/2/head:refs/heads/main",
		"refs/tags/v1",
		"refs/remotes/origin/main",
		"refs/notes/commits",
		"refs/heads/a..b",
		"refs/heads/",
		"refs/",
		"refs/pull/2/head.lock",
	} {
		t.Run(ref, func(t *testing.T) {
			before := len(s.Requests())
			dir := filepath.Join(t.TempDir(), "ws")
			_, err := repo.Clone(ctxT(t), repo.CloneOptions{URL: u, Branch: ref, Token: token, Dir: dir})
			if err == nil {
				t.Fatal("Clone accepted it")
			}
			t.Logf("error: %v", err)
			if errors.Is(err, repo.ErrRefNotFound) {
				t.Errorf("refused as not found: %v", err)
			}
			if n := len(s.Requests()); n != before {
				t.Errorf("%d requests to the server", n-before)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("dir was created: %v", err)
			}
		})
	}
}
