package repo

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Touched returns those of paths that differ between commits from and to:
// added, deleted, or changed in content or mode. A path naming a directory
// differs when anything below it does. Paths are slash-separated and
// relative to the repository root; the result has them cleaned ("./a//b"
// is "a/b"), in the order given, without repeats, and is empty when none
// differs.
//
// It is how the bot tells whether a person's new commits on a branch went
// near the files it changed before rebasing its change onto them, so it
// errs towards "touched": a path that cannot be a repository path is an
// error, not "untouched". Both commits must be in the workspace (Fetch them
// first); only their trees are compared, not the commits in between, so a
// file changed and changed back counts as untouched.
func (w *Workspace) Touched(from, to string, paths []string) ([]string, error) {
	fromTree, toTree, err := w.commitTrees(from, to)
	if err != nil {
		return nil, fmt.Errorf("touched %s..%s: %w", from, to, err)
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		clean, err := cleanRepoPath(p)
		if err != nil {
			return nil, fmt.Errorf("touched %s..%s: %w", from, to, err)
		}
		if seen[clean] {
			continue
		}
		seen[clean] = true
		a, err := lookup(fromTree, clean)
		if err != nil {
			return nil, fmt.Errorf("touched %s..%s: %s at %s: %w", from, to, clean, from, err)
		}
		b, err := lookup(toTree, clean)
		if err != nil {
			return nil, fmt.Errorf("touched %s..%s: %s at %s: %w", from, to, clean, to, err)
		}
		// Equal hashes mean equal content (for a directory, equal contents
		// throughout), so no blob is read.
		if (a == nil) != (b == nil) || (a != nil && (a.Hash != b.Hash || a.Mode != b.Mode)) {
			out = append(out, clean)
		}
	}
	return out, nil
}

// commitTrees are the root trees of commits from and to, both in the
// workspace.
func (w *Workspace) commitTrees(from, to string) (a, b *object.Tree, err error) {
	if a, err = w.commitTree(from); err != nil {
		return nil, nil, fmt.Errorf("from: %w", err)
	}
	if b, err = w.commitTree(to); err != nil {
		return nil, nil, fmt.Errorf("to: %w", err)
	}
	return a, b, nil
}

// fullSHA reports whether s is a commit SHA written out whole, in lower
// case, as git prints it.
func fullSHA(s string) bool { return plumbing.IsHash(s) && plumbing.NewHash(s).String() == s }

// commitTree is the root tree of commit sha, which must be in the workspace.
func (w *Workspace) commitTree(sha string) (*object.Tree, error) {
	if !fullSHA(sha) {
		return nil, fmt.Errorf("%q is not a full lower-case commit SHA", sha)
	}
	c, err := w.repo.CommitObject(plumbing.NewHash(sha))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("commit %s is not in the workspace (fetch it first): %w", sha, err)
	}
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", sha, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s: %w", sha, err)
	}
	return t, nil
}

// cleanRepoPath accepts what Changes and the diff report ("a/b.go") and
// the harmless variants of it ("./a//b.go"); a path leaving the root or
// naming it is refused, because it could never match and would read as
// "untouched".
func cleanRepoPath(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("invalid path %q", p)
	}
	clean := path.Clean(p)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("invalid path %q", p)
	}
	return clean, nil
}

// lookup returns the tree entry at the slash path p, or nil when the tree
// has none. Tree.FindEntry is not used: where a path component is a file
// (a/b, with a a file) it fails trying to read the file as a tree instead
// of saying "no such entry".
func lookup(t *object.Tree, p string) (*object.TreeEntry, error) {
	parts := strings.Split(p, "/")
	for i, name := range parts {
		var e *object.TreeEntry
		for j := range t.Entries {
			if t.Entries[j].Name == name {
				e = &t.Entries[j]
				break
			}
		}
		if e == nil {
			return nil, nil
		}
		if i == len(parts)-1 {
			return e, nil
		}
		if e.Mode != filemode.Dir {
			return nil, nil
		}
		sub, err := t.Tree(name)
		if err != nil {
			return nil, err
		}
		t = sub
	}
	return nil, nil
}
