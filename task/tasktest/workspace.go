package tasktest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// Commit is one commit of the fake git world: its whole tree.
type Commit struct {
	SHA     string
	Parents []string
	Files   map[string]string
	Message string
	When    time.Time
	Author  pullwright.Identity
}

// Push is one push a workspace made that changed a remote branch.
type Push struct {
	URL, Branch, From, To string
}

// Workspaces is a fake of task.Workspaces over an in-memory git world:
// remotes (refs by clone URL) and commits shared by every workspace, whose
// worktrees are real directories (task reads and writes them through
// os.Root). Files under the Ignored prefixes are what git ignores.
type Workspaces struct {
	faults
	mu      sync.Mutex
	commits map[string]*Commit
	remotes map[string]map[string]string
	open    map[string]*Workspace
	// Ignored are path prefixes (such as "build/") git ignores.
	Ignored []string
	// Links are the paths that are symbolic links wherever a commit holds
	// them (their content is the target).
	Links []string
	// Clones records each clone: URL and ref.
	Clones []string
	// Pushes records each push that moved a remote branch.
	Pushes []Push
	// Asked counts calls by method name.
	Asked map[string]int
	// Reads records the commit of each ReadTree.
	Reads []string
}

// NewWorkspaces is an empty git world.
func NewWorkspaces() *Workspaces {
	return &Workspaces{commits: map[string]*Commit{}, remotes: map[string]map[string]string{}, open: map[string]*Workspace{}, Asked: map[string]int{}}
}

func (w *Workspaces) call(method string) error {
	w.mu.Lock()
	w.Asked[method]++
	w.mu.Unlock()
	return w.take(method)
}

// Commit makes a commit on the remote at url with ref's tip's files plus
// files (an empty content deletes the file), moves ref to it and returns
// its SHA: a person's push, or the repository's history.
func (w *Workspaces) Commit(url, ref string, files map[string]string, msg string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	refs := w.refs(url)
	tree := map[string]string{}
	var parents []string
	if tip := refs[ref]; tip != "" {
		maps.Copy(tree, w.commits[tip].Files)
		parents = []string{tip}
	}
	for p, c := range files {
		if c == "" {
			delete(tree, p)
		} else {
			tree[p] = c
		}
	}
	c := w.store(parents, tree, msg, time.Unix(int64(len(w.commits)), 0).UTC(), pullwright.Identity{Name: "a person", Email: "person@example.com"})
	refs[ref] = c.SHA
	return c.SHA
}

// SetRef points ref of the remote at url to sha ("" deletes it).
func (w *Workspaces) SetRef(url, ref, sha string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sha == "" {
		delete(w.refs(url), ref)
		return
	}
	w.refs(url)[ref] = sha
}

// Ref is the commit ref points at on the remote at url, "" if none.
func (w *Workspaces) Ref(url, ref string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refs(url)[ref]
}

// Lookup is a commit of the world, nil if there is none.
func (w *Workspaces) Lookup(sha string) *Commit {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.commits[sha]
}

func (w *Workspaces) refs(url string) map[string]string {
	if w.remotes[url] == nil {
		w.remotes[url] = map[string]string{}
	}
	return w.remotes[url]
}

// store records a commit; the same inputs give the same SHA.
func (w *Workspaces) store(parents []string, files map[string]string, msg string, when time.Time, author pullwright.Identity, co ...pullwright.Identity) *Commit {
	h := sha1.New()
	fmt.Fprintf(h, "parents %q\nmsg %q\nwhen %d\nauthor %s <%s>\n", parents, msg, when.Unix(), author.Name, author.Email)
	for _, c := range co {
		fmt.Fprintf(h, "co %s <%s>\n", c.Name, c.Email)
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%q %q\n", p, files[p])
	}
	sha := hex.EncodeToString(h.Sum(nil))
	if c, ok := w.commits[sha]; ok {
		return c
	}
	c := &Commit{SHA: sha, Parents: parents, Files: maps.Clone(files), Message: msg, When: when, Author: author}
	w.commits[sha] = c
	return c
}

// ancestor reports whether sha is tip or in its history.
func (w *Workspaces) ancestor(tip, sha string) bool {
	seen := map[string]bool{}
	todo := []string{tip}
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == "" || seen[c] {
			continue
		}
		if c == sha {
			return true
		}
		seen[c] = true
		if cm := w.commits[c]; cm != nil {
			todo = append(todo, cm.Parents...)
		}
	}
	return false
}

func (w *Workspaces) ignored(p string) bool {
	return slices.ContainsFunc(w.Ignored, func(pre string) bool { return strings.HasPrefix(p, pre) })
}

// Clone checks out ref (a branch or a full ref name) of the remote at url
// into dir.
func (w *Workspaces) Clone(ctx context.Context, url, branch, token, dir string) (task.Workspace, error) {
	if err := w.call("Clone"); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.Clones = append(w.Clones, url+" "+branch)
	sha := w.refs(url)[branch]
	if sha == "" {
		return nil, fmt.Errorf("clone %s %s: remote ref not found", url, branch)
	}
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("clone into %s: directory exists", dir)
	}
	ws := &Workspace{w: w, url: url, dir: dir, tracked: branch, branches: map[string]string{}, have: map[string]bool{}}
	ws.learn(sha)
	local := branch
	if strings.HasPrefix(branch, "refs/") {
		local = "pull-head"
	}
	ws.branch, ws.branches[local] = local, sha
	if err := ws.checkout(sha); err != nil {
		return nil, err
	}
	w.open[dir] = ws
	return ws, nil
}

// Open reopens the workspace in dir, if it is still on disk.
func (w *Workspaces) Open(dir string) (task.Workspace, error) {
	if err := w.call("Open"); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ws, ok := w.open[dir]
	if _, err := os.Stat(dir); !ok || err != nil {
		return nil, fmt.Errorf("open workspace %s: repository does not exist", dir)
	}
	return ws, nil
}

// Forget makes the workspace in dir unknown, as on another machine.
func (w *Workspaces) Forget(dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.open, dir)
	os.RemoveAll(dir)
}

// RemoteHead is the commit branch points at on the remote at url.
func (w *Workspaces) RemoteHead(ctx context.Context, url, token, branch string) (string, error) {
	if err := w.call("RemoteHead"); err != nil {
		return "", err
	}
	return w.Ref(url, branch), nil
}

// Workspace is a fake task.Workspace: its worktree on disk, its history in
// the world of its Workspaces.
type Workspace struct {
	w        *Workspaces
	url, dir string
	// head is HEAD's commit; branch the checked-out branch.
	head, branch string
	branches     map[string]string
	tracked      string
	have         map[string]bool
}

// learn marks sha and its history as fetched.
func (ws *Workspace) learn(sha string) {
	todo := []string{sha}
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == "" || ws.have[c] {
			continue
		}
		ws.have[c] = true
		if cm := ws.w.commits[c]; cm != nil {
			todo = append(todo, cm.Parents...)
		}
	}
}

// checkout makes the worktree hold commit sha's files, and nothing else
// but ignored files, and moves HEAD there.
func (ws *Workspace) checkout(sha string) error {
	cur, err := ws.read()
	if err != nil {
		return err
	}
	files := ws.w.commits[sha].Files
	for p := range cur {
		if _, ok := files[p]; !ok {
			if err := os.Remove(filepath.Join(ws.dir, filepath.FromSlash(p))); err != nil {
				return err
			}
		}
	}
	if err := write(ws.dir, files); err != nil {
		return err
	}
	ws.head, ws.branches[ws.branch] = sha, sha
	return nil
}

func write(dir string, files map[string]string) error {
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			return err
		}
	}
	return os.MkdirAll(dir, 0o755)
}

// read is the worktree's files git does not ignore.
func (ws *Workspace) read() (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(ws.dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == ws.dir {
			return filepath.SkipDir
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(ws.dir, p)
		rel = filepath.ToSlash(rel)
		if ws.w.ignored(rel) {
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	return out, err
}

func (ws *Workspace) commit(sha string) (*Commit, error) {
	c := ws.w.commits[sha]
	if c == nil || !ws.have[sha] {
		return nil, fmt.Errorf("commit %s: object not found", sha)
	}
	return c, nil
}

func (ws *Workspace) lock(method string) (func(), error) {
	if err := ws.w.call(method); err != nil {
		return nil, err
	}
	ws.w.mu.Lock()
	return ws.w.mu.Unlock, nil
}

func (ws *Workspace) Dir() string { return ws.dir }

func (ws *Workspace) Head() (string, error) {
	unlock, err := ws.lock("Head")
	if err != nil {
		return "", err
	}
	defer unlock()
	return ws.head, nil
}

// CreateBranch creates name at HEAD and checks it out, keeping the
// worktree; an existing branch is fine if it is checked out or at HEAD.
func (ws *Workspace) CreateBranch(name string) error {
	unlock, err := ws.lock("CreateBranch")
	if err != nil {
		return err
	}
	defer unlock()
	if ws.branch == name {
		return nil
	}
	if at, ok := ws.branches[name]; ok && at != ws.head {
		return fmt.Errorf("create branch %s: already exists at %s, HEAD is at %s", name, at, ws.head)
	}
	ws.branches[name], ws.branch = ws.head, name
	return nil
}

func (ws *Workspace) changes() ([]pullwright.Change, map[string]string, error) {
	cur, err := ws.read()
	if err != nil {
		return nil, nil, err
	}
	head := ws.w.commits[ws.head].Files
	var out []pullwright.Change
	for _, p := range slices.Sorted(maps.Keys(cur)) {
		if old, ok := head[p]; !ok {
			out = append(out, pullwright.Change{Path: p, Status: pullwright.ChangeAdded})
		} else if old != cur[p] {
			out = append(out, pullwright.Change{Path: p, Status: pullwright.ChangeModified})
		}
	}
	for p := range head {
		if _, ok := cur[p]; !ok {
			out = append(out, pullwright.Change{Path: p, Status: pullwright.ChangeDeleted})
		}
	}
	slices.SortFunc(out, func(a, b pullwright.Change) int { return strings.Compare(a.Path, b.Path) })
	return out, cur, nil
}

func (ws *Workspace) Changes() ([]pullwright.Change, error) {
	unlock, err := ws.lock("Changes")
	if err != nil {
		return nil, err
	}
	defer unlock()
	out, _, err := ws.changes()
	return out, err
}

// Revert puts paths back as HEAD has them, or removes them.
func (ws *Workspace) Revert(paths ...string) error {
	unlock, err := ws.lock("Revert")
	if err != nil {
		return err
	}
	defer unlock()
	head := ws.w.commits[ws.head].Files
	for _, p := range paths {
		if c, ok := head[p]; ok {
			if err := write(ws.dir, map[string]string{p: c}); err != nil {
				return err
			}
			continue
		}
		if err := os.Remove(filepath.Join(ws.dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// CommitAllAt commits the worktree on HEAD; pullwright.ErrNoChanges when it
// matches HEAD. The same tree, parent, message, identities and time give
// the same SHA.
func (ws *Workspace) CommitAllAt(when time.Time, msg string, author pullwright.Identity, coAuthors ...pullwright.Identity) (string, error) {
	unlock, err := ws.lock("CommitAllAt")
	if err != nil {
		return "", err
	}
	defer unlock()
	if strings.TrimSpace(msg) == "" {
		return "", errors.New("commit: empty message")
	}
	changes, cur, err := ws.changes()
	if err != nil {
		return "", err
	}
	if len(changes) == 0 {
		return "", fmt.Errorf("commit: %w", pullwright.ErrNoChanges)
	}
	c := ws.w.store([]string{ws.head}, cur, strings.TrimSpace(msg), when, author, coAuthors...)
	ws.have[c.SHA] = true
	ws.head, ws.branches[ws.branch] = c.SHA, c.SHA
	return c.SHA, nil
}

// Push moves the remote's branch to the local one, never forcing: a
// remote already there is success, one with other commits is
// pullwright.ErrPushRejected.
func (ws *Workspace) Push(ctx context.Context, token, branch string) error {
	unlock, err := ws.lock("Push")
	if err != nil {
		return err
	}
	defer unlock()
	local, ok := ws.branches[branch]
	if !ok {
		return fmt.Errorf("push %s: local branch: reference not found", branch)
	}
	refs := ws.w.refs(ws.url)
	remote := refs[branch]
	if remote == local {
		return nil
	}
	if remote != "" && !ws.w.ancestor(local, remote) {
		return fmt.Errorf("push %s: remote is at %s: %w", branch, remote, pullwright.ErrPushRejected)
	}
	refs[branch] = local
	ws.w.Pushes = append(ws.w.Pushes, Push{URL: ws.url, Branch: branch, From: remote, To: local})
	return nil
}

func (ws *Workspace) RemoteBranch(ctx context.Context, token, branch string) (string, error) {
	unlock, err := ws.lock("RemoteBranch")
	if err != nil {
		return "", err
	}
	defer unlock()
	return ws.w.refs(ws.url)[branch], nil
}

// fetch makes sure the workspace has sha: in its history, or in that of
// the ref it tracks on the remote; pullwright.ErrBaseGone otherwise.
func (ws *Workspace) fetch(sha string) error {
	if ws.have[sha] {
		return nil
	}
	if tip := ws.w.refs(ws.url)[ws.tracked]; tip != "" && ws.w.ancestor(tip, sha) {
		ws.learn(tip)
		return nil
	}
	return fmt.Errorf("fetch %s: %w", sha, pullwright.ErrBaseGone)
}

// ResetTo moves the checked-out branch and the worktree to sha.
func (ws *Workspace) ResetTo(ctx context.Context, token, sha string) error {
	unlock, err := ws.lock("ResetTo")
	if err != nil {
		return err
	}
	defer unlock()
	if err := ws.fetch(sha); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	return ws.checkout(sha)
}

func (ws *Workspace) Track(branch string) error {
	unlock, err := ws.lock("Track")
	if err != nil {
		return err
	}
	defer unlock()
	ws.tracked = branch
	return nil
}

func (ws *Workspace) Fetch(ctx context.Context, token, sha string) error {
	unlock, err := ws.lock("Fetch")
	if err != nil {
		return err
	}
	defer unlock()
	return ws.fetch(sha)
}

// DiffStat sizes the worktree's change against baseSHA, by path.
func (ws *Workspace) DiffStat(baseSHA string) ([]pullwright.FileStat, error) {
	base, cur, err := ws.againstWorktree("DiffStat", baseSHA)
	if err != nil {
		return nil, err
	}
	var out []pullwright.FileStat
	for _, p := range differing(base, cur) {
		a, d := lineDiff(base[p], cur[p])
		out = append(out, pullwright.FileStat{Path: p, Added: a, Deleted: d})
	}
	return out, nil
}

// DiffOf is a unified diff of paths from baseSHA to the worktree, each
// file one hunk of all its lines.
func (ws *Workspace) DiffOf(baseSHA string, paths ...string) (string, error) {
	base, cur, err := ws.againstWorktree("DiffOf", baseSHA)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range differing(base, cur) {
		if !slices.Contains(paths, p) {
			continue
		}
		fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", p, p)
		fmt.Fprintf(&b, "@@ %s %s @@\n", side("-", len(lines(base[p]))), side("+", len(lines(cur[p]))))
		for _, l := range lines(base[p]) {
			fmt.Fprintf(&b, "-%s\n", l)
		}
		for _, l := range lines(cur[p]) {
			fmt.Fprintf(&b, "+%s\n", l)
		}
	}
	return b.String(), nil
}

// Touched are those of paths that differ between from and to.
func (ws *Workspace) Touched(from, to string, paths []string) ([]string, error) {
	changed, err := ws.between("Touched", from, to)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range changed {
		if slices.Contains(paths, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Contains reports whether sha is tip or in its history.
func (ws *Workspace) Contains(ctx context.Context, token, tip, sha string) (bool, error) {
	unlock, err := ws.lock("Contains")
	if err != nil {
		return false, err
	}
	defer unlock()
	if !ws.have[tip] {
		return false, fmt.Errorf("contains: commit %s: object not found", tip)
	}
	return ws.w.ancestor(tip, sha), nil
}

// FetchBranch brings the remote branch's tip in and returns it.
func (ws *Workspace) FetchBranch(ctx context.Context, token, branch string) (string, error) {
	unlock, err := ws.lock("FetchBranch")
	if err != nil {
		return "", err
	}
	defer unlock()
	tip := ws.w.refs(ws.url)[branch]
	if tip == "" {
		return "", fmt.Errorf("fetch branch %s: couldn't find remote ref", branch)
	}
	ws.learn(tip)
	return tip, nil
}

// ReadTree reads the files of commit sha that match, shallowest first and
// then by path: at most maxFiles, each up to maxBytes, as repo's does.
// Reads records each call's commit.
func (ws *Workspace) ReadTree(sha string, match func(path string) bool, maxFiles, maxBytes int) ([]pullwright.TreeFile, int, error) {
	unlock, err := ws.lock("ReadTree")
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	ws.w.Reads = append(ws.w.Reads, sha)
	c, err := ws.commit(sha)
	if err != nil {
		return nil, 0, fmt.Errorf("read tree: %w", err)
	}
	var paths []string
	for p := range c.Files {
		if match(p) {
			paths = append(paths, p)
		}
	}
	slices.SortFunc(paths, func(a, b string) int {
		if d := strings.Count(a, "/") - strings.Count(b, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	more := 0
	if len(paths) > maxFiles {
		paths, more = paths[:maxFiles], len(paths)-maxFiles
	}
	var out []pullwright.TreeFile
	for _, p := range paths {
		if slices.Contains(ws.w.Links, p) {
			out = append(out, pullwright.TreeFile{Path: p, Link: true})
			continue
		}
		data := c.Files[p]
		out = append(out, pullwright.TreeFile{Path: p, Data: []byte(data[:min(len(data), maxBytes)]), Size: int64(len(data))})
	}
	return out, more, nil
}

func (ws *Workspace) ChangedPaths(from, to string) ([]string, error) {
	return ws.between("ChangedPaths", from, to)
}

// between is, as method, the paths that differ between commits from and to.
func (ws *Workspace) between(method, from, to string) ([]string, error) {
	unlock, err := ws.lock(method)
	if err != nil {
		return nil, err
	}
	defer unlock()
	a, err := ws.commit(from)
	if err != nil {
		return nil, err
	}
	b, err := ws.commit(to)
	if err != nil {
		return nil, err
	}
	return differing(a.Files, b.Files), nil
}

// againstWorktree is, as method, the files of commit baseSHA and those of
// the worktree, read under the lock.
func (ws *Workspace) againstWorktree(method, baseSHA string) (base, cur map[string]string, err error) {
	unlock, err := ws.lock(method)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	c, err := ws.commit(baseSHA)
	if err != nil {
		return nil, nil, err
	}
	cur, err = ws.read()
	if err != nil {
		return nil, nil, err
	}
	return c.Files, cur, nil
}

// Export writes commit sha's files, and nothing else, into dir, which
// must not exist.
func (ws *Workspace) Export(ctx context.Context, sha, dir string) error {
	unlock, err := ws.lock("Export")
	if err != nil {
		return err
	}
	defer unlock()
	c, err := ws.commit(sha)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("export %s: %s exists", sha, dir)
	}
	return write(dir, c.Files)
}

// LeftOut lists the ignored files of the worktree, which no commit holds.
func (ws *Workspace) LeftOut(sha string, max int) ([]string, int, error) {
	unlock, err := ws.lock("LeftOut")
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	if _, err := ws.commit(sha); err != nil {
		return nil, 0, err
	}
	var all []string
	err = filepath.WalkDir(ws.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(ws.dir, p)
		if rel = filepath.ToSlash(rel); ws.w.ignored(rel) {
			all = append(all, rel)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if len(all) > max {
		return all[:max], len(all) - max, nil
	}
	return all, 0, nil
}

func (ws *Workspace) Remove() error {
	unlock, err := ws.lock("Remove")
	if err != nil {
		return err
	}
	defer unlock()
	delete(ws.w.open, ws.dir)
	return os.RemoveAll(ws.dir)
}

// differing lists the paths whose content differs between two trees.
func differing(a, b map[string]string) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(a)) {
		if c, ok := b[p]; !ok || c != a[p] {
			out = append(out, p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lineDiff counts the lines added and deleted from a to b (a longest
// common subsequence, as a diff keeps).
func lineDiff(a, b string) (added, deleted int) {
	x, y := lines(a), lines(b)
	l := make([][]int, len(x)+1)
	for i := range l {
		l[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	common := l[0][0]
	return len(y) - common, len(x) - common
}

// side is one side of a hunk header: "-1,3", or "+0,0" for no lines.
func side(sign string, n int) string {
	if n == 0 {
		return sign + "0,0"
	}
	return fmt.Sprintf("%s1,%d", sign, n)
}
