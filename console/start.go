package console

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// Starting a fix from the API (POST /api/tasks) is a "/agent fix" comment
// without the comment: the console records the same fix task the webhook
// records for one, asked by the caller, and the fix's first step decides
// it by the same rules (the repository's trigger rule, asked of GitHub
// with the app's token; the rates; one task per issue). The console
// checks only what it must know to build the task, with the caller's own
// token: that they can write to the repository, and what the issue is.

// Installations finds the app's installation on a repository: the
// installation whose token the task will act with. With one token (no
// app) it is 0. ErrNotInstalled says the app is not installed there.
type Installations interface {
	RepoInstallation(ctx context.Context, owner, name string) (int64, error)
}

// ErrNotInstalled is Installations' answer for a repository the app is
// not installed on.
var ErrNotInstalled = errors.New("the app is not installed on the repository")

// maxInstructions bounds a fix's instructions as GitHub bounds a comment.
const maxInstructions = 65536

// startRequest is POST /api/tasks's body.
type startRequest struct {
	// Repository is "owner/name".
	Repository string `json:"repository"`
	// Issue is the issue's or pull request's number.
	Issue int `json:"issue"`
	// Instructions are what "/agent fix" would be followed by; empty
	// works from the issue (or the pull request's review comments).
	Instructions string `json:"instructions"`
	// Mode is "", tdd, debug or refactor, as "/agent tdd …".
	Mode string `json:"mode"`
}

// GitHub's rules for owner and repository names, loosely: what could be
// neither is refused before it becomes part of a URL.
var (
	ownerName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	repoName  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

func (q startRequest) check() (owner, name string, err error) {
	owner, name, ok := strings.Cut(q.Repository, "/")
	switch {
	case !ok || !ownerName.MatchString(owner) || !repoName.MatchString(name) || name == "." || name == "..":
		return "", "", fmt.Errorf("repository %q: want owner/name", q.Repository)
	case q.Issue <= 0:
		return "", "", errors.New("issue: want the number of an issue or pull request")
	case len(q.Instructions) > maxInstructions:
		return "", "", fmt.Errorf("instructions: longer than %d bytes", maxInstructions)
	}
	switch task.Mode(q.Mode) {
	case "", task.ModeTDD, task.ModeDebug, task.ModeRefactor:
	default:
		return "", "", fmt.Errorf("mode %q: want one of %s, %s, %s or none", q.Mode, task.ModeTDD, task.ModeDebug, task.ModeRefactor)
	}
	return owner, name, nil
}

// start records the fix q asks for, as who, and returns it.
func (c *Console) start(ctx context.Context, who *caller, q startRequest) (*task.Task, error) {
	owner, name, err := q.check()
	if err != nil {
		return nil, &actionErr{status: http.StatusUnprocessableEntity, msg: err.Error()}
	}
	if c.cfg.Installations == nil {
		return nil, &actionErr{status: http.StatusNotImplemented, msg: "this bot cannot start tasks from the API"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.budget)
	defer cancel()
	path := "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name)

	// Asked afresh, not from the permission cache: the task is built
	// from this answer.
	var rp struct {
		ID            int64                  `json:"id"`
		Name          string                 `json:"name"`
		Owner         struct{ Login string } `json:"owner"`
		CloneURL      string                 `json:"clone_url"`
		DefaultBranch string                 `json:"default_branch"`
		Archived      bool                   `json:"archived"`
		Permissions   map[string]bool        `json:"permissions"`
	}
	found, err := c.gh.get(ctx, who.token, path, &rp)
	switch {
	case errors.Is(err, errForbidden) || (err == nil && !found):
		return nil, &actionErr{status: http.StatusNotFound, msg: "no repository " + q.Repository + " that you can read"}
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errGitHub, err)
	case rp.ID == 0 || rp.Owner.Login == "" || rp.Name == "" || rp.CloneURL == "":
		return nil, fmt.Errorf("%w: the repository %s came without its id, name or clone URL", errGitHub, q.Repository)
	case !rp.Permissions["push"] && !rp.Permissions["maintain"] && !rp.Permissions["admin"]:
		return nil, &actionErr{status: http.StatusForbidden, msg: "you need write access to " + rp.Owner.Login + "/" + rp.Name + " to start a task there"}
	case rp.Archived:
		return nil, &actionErr{status: http.StatusConflict, msg: rp.Owner.Login + "/" + rp.Name + " is archived"}
	}

	// GitHub's answer time is when the person asked, on GitHub's clock,
	// as a comment's created_at is: the fork code a fix on a pull request
	// may work on is the code as it was then.
	var is struct {
		Title       string    `json:"title"`
		Body        string    `json:"body"`
		Locked      bool      `json:"locked"`
		PullRequest *struct{} `json:"pull_request"`
	}
	found, asked, err := c.gh.getDated(ctx, who.token, fmt.Sprintf("%s/issues/%d", path, q.Issue), &is)
	switch {
	case errors.Is(err, errForbidden) || (err == nil && !found):
		return nil, &actionErr{status: http.StatusNotFound, msg: fmt.Sprintf("no issue or pull request #%d in %s", q.Issue, q.Repository)}
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errGitHub, err)
	case is.Locked:
		return nil, &actionErr{status: http.StatusConflict, msg: fmt.Sprintf("#%d is locked", q.Issue)}
	case strings.TrimSpace(q.Instructions) == "" && is.PullRequest == nil && strings.TrimSpace(is.Body) == "":
		return nil, &actionErr{status: http.StatusUnprocessableEntity, msg: fmt.Sprintf("#%d has no description: give instructions", q.Issue)}
	}

	inst, err := c.cfg.Installations.RepoInstallation(ctx, rp.Owner.Login, rp.Name)
	switch {
	case errors.Is(err, ErrNotInstalled):
		return nil, &actionErr{status: http.StatusConflict, msg: "the app is not installed on " + rp.Owner.Login + "/" + rp.Name}
	case err != nil:
		return nil, fmt.Errorf("%w: find the installation: %w", errGitHub, err)
	case c.cfg.Serves != nil && !c.cfg.Serves(inst, rp.Owner.Login):
		// The operator's allow-list, which the webhook applies to every
		// delivery, applies here too.
		return nil, &actionErr{status: http.StatusForbidden, msg: "this bot does not serve " + rp.Owner.Login + "/" + rp.Name}
	case is.PullRequest != nil && asked.IsZero():
		// Without GitHub's time the fork code a fix may work on would not
		// be bound to when it was asked.
		return nil, fmt.Errorf("%w: GitHub's answer about #%d had no Date", errGitHub, q.Issue)
	}

	now := c.now()
	t := &task.Task{
		Kind:  task.KindFix,
		State: task.Queued,
		Repo: pullwright.Repo{
			InstallationID: inst, Owner: rp.Owner.Login, Name: rp.Name,
			CloneURL: rp.CloneURL, DefaultBranch: rp.DefaultBranch, ID: rp.ID,
		},
		Issue:        q.Issue,
		IsPR:         is.PullRequest != nil,
		IssueTitle:   is.Title,
		Requester:    task.Person{Login: who.Login, ID: who.ID},
		Instructions: strings.TrimSpace(q.Instructions),
		Mode:         task.Mode(q.Mode),
		CreatedAt:    now,
		RunAfter:     now,
	}
	if !asked.IsZero() {
		t.AskedAt = asked.UTC()
	}
	d := task.Delivery{ID: "console-" + rand.Text(), Event: "console", Action: "start", ReceivedAt: now}
	t.DeliveryID = d.ID
	err = c.cfg.Store.Record(ctx, d, t)
	if errors.Is(err, task.ErrActive) {
		return nil, &actionErr{status: http.StatusConflict, msg: fmt.Sprintf("#%d already has an active task", q.Issue)}
	}
	if err != nil {
		return nil, fmt.Errorf("record the fix: %w", err)
	}
	c.log.InfoContext(ctx, "console: fix started", "login", who.Login, "repo", t.Repo.FullName(), "issue", t.Issue, "task_id", t.ID)
	return t, nil
}

// apiStart is POST /api/tasks.
func (c *Console) apiStart(w http.ResponseWriter, r *http.Request, who *caller) {
	if !apiCSRF(r, who) {
		apiError(w, http.StatusForbidden, "missing or wrong X-CSRF-Token")
		return
	}
	var q startRequest
	if err := decodeJSONUpTo(r, &q, maxInstructions+4096); err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	t, err := c.start(r.Context(), who, q)
	if c.apiRefused(w, r, err) {
		return
	}
	// Accepted, not started: the fix's first step checks the trigger
	// rule and the rates, and answers on the issue as for a comment.
	w.Header().Set("Location", fmt.Sprintf("/api/tasks/%d", t.ID))
	writeJSON(w, http.StatusAccepted, map[string]any{"accepted": true, "task_id": t.ID, "url": fmt.Sprintf("/console/tasks/%d", t.ID)})
}
