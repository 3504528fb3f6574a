package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/pullwright/pullwright"
)

// wtChange is a Change with the worktree content needed to diff it.
type wtChange struct {
	pullwright.Change
	mode    filemode.FileMode // worktree mode (not for deleted)
	content []byte            // worktree content (not for deleted)
	hash    plumbing.Hash     // blob hash of content
}

// Changes lists the paths whose worktree state differs from HEAD, sorted by
// path. Untracked files are "added" unless .gitignore ignores them; the
// index is not looked at, only HEAD and the files on disk.
func (w *Workspace) Changes() ([]pullwright.Change, error) {
	cs, err := w.worktreeChanges(false)
	if err != nil {
		return nil, fmt.Errorf("changes %s: %w", w.dir, err)
	}
	out := make([]pullwright.Change, len(cs))
	for i, c := range cs {
		out[i] = c.Change
	}
	return out, nil
}

func (w *Workspace) headTree() (*object.Tree, error) {
	head, err := w.repo.Head()
	if err != nil {
		return nil, err
	}
	c, err := w.repo.CommitObject(head.Hash())
	if err != nil {
		return nil, err
	}
	return c.Tree()
}

// worktreeChanges compares the files on disk with HEAD's tree. go-git's
// Status finds the candidate paths (it applies .gitignore and uses the
// index's stat cache to avoid hashing every file); each candidate is then
// decided against HEAD alone, so a staged-then-reverted file is not a change.
func (w *Workspace) worktreeChanges(withContent bool) ([]wtChange, error) {
	wt, err := w.repo.Worktree()
	if err != nil {
		return nil, err
	}
	st, err := wt.Status()
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	tree, err := w.headTree()
	if err != nil {
		return nil, err
	}
	var out []wtChange
	for p, fs := range st {
		if fs.Staging == git.Unmodified && fs.Worktree == git.Unmodified {
			continue
		}
		var headEntry *object.TreeEntry
		if e, err := tree.FindEntry(p); err == nil {
			headEntry = e
		} else if !errors.Is(err, object.ErrEntryNotFound) && !errors.Is(err, object.ErrDirectoryNotFound) {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if headEntry != nil && headEntry.Mode == filemode.Submodule {
			// A submodule is not checked out: its empty path is no
			// deletion, and the bot changes no submodule.
			continue
		}
		mode, content, ok, err := readWorktreeFile(w.dir, p)
		if err != nil {
			return nil, err
		}
		c := wtChange{Change: pullwright.Change{Path: p}}
		switch {
		case headEntry == nil && !ok:
			continue // added to the index, then removed from disk
		case headEntry == nil:
			c.Status = pullwright.ChangeAdded
		case !ok:
			c.Status = pullwright.ChangeDeleted
		default:
			c.Status = pullwright.ChangeModified
		}
		if ok {
			c.mode = mode
			c.hash = plumbing.ComputeHash(plumbing.BlobObject, content)
			if headEntry != nil && headEntry.Hash == c.hash && headEntry.Mode == mode {
				continue // same as HEAD: only the index differed
			}
			if withContent {
				c.content = content
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// readWorktreeFile returns the git mode and blob content of the file at the
// slash path p; ok is false if there is no file (or a directory) there.
func readWorktreeFile(root, p string) (mode filemode.FileMode, content []byte, ok bool, err error) {
	if beyond, err := beyondLink(root, p); err != nil || beyond {
		// As git: a path whose directory is now a symbolic link (or a
		// file) has no file there, whatever the link leads to. Reading
		// through it would read where the link points, outside the
		// workspace as well.
		return 0, nil, false, err
	}
	full := filepath.Join(root, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return 0, nil, false, err
		}
		return filemode.Symlink, []byte(filepath.ToSlash(target)), true, nil
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(full)
		if err != nil {
			return 0, nil, false, err
		}
		if fi.Mode()&0o111 != 0 {
			return filemode.Executable, b, true, nil
		}
		return filemode.Regular, b, true, nil
	default:
		return 0, nil, false, nil // sockets, devices: git ignores them too
	}
}

// unstage takes deleted files out of the index. go-git's Remove would
// look at the worktree first, and refuses a path beyond a symbolic link,
// which is exactly a file that is gone (beyondLink).
func (w *Workspace) unstage(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	idx, err := w.repo.Storer.Index()
	if err != nil {
		return fmt.Errorf("read the index: %w", err)
	}
	for _, p := range paths {
		if _, err := idx.Remove(p); err != nil && !errors.Is(err, index.ErrEntryNotFound) {
			return fmt.Errorf("unstage %s: %w", p, err)
		}
	}
	if err := w.repo.Storer.SetIndex(idx); err != nil {
		return fmt.Errorf("write the index: %w", err)
	}
	return nil
}

// beyondLink reports whether a directory on the way to the slash path p
// under root is a symbolic link or not a directory, so that p names
// nothing git would read.
func beyondLink(root, p string) (bool, error) {
	dir := root
	parts := strings.Split(p, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return true, nil
		case err != nil:
			return false, err
		case !fi.IsDir():
			return true, nil
		}
	}
	return false, nil
}

// CommitAll is CommitAllAt with the current time.
func (w *Workspace) CommitAll(msg string, author pullwright.Identity, coAuthors ...pullwright.Identity) (string, error) {
	return w.CommitAllAt(time.Now(), msg, author, coAuthors...)
}

// CommitAllAt stages every change (additions, modifications and deletions;
// ignored files stay out) and commits it with author as author and committer,
// dated when. Co-authors become "Co-authored-by:" trailers after a blank
// line. It returns the new commit's SHA, or pullwright.ErrNoChanges if the
// worktree matches HEAD. The same tree, parent, message, identities and time
// give the same SHA, so a commit remade after a crash equals the one that
// may already have been pushed.
func (w *Workspace) CommitAllAt(when time.Time, msg string, author pullwright.Identity, coAuthors ...pullwright.Identity) (string, error) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return "", errors.New("commit: empty message")
	}
	if err := validIdentity(author); err != nil {
		return "", fmt.Errorf("commit: author: %w", err)
	}
	var trailers []string
	seen := map[string]bool{strings.ToLower(author.Email): true}
	for _, co := range coAuthors {
		if err := validIdentity(co); err != nil {
			return "", fmt.Errorf("commit: co-author: %w", err)
		}
		if seen[strings.ToLower(co.Email)] {
			continue
		}
		seen[strings.ToLower(co.Email)] = true
		trailers = append(trailers, fmt.Sprintf("Co-authored-by: %s <%s>", co.Name, co.Email))
	}
	full := msg + "\n"
	if len(trailers) > 0 {
		full += "\n" + strings.Join(trailers, "\n") + "\n"
	}

	changes, err := w.Changes()
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if len(changes) == 0 {
		return "", fmt.Errorf("nothing to commit: %w", pullwright.ErrNoChanges)
	}
	wt, err := w.repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	// The changes, path by path: staging the whole tree would read a
	// submodule's empty directory as a file, and Changes already applied
	// .gitignore.
	var deleted []string
	for _, c := range changes {
		if c.Status == pullwright.ChangeDeleted {
			deleted = append(deleted, c.Path)
			continue
		}
		if _, err := wt.Add(c.Path); err != nil {
			return "", fmt.Errorf("commit: stage %s: %w", c.Path, err)
		}
	}
	if err := w.unstage(deleted); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	sig := &object.Signature{Name: author.Name, Email: author.Email, When: when}
	h, err := wt.Commit(full, &git.CommitOptions{Author: sig, Committer: sig})
	if errors.Is(err, git.ErrEmptyCommit) {
		return "", fmt.Errorf("nothing to commit: %w", pullwright.ErrNoChanges)
	}
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	return h.String(), nil
}
