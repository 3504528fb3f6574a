package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/changes"

	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/tracing"
)

// checkouts is a fix's workspace on this machine and its branch on the
// remote: the clone where the work starts, the checkout rebuilt from the
// store on whichever replica picks the task up, and the branch followed
// when a person pushes to it while the agent works. Flow decides when;
// checkouts does the git.
type checkouts struct {
	remote
	spaces Workspaces
	// dir holds one workspace per task (Flow.Dir).
	dir string
	log *slog.Logger
}

// maxRebases is how often a task moves its commit onto a person's new
// push before it gives up: someone pushing that often is working on the
// branch, and the bot should step aside.
const maxRebases = 5

// freeBranch returns name, or name with the task id appended when the remote
// already has a branch of that name (an earlier task's, or a person's): a
// new task never builds on, or pushes over, a branch it did not make.
func (c checkouts) freeBranch(ctx context.Context, t *Task, name string) (string, error) {
	token, err := c.token(ctx, t)
	if err != nil {
		return "", err
	}
	gctx, cancel := c.gitCtx(ctx)
	defer cancel()
	for _, candidate := range []string{name, fmt.Sprintf("%s-%d", name, t.ID)} {
		sha, err := c.spaces.RemoteHead(gctx, t.Repo.CloneURL, token, candidate)
		if err != nil {
			return "", retryf(err, "listing the repository's branches failed")
		}
		if sha == "" {
			return candidate, nil
		}
	}
	return "", Fatal(fmt.Sprintf("branches %s and %s-%d already exist", name, name, t.ID), nil)
}

// clone makes a fresh checkout of branch in the task's workdir.
func (c checkouts) clone(ctx context.Context, t Job, branch string) (Workspace, error) {
	token, err := c.token(ctx, t.Task)
	if err != nil {
		return nil, err
	}
	dir := workdir(c.dir, t.Task)
	if err := os.RemoveAll(dir); err != nil {
		return nil, retryf(err, "clearing the workspace failed")
	}
	gctx, cancel := c.gitCtx(ctx)
	defer cancel()
	gctx, span := tracing.Start(gctx, "git clone")
	ws, err := c.spaces.Clone(gctx, t.Repo.CloneURL, branch, token, dir)
	tracing.End(span, err)
	if err != nil {
		return nil, retryf(err, "cloning %s failed", t.Repo.CloneURL)
	}
	t.Workdir = dir
	return ws, nil
}

// workspace returns the task's checkout exactly as the store describes it:
// the last pushed commit (or the base) plus the agent's saved files. It
// reopens the checkout on this machine, or rebuilds it when this machine
// does not have it (the task was picked up after a crash, or on another
// replica). Either way the files are made to match the store, so a step
// replayed after a crash runs on what the store recorded, not on what the
// lost attempt left behind.
func (c checkouts) workspace(ctx context.Context, t Job) (Workspace, error) {
	ws, err := c.reopen(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := syncFiles(ws, t.Files); err != nil {
		return nil, retryf(err, "restoring the agent's changes failed")
	}
	return ws, nil
}

func (c checkouts) reopen(ctx context.Context, t Job) (Workspace, error) {
	if t.Workdir != "" {
		if ws, err := c.spaces.Open(t.Workdir); err == nil {
			return ws, nil
		}
	}
	c.log.InfoContext(ctx, "rebuilding workspace", "task_id", t.ID, "files", len(t.Files))
	// The saved files are whole files relative to the last pushed commit,
	// or to the base before any push, so they go back on that commit, not
	// on whatever the branch is now.
	from, at := t.startRef(), t.BaseSHA
	if t.PushedSHA != "" {
		from, at = t.Branch, t.PushedSHA
	}
	ws, err := c.clone(ctx, t, from)
	if err != nil {
		return nil, err
	}
	if head, err := ws.Head(); err != nil || head != at {
		token, err := c.token(ctx, t.Task)
		if err != nil {
			return nil, err
		}
		gctx, cancel := c.gitCtx(ctx)
		err = ws.ResetTo(gctx, token, at)
		cancel()
		if errors.Is(err, pullwright.ErrBaseGone) {
			return nil, Fatal(fmt.Sprintf("branch %s no longer contains %s, the commit this task built on", from, words.Short(at)), err)
		}
		if err != nil {
			return nil, retryf(err, "restoring commit %s failed", words.Short(at))
		}
	}
	if err := ws.CreateBranch(t.Branch); err != nil {
		return nil, retryf(err, "creating branch %s failed", t.Branch)
	}
	return ws, nil
}

// syncFiles makes the worktree differ from HEAD in at most files, and have
// their saved content.
func syncFiles(ws Workspace, files []FileSnapshot) error {
	changes, err := ws.Changes()
	if err != nil {
		return err
	}
	saved := make(map[string]bool, len(files))
	for _, fs := range files {
		saved[fs.Path] = true
	}
	var stray []string
	for _, c := range changes {
		if !saved[c.Path] {
			stray = append(stray, c.Path)
		}
	}
	if err := ws.Revert(stray...); err != nil {
		return err
	}
	root, err := os.OpenRoot(ws.Dir())
	if err != nil {
		return err
	}
	defer root.Close()
	for _, fs := range files {
		if fs.Deleted {
			if err := root.Remove(fs.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("restore %s: %w", fs.Path, err)
			}
			continue
		}
		if dir := filepath.Dir(fs.Path); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("restore %s: %w", fs.Path, err)
			}
		}
		mode := os.FileMode(0o644)
		if fs.Executable {
			mode = 0o755
		}
		if err := root.WriteFile(fs.Path, fs.Content, mode); err != nil {
			return fmt.Errorf("restore %s: %w", fs.Path, err)
		}
		// WriteFile keeps an existing file's mode: the saved one is the
		// agent's (set_executable, a kept run).
		if err := root.Chmod(fs.Path, mode); err != nil {
			return fmt.Errorf("restore the mode of %s: %w", fs.Path, err)
		}
	}
	return nil
}

// snapshot records the agent's changed files in t so that the work survives
// the loss of this machine's disk.
func snapshot(ws Workspace) ([]FileSnapshot, error) {
	changes, err := ws.Changes()
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(ws.Dir())
	if err != nil {
		return nil, err
	}
	defer root.Close()
	out := make([]FileSnapshot, 0, len(changes))
	for _, c := range changes {
		if c.Status == pullwright.ChangeDeleted {
			out = append(out, FileSnapshot{Path: c.Path, Deleted: true})
			continue
		}
		b, err := root.ReadFile(c.Path)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", c.Path, err)
		}
		fi, err := root.Lstat(c.Path)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", c.Path, err)
		}
		out = append(out, FileSnapshot{Path: c.Path, Content: b, Executable: fi.Mode()&0o111 != 0})
	}
	return out, nil
}

// diffStat sizes the whole change against the base, for the pull request.
func (c checkouts) diffStat(ctx context.Context, t Job) ([]pullwright.FileStat, error) {
	stats, _, err := c.diffStatAgainst(ctx, t, t.BaseSHA)
	return stats, err
}

// Bounds of what the refactor check reads of each commit: the Go files the
// task changed, and no more of each than a source file has.
const (
	maxAPIFiles     = 500
	maxAPIFileBytes = 1 << 20
)

// apiChanges lists the changes to the exported Go API between the task's
// base and its final commit, reading only the Go files it changed.
func (c checkouts) apiChanges(ctx context.Context, t Job) ([]string, error) {
	ws, err := c.workspace(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := c.fetch(ctx, t.Task, ws, t.BaseSHA); err != nil {
		return nil, err
	}
	paths, err := ws.ChangedPaths(t.BaseSHA, t.HeadSHA)
	if err != nil {
		return nil, retryf(err, "reading the changed files failed")
	}
	changed := map[string]bool{}
	for _, p := range paths {
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			changed[p] = true
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	read := func(sha string) (map[string][]byte, error) {
		files, _, err := ws.ReadTree(sha, func(p string) bool { return changed[p] }, maxAPIFiles, maxAPIFileBytes)
		if err != nil {
			return nil, retryf(err, "reading the Go files of %s failed", words.Short(sha))
		}
		out := map[string][]byte{}
		for _, f := range files {
			if !f.Link && f.Size <= maxAPIFileBytes {
				out[f.Path] = f.Data
			}
		}
		return out, nil
	}
	before, err := read(t.BaseSHA)
	if err != nil {
		return nil, err
	}
	after, err := read(t.HeadSHA)
	if err != nil {
		return nil, err
	}
	return changes.API(before, after), nil
}

// diffStatAgainst sizes the workspace's change against commit base,
// fetching it first, and returns the workspace for more of the diff.
func (c checkouts) diffStatAgainst(ctx context.Context, t Job, base string) ([]pullwright.FileStat, Workspace, error) {
	ws, err := c.workspace(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	if err := c.fetch(ctx, t.Task, ws, base); err != nil {
		return nil, nil, err
	}
	stats, err := ws.DiffStat(base)
	return stats, ws, err
}

// rebase moves the task's unpushed commit onto a branch a person pushed to
// while the agent worked, when their commits leave the files the agent
// changed alone: the agent's files are whole-file contents, so laying them
// on the new head is the same change. When the person changed those files
// too, the bot stops, keeping its commit on a branch of its own: it never
// force-pushes over a person's work, and never merges it on a guess.
func (c checkouts) rebase(ctx context.Context, t Job, ws Workspace, token string) error {
	gctx, cancel := c.gitCtx(ctx)
	defer cancel()
	head, err := c.spaces.RemoteHead(gctx, t.Repo.CloneURL, token, t.Branch)
	if err != nil {
		return retryf(err, "reading branch %s failed", t.Branch)
	}
	if head == "" {
		return Fatal(fmt.Sprintf("branch `%s` was deleted while the agent worked, so nothing was pushed", t.Branch), nil)
	}
	from := t.PushedSHA
	if from == "" {
		from = t.BaseSHA
	}
	// The person's commits are on t.Branch, which need not be the ref the
	// workspace was cloned from (an issue's default branch, a fork's pull
	// request head): follow that branch's history from now on.
	if err := ws.Track(t.Branch); err != nil {
		return retryf(err, "following branch %s failed", t.Branch)
	}
	err = ws.Fetch(gctx, token, head)
	if errors.Is(err, pullwright.ErrBaseGone) {
		// The new head is not in the history the workspace follows (the
		// branch was rewritten, or the task cloned another ref).
		return c.keepAside(ctx, t, ws, token, head, "the new commits could not be followed from the commit the agent built on")
	}
	if err != nil {
		return retryf(err, "fetching branch %s failed", t.Branch)
	}
	local, err := ws.Head()
	if err != nil {
		return retryf(err, "reading the workspace failed")
	}
	in, err := ws.Contains(gctx, token, head, local)
	if err != nil {
		return retryf(err, "reading the history of branch %s failed", t.Branch)
	}
	if in {
		// An earlier try pushed this commit and did not live to record
		// it; someone has pushed on top of it since. It is there: record
		// it, and build on it as before.
		c.log.InfoContext(ctx, "the branch already has the bot's commit", "task_id", t.ID, "branch", t.Branch, "commit", local, "head", head)
		if err := pushed(t, ws, local, from); err != nil {
			return err
		}
		// Work on from the branch as it is now, as after a rebase: a
		// request is then bound to, and runs on, what the branch holds.
		if err := ws.ResetTo(gctx, token, head); err != nil {
			return retryf(err, "moving to the new head %s failed", words.Short(head))
		}
		t.PushedSHA, t.HeadSHA = head, head
		t.Steps = append(t.Steps, fmt.Sprintf("someone pushed %s to %s on top of the agent's commit %s", words.Short(head), t.Branch, words.Short(local)))
		return nil
	}
	paths := make([]string, 0, len(t.Files))
	for _, fs := range t.Files {
		paths = append(paths, fs.Path)
	}
	touched, err := ws.Touched(from, head, paths)
	if err != nil {
		return retryf(err, "comparing branch %s with the agent's change failed", t.Branch)
	}
	if len(touched) > 0 {
		return c.keepAside(ctx, t, ws, token, head, "those commits change "+listPaths(touched)+", which the agent changed too")
	}
	if len(t.Rebased) >= maxRebases {
		return c.keepAside(ctx, t, ws, token, head, fmt.Sprintf("the agent already moved its work onto new pushes %d times", len(t.Rebased)))
	}
	if err := ws.ResetTo(gctx, token, head); err != nil {
		return retryf(err, "moving to the new head %s failed", words.Short(head))
	}
	if err := syncFiles(ws, t.Files); err != nil {
		return retryf(err, "laying the agent's change on %s failed", words.Short(head))
	}
	c.log.InfoContext(ctx, "rebased onto a person's push", "task_id", t.ID, "branch", t.Branch, "from", from, "onto", head)
	// The saved files are relative to the new head now, which the remote
	// has: the next checkpoint commits on it and pushes a fast-forward.
	t.PushedSHA, t.HeadSHA = head, ""
	t.Rebased = append(t.Rebased, head)
	t.Steps = append(t.Steps, fmt.Sprintf("someone pushed %s to %s; the agent's change was moved on top of it", words.Short(head), t.Branch))
	return nil
}

// keepAside pushes the task's commit to a branch of its own and stops the
// task, saying why it did not go onto t.Branch.
func (c checkouts) keepAside(ctx context.Context, t Job, ws Workspace, token, head, why string) error {
	aside := fmt.Sprintf("%s-pullwright-%d", t.Branch, t.ID)
	msg := fmt.Sprintf("someone pushed to `%s` while the agent worked (it is now at %s), and %s. The bot never force-pushes over a person's work, so it stopped", t.Branch, words.Short(head), why)
	gctx, cancel := c.gitCtx(ctx)
	defer cancel()
	if err := ws.CreateBranch(aside); err != nil {
		return Fatal(msg+"; its change could not be kept on a branch of its own, so ask again to start from the new head", err)
	}
	err := ws.Push(gctx, token, aside)
	if err != nil && !errors.Is(err, pullwright.ErrPushRejected) {
		return retryf(err, "pushing branch %s failed", aside)
	}
	if err != nil {
		return Fatal(msg+fmt.Sprintf("; branch `%s` for its change exists already, so it was not pushed either", aside), err)
	}
	return Fatal(msg+fmt.Sprintf(": its change is on branch `%s`, to merge by hand or drop. Ask again to start from the new head", aside), pullwright.ErrPushRejected)
}

func listPaths(paths []string) string {
	if len(paths) > 5 {
		return fmt.Sprintf("%s and %d more", listPaths(paths[:5]), len(paths)-5)
	}
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = code(p)
	}
	return strings.Join(quoted, ", ")
}
