package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/action"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/webhook"
)

// ActionsIdentity is who a workflow's GITHUB_TOKEN acts as.
func ActionsIdentity() pullwright.Identity {
	return pullwright.Identity{
		Login: "github-actions[bot]",
		Name:  "github-actions[bot]",
		Email: "41898282+github-actions[bot]@users.noreply.github.com",
		ID:    41898282,
	}
}

// ActionResult is how one run of the GitHub Action ended.
type ActionResult struct {
	// Outcome is "ignored" (the event asks nothing of the bot), "waiting"
	// (a task waits for an answer and its state is saved), or the final
	// state of the run's fix task ("done", "failed", "cancelled"), or
	// "answered" when the event's own task (a reply, an answer) is all
	// there was to do.
	Outcome string
	// Why says why an event was ignored, as the webhook logs it.
	Why    string
	TaskID int64
	Issue  int
	PRURL  string
	// StateRef is where the waiting task's state was saved.
	StateRef string
	// Error is the user-safe reason a fix task failed.
	Error string
}

// stateStore is what a run needs of its store beyond task.Store: the
// SQLite store of one run (sqlite.Store) has all of it.
type stateStore interface {
	task.Store
	task.Due
	Restore(ctx context.Context, t *task.Task) error
	StartIDsAt(ctx context.Context, n int64) error
}

// actionEvent is what a run reads of its event before the webhook rules do:
// which saved task it may concern, and where the repository is.
type actionEvent struct {
	Issue *struct {
		Number int `json:"number"`
	} `json:"issue"`
	// PullRequest is a review comment's pull request, whose number is
	// the conversation's as an issue comment's would be.
	PullRequest *struct {
		Number int `json:"number"`
	} `json:"pull_request"`
	CheckRun *struct {
		ExternalID string `json:"external_id"`
	} `json:"check_run"`
	Repository *struct {
		FullName string `json:"full_name"`
		CloneURL string `json:"clone_url"`
	} `json:"repository"`
}

// idsPerRun spaces the task ids of runs apart: a run's tasks get ids from
// its run id times this, so a task restored from an earlier run never
// shares an id with one made now, and a re-run of a run reuses its ids,
// finding the comments it posted the first time by their markers.
const idsPerRun = 100

// RunAction is `bot action`: one workflow run. It restores the task the
// event concerns from the state an earlier run saved in the repository,
// turns the event into a task with the webhook's rules, works every task
// until it ends or waits for a person, then saves the state of a waiting
// task for the run that its answer will start, or removes the state of one
// that ended. cfg carries tuning and the logger; env fills in the rest.
func RunAction(ctx context.Context, env action.Env, cfg Config) (ActionResult, error) {
	dir, err := os.MkdirTemp(env.TempDir, "pullwright-run-")
	if err != nil && env.TempDir != os.TempDir() {
		// RUNNER_TEMP names a path of the runner's machine, which a
		// container action does not see.
		dir, err = os.MkdirTemp("", "pullwright-run-")
	}
	if err != nil {
		return ActionResult{}, fmt.Errorf("create the run's directory: %w", err)
	}
	// The store and workspaces live for this run only: what outlives it is
	// on GitHub and in the repository.
	defer os.RemoveAll(dir)
	cfg.Token = env.Token
	cfg.APIURL = env.APIURL
	cfg.OpenAIKey, cfg.OpenAIBaseURL = env.OpenAIKey, env.OpenAIBaseURL
	if env.Model != "" {
		cfg.Model = env.Model
	}
	if env.Command != "" {
		cfg.Command = env.Command
	}
	cfg.Runner, cfg.SandboxImage = env.Runner, env.SandboxImage
	cfg.LocalPath = env.Path
	cfg.ApprovalTimeout = env.ApprovalTimeout
	cfg.DatabaseURL = "sqlite://" + filepath.Join(dir, "run.db")
	cfg.WorkDir = filepath.Join(dir, "work")
	cfg.Workers = 1
	a, err := New(ctx, cfg)
	if err != nil {
		return ActionResult{}, err
	}
	defer a.Close()
	return a.runAction(ctx, env)
}

func (a *App) runAction(ctx context.Context, env action.Env) (ActionResult, error) {
	store, ok := a.store.(stateStore)
	if !ok {
		return ActionResult{}, fmt.Errorf("the store %T cannot restore tasks", a.store)
	}
	var ev actionEvent
	if err := json.Unmarshal(env.Event, &ev); err != nil {
		return ActionResult{}, fmt.Errorf("decode the %s event: %w", env.EventName, err)
	}
	if err := store.StartIDsAt(ctx, env.RunID*idsPerRun); err != nil {
		return ActionResult{}, err
	}
	log := a.log.With("run_id", env.RunID, "event", env.EventName)

	restored, err := a.restore(ctx, env, ev, store)
	if err != nil {
		return ActionResult{}, err
	}

	now := time.Now()
	d := task.Delivery{ID: env.DeliveryID(), Event: env.EventName, ReceivedAt: now}
	t, why, err := a.webhook.Decide(d, env.Event)
	if err != nil {
		return ActionResult{}, err
	}
	res := ActionResult{Outcome: "ignored", Why: why}
	if t != nil {
		var err error
		t, why, err = webhook.Record(ctx, store, d, t, why)
		if err != nil {
			return res, fmt.Errorf("record the event's task: %w", err)
		}
		res = ActionResult{Outcome: "answered", Why: why, TaskID: t.ID, Issue: t.Issue}
		log.InfoContext(ctx, "event accepted", "task_id", t.ID, "kind", t.Kind, "why", why)
	} else {
		log.InfoContext(ctx, "event asks nothing of the bot", "why", why)
	}

	// A restored task may also be due by itself: its deadline passed.
	if err := a.pool.Drain(ctx, store); err != nil {
		return res, err
	}

	fixes := slices.Sorted(maps.Keys(restored))
	if t != nil && t.Kind == task.KindFix {
		fixes = append(fixes, t.ID)
	}
	var failed error
	for _, id := range fixes {
		ft, err := store.Get(ctx, id)
		if err != nil {
			return res, fmt.Errorf("read task %d after the run: %w", id, err)
		}
		res.TaskID, res.Issue, res.PRURL, res.Error = ft.ID, ft.Issue, ft.PRURL, ft.Error
		ref, err := a.settle(ctx, env, ft, restored[id])
		if err != nil {
			return res, err
		}
		switch {
		case ref != "":
			res.Outcome, res.StateRef = "waiting", ref
		default:
			res.Outcome = string(ft.State)
			if ft.State == task.Failed {
				failed = fmt.Errorf("task %d failed: %s", ft.ID, ft.Error)
			}
		}
	}
	return res, failed
}

// restore reads the saved states the event may concern, checks their seal
// and puts them in the run's store. A state that fails its check is
// reported on its issue and removed, and the run stops: nothing of it is
// used, so nothing a forger wrote is run.
func (a *App) restore(ctx context.Context, env action.Env, ev actionEvent, store stateStore) (map[int64]savedState, error) {
	restored := map[int64]savedState{}
	issue := 0
	switch {
	case ev.Issue != nil:
		issue = ev.Issue.Number
	case ev.PullRequest != nil:
		issue = ev.PullRequest.Number
	}
	var taskID int64
	if ev.CheckRun != nil {
		idPart, _, _ := strings.Cut(ev.CheckRun.ExternalID, "-")
		taskID, _ = strconv.ParseInt(idPart, 10, 64)
	}
	if (issue == 0 && taskID == 0) || ev.Repository == nil || ev.Repository.CloneURL == "" {
		return restored, nil
	}
	url := ev.Repository.CloneURL
	token, err := a.github.Token(ctx, 0)
	if err != nil {
		return nil, err
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	refs, err := repo.ListRefs(gctx, url, token, action.StateRefPrefix)
	if err != nil {
		return nil, fmt.Errorf("look for saved tasks: %w", err)
	}
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		refIssue, id, ok := action.ParseStateRef(ref)
		if !ok || (refIssue != issue && id != taskID) {
			continue
		}
		data, commit, err := repo.ReadRefFile(gctx, url, token, ref, action.StateFile)
		if err != nil {
			return nil, fmt.Errorf("read the saved task %s: %w", ref, err)
		}
		t, err := action.Open(env.StateKey, env.Repository, data)
		switch {
		case err != nil:
		case t.ID != id || t.Issue != refIssue:
			err = fmt.Errorf("it names task %d on #%d: %w", t.ID, t.Issue, action.ErrStateTampered)
		default:
			err = a.stillWaiting(ctx, t)
		}
		if err != nil {
			a.log.ErrorContext(ctx, "saved task refused", "ref", ref, "commit", commit, "err", err)
			if errors.Is(err, action.ErrStateTampered) || errors.Is(err, action.ErrStateReplayed) || errors.Is(err, action.ErrStateVersion) {
				// Nothing of it is used; it is removed so that the issue
				// can start again, and the comment names its commit.
				if rerr := a.refuseState(ctx, env, refIssue, id, ref, commit, err); rerr != nil {
					return nil, errors.Join(err, rerr)
				}
				if derr := repo.DeleteRef(gctx, url, token, ref, commit); derr != nil {
					return nil, errors.Join(err, derr)
				}
			}
			return nil, fmt.Errorf("the saved state of task %d (%s): %w", id, ref, err)
		}
		// Claim the state before acting on it: two runs on one task (a
		// button and a comment, say) both read it, and only the one whose
		// claim moves the ref from what both read goes on.
		me, err := a.github.Identity(ctx)
		if err != nil {
			return nil, err
		}
		claim, err := repo.WriteRefFile(gctx, url, token, ref, action.StateFile, data, pullwright.Identity{Name: me.Name, Email: me.Email},
			fmt.Sprintf("Pullwright: run %d works on task %d\n\nRun: %s\n", env.RunID, t.ID, env.RunURL()), time.Now(), commit)
		if errors.Is(err, repo.ErrRefMoved) {
			return nil, fmt.Errorf("another run is working on task %d (its state moved while this run read it), so this event was not acted on; give the other run time and answer again: %w", t.ID, err)
		}
		if err != nil {
			return nil, fmt.Errorf("claim the saved task %s: %w", ref, err)
		}
		if err := store.Restore(ctx, t); err != nil {
			return nil, err
		}
		restored[t.ID] = savedState{ref: ref, claim: claim}
		a.log.InfoContext(ctx, "saved task restored", "task_id", t.ID, "issue", t.Issue, "request", t.Request.ID, "ref", ref)
	}
	return restored, nil
}

// stillWaiting checks a genuine state against what GitHub shows: the seal
// proves the bot wrote the state, not that it is the task's latest, and
// whoever can push may put an older one back (a request answered since,
// or a task that ended). The approval check run of the request it waits
// on must still ask for an answer, on the same commit; the bot completes
// that run as soon as a request is answered, and only the app that
// created a check run can change it.
func (a *App) stillWaiting(ctx context.Context, t *task.Task) error {
	r := t.Request
	if t.State != task.AwaitingApproval || r == nil || r.Answer != nil || r.CheckRunID == 0 {
		return fmt.Errorf("task %d is %s, not waiting for an answer: %w", t.ID, t.State, action.ErrStateReplayed)
	}
	cr, err := a.github.GetCheckRun(ctx, pullwright.Repo{Owner: t.Repo.Owner, Name: t.Repo.Name}, r.CheckRunID)
	if err != nil {
		return fmt.Errorf("read the approval check run of request %s: %w", r.ID, err)
	}
	me, err := a.github.Identity(ctx)
	if err != nil {
		return err
	}
	slug := strings.TrimSuffix(strings.ToLower(me.Login), "[bot]")
	if cr.ExternalID != r.ID || cr.HeadSHA != r.SHA || (cr.App != "" && !strings.EqualFold(cr.App, slug)) {
		return fmt.Errorf("request %s: its check run is another's: %w", r.ID, action.ErrStateTampered)
	}
	if cr.Status != "completed" || cr.Conclusion != "action_required" {
		return fmt.Errorf("request %s: its check run is %s/%s: %w", r.ID, cr.Status, cr.Conclusion, action.ErrStateReplayed)
	}
	return nil
}

// savedState is where a restored task's state is, and the commit of this
// run's claim on it, which the state is replaced or removed against.
type savedState struct{ ref, claim string }

// refuseState tells the issue why its waiting task cannot go on.
func (a *App) refuseState(ctx context.Context, env action.Env, issue int, id int64, ref, commit string, why error) error {
	reason := "it failed its integrity check: it was changed after it was saved, or the `state-key` secret is not the one it was saved with"
	switch {
	case errors.Is(why, action.ErrStateVersion):
		reason = "it was saved by a Pullwright version whose format this one does not read"
	case errors.Is(why, action.ErrStateReplayed):
		reason = "it is not the task's latest state: the request it waits on was answered since, or is no longer shown (an older state was put back)"
	}
	body := fmt.Sprintf("Task %d cannot go on: its saved state (`%s`, commit %s) was refused because %s. "+
		"Nothing of it was used and nothing was run; the state was removed. Its branch keeps the work pushed so far. "+
		"Start again with `%s fix <instructions>`.", id, ref, commit, reason, a.cfg.Command)
	if _, err := a.github.UpsertComment(ctx, pullwright.Repo{Owner: env.Owner(), Name: env.Name()}, issue,
		fmt.Sprintf("task-%d-state-refused-%d", id, env.RunID), 0, body); err != nil {
		return fmt.Errorf("report the refused state on #%d: %w", issue, err)
	}
	return nil
}

// settle saves the state of a task that waits for an answer and returns
// its ref, or removes the saved state of a task that ended. A task that is
// neither has been interrupted: the run failed.
func (a *App) settle(ctx context.Context, env action.Env, t *task.Task, saved savedState) (string, error) {
	token, err := a.github.Token(ctx, 0)
	if err != nil {
		return "", err
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	switch {
	case t.State == task.AwaitingApproval && t.Request != nil && t.Request.Answer == nil:
		now := time.Now()
		doc, err := action.Seal(env.StateKey, t, now)
		if err != nil {
			return "", err
		}
		id, err := a.github.Identity(ctx)
		if err != nil {
			return "", err
		}
		ref := action.StateRef(t.Issue, t.ID)
		msg := fmt.Sprintf("Pullwright: task %d on #%d waits for an answer to request %s\n\nRun: %s\n", t.ID, t.Issue, t.Request.ID, env.RunURL())
		expect := ""
		if saved.ref == ref {
			expect = saved.claim
		}
		if _, err := repo.WriteRefFile(gctx, t.Repo.CloneURL, token, ref, action.StateFile, doc, pullwright.Identity{Name: id.Name, Email: id.Email}, msg, now, expect); err != nil {
			return "", fmt.Errorf("save the state of task %d: %w", t.ID, err)
		}
		if saved.ref != "" && saved.ref != ref {
			if err := repo.DeleteRef(gctx, t.Repo.CloneURL, token, saved.ref, saved.claim); err != nil {
				return "", err
			}
		}
		a.log.InfoContext(ctx, "task waits for an answer; state saved", "task_id", t.ID, "request", t.Request.ID, "ref", ref)
		return ref, nil
	case t.State.Terminal():
		if saved.ref != "" {
			if err := repo.DeleteRef(gctx, t.Repo.CloneURL, token, saved.ref, saved.claim); err != nil {
				return "", fmt.Errorf("remove the state of task %d: %w", t.ID, err)
			}
		}
		return "", nil
	}
	return "", fmt.Errorf("task %d stopped in state %s before it ended or waited for an answer", t.ID, t.State)
}
