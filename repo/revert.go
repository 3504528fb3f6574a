package repo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Revert puts each path back as HEAD has it: its content and mode, or no
// file at all when HEAD has none. Paths are slash-separated and relative to
// the workspace; none may leave it (the writes go through os.Root).
func (w *Workspace) Revert(paths ...string) error {
	if len(paths) == 0 {
		return nil
	}
	tree, err := w.headTree()
	if err != nil {
		return fmt.Errorf("revert: %w", err)
	}
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return fmt.Errorf("revert: %w", err)
	}
	defer root.Close()
	for _, p := range paths {
		if err := revertOne(root, tree, p); err != nil {
			return fmt.Errorf("revert %s: %w", p, err)
		}
	}
	return nil
}

func revertOne(root *os.Root, tree *object.Tree, p string) error {
	if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := tree.File(p)
	if errors.Is(err, object.ErrFileNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	r, err := f.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	content, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if dir := path.Dir(p); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	switch f.Mode {
	case filemode.Symlink:
		return root.Symlink(string(content), p)
	case filemode.Executable:
		return root.WriteFile(p, content, 0o755)
	default:
		return root.WriteFile(p, content, 0o644)
	}
}
