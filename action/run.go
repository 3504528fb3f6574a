package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/webhook"
)

// Result is how one run of the GitHub Action ended.
type Result struct {
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
	// OutOfBudget is which budget the fix task's agent used up before it
	// was done, when it did: its pull request is then a draft holding the
	// work so far (task's Work.OutOfBudget).
	OutOfBudget string
	// Spend is what the fix task's model calls used and cost so far, in
	// this run and the runs before it.
	Spend pullwright.Spend
}

// The interfaces below are the little a run needs of the rest of the bot.
// They are declared here, where they are used, so that app hands in the
// concrete store, pool, handler and GitHub client, and the tests of this
// package hand in small fakes.

// Store is what a run needs of its store, which lives for the run only:
// besides the webhook's write and reading a task back, it must take back a
// task an earlier run saved, under that task's own id.
type Store interface {
	// Record commits a delivery and its task, as task.Store.Record.
	Record(ctx context.Context, d task.Delivery, t *task.Task) error
	Get(ctx context.Context, id int64) (*task.Task, error)
	// Restore puts back a task that an earlier run saved, keeping its id.
	Restore(ctx context.Context, t *task.Task) error
	// StartIDsAt makes the tasks created from now on take ids from n.
	StartIDsAt(ctx context.Context, n int64) error
	task.Due
}

// Events decides what the run's event asks of the bot, by the webhook
// service's rules: at most one task, and why.
type Events interface {
	Decide(d task.Delivery, payload []byte) (*task.Task, string, error)
}

// Pool works every due task of the store until each has ended or waits
// for a person.
type Pool interface {
	Drain(ctx context.Context, due task.Due) error
}

// GitHub is what a run asks of GitHub's API itself: who the bot is, whether
// a request's approval check run still asks, and where to report a refused
// state. Installation 0 is the run's own token.
type GitHub interface {
	Identity(ctx context.Context) (pullwright.Identity, error)
	GetCheckRun(ctx context.Context, r pullwright.Repo, id int64) (pullwright.CheckRunState, error)
	UpsertComment(ctx context.Context, r pullwright.Repo, issue int, marker string, commentID int64, body string) (pullwright.Posted, error)
}

// Refs reads and writes the refs of the repository at url, as package repo
// does, with credentials it keeps itself: no token passes through a run's
// logic. WriteRefFile and DeleteRef with a non-empty expect are
// compare-and-swaps, which fail with an error wrapping repo.ErrRefMoved
// when the ref is no longer at expect.
type Refs interface {
	ListRefs(ctx context.Context, url, prefix string) (map[string]string, error)
	ReadRefFile(ctx context.Context, url, ref, path string) (data []byte, commit string, err error)
	WriteRefFile(ctx context.Context, url, ref, path string, data []byte, author pullwright.Identity, msg string, when time.Time, expect string) (commit string, err error)
	DeleteRef(ctx context.Context, url, ref, expect string) error
}

// Step is one run of `bot action` and what it works through.
type Step struct {
	Env    Env
	Store  Store
	Events Events
	Pool   Pool
	GitHub GitHub
	Refs   Refs
	// Command is the command word, which a refused state's report tells
	// the issue to start again with.
	Command string
	Log     *slog.Logger
}

// event is what a run reads of its event before the webhook rules do:
// which saved task it may concern, and where the repository is.
type event struct {
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

// refTimeout bounds the git calls on state refs of one restore or settle,
// so that a hung remote fails the run instead of holding the job.
const refTimeout = 2 * time.Minute

// Run restores the task the event concerns from the state an earlier run
// saved in the repository, turns the event into a task with the webhook's
// rules, works every task until it ends or waits for a person, then saves
// the state of a waiting task for the run that its answer will start, or
// removes the state of one that ended.
func (s *Step) Run(ctx context.Context) (Result, error) {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	env := s.Env
	var ev event
	if err := json.Unmarshal(env.Event, &ev); err != nil {
		return Result{}, fmt.Errorf("decode the %s event: %w", env.EventName, err)
	}
	if err := s.Store.StartIDsAt(ctx, env.RunID*idsPerRun); err != nil {
		return Result{}, err
	}
	log := s.Log.With("run_id", env.RunID, "event", env.EventName)

	restored, err := s.restore(ctx, ev)
	if err != nil {
		return Result{}, err
	}

	now := time.Now()
	d := task.Delivery{ID: env.DeliveryID(), Event: env.EventName, ReceivedAt: now}
	t, why, err := s.Events.Decide(d, env.Event)
	if err != nil {
		return Result{}, err
	}
	res := Result{Outcome: "ignored", Why: why}
	if t != nil {
		var err error
		t, why, err = webhook.Record(ctx, s.Store, d, t, why)
		if err != nil {
			return res, fmt.Errorf("record the event's task: %w", err)
		}
		res = Result{Outcome: "answered", Why: why, TaskID: t.ID, Issue: t.Issue}
		log.InfoContext(ctx, "event accepted", "task_id", t.ID, "kind", t.Kind, "why", why)
	} else {
		log.InfoContext(ctx, "event asks nothing of the bot", "why", why)
	}

	// A restored task may also be due by itself: its deadline passed.
	if err := s.Pool.Drain(ctx, s.Store); err != nil {
		return res, err
	}

	fixes := slices.Sorted(maps.Keys(restored))
	if t != nil && t.Kind == task.KindFix {
		fixes = append(fixes, t.ID)
	}
	var failed error
	for _, id := range fixes {
		ft, err := s.Store.Get(ctx, id)
		if err != nil {
			return res, fmt.Errorf("read task %d after the run: %w", id, err)
		}
		res.TaskID, res.Issue, res.Error = ft.ID, ft.Issue, ft.Error
		if j, ok := ft.Job(); ok {
			res.PRURL, res.Spend, res.OutOfBudget = j.PRURL, j.Spend, j.OutOfBudget
		}
		ref, err := s.settle(ctx, ft, restored[id])
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
func (s *Step) restore(ctx context.Context, ev event) (map[int64]savedState, error) {
	env := s.Env
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
	gctx, cancel := context.WithTimeout(ctx, refTimeout)
	defer cancel()
	refs, err := s.Refs.ListRefs(gctx, url, StateRefPrefix)
	if err != nil {
		return nil, fmt.Errorf("look for saved tasks: %w", err)
	}
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		refIssue, id, ok := ParseStateRef(ref)
		if !ok || (refIssue != issue && id != taskID) {
			continue
		}
		data, commit, err := s.Refs.ReadRefFile(gctx, url, ref, StateFile)
		if err != nil {
			return nil, fmt.Errorf("read the saved task %s: %w", ref, err)
		}
		t, err := Open(env.StateKey, env.Repository, data)
		switch {
		case err != nil:
		case t.ID != id || t.Issue != refIssue:
			err = fmt.Errorf("it names task %d on #%d: %w", t.ID, t.Issue, ErrStateTampered)
		default:
			err = s.stillWaiting(ctx, t)
		}
		if err != nil {
			s.Log.ErrorContext(ctx, "saved task refused", "ref", ref, "commit", commit, "err", err)
			if errors.Is(err, ErrStateTampered) || errors.Is(err, ErrStateReplayed) || errors.Is(err, ErrStateVersion) {
				// Nothing of it is used; it is removed so that the issue
				// can start again, and the comment names its commit.
				if rerr := s.refuseState(ctx, refIssue, id, ref, commit, err); rerr != nil {
					return nil, errors.Join(err, rerr)
				}
				if derr := s.Refs.DeleteRef(gctx, url, ref, commit); derr != nil {
					return nil, errors.Join(err, derr)
				}
			}
			return nil, fmt.Errorf("the saved state of task %d (%s): %w", id, ref, err)
		}
		// Claim the state before acting on it: two runs on one task (a
		// button and a comment, say) both read it, and only the one whose
		// claim moves the ref from what both read goes on.
		me, err := s.GitHub.Identity(ctx)
		if err != nil {
			return nil, err
		}
		claim, err := s.Refs.WriteRefFile(gctx, url, ref, StateFile, data, pullwright.Identity{Name: me.Name, Email: me.Email},
			fmt.Sprintf("Pullwright: run %d works on task %d\n\nRun: %s\n", env.RunID, t.ID, env.RunURL()), time.Now(), commit)
		if errors.Is(err, repo.ErrRefMoved) {
			return nil, fmt.Errorf("another run is working on task %d (its state moved while this run read it), so this event was not acted on; give the other run time and answer again: %w", t.ID, err)
		}
		if err != nil {
			return nil, fmt.Errorf("claim the saved task %s: %w", ref, err)
		}
		if err := s.Store.Restore(ctx, t); err != nil {
			return nil, err
		}
		restored[t.ID] = savedState{ref: ref, claim: claim}
		s.Log.InfoContext(ctx, "saved task restored", "task_id", t.ID, "issue", t.Issue, "request", t.CurrentRequest().ID, "ref", ref)
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
func (s *Step) stillWaiting(ctx context.Context, t *task.Task) error {
	r := t.CurrentRequest()
	if t.State != task.AwaitingApproval || r == nil || r.Answer != nil || r.CheckRunID == 0 {
		return fmt.Errorf("task %d is %s, not waiting for an answer: %w", t.ID, t.State, ErrStateReplayed)
	}
	cr, err := s.GitHub.GetCheckRun(ctx, pullwright.Repo{Owner: t.Repo.Owner, Name: t.Repo.Name}, r.CheckRunID)
	if err != nil {
		return fmt.Errorf("read the approval check run of request %s: %w", r.ID, err)
	}
	me, err := s.GitHub.Identity(ctx)
	if err != nil {
		return err
	}
	slug := strings.TrimSuffix(strings.ToLower(me.Login), "[bot]")
	if cr.ExternalID != r.ID || cr.HeadSHA != r.SHA || (cr.App != "" && !strings.EqualFold(cr.App, slug)) {
		return fmt.Errorf("request %s: its check run is another's: %w", r.ID, ErrStateTampered)
	}
	if cr.Status != "completed" || cr.Conclusion != "action_required" {
		return fmt.Errorf("request %s: its check run is %s/%s: %w", r.ID, cr.Status, cr.Conclusion, ErrStateReplayed)
	}
	return nil
}

// savedState is where a restored task's state is, and the commit of this
// run's claim on it, which the state is replaced or removed against.
type savedState struct{ ref, claim string }

// refuseState tells the issue why its waiting task cannot go on.
func (s *Step) refuseState(ctx context.Context, issue int, id int64, ref, commit string, why error) error {
	env := s.Env
	reason := "it failed its integrity check: it was changed after it was saved, or the `state-key` secret is not the one it was saved with"
	switch {
	case errors.Is(why, ErrStateVersion):
		reason = "it was saved by a Pullwright version whose format this one does not read"
	case errors.Is(why, ErrStateReplayed):
		reason = "it is not the task's latest state: the request it waits on was answered since, or is no longer shown (an older state was put back)"
	}
	body := fmt.Sprintf("Task %d cannot go on: its saved state (`%s`, commit %s) was refused because %s. "+
		"Nothing of it was used and nothing was run; the state was removed. Its branch keeps the work pushed so far. "+
		"Start again with `%s fix <instructions>`.", id, ref, commit, reason, s.Command)
	if _, err := s.GitHub.UpsertComment(ctx, pullwright.Repo{Owner: env.Owner(), Name: env.Name()}, issue,
		fmt.Sprintf("task-%d-state-refused-%d", id, env.RunID), 0, body); err != nil {
		return fmt.Errorf("report the refused state on #%d: %w", issue, err)
	}
	return nil
}

// settle saves the state of a task that waits for an answer and returns
// its ref, or removes the saved state of a task that ended. A task that is
// neither has been interrupted: the run failed.
func (s *Step) settle(ctx context.Context, t *task.Task, saved savedState) (string, error) {
	env := s.Env
	gctx, cancel := context.WithTimeout(ctx, refTimeout)
	defer cancel()
	r := t.CurrentRequest()
	switch {
	case t.State == task.AwaitingApproval && r != nil && r.Answer == nil:
		now := time.Now()
		doc, err := Seal(env.StateKey, t, now)
		if err != nil {
			return "", err
		}
		id, err := s.GitHub.Identity(ctx)
		if err != nil {
			return "", err
		}
		ref := StateRef(t.Issue, t.ID)
		msg := fmt.Sprintf("Pullwright: task %d on #%d waits for an answer to request %s\n\nRun: %s\n", t.ID, t.Issue, r.ID, env.RunURL())
		expect := ""
		if saved.ref == ref {
			expect = saved.claim
		}
		if _, err := s.Refs.WriteRefFile(gctx, t.Repo.CloneURL, ref, StateFile, doc, pullwright.Identity{Name: id.Name, Email: id.Email}, msg, now, expect); err != nil {
			return "", fmt.Errorf("save the state of task %d: %w", t.ID, err)
		}
		if saved.ref != "" && saved.ref != ref {
			if err := s.Refs.DeleteRef(gctx, t.Repo.CloneURL, saved.ref, saved.claim); err != nil {
				return "", err
			}
		}
		s.Log.InfoContext(ctx, "task waits for an answer; state saved", "task_id", t.ID, "request", r.ID, "ref", ref)
		return ref, nil
	case t.State.Terminal():
		if saved.ref != "" {
			if err := s.Refs.DeleteRef(gctx, t.Repo.CloneURL, saved.ref, saved.claim); err != nil {
				return "", fmt.Errorf("remove the state of task %d: %w", t.ID, err)
			}
		}
		return "", nil
	}
	return "", fmt.Errorf("task %d stopped in state %s before it ended or waited for an answer", t.ID, t.State)
}
