package repo

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/pullwright/pullwright"
)

// Diff returns the unified diff, in git's format (`diff --git a/… b/…`), from
// baseSHA's tree to the workspace's current state: HEAD's tree with the
// uncommitted worktree changes on top (untracked files included, ignored
// files not). Files appear in path order.
func (w *Workspace) Diff(baseSHA string) (string, error) {
	p, err := w.patch(baseSHA)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", baseSHA, err)
	}
	return p.String(), nil
}

// DiffOf is Diff of only the files at paths (as git names them, from the
// root): the changes to a few files a person must read, such as the
// dependency manifests.
func (w *Workspace) DiffOf(baseSHA string, paths ...string) (string, error) {
	p, err := w.patch(baseSHA)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", baseSHA, err)
	}
	return someFiles(p, baseSHA, paths)
}

// DiffOfTree is DiffOf against the tree t instead of the current state.
func (w *Workspace) DiffOfTree(baseSHA string, t *Tree, paths ...string) (string, error) {
	p, err := w.patchTo(baseSHA, t.tree)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", baseSHA, err)
	}
	return someFiles(p, baseSHA, paths)
}

// someFiles writes the part of p that changes the files at paths.
func someFiles(p *object.Patch, baseSHA string, paths []string) (string, error) {
	var keep []fdiff.FilePatch
	for _, fp := range p.FilePatches() {
		from, to := fp.Files()
		if to != nil && slices.Contains(paths, to.Path()) || from != nil && slices.Contains(paths, from.Path()) {
			keep = append(keep, fp)
		}
	}
	var b strings.Builder
	if err := fdiff.NewUnifiedEncoder(&b, fdiff.DefaultContextLines).Encode(filePatches(keep)); err != nil {
		return "", fmt.Errorf("diff %s: %w", baseSHA, err)
	}
	return b.String(), nil
}

// filePatches is a patch of some of another's files.
type filePatches []fdiff.FilePatch

func (f filePatches) FilePatches() []fdiff.FilePatch { return f }
func (f filePatches) Message() string                { return "" }

// DiffStat is Diff's per-file line counts, in path order.
func (w *Workspace) DiffStat(baseSHA string) ([]pullwright.FileStat, error) {
	p, err := w.patch(baseSHA)
	if err != nil {
		return nil, fmt.Errorf("diffstat %s: %w", baseSHA, err)
	}
	return stats(p), nil
}

// stats counts each file's lines. Not p.Stats(): it leaves binary files
// out; here they count 0/0.
func stats(p *object.Patch) []pullwright.FileStat {
	var out []pullwright.FileStat
	for _, fp := range p.FilePatches() {
		from, to := fp.Files()
		st := pullwright.FileStat{}
		if to != nil {
			st.Path = to.Path()
		} else if from != nil {
			st.Path = from.Path()
		}
		if !fp.IsBinary() {
			for _, c := range fp.Chunks() {
				n := strings.Count(c.Content(), "\n")
				if c.Content() != "" && !strings.HasSuffix(c.Content(), "\n") {
					n++
				}
				switch c.Type() {
				case fdiff.Add:
					st.Added += n
				case fdiff.Delete:
					st.Deleted += n
				}
			}
		}
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// patch diffs the base commit's tree against the current state (Current).
func (w *Workspace) patch(baseSHA string) (*object.Patch, error) {
	cur, err := w.currentTree()
	if err != nil {
		return nil, err
	}
	return w.patchTo(baseSHA, cur)
}

// DiffStatOf is DiffStat against the tree t instead of the current state,
// so that what a person is shown is the tree that will run.
func (w *Workspace) DiffStatOf(baseSHA string, t *Tree) ([]pullwright.FileStat, error) {
	p, err := w.patchTo(baseSHA, t.tree)
	if err != nil {
		return nil, fmt.Errorf("diffstat %s: %w", baseSHA, err)
	}
	return stats(p), nil
}

func (w *Workspace) patchTo(baseSHA string, cur *object.Tree) (*object.Patch, error) {
	if !plumbing.IsHash(baseSHA) {
		return nil, fmt.Errorf("not a commit SHA: %q", baseSHA)
	}
	base, err := w.repo.CommitObject(plumbing.NewHash(baseSHA))
	if err != nil {
		return nil, fmt.Errorf("base commit: %w", err)
	}
	baseTree, err := base.Tree()
	if err != nil {
		return nil, err
	}
	diff, err := object.DiffTree(baseTree, cur)
	if err != nil {
		return nil, err
	}
	sort.Sort(diff)
	return diff.Patch()
}

// currentTree builds the tree of the current state in memory (the
// workspace's object store is not written to): HEAD's tree with the
// worktree's changes on top.
func (w *Workspace) currentTree() (*object.Tree, error) {
	t, _, _, err := w.current()
	return t, err
}

// current is currentTree, the store holding its new objects (blobs and
// trees), and the changes it is made of.
func (w *Workspace) current() (*object.Tree, *overlayStorer, []wtChange, error) {
	headTree, err := w.headTree()
	if err != nil {
		return nil, nil, nil, err
	}
	changes, err := w.worktreeChanges(true)
	if err != nil {
		return nil, nil, nil, err
	}
	ov := &overlayStorer{EncodedObjectStorer: w.repo.Storer, mem: map[plumbing.Hash]plumbing.EncodedObject{}}
	if len(changes) == 0 {
		return headTree, ov, nil, nil
	}
	entries := map[string]object.TreeEntry{}
	walker := object.NewTreeWalker(headTree, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if e.Mode != filemode.Dir {
			entries[name] = object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash}
		}
	}
	for _, c := range changes {
		if c.Status == pullwright.ChangeDeleted {
			delete(entries, c.Path)
			continue
		}
		h, err := ov.put(plumbing.BlobObject, c.content)
		if err != nil {
			return nil, nil, nil, err
		}
		entries[c.Path] = object.TreeEntry{Name: c.Path, Mode: c.mode, Hash: h}
	}
	root, err := buildTree(ov, "", entries)
	if err != nil {
		return nil, nil, nil, err
	}
	t, err := object.GetTree(ov, root)
	if err != nil {
		return nil, nil, nil, err
	}
	return t, ov, changes, nil
}

// buildTree writes the tree for the directory prefix (""=root) holding the
// given files (full slash paths) into s and returns its hash.
func buildTree(s *overlayStorer, prefix string, files map[string]object.TreeEntry) (plumbing.Hash, error) {
	type sub struct{ files map[string]object.TreeEntry }
	subs := map[string]*sub{}
	var entries []object.TreeEntry
	for full, e := range files {
		rel := strings.TrimPrefix(full, prefix)
		if dir, _, ok := strings.Cut(rel, "/"); ok {
			if subs[dir] == nil {
				subs[dir] = &sub{files: map[string]object.TreeEntry{}}
			}
			subs[dir].files[full] = e
			continue
		}
		entries = append(entries, object.TreeEntry{Name: rel, Mode: e.Mode, Hash: e.Hash})
	}
	for dir, sd := range subs {
		h, err := buildTree(s, prefix+dir+"/", sd.files)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h})
	}
	// git orders tree entries by name, comparing a directory as name + "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// overlayStorer keeps new objects in memory and reads everything else from
// the workspace's object store.
type overlayStorer struct {
	storer.EncodedObjectStorer
	mem map[plumbing.Hash]plumbing.EncodedObject
}

func (o *overlayStorer) put(t plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	obj := o.NewEncodedObject()
	obj.SetType(t)
	obj.SetSize(int64(len(content)))
	wr, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := wr.Write(content); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := wr.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return o.SetEncodedObject(obj)
}

func (o *overlayStorer) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (o *overlayStorer) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	o.mem[h] = obj
	return h, nil
}

func (o *overlayStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := o.mem[h]; ok {
		if t != plumbing.AnyObject && obj.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return obj, nil
	}
	return o.EncodedObjectStorer.EncodedObject(t, h)
}

func (o *overlayStorer) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := o.mem[h]; ok {
		return nil
	}
	return o.EncodedObjectStorer.HasEncodedObject(h)
}

func (o *overlayStorer) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if obj, ok := o.mem[h]; ok {
		return obj.Size(), nil
	}
	return o.EncodedObjectStorer.EncodedObjectSize(h)
}
