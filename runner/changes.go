package runner

import (
	"archive/tar"
	"bytes"
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
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/ignorefile"
)

// Bounds of what a run that keeps its changes brings back: a command
// that updates manifests and lock files changes a few files, and one that
// changes more (a build writing its output into the tree) is told so
// rather than flooding the agent's change.
const (
	MaxKeptFiles     = 200
	MaxKeptFileBytes = 4 << 20
	MaxKeptBytes     = 16 << 20
	maxIgnoreBytes   = 1 << 20
)

// keptEntry is one entry of a run's copy of the workspace after the
// command: from a walk of the copy (Local) or from the tar stream the
// engine sends of it (Docker).
type keptEntry struct {
	name     string      // slash-separated, relative to the workspace
	mode     fs.FileMode // type bits and permission bits
	linkname string      // a symbolic link's target
	hardlink string      // the earlier entry a hard link names (Docker's tar)
	size     int64
	body     io.Reader // a regular file's contents
}

// changeSet compares a run's copy, entry by entry, with the workspace it
// was copied from. Only regular files come back. A symbolic link the
// command made or changed is refused, never followed; .git and the links
// the runner added (Spec.Links) are not the command's changes; a new file
// the repository's .gitignore files ignore is left out, as git would
// leave it out of a commit.
type changeSet struct {
	root    string
	links   []pullwright.Link
	seen    map[string]bool
	ignores map[string][]gitignore.Pattern
	out     []pullwright.FileChange
	bytes   int64
	note    string
}

func newChangeSet(dir string, links []pullwright.Link) (*changeSet, error) {
	root, _, err := treeRoot(dir)
	if err != nil {
		return nil, err
	}
	return &changeSet{root: root, links: links, seen: map[string]bool{}, ignores: map[string][]gitignore.Pattern{}}, nil
}

// skipped reports a path that is never the command's change.
func (c *changeSet) skipped(name string) bool {
	if name == ".git" || strings.HasPrefix(name, ".git/") {
		return true
	}
	return slices.ContainsFunc(c.links, func(l pullwright.Link) bool {
		return name == l.Name || strings.HasPrefix(name, l.Name+"/")
	})
}

func (c *changeSet) local(name string) string { return filepath.Join(c.root, filepath.FromSlash(name)) }

// add compares one entry of the copy with the workspace.
func (c *changeSet) add(e keptEntry) error {
	name := path.Clean(e.name)
	if name == "." || strings.HasPrefix(name, "../") || name == ".." || c.skipped(name) || c.note != "" {
		return nil
	}
	c.seen[name] = true
	if e.mode.IsDir() {
		// A directory where the workspace has a file or a link: that is
		// gone, and the files in the directory are new.
		if orig, err := os.Lstat(c.local(name)); err == nil && !orig.IsDir() {
			c.record(pullwright.FileChange{Path: name, Deleted: true})
		}
		return nil
	}
	if e.hardlink != "" {
		// The engine's tar sends a second name of a file as a link to
		// the first, without its contents.
		c.record(pullwright.FileChange{Path: name, Refused: fmt.Sprintf("a hard link (to %q): links a command makes are not kept", e.hardlink)})
		return nil
	}
	orig, err := os.Lstat(c.local(name))
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		orig = nil
	case err != nil:
		return fmt.Errorf("compare %s: %w", name, err)
	}
	if orig == nil && c.ignored(name) {
		return nil
	}
	switch {
	case e.mode&fs.ModeSymlink != 0:
		if orig != nil && orig.Mode()&fs.ModeSymlink != 0 {
			if t, err := os.Readlink(c.local(name)); err == nil && t == e.linkname {
				return nil
			}
		}
		c.record(pullwright.FileChange{Path: name, Refused: "a symbolic link (to " + fmt.Sprintf("%q", e.linkname) + "): links a command makes are not kept"})
		return nil
	case !e.mode.IsRegular():
		return nil
	}
	exec := e.mode&0o111 != 0
	sameKind := orig != nil && orig.Mode().IsRegular() && orig.Size() == e.size && (orig.Mode()&0o111 != 0) == exec
	if e.size > MaxKeptFileBytes {
		if sameKind {
			same, err := sameContent(c.local(name), e.body)
			if err != nil || same {
				return err
			}
		}
		c.record(pullwright.FileChange{Path: name, Refused: fmt.Sprintf("%d bytes: larger than the %d a kept file may be", e.size, MaxKeptFileBytes)})
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(e.body, e.size))
	if err != nil {
		return fmt.Errorf("read %s of the run's copy: %w", name, err)
	}
	if sameKind {
		old, err := readNoFollow(c.local(name))
		if err != nil {
			return fmt.Errorf("compare %s: %w", name, err)
		}
		if bytes.Equal(old, body) {
			return nil
		}
	}
	if c.bytes += int64(len(body)); c.bytes > MaxKeptBytes {
		c.note = fmt.Sprintf("the changed files are more than the %d bytes a run may keep", MaxKeptBytes)
		return nil
	}
	c.record(pullwright.FileChange{Path: name, Executable: exec, Content: body})
	return nil
}

func (c *changeSet) record(fc pullwright.FileChange) {
	if len(c.out) == MaxKeptFiles {
		c.note = fmt.Sprintf("more than %d files changed, more than a run may keep", MaxKeptFiles)
		return
	}
	c.out = append(c.out, fc)
}

// ignored reports a path the repository's .gitignore files ignore, or
// that is under an ignored directory.
func (c *changeSet) ignored(name string) bool {
	parts := strings.Split(name, "/")
	for i := 1; i <= len(parts); i++ {
		if gitignore.NewMatcher(c.patterns(strings.Join(parts[:i-1], "/"))).Match(parts[:i], i < len(parts)) {
			return true
		}
	}
	return false
}

// patterns are the ignore patterns that apply in dir ("" for the root):
// one ignorefile.Scope, dir's own .gitignore linked to its parent's, so
// that each file is read once, whatever the depth. The ignore files are
// bounded as the agent's walk bounds them; one over the bounds is not
// read, so a new file it would ignore comes back, under the bounds on
// what a run keeps, rather than a file the repository keeps being lost.
func (c *changeSet) patterns(dir string) []gitignore.Pattern {
	if ps, ok := c.ignores[dir]; ok {
		return ps
	}
	var parent *ignorefile.Scope
	var domain []string
	file := ".gitignore"
	if dir == "" {
		parent = ignorefile.NewRoot(ignorefile.Limits{
			FileBytes: maxIgnoreBytes, TotalBytes: 4 * maxIgnoreBytes, Patterns: 100000, Generic: 512,
		})
	} else {
		up := path.Dir(dir)
		if up == "." {
			up = ""
		}
		parent = c.patterns(up)[0].(*ignorefile.Scope)
		domain = strings.Split(dir, "/")
		file = dir + "/.gitignore"
	}
	scope := parent
	if fi, err := os.Lstat(c.local(file)); err == nil && fi.Mode().IsRegular() {
		scope = parent.Child(domain, fi.Size(), func() ([]byte, error) { return os.ReadFile(c.local(file)) })
	}
	ps := []gitignore.Pattern{scope}
	c.ignores[dir] = ps
	return ps
}

// finish adds the files of the workspace that the copy no longer has,
// and returns the changes in path order, or a note of why there are none.
func (c *changeSet) finish(ctx context.Context) ([]pullwright.FileChange, string, error) {
	if c.note == "" {
		err := filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			rel, err := filepath.Rel(c.root, p)
			if err != nil || rel == "." {
				return err
			}
			name := filepath.ToSlash(rel)
			if c.skipped(name) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !c.seen[name] && !d.IsDir() && (d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) && c.note == "" {
				c.record(pullwright.FileChange{Path: name, Deleted: true})
			}
			return nil
		})
		if err != nil {
			return nil, "", fmt.Errorf("compare the run's copy with %s: %w", c.root, err)
		}
	}
	if c.note != "" {
		return nil, c.note, nil
	}
	slices.SortFunc(c.out, func(a, b pullwright.FileChange) int { return strings.Compare(a.Path, b.Path) })
	return c.out, "", nil
}

// readNoFollow reads a regular file of the workspace, never through a
// link that replaced it.
func readNoFollow(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// sameContent compares a large file of the workspace with r, of the same
// size, a piece at a time.
func sameContent(p string, r io.Reader) (bool, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	a, b := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		n, err := io.ReadFull(f, a)
		if n > 0 {
			if m, _ := io.ReadFull(r, b[:n]); m != n || !bytes.Equal(a[:n], b[:n]) {
				return false, nil
			}
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return true, nil
		case err != nil:
			return false, err
		}
	}
}

// keep fills res.Changes (or res.KeptNote) when s asked to keep what
// the command changed; walk feeds the copy's entries to add. Only a
// command that exited 0 keeps anything: one that failed may have left
// its files half written.
func keep(ctx context.Context, s pullwright.RunSpec, res *pullwright.RunResult, walk func(add func(keptEntry) error) error) error {
	if !s.KeepChanges || res.NotStarted {
		return nil
	}
	if res.ExitCode != 0 || res.TimedOut || res.OOMKilled {
		res.KeptNote = "the command did not exit 0, so nothing it changed is kept"
		return nil
	}
	c, err := newChangeSet(s.Dir, s.Links)
	if err != nil {
		return fmt.Errorf("keep the run's changes: %w", err)
	}
	if err := walk(c.add); errors.Is(err, errNotCopied) {
		res.KeptNote = err.Error()
		return nil
	} else if err != nil {
		return fmt.Errorf("keep the run's changes: %w", err)
	}
	res.Changes, res.KeptNote, err = c.finish(ctx)
	return err
}

// walkCopy feeds the entries of a run's copy on this machine to add,
// never following a link.
func walkCopy(ctx context.Context, dir string) func(add func(keptEntry) error) error {
	return func(add func(keptEntry) error) error {
		return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil || rel == "." {
				return err
			}
			if d.IsDir() && d.Name() == ".git" && rel == ".git" {
				return fs.SkipDir
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			e := keptEntry{name: filepath.ToSlash(rel), mode: info.Mode(), size: info.Size()}
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				if e.linkname, err = os.Readlink(p); err != nil {
					return err
				}
			case info.Mode().IsRegular():
				f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				e.body = f
			}
			return add(e)
		})
	}
}

// errNotCopied is a sandbox that could not copy its workspace out.
var errNotCopied = errors.New("the sandbox could not copy the workspace out after the command (see the output), so nothing it changed is kept")

// keepDir is where, in a container whose run keeps its changes, the
// command's copy of the workspace is put once the command has exited 0:
// in a volume on the engine's disk, since the workspace's tmpfs is gone
// when the container stops, and the files are read from the stopped
// container. keepDir's parent is root's; keepDir, made by the runner
// before the command starts, is the sandbox user's.
const (
	keepMount = "/.pullwright-keep"
	keepDir   = keepMount + "/keep"
)

// goAheadKeepScript is goAheadScript for a run that keeps its changes:
// the shell stays, so that after the command it can copy the workspace
// out, and the run's exit code is still the command's.
const goAheadKeepScript = `read -r _ && { ` + prepareStep + `/bin/sh -c "$1"; rc=$?; if [ "$rc" = 0 ]; then cp -a ` + SandboxWorkdir + ` ` + keepDir + `/tree && : > ` + keepDir + `/copied; fi; exit "$rc"; }`

// makeKeepDir makes keepDir, the sandbox user's, in the container's keep
// volume.
func (d *Docker) makeKeepDir(ctx context.Context, id string) error {
	uid, gid, _ := parseUser(d.cfg.User)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: path.Base(keepDir) + "/", Typeflag: tar.TypeDir, Mode: 0o700,
		Uid: uid, Gid: gid, ModTime: time.Now()}); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: keepMount, Content: &buf}); err != nil {
		return fmt.Errorf("make the directory a run's changes are kept in: %w", err)
	}
	return nil
}

// keptEntries feeds the entries of the copy the stopped container left in
// keepDir to add; the copy counts only if the script said it finished.
func (d *Docker) keptEntries(ctx context.Context, id string) func(add func(keptEntry) error) error {
	return func(add func(keptEntry) error) error {
		got, err := d.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: keepDir})
		if err != nil {
			return fmt.Errorf("read the run's copy of the workspace: %w", err)
		}
		defer got.Content.Close()
		return readKept(got.Content, add)
	}
}

// readKept feeds the entries of the tar stream the engine sends of
// keepDir to add; the copy counts only if the script said it finished.
func readKept(r io.Reader, add func(keptEntry) error) error {
	base := path.Base(keepDir)
	tree := base + "/tree/"
	copied := false
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read the run's copy of the workspace: %w", err)
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		if name == base+"/copied" {
			copied = true
			continue
		}
		rel, ok := strings.CutPrefix(name, tree)
		if !ok {
			continue
		}
		e := keptEntry{name: strings.TrimSuffix(rel, "/"), mode: hdr.FileInfo().Mode(), linkname: hdr.Linkname, size: hdr.Size, body: tr}
		if hdr.Typeflag == tar.TypeLink {
			e.hardlink, e.linkname = hdr.Linkname, ""
		}
		if err := add(e); err != nil {
			return err
		}
	}
	if !copied {
		return errNotCopied
	}
	return nil
}
