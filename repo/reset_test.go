package repo_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/repo"
)

// A task resumed after the default branch moved on rebuilds its workspace at
// the commit it started from, which a depth-1 clone of the new tip lacks.
func TestResetToOlderCommit(t *testing.T) {
	s := newServer(t)
	u, base := seed(t, s)
	for i, c := range []string{"a", "b", "c"} {
		s.Push(t, owner, name, "main", map[string]string{"later.txt": strings.Repeat(c, i+1) + "\n"}, "Later "+c)
	}
	w := clone(t, u)
	if head, _ := w.Head(); head == base {
		t.Fatal("the clone is already at the old base")
	}
	write(t, w, map[string]string{"README.md": "dirty\n"})
	if err := w.ResetTo(ctxT(t), token, base); err != nil {
		t.Fatalf("ResetTo: %v", err)
	}
	if head, _ := w.Head(); head != base {
		t.Fatalf("HEAD = %s, want %s", head, base)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), "later.txt")); !os.IsNotExist(err) {
		t.Fatalf("later.txt from after the base is still there: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Dir(), "README.md")); string(b) != "# widgets\n" {
		t.Fatalf("README.md = %q, want the base's", b)
	}
	// Work on a branch from the old base still pushes.
	if err := w.CreateBranch("agent/1-x"); err != nil {
		t.Fatal(err)
	}
	write(t, w, map[string]string{"pager/pager.go": "package pager\n"})
	if _, err := w.CommitAll("Fix", bot); err != nil {
		t.Fatal(err)
	}
	if err := w.Push(ctxT(t), token, "agent/1-x"); err != nil {
		t.Fatalf("push from the reset workspace: %v", err)
	}
	if out, err := s.Git(owner, name, "fsck", "--strict", "--no-dangling"); err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
}

func TestResetToErrors(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	w := clone(t, u)
	if err := w.ResetTo(ctxT(t), token, "not-a-sha"); err == nil {
		t.Fatal("ResetTo accepted a non-SHA")
	}
	err := w.ResetTo(ctxT(t), token, strings.Repeat("ab", 20))
	if !errors.Is(err, pullwright.ErrBaseGone) {
		t.Fatalf("ResetTo(unknown commit) = %v, want pullwright.ErrBaseGone", err)
	}
	if err := w.ResetTo(ctxT(t), "wrong-token", strings.Repeat("cd", 20)); err == nil || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("ResetTo with a bad token = %v (must fail without echoing the token)", err)
	}
}

func TestRemoteBranch(t *testing.T) {
	s := newServer(t)
	u, tip := seed(t, s)
	w := clone(t, u)
	got, err := w.RemoteBranch(ctxT(t), token, "main")
	if err != nil || got != tip {
		t.Fatalf("RemoteBranch(main) = %q, %v; want %s", got, err, tip)
	}
	got, err = w.RemoteBranch(ctxT(t), token, "agent/none")
	if err != nil || got != "" {
		t.Fatalf("RemoteBranch(missing) = %q, %v; want empty", got, err)
	}
}

func TestRevert(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	w := clone(t, u)
	write(t, w, map[string]string{"README.md": "changed\n", "new/file.go": "package x\n", "docs/keep.md": "edited\n"})
	remove(t, w, "docs/old.txt")
	if err := w.Revert("README.md", "new/file.go", "docs/old.txt"); err != nil {
		t.Fatalf("Revert: %v", err)
	}
	changes, err := w.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Path != "docs/keep.md" {
		t.Fatalf("changes after revert = %+v, want only docs/keep.md", changes)
	}
	if err := w.Revert("../outside"); err == nil {
		t.Fatal("Revert of a path outside the workspace succeeded")
	}
	if err := w.Revert(); err != nil {
		t.Fatalf("Revert of nothing: %v", err)
	}
}

func TestRemoteHead(t *testing.T) {
	s := newServer(t)
	u, tip := seed(t, s)
	for _, tc := range []struct {
		branch, token, want string
		wantErr             bool
	}{
		{"main", token, tip, false},
		{"nope", token, "", false},
		{"main", "bad-token", "", true},
	} {
		got, err := repo.RemoteHead(ctxT(t), u, tc.token, tc.branch)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("RemoteHead(%s, %s) = %q, %v", tc.branch, tc.token, got, err)
		}
		if err != nil && strings.Contains(err.Error(), tc.token) {
			t.Errorf("error shows the token: %v", err)
		}
	}
}
