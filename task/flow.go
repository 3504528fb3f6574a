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
	Logger  *slog.Logger
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
		if err := f.GitHub.AddReaction(ctx, t.Repo, t.CommentID, "eyes"); err != nil {
			return retryf(err, "reacting to the comment failed")
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
	t.Branch = f.BranchName(t.Issue, issue.Title)
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
	ws, err := f.Workspaces.Clone(ctx, t.Repo.CloneURL, t.Repo.DefaultBranch, token, dir)
	if err != nil {
		return nil, retryf(err, "cloning %s failed", t.Repo.CloneURL)
	}
	t.Workdir = dir
	return ws, nil
}

// workspace reopens the task's checkout, or rebuilds it from the default
// branch and the files saved in the store when this machine does not have
// it (the task was picked up after a crash, or on another replica).
func (f *Flow) workspace(ctx context.Context, t *Task) (Workspace, error) {
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
	if err := ws.CreateBranch(t.Branch); err != nil {
		return nil, retryf(err, "creating branch %s failed", t.Branch)
	}
	root, err := os.OpenRoot(ws.Dir())
	if err != nil {
		return nil, retryf(err, "opening the workspace failed")
	}
	defer root.Close()
	for _, fs := range t.Files {
		if fs.Deleted {
			if err := root.Remove(fs.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, retryf(err, "restoring %s failed", fs.Path)
			}
			continue
		}
		if err := root.MkdirAll(filepath.Dir(fs.Path), 0o755); err != nil {
			return nil, retryf(err, "restoring %s failed", fs.Path)
		}
		if err := root.WriteFile(fs.Path, fs.Content, 0o644); err != nil {
			return nil, retryf(err, "restoring %s failed", fs.Path)
		}
	}
	return ws, nil
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
		token, err := f.GitHub.Token(ctx, t.Repo.InstallationID)
		if err != nil {
			return retryf(err, "getting an installation token failed")
		}
		if err := ws.Push(ctx, token, t.Branch); err != nil {
			return retryf(err, "pushing branch %s failed", t.Branch)
		}
		t.Pushed = true
		return nil
	case t.PRNumber == 0:
		pr, err := f.GitHub.OpenPullRequest(ctx, t.Repo, NewPullRequest{
			Title: t.Title,
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
		fmt.Sprintf("@%s I opened %s: **%s**", t.Requester.Login, t.PRURL, t.Title)); err != nil {
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
	bot, err := f.GitHub.Identity(ctx)
	if err != nil {
		return retryf(err, "reading the app's identity failed")
	}
	requester := Identity{
		Login: t.Requester.Login,
		Name:  t.Requester.Login,
		Email: fmt.Sprintf("%d+%s@users.noreply.github.com", t.Requester.ID, t.Requester.Login),
	}
	sha, err := ws.CommitAll(CommitMessage(t), bot, requester)
	if errors.Is(err, ErrNoChanges) {
		return Fatal("the agent finished without changing any file, so there is nothing to propose", err)
	}
	if err != nil {
		return retryf(err, "committing the change failed")
	}
	t.HeadSHA = sha
	return nil
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

func (f *Flow) cleanup(ctx context.Context, t *Task) {
	if t.Workdir == "" {
		return
	}
	if err := os.RemoveAll(t.Workdir); err != nil {
		f.Logger.WarnContext(ctx, "remove workspace", "task_id", t.ID, "err", err)
	}
}
