package repo

import (
	"errors"
	"fmt"
	"io"
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
	"github.com/pullwright/pullwright/internal/hardlink"
)

// wtChange is a Change with the worktree content needed to diff it.
type wtChange struct {
	pullwright.Change
	mode    filemode.FileMode // worktree mode (not for deleted)
	content []byte            // worktree content (not for deleted)
	hash    plumbing.Hash     // blob hash of content
	info    fs.FileInfo       // the file's Lstat, for the index (not for deleted)
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
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
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
		f, ok, err := readWorktreeFile(root, p)
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
			c.mode, c.info = f.mode, f.info
			c.hash = plumbing.ComputeHash(plumbing.BlobObject, f.content)
			if headEntry != nil && headEntry.Hash == c.hash && headEntry.Mode == f.mode {
				continue // same as HEAD: only the index differed
			}
			if n := hardlink.Count(f.info); f.info.Mode().IsRegular() && n > 1 {
				// Another name of the file may be outside the workspace
				// (a secret on the same file system): its bytes would go
				// into the diff the agent reads and the commit pushed.
				// Git never checks out a hard link, so one is foreign.
				return nil, fmt.Errorf("%s is a hard link: the file has %d names, and another may be outside the workspace, so it goes into no diff or commit; delete it or write it anew", p, n)
			}
			if withContent {
				c.content = f.content
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// worktreeFile is a file of the worktree as git reads it.
type worktreeFile struct {
	mode    filemode.FileMode
	content []byte      // a symbolic link's target, for a link
	info    fs.FileInfo // Lstat's
}

// readWorktreeFile reads the file at the slash path p under root: its git
// mode and blob content; ok is false if there is no file (or a directory)
// there. Everything goes through root, so that no component of p, a
// directory on the way or the file itself, leads outside the tree, even
// one that became a link after it was looked at.
func readWorktreeFile(root *os.Root, p string) (f worktreeFile, ok bool, err error) {
	if beyond, err := beyondLink(root, p); err != nil || beyond {
		// As git: a path whose directory is now a symbolic link (or a
		// file) has no file there, whatever the link leads to. Reading
		// through it would read where the link points, outside the
		// workspace as well.
		return worktreeFile{}, false, err
	}
	fi, err := root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
		return worktreeFile{}, false, nil
	}
	if err != nil {
		return worktreeFile{}, false, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := root.Readlink(p)
		if err != nil {
			return worktreeFile{}, false, err
		}
		return worktreeFile{mode: filemode.Symlink, content: []byte(filepath.ToSlash(target)), info: fi}, true, nil
	case fi.Mode().IsRegular():
		b, err := readSame(root, p, fi)
		if err != nil {
			return worktreeFile{}, false, err
		}
		mode := filemode.Regular
		if fi.Mode()&0o111 != 0 {
			mode = filemode.Executable
		}
		return worktreeFile{mode: mode, content: b, info: fi}, true, nil
	default:
		return worktreeFile{}, false, nil // sockets, devices: git ignores them too
	}
}

// readSame reads the regular file at p, which must still be the file fi
// describes. Between the look and the read a directory on the way may
// have become a link, or the name another file's: root keeps either
// inside the tree, and this keeps what is read to what was looked at.
func readSame(root *os.Root, p string, fi fs.FileInfo) ([]byte, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	got, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(fi, got) {
		return nil, fmt.Errorf("%s changed while it was read", p)
	}
	return io.ReadAll(f)
}

// beyondLink reports whether a directory on the way to the slash path p
// under root is a symbolic link or not a directory, so that p names
// nothing git would read.
func beyondLink(root *os.Root, p string) (bool, error) {
	parts := strings.Split(p, "/")
	for i := range parts[:len(parts)-1] {
		fi, err := root.Lstat(strings.Join(parts[:i+1], "/"))
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

	// The commit is the tree Current reads, through the workspace root,
	// written to the store: not the index after go-git's Add, which
	// reads every file again by its path (following any link on the way)
	// and could commit bytes no diff showed.
	head, err := w.repo.Head()
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	parent, err := w.repo.CommitObject(head.Hash())
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	tree, ov, changes, err := w.current()
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if len(changes) == 0 || tree.Hash == parent.TreeHash {
		return "", fmt.Errorf("nothing to commit: %w", pullwright.ErrNoChanges)
	}
	for h, obj := range ov.mem {
		if w.repo.Storer.HasEncodedObject(h) == nil {
			continue
		}
		if _, err := w.repo.Storer.SetEncodedObject(obj); err != nil {
			return "", fmt.Errorf("commit: store %s: %w", h, err)
		}
	}
	sig := object.Signature{Name: author.Name, Email: author.Email, When: when}
	c := &object.Commit{Author: sig, Committer: sig, Message: full, TreeHash: tree.Hash, ParentHashes: []plumbing.Hash{head.Hash()}}
	obj := w.repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	h, err := w.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	// The index first: one that is ahead of HEAD only makes Changes
	// look at more paths, each decided against HEAD.
	if err := w.stage(changes); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if err := w.moveHead(h); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	return h.String(), nil
}

// stage makes the index say what the worktree holds at each changed
// path, with the size and time go-git's Status compares, so that it
// hashes no file again to find the commit's changes unchanged.
func (w *Workspace) stage(changes []wtChange) error {
	idx, err := w.repo.Storer.Index()
	if err != nil {
		return fmt.Errorf("read the index: %w", err)
	}
	for _, c := range changes {
		if c.Status == pullwright.ChangeDeleted {
			if _, err := idx.Remove(c.Path); err != nil && !errors.Is(err, index.ErrEntryNotFound) {
				return fmt.Errorf("unstage %s: %w", c.Path, err)
			}
			continue
		}
		e, err := idx.Entry(c.Path)
		switch {
		case errors.Is(err, index.ErrEntryNotFound):
			e = idx.Add(c.Path)
		case err != nil:
			return fmt.Errorf("stage %s: %w", c.Path, err)
		}
		e.Hash, e.Mode = c.hash, c.mode
		e.ModifiedAt, e.Size = c.info.ModTime(), uint32(c.info.Size())
	}
	if err := w.repo.Storer.SetIndex(idx); err != nil {
		return fmt.Errorf("write the index: %w", err)
	}
	return nil
}

// moveHead points HEAD's branch (or a detached HEAD) at commit h, as a
// commit does.
func (w *Workspace) moveHead(h plumbing.Hash) error {
	head, err := w.repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return fmt.Errorf("read HEAD: %w", err)
	}
	name := plumbing.HEAD
	if head.Type() == plumbing.SymbolicReference {
		name = head.Target()
	}
	if err := w.repo.Storer.SetReference(plumbing.NewHashReference(name, h)); err != nil {
		return fmt.Errorf("move %s to %s: %w", name, h, err)
	}
	return nil
}
