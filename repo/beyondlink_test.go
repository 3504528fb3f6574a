package repo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tracked directory replaced by a symbolic link to a directory outside
// the workspace that holds a file of the same name: as git, the tracked
// file is gone, and nothing reads it through the link, not the changes,
// the diff, nor the commit.
func TestAPathBeyondALinkIsNotRead(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	w := clone(t, u)
	outside := t.TempDir()
	const secret = "SECRET-outside-the-workspace\n"
	if err := os.WriteFile(filepath.Join(outside, "keep.md"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join(w.Dir(), "docs")
	if err := os.Rename(docs, filepath.Join(w.Dir(), "olddocs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, docs); err != nil {
		t.Fatal(err)
	}
	changes, err := w.Changes()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.Path == "docs/keep.md" && c.Status != "deleted" {
			t.Errorf("docs/keep.md is %q, want deleted", c.Status)
		}
	}
	head, err := w.Head()
	if err != nil {
		t.Fatal(err)
	}
	diff, err := w.DiffOf(head)
	if err != nil {
		t.Fatal(err)
	}
	sha, err := w.CommitAll("move the docs", bot)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if err := w.Export(ctxT(t), sha, dst); err != nil {
		t.Fatal(err)
	}
	files := listTree(t, dst)
	if strings.Contains(diff, "SECRET") || strings.Contains(files["docs/keep.md"], "SECRET") {
		t.Errorf("the file outside was read through the link:\ndiff %s\ncommitted %q", diff, files["docs/keep.md"])
	}
}
