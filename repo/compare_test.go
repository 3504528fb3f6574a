package repo_test

import (
	"context"
	"errors"
	"fmt"
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

// BenchmarkForkGuard measures what the fork check adds to a task on a
// fork's pull request: fetching the default branch's tip into the clone of
// the pull request's head and comparing the two whole trees. The clone of
// the head is measured beside it for scale. The repository has 4000 files
// (about 17 MiB of text) in 200 directories; the pull request changes 20.
//
//	go test -run '^$' -bench ForkGuard -benchtime 5x ./repo/
func BenchmarkForkGuard(b *testing.B) {
	s := newServer(b)
	files := map[string]string{}
	for i := range 4000 {
		files[fmt.Sprintf("dir%03d/file%04d.txt", i%200, i)] = strings.Repeat(fmt.Sprintf("line %d of a generated file\n", i), 150)
	}
	u := s.CreateRepo(b, owner, name, "main", files)
	changed := map[string]string{}
	for i := range 20 {
		changed[fmt.Sprintf("dir%03d/file%04d.txt", i, i*200+i)] = "changed by the pull request\n"
	}
	head := s.Push(b, owner, name, "topic", changed, "The pull request")
	if err := s.SetRef(owner, name, "refs/pull/1/head", head); err != nil {
		b.Fatal(err)
	}
	clonePR := func(b *testing.B) *repo.Workspace {
		w, err := repo.Clone(context.Background(), repo.CloneOptions{URL: u, Branch: "refs/pull/1/head", Token: token, Dir: filepath.Join(b.TempDir(), "ws")})
		if err != nil {
			b.Fatal(err)
		}
		return w
	}
	b.Run("clone of the head", func(b *testing.B) {
		for b.Loop() {
			clonePR(b)
		}
	})
	b.Run("fork check", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			w := clonePR(b)
			b.StartTimer()
			tip, err := w.FetchBranch(context.Background(), token, "main")
			if err != nil {
				b.Fatal(err)
			}
			paths, err := w.ChangedPaths(tip, head)
			if err != nil || len(paths) != 20 {
				b.Fatalf("ChangedPaths = %d paths, %v", len(paths), err)
			}
		}
	})
}
