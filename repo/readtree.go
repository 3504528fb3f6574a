package repo

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/pullwright/pullwright"
)

// ReadTree reads the files of commit sha's tree whose paths match accepts,
// from git's objects, without checking anything out: the commit may be one
// the workspace only fetched (the default branch's tip beside a pull
// request's head). It reads at most maxFiles of them, shallowest first and
// then by path, so that a bound keeps the files nearest the root, and at
// most maxBytes of each (TreeFile.Size is the whole file's); more counts
// the matches beyond maxFiles. A symbolic link is listed with Link set and
// never followed; submodules are not files and are passed over.
func (w *Workspace) ReadTree(sha string, match func(path string) bool, maxFiles, maxBytes int) (files []pullwright.TreeFile, more int, err error) {
	tree, err := w.commitTree(sha)
	if err != nil {
		return nil, 0, fmt.Errorf("read tree of %s: %w", sha, err)
	}
	type found struct {
		path  string
		entry object.TreeEntry
	}
	var all []found
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read tree of %s: %w", sha, err)
		}
		if e.Mode == filemode.Dir || e.Mode == filemode.Submodule || !match(name) {
			continue
		}
		all = append(all, found{name, e})
	}
	slices.SortFunc(all, func(a, b found) int {
		return cmp.Or(cmp.Compare(strings.Count(a.path, "/"), strings.Count(b.path, "/")), strings.Compare(a.path, b.path))
	})
	if len(all) > maxFiles {
		all, more = all[:maxFiles], len(all)-maxFiles
	}
	for _, f := range all {
		if f.entry.Mode == filemode.Symlink {
			files = append(files, pullwright.TreeFile{Path: f.path, Link: true})
			continue
		}
		data, size, err := w.readBlob(f.entry, maxBytes)
		if err != nil {
			return nil, 0, fmt.Errorf("read %s at %s: %w", f.path, sha, err)
		}
		files = append(files, pullwright.TreeFile{Path: f.path, Data: data, Size: size})
	}
	return files, more, nil
}

// readBlob reads the start of a file's blob, at most max bytes, and its size.
func (w *Workspace) readBlob(e object.TreeEntry, max int) ([]byte, int64, error) {
	b, err := w.repo.BlobObject(e.Hash)
	if err != nil {
		return nil, 0, err
	}
	r, err := b.Reader()
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, int64(max)))
	return data, b.Size, err
}
