package repo_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/repo"
)

func TestFetchBranchAndChangedPaths(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	// A pull request's head, cloned as a task on it does: its branch left
	// main before main changed its workflow.
	s.Push(t, owner, name, "main", map[string]string{".github/workflows/ci.yml": "old\n"}, "Add CI")
	s.Push(t, owner, name, "topic", map[string]string{"pager/pager.go": "package pager\n", "docs/old.txt": "", "docs/new.txt": "new\n"}, "Topic")
	main := s.Push(t, owner, name, "main", map[string]string{".github/workflows/ci.yml": "fixed\n", "CHANGELOG.md": "v3\n"}, "Fix CI")
	head, err := s.RevParse(t, owner, name, "topic")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetRef(owner, name, "refs/pull/4/head", head); err != nil {
		t.Fatal(err)
	}
	w, err := repo.Clone(ctxT(t), repo.CloneOptions{URL: u, Branch: "refs/pull/4/head", Token: token, Dir: filepath.Join(t.TempDir(), "ws")})
	if err != nil {
		t.Fatal(err)
	}

	got, err := w.FetchBranch(ctxT(t), token, "main")
	if err != nil || got != main {
		t.Fatalf("FetchBranch = %q, %v; want %s", got, err, main)
	}
	// The workspace is still on the pull request's head, files and all.
	if h, _ := w.Head(); h != head {
		t.Errorf("HEAD moved to %s", h)
	}
	if cs, err := w.Changes(); err != nil || len(cs) != 0 {
		t.Errorf("the fetch changed files: %+v, %v", cs, err)
	}

	paths, err := w.ChangedPaths(main, head)
	if err != nil {
		t.Fatal(err)
	}
	// The tree comparison sees the older workflow the topic still has, and
	// main's newer changelog, besides the topic's own changes.
	want := []string{".github/workflows/ci.yml", "CHANGELOG.md", "docs/new.txt", "docs/old.txt", "pager/pager.go"}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Errorf("ChangedPaths = %q, want %q", paths, want)
	}
	if paths, err := w.ChangedPaths(head, head); err != nil || len(paths) != 0 {
		t.Errorf("ChangedPaths of a commit with itself = %q, %v", paths, err)
	}

	if _, err := w.FetchBranch(ctxT(t), token, "nope"); !errors.Is(err, repo.ErrRefNotFound) {
		t.Errorf("FetchBranch of a missing branch = %v, want ErrRefNotFound", err)
	}
	if _, err := w.FetchBranch(ctxT(t), token, "bad..name"); err == nil {
		t.Error("FetchBranch took an invalid branch name")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.FetchBranch(ctx, token, "main"); err == nil {
		t.Error("FetchBranch ignored a cancelled context")
	}
	if _, err := w.FetchBranch(ctxT(t), "wrong-token", "main"); err == nil || strings.Contains(err.Error(), "wrong-token") {
		t.Errorf("FetchBranch with a bad token = %v; want an error without the token", err)
	}
}
