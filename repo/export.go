package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/pullwright/pullwright/internal/words"
)

// Tree is the files of one git tree: a commit's (CommitTree) or the
// workspace's current state (Current). It is what an approved command runs
// on: Export writes exactly its files, nothing the worktree has besides.
type Tree struct {
	tree *object.Tree
}

// Hash is the tree's object id.
func (t *Tree) Hash() string { return t.tree.Hash.String() }

// CommitTree is the tree of commit sha, which must be in the workspace.
func (w *Workspace) CommitTree(sha string) (*Tree, error) {
	t, err := w.commitTree(sha)
	if err != nil {
		return nil, err
	}
	return &Tree{tree: t}, nil
}

// Current is the workspace's state as a commit of every change would have
// it: HEAD's tree with the worktree's changes on top, untracked files
// included and files that .gitignore hides left out. Its new objects live
// in memory; the workspace's object store is not written to.
func (w *Workspace) Current() (*Tree, error) {
	t, err := w.currentTree()
	if err != nil {
		return nil, fmt.Errorf("current tree of %s: %w", w.dir, err)
	}
	return &Tree{tree: t}, nil
}

// exportEntry is what Export wrote at one path, as the check compares it.
type exportEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash // zero for directories
}

// Export writes the tree's files into dst, which must not exist: regular
// and executable files, symbolic links (written as links, never followed),
// and an empty directory for each submodule, as git archive does. No .git
// is written. It then reads dst back and compares every path, mode and
// content hash with the tree, so that what runs is what the tree holds and
// nothing else; any difference is an error and dst is removed.
//
// Names a tree may carry but git refuses to check out (".", "..", ".git" in
// any case, names with a slash or NUL) are an error, not a file: such a
// tree was crafted, and a run on it must not happen.
func (t *Tree) Export(ctx context.Context, dst string) (err error) {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("export tree %s: %w", words.Short(t.Hash()), err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dst)
			err = fmt.Errorf("export tree %s: %w", words.Short(t.Hash()), err)
		}
	}()
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	want := map[string]exportEntry{}
	if err := writeTree(ctx, root, t.tree, "", want); err != nil {
		return err
	}
	return checkExport(ctx, root, want)
}

// checkName refuses tree entry names that git itself would not check out.
func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..", strings.EqualFold(name, ".git"),
		strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("the tree has an entry named %q, which git never checks out", name)
	}
	return nil
}

func writeTree(ctx context.Context, root *os.Root, t *object.Tree, dir string, want map[string]exportEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	seen := make(map[string]bool, len(t.Entries))
	for _, e := range t.Entries {
		if err := checkName(e.Name); err != nil {
			return err
		}
		if seen[e.Name] {
			return fmt.Errorf("the tree has two entries named %q in %q", e.Name, "/"+dir)
		}
		seen[e.Name] = true
		p := path.Join(dir, e.Name)
		name := filepath.FromSlash(p)
		switch e.Mode {
		case filemode.Dir:
			sub, err := t.Tree(e.Name)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if err := root.Mkdir(name, 0o755); err != nil {
				return err
			}
			want[p] = exportEntry{mode: filemode.Dir}
			if err := writeTree(ctx, root, sub, p, want); err != nil {
				return err
			}
		case filemode.Submodule:
			// The submodule's commit is not in this repository: like git
			// archive, leave an empty directory where it would be.
			if err := root.Mkdir(name, 0o755); err != nil {
				return err
			}
			want[p] = exportEntry{mode: filemode.Dir}
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			perm := fs.FileMode(0o644)
			mode := filemode.Regular
			if e.Mode == filemode.Executable {
				perm, mode = 0o755, filemode.Executable
			}
			if err := writeBlob(root, t, e, name, perm); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			want[p] = exportEntry{mode: mode, hash: e.Hash}
		case filemode.Symlink:
			target, err := blobBytes(t, e)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if err := root.Symlink(string(target), name); err != nil {
				return err
			}
			want[p] = exportEntry{mode: filemode.Symlink, hash: e.Hash}
		default:
			return fmt.Errorf("%s: unknown tree entry mode %v", p, e.Mode)
		}
	}
	return nil
}

func blobBytes(t *object.Tree, e object.TreeEntry) ([]byte, error) {
	f, err := t.TreeEntryFile(&e)
	if err != nil {
		return nil, err
	}
	r, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func writeBlob(root *os.Root, t *object.Tree, e object.TreeEntry, name string, perm fs.FileMode) error {
	f, err := t.TreeEntryFile(&e)
	if err != nil {
		return err
	}
	r, err := f.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// The umask may have taken bits off; the tree's mode is what counts.
	return root.Chmod(name, perm)
}

// checkExport reads the export back, through its root, and compares it
// with what the tree holds.
func checkExport(ctx context.Context, root *os.Root, want map[string]exportEntry) error {
	found := 0
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		w, ok := want[p]
		if !ok {
			return fmt.Errorf("%s is in the export but not in the tree", p)
		}
		found++
		if d.IsDir() {
			if w.mode != filemode.Dir {
				return fmt.Errorf("%s is a directory in the export but not in the tree", p)
			}
			return nil
		}
		f, ok, err := readWorktreeFile(root, p)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s is in the export but is no file git knows", p)
		}
		if got := plumbing.ComputeHash(plumbing.BlobObject, f.content); f.mode != w.mode || got != w.hash {
			return fmt.Errorf("%s differs from the tree (mode %v, blob %s; the tree has %v, %s)", p, f.mode, words.Short(got.String()), w.mode, words.Short(w.hash.String()))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("check the export: %w", err)
	}
	if found != len(want) {
		var missing []string
		for p := range want {
			if _, err := root.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, p)
			}
		}
		slices.Sort(missing)
		return fmt.Errorf("check the export: %d paths of the tree are missing: %s", len(missing), strings.Join(missing[:min(len(missing), 5)], ", "))
	}
	return nil
}

// LeftOutOf lists what the worktree holds that t does not: files and
// directories git ignores (a directory is listed once, with a trailing
// slash, and not entered), and untracked ones not yet committed. .git is
// not listed. At most max paths are returned, sorted; more counts the rest.
// An approved command runs on t alone, so these are what it does not see.
func (w *Workspace) LeftOutOf(t *Tree, max int) (paths []string, more int, err error) {
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, 0, fmt.Errorf("left out of tree %s: %w", words.Short(t.Hash()), err)
	}
	defer root.Close()
	var walk func(tree *object.Tree, dir string) error
	walk = func(tree *object.Tree, dir string) error {
		entries, err := fs.ReadDir(root.FS(), dir)
		if err != nil {
			return err
		}
		for _, d := range entries {
			if dir == "." && d.Name() == ".git" {
				continue
			}
			p := path.Join(dir, d.Name())
			var e *object.TreeEntry
			if tree != nil {
				e, _ = tree.FindEntry(d.Name())
			}
			switch {
			case e == nil:
				if d.IsDir() {
					p += "/"
				}
				if len(paths) < max {
					paths = append(paths, p)
				} else {
					more++
				}
			case d.IsDir() && e.Mode == filemode.Dir:
				sub, err := tree.Tree(d.Name())
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				if err := walk(sub, p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(t.tree, "."); err != nil {
		return nil, 0, fmt.Errorf("left out of tree %s: %w", words.Short(t.Hash()), err)
	}
	slices.Sort(paths)
	return paths, more, nil
}

// LeftOut is LeftOutOf the tree of commit sha: what an approved run of
// that commit does not see.
func (w *Workspace) LeftOut(sha string, max int) ([]string, int, error) {
	t, err := w.CommitTree(sha)
	if err != nil {
		return nil, 0, err
	}
	return w.LeftOutOf(t, max)
}

// Export writes the files of commit sha, and nothing else, into dir,
// which must not exist, and checks what it wrote against the commit.
func (w *Workspace) Export(ctx context.Context, sha, dir string) error {
	t, err := w.CommitTree(sha)
	if err != nil {
		return err
	}
	return t.Export(ctx, dir)
}
