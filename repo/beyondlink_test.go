package repo_test

import (
	"errors"
	"io/fs"
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

// A file of the workspace with a second name outside it (a hard link,
// to a secret on the same file system, say) goes into no diff and no
// commit: it is refused with its name. One whose bytes are the commit's
// own is no change, and is no error.
func TestAHardLinkIsNotCommitted(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("SECRET-outside-the-workspace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"notes.txt", "docs/keep.md"} { // untracked, tracked
		t.Run(p, func(t *testing.T) {
			w := clone(t, u)
			head, err := w.Head()
			if err != nil {
				t.Fatal(err)
			}
			full := filepath.Join(w.Dir(), filepath.FromSlash(p))
			if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			if err := os.Link(outside, full); err != nil {
				t.Skipf("no hard links between two temporary directories here: %v", err)
			}
			want := p + " is a hard link: the file has 2 names"
			if _, err := w.Changes(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Changes: %v, want an error saying %q", err, want)
			}
			d, err := w.Diff(head)
			if err == nil || strings.Contains(d, "SECRET") || !strings.Contains(err.Error(), want) {
				t.Errorf("Diff: %v, want an error saying %q; the diff:\n%s", err, want, d)
			}
			if sha, err := w.CommitAll("take the secret", bot); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("CommitAll: %s, %v; want an error saying %q", sha, err, want)
			}
			if now, err := w.Head(); err != nil || now != head {
				t.Errorf("HEAD moved from %s to %s (%v)", head, now, err)
			}
		})
	}

	t.Run("the commit's own bytes", func(t *testing.T) {
		w := clone(t, u)
		if err := os.Link(filepath.Join(w.Dir(), "README.md"), filepath.Join(t.TempDir(), "readme")); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
		write(t, w, map[string]string{"pager/util.go": "package pager\n\n// util\n"})
		sha, err := w.CommitAll("a change beside it", bot)
		if err != nil {
			t.Fatal(err)
		}
		files, _, err := w.ReadTree(sha, func(p string) bool { return p == "README.md" }, 1, 1<<10)
		if err != nil || len(files) != 1 || string(files[0].Data) != "# widgets\n" {
			t.Errorf("README.md at %s: %+v, %v", sha, files, err)
		}
	})
}
