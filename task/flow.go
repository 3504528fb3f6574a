package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Flow moves a task one step along its lifecycle. Each call of Step does one
// side effect at most and records in t what it did, so that the worker can
// save t after every step and a crash repeats at most the last step, which
// is written to be idempotent.
type Flow struct {
	Store      Store
	GitHub     GitHub
	Agent      Agent
	Workspaces Workspaces
	// Dir holds one workspace per task.
	Dir string
	// BranchName names the work branch of an issue.
	BranchName func(issue int, title string) string
	// Command is the comment command word, for the help lines we print.
	Command string
	// GitTimeout bounds one clone, fetch or push (default 5m), so a git
	// server that accepts connections and never answers fails the step
	// instead of holding it for the whole step timeout.
	GitTimeout time.Duration
	Logger     *slog.Logger
}

func (f *Flow) gitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := f.GitTimeout
	if d <= 0 {
		d = 5 * time.Minute
	}
	return context.WithTimeout(ctx, d)
}

// Step performs the next step of t.
func (f *Flow) Step(ctx context.Context, t *Task) error {
	switch t.Kind {
	case KindReply:
		return f.reply(ctx, t, t.Reply)
	case KindStatus:
		return f.status(ctx, t)
	case KindCancel:
		return f.cancelRequest(ctx, t)
	case KindApprove, KindReject:
		return f.reply(ctx, t, fmt.Sprintf("@%s there is no execution request waiting for an answer on this issue.", t.Requester.Login))
	case KindFix:
		return f.fix(ctx, t)
	}
	return Fatal(fmt.Sprintf("unknown task kind %q", t.Kind), nil)
}

func (f *Flow) fix(ctx context.Context, t *Task) error {
	switch t.State {
	case Queued:
		return f.acknowledge(ctx, t)
	case Preparing:
		return f.prepare(ctx, t)
	case Working:
		return f.work(ctx, t)
	case Publishing:
		return f.publish(ctx, t)
	}
	return Fatal(fmt.Sprintf("a fix task cannot continue from state %s", t.State), nil)
}

func marker(t *Task, what string) string { return fmt.Sprintf("task-%d-%s", t.ID, what) }

func (f *Flow) reply(ctx context.Context, t *Task, body string) error {
	if _, err := f.GitHub.UpsertComment(ctx, t.Repo, t.Issue, marker(t, "reply"), 0, body); err != nil {
		return retryf(err, "posting a reply on #%d failed", t.Issue)
	}
	return t.Move(Done)
}

// mayWrite reports whether user holds a role that may ask the bot for work.
// Trust comes from the permission API only, never from the payload.
func (f *Flow) mayWrite(ctx context.Context, t *Task) (bool, error) {
	perm, err := f.GitHub.Permission(ctx, t.Repo, t.Requester.Login)
	if err != nil {
		return false, retryf(err, "checking @%s's permission failed", t.Requester.Login)
	}
	switch perm {
	case "admin", "maintain", "write":
		return true, nil
	}
	return false, nil
}

func (f *Flow) refuse(ctx context.Context, t *Task, what string) error {
	return f.reply(ctx, t, fmt.Sprintf("@%s only people with write access to this repository can %s.", t.Requester.Login, what))
}

func (f *Flow) status(ctx context.Context, t *Task) error {
	latest, err := f.Store.Latest(ctx, t.IssueKey())
	if errors.Is(err, ErrNotFound) {
		return f.reply(ctx, t, fmt.Sprintf("No task has run on this issue yet. Start one with `%s fix <instructions>`.", f.Command))
	}
	if err != nil {
		return retryf(err, "reading the issue's task failed")
	}
	return f.reply(ctx, t, StatusLine(latest))
}

func (f *Flow) cancelRequest(ctx context.Context, t *Task) error {
	ok, err := f.mayWrite(ctx, t)
	if err != nil {
		return err
	}
	if !ok {
		return f.refuse(ctx, t, "cancel a task")
	}
	active, err := f.Store.Active(ctx, t.IssueKey())
	if errors.Is(err, ErrNotFound) {
		return f.reply(ctx, t, "There is no running task on this issue to cancel.")
	}
	if err != nil {
		return retryf(err, "reading the issue's task failed")
	}
	if active.Pushed {
		return f.reply(ctx, t, fmt.Sprintf("Task %d has already pushed its branch `%s` and is opening the pull request; close the pull request instead.", active.ID, active.Branch))
	}
	err = f.Store.RequestCancel(ctx, active.ID, t.Requester.Login)
	if errors.Is(err, ErrNotFound) {
		return f.reply(ctx, t, fmt.Sprintf("Task %d is already finished or being cancelled.", active.ID))
	}
	if err != nil {
		return retryf(err, "cancelling task %d failed", active.ID)
	}
	return f.reply(ctx, t, fmt.Sprintf("Cancelling task %d; it stops before its next step.", active.ID))
}

// acknowledge checks who asked, reacts to the comment and posts the status
// comment that the rest of the task edits in place.
func (f *Flow) acknowledge(ctx context.Context, t *Task) error {
	ok, err := f.mayWrite(ctx, t)
	if err != nil {
		return err
	}
	if !ok {
		return f.refuse(ctx, t, "ask me for changes")
	}
	if t.CommentID != 0 {
		// The reaction is a courtesy: a deleted comment must not stop the work.
		if err := f.GitHub.AddReaction(ctx, t.Repo, t.CommentID, "eyes"); err != nil {
			f.Logger.WarnContext(ctx, "react to comment", "task_id", t.ID, "comment_id", t.CommentID, "err", err)
		}
	}
	if err := t.Move(Preparing); err != nil {
		return err
	}
	return f.updateStatus(ctx, t)
}

func (f *Flow) updateStatus(ctx context.Context, t *Task) error {
	id, err := f.GitHub.UpsertComment(ctx, t.Repo, t.Issue, marker(t, "status"), t.StatusCommentID, RenderStatus(t, f.Command))
	if err != nil {
		return retryf(err, "updating the status comment failed")
	}
	t.StatusCommentID = id
	return nil
}

func (f *Flow) workdir(t *Task) string {
	return filepath.Join(f.Dir, strconv.FormatInt(t.ID, 10))
}

// prepare reads the issue, clones the default branch, creates the work
// branch and starts the agent's conversation.
func (f *Flow) prepare(ctx context.Context, t *Task) error {
	issue, err := f.GitHub.Issue(ctx, t.Repo, t.Issue)
	if err != nil {
		return retryf(err, "reading issue #%d failed", t.Issue)
	}
	t.IssueTitle = issue.Title
	ws, err := f.clone(ctx, t)
	if err != nil {
		return err
	}
	base, err := ws.Head()
	if err != nil {
		return retryf(err, "reading the cloned commit failed")
	}
	t.BaseSHA = base
	branch, err := f.freeBranch(ctx, t, ws, f.BranchName(t.Issue, issue.Title))
	if err != nil {
		return err
	}
	t.Branch = branch
	if err := ws.CreateBranch(t.Branch); err != nil {
		return retryf(err, "creating branch %s failed", t.Branch)
	}
	conv, err := f.Agent.Start(Brief{
		Repo:         t.Repo.FullName(),
		Issue:        t.Issue,
		Title:        issue.Title,
		Body:         issue.Body,
		Comments:     withoutBotComments(issue.Comments),
		Instructions: t.Instructions,
		Requester:    t.Requester.Login,
	})
	if err != nil {
		return Fatal("starting the agent failed", err)
	}
	t.Conversation = conv
	if err := t.Move(Working); err != nil {
		return err
	}
	return f.updateStatus(ctx, t)
}

// freeBranch returns name, or name with the task id appended when the remote
// already has a branch of that name (an earlier task's, or a person's): a
// new task never builds on, or pushes over, a branch it did not make.
func (f *Flow) freeBranch(ctx context.Context, t *Task, ws Workspace, name string) (string, error) {
	token, err := f.GitHub.Token(ctx, t.Repo.InstallationID)
	if err != nil {
		return "", retryf(err, "getting an installation token failed")
	}
	gctx, cancel := f.gitCtx(ctx)
	defer cancel()
	for _, candidate := range []string{name, fmt.Sprintf("%s-%d", name, t.ID)} {
		sha, err := ws.RemoteBranch(gctx, token, candidate)
		if err != nil {
			return "", retryf(err, "listing the repository's branches failed")
		}
		if sha == "" {
			return candidate, nil
		}
	}
	return "", Fatal(fmt.Sprintf("branches %s and %s-%d already exist", name, name, t.ID), nil)
}

// withoutBotComments drops our own comments: the model needs the people's
// words, not the bot's status reports about itself.
func withoutBotComments(cs []Comment) []Comment {
	out := cs[:0:0]
	for _, c := range cs {
		if strings.Contains(c.Body, "<!-- pullwright:") {
			continue
		}
		out = append(out, c)
	}
	return out
}

// clone makes a fresh checkout of the default branch in the task's workdir.
func (f *Flow) clone(ctx context.Context, t *Task) (Workspace, error) {
	token, err := f.GitHub.Token(ctx, t.Repo.InstallationID)
	if err != nil {
		return nil, retryf(err, "getting an installation token failed")
	}
	dir := f.workdir(t)
	if err := os.RemoveAll(dir); err != nil {
		return nil, retryf(err, "clearing the workspace failed")
	}
	gctx, cancel := f.gitCtx(ctx)
	defer cancel()
	ws, err := f.Workspaces.Clone(gctx, t.Repo.CloneURL, t.Repo.DefaultBranch, token, dir)
	if err != nil {
		return nil, retryf(err, "cloning %s failed", t.Repo.CloneURL)
	}
	t.Workdir = dir
	return ws, nil
}

// workspace returns the task's checkout exactly as the store describes it:
// the base commit (plus the task's commit, once made) and the agent's saved
// files. It reopens the checkout on this machine, or rebuilds it from the
// default branch when this machine does not have it (the task was picked up
// after a crash, or on another replica). Either way the files are made to
// match the store, so a step replayed after a crash runs on what the store
// recorded, not on what the lost attempt left behind.
func (f *Flow) workspace(ctx context.Context, t *Task) (Workspace, error) {
	ws, err := f.reopen(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := syncFiles(ws, t.Files); err != nil {
		return nil, retryf(err, "restoring the agent's changes failed")
	}
	return ws, nil
}

func (f *Flow) reopen(ctx context.Context, t *Task) (Workspace, error) {
	if t.Workdir != "" {
		if ws, err := f.Workspaces.Open(t.Workdir); err == nil {
			return ws, nil
		}
	}
	f.Logger.InfoContext(ctx, "rebuilding workspace", "task_id", t.ID, "files", len(t.Files))
	ws, err := f.clone(ctx, t)
	if err != nil {
		return nil, err
	}
	// The saved files are whole files from the task's base commit, so they
	// go back on that commit, not on whatever the default branch is now.
	if head, err := ws.Head(); err != nil || head != t.BaseSHA {
		token, err := f.GitHub.Token(ctx, t.Repo.InstallationID)
		if err != nil {
			return nil, retryf(err, "getting an installation token failed")
		}
		gctx, cancel := f.gitCtx(ctx)
		err = ws.ResetTo(gctx, token, t.BaseSHA)
		cancel()
		if errors.Is(err, ErrBaseGone) {
			return nil, Fatal(fmt.Sprintf("the default branch no longer contains %s, the commit this task started from", short(t.BaseSHA)), err)
		}
		if err != nil {
			return nil, retryf(err, "restoring the base commit failed")
		}
	}
	if err := ws.CreateBranch(t.Branch); err != nil {
		return nil, retryf(err, "creating branch %s failed", t.Branch)
	}
	return ws, nil
}

// syncFiles makes the worktree differ from HEAD in exactly files.
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
		if err := root.WriteFile(fs.Path, fs.Content, 0o644); err != nil {
			return fmt.Errorf("restore %s: %w", fs.Path, err)
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
		if c.Deleted {
			out = append(out, FileSnapshot{Path: c.Path, Deleted: true})
			continue
		}
		b, err := root.ReadFile(c.Path)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", c.Path, err)
		}
		out = append(out, FileSnapshot{Path: c.Path, Content: b})
	}
	return out, nil
}

// work runs one turn of the agent.
func (f *Flow) work(ctx context.Context, t *Task) error {
	ws, err := f.workspace(ctx, t)
	if err != nil {
		return err
	}
	p, err := f.Agent.Turn(ctx, t.Conversation, ws.Dir())
	if err != nil {
		return err
	}
	t.Conversation = p.Conversation
	t.Turns, t.Tokens = p.Turns, p.Tokens
	t.Plan, t.Steps = p.Plan, p.Steps
	files, err := snapshot(ws)
	if err != nil {
		return retryf(err, "saving the agent's changes failed")
	}
	t.Files = files
	if p.Finished {
		t.Title, t.Summary = p.Title, p.Summary
		t.FinishedAt = time.Now().UTC().Truncate(time.Second)
		if err := t.Move(Publishing); err != nil {
			return err
		}
	}
	return f.updateStatus(ctx, t)
}

// publish commits, pushes, opens the pull request and reports, one
// idempotent sub-step per call.
func (f *Flow) publish(ctx context.Context, t *Task) error {
	switch {
	case t.HeadSHA == "":
		return f.commit(ctx, t)
	case !t.Pushed:
		ws, err := f.workspace(ctx, t)
		if err != nil {
			return err
		}
		if head, err := ws.Head(); err != nil || head != t.HeadSHA {
			// A rebuilt workspace lacks the unpushed commit. The same tree,
			// message, identities and date make the same commit again.
			sha, err := f.makeCommit(ctx, t, ws)
			if err != nil {
				return err
			}
			if sha != t.HeadSHA {
				f.Logger.WarnContext(ctx, "remade commit differs", "task_id", t.ID, "was", t.HeadSHA, "now", sha)
				t.HeadSHA = sha
			}
		}
		token, err := f.GitHub.Token(ctx, t.Repo.InstallationID)
		if err != nil {
			return retryf(err, "getting an installation token failed")
		}
		gctx, cancel := f.gitCtx(ctx)
		defer cancel()
		err = ws.Push(gctx, token, t.Branch)
		if errors.Is(err, ErrPushRejected) {
			return Fatal(fmt.Sprintf("branch %s gained commits the bot did not make, and the bot never force-pushes", t.Branch), err)
		}
		if err != nil {
			return retryf(err, "pushing branch %s failed", t.Branch)
		}
		t.Pushed = true
		return nil
	case t.PRNumber == 0:
		pr, err := f.GitHub.OpenPullRequest(ctx, t.Repo, NewPullRequest{
			Title: defang(t.Title),
			Body:  RenderPullRequest(t),
			Head:  t.Branch,
			Base:  t.Repo.DefaultBranch,
		})
		if err != nil {
			return retryf(err, "opening the pull request failed")
		}
		t.PRNumber, t.PRURL = pr.Number, pr.URL
		return nil
	}
	if _, err := f.GitHub.UpsertComment(ctx, t.Repo, t.Issue, marker(t, "done"), 0,
		fmt.Sprintf("@%s I opened %s: **%s**", t.Requester.Login, t.PRURL, defang(oneLine(t.Title)))); err != nil {
		return retryf(err, "posting the pull request link failed")
	}
	if err := t.Move(Done); err != nil {
		return err
	}
	if err := f.updateStatus(ctx, t); err != nil {
		return err
	}
	f.cleanup(ctx, t)
	return nil
}

func (f *Flow) commit(ctx context.Context, t *Task) error {
	ws, err := f.workspace(ctx, t)
	if err != nil {
		return err
	}
	stats, err := ws.DiffStat(t.BaseSHA)
	if err != nil {
		return retryf(err, "reading the change failed")
	}
	t.ChangedFiles = stats
	sha, err := f.makeCommit(ctx, t, ws)
	if err != nil {
		return err
	}
	t.HeadSHA = sha
	return nil
}

// makeCommit commits the workspace's changes for t, dated when the agent
// finished, so that making it twice gives the same commit.
func (f *Flow) makeCommit(ctx context.Context, t *Task, ws Workspace) (string, error) {
	bot, err := f.GitHub.Identity(ctx)
	if err != nil {
		return "", retryf(err, "reading the app's identity failed")
	}
	requester := Identity{
		Login: t.Requester.Login,
		Name:  t.Requester.Login,
		Email: fmt.Sprintf("%d+%s@users.noreply.github.com", t.Requester.ID, t.Requester.Login),
	}
	when := t.FinishedAt
	if when.IsZero() {
		when = t.CreatedAt.UTC().Truncate(time.Second)
	}
	sha, err := ws.CommitAll(when, CommitMessage(t), bot, requester)
	if errors.Is(err, ErrNoChanges) {
		// An earlier try committed but did not live to record it.
		if head, herr := ws.Head(); herr == nil && head != t.BaseSHA {
			return head, nil
		}
		return "", Fatal("the agent finished without changing any file, so there is nothing to propose", err)
	}
	if err != nil {
		return "", retryf(err, "committing the change failed")
	}
	return sha, nil
}

// Finish reports the end of a fix task that failed or was cancelled: its
// status comment is edited to say why. Other kinds have nothing to report.
func (f *Flow) Finish(ctx context.Context, t *Task) error {
	f.cleanup(ctx, t)
	if t.Kind != KindFix {
		return nil
	}
	return f.updateStatus(ctx, t)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func (f *Flow) cleanup(ctx context.Context, t *Task) {
	if t.Workdir == "" {
		return
	}
	if err := os.RemoveAll(t.Workdir); err != nil {
		f.Logger.WarnContext(ctx, "remove workspace", "task_id", t.ID, "err", err)
	}
}
