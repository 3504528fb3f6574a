package task

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pullwright/pullwright/policy"
)

// triggerSuffix ends the delivery id under which a trigger records the fix
// it starts: the id is the trigger's own delivery's with this suffix, so a
// step repeated after a crash finds its fix recorded (ErrDuplicate)
// instead of starting a second one.
const triggerSuffix = "/fix"

// trigger weighs an issue event (t.Trigger): the repository's label added
// starts a fix with the issue as the brief, and removed cancels the
// issue's running fix; the bot assigned starts a fix as the label does.
// Who asked is checked by the fix itself, or by the cancel, as for a
// comment: this step only decides whether the event is one of ours.
func (f *Flow) trigger(ctx context.Context, t *Task) error {
	ev := t.Trigger
	if ev == nil {
		return Fatal("a trigger task without its event", nil)
	}
	s, err := f.loadSettings(ctx, t)
	if Permanent(err) {
		// Most labels are not the bot's: answering every one on an issue
		// of a repository whose file is broken would be noise. Asking by
		// comment reports the file.
		f.Logger.WarnContext(ctx, "issue event ignored: the repository's configuration cannot be read", "task_id", t.ID, "action", ev.Action, "err", err)
		return t.Move(Done)
	}
	if err != nil {
		return err
	}
	switch ev.Action {
	case TriggerLabeled, TriggerUnlabeled:
		// GitHub's label names are unique whatever their case.
		if !strings.EqualFold(ev.Label, s.TriggerLabel()) {
			return t.Move(Done)
		}
		if ev.Action == TriggerUnlabeled {
			return f.commands().unlabeled(ctx, t)
		}
	case TriggerAssigned:
	default:
		return Fatal(fmt.Sprintf("unknown issue event %q", ev.Action), nil)
	}
	return f.startFix(ctx, t, s)
}

// startFix records the fix an issue event asks for, with the issue as the
// brief and the settings that recognised the event, and ends t.
func (f *Flow) startFix(ctx context.Context, t *Task, s policy.Settings) error {
	issue, err := f.GitHub.Issue(ctx, t.Repo, t.Issue)
	if err != nil {
		return retryf(err, "reading issue #%d failed", t.Issue)
	}
	switch {
	case issue.IsPR:
		// GitHub sends a pull request's labels as pull_request events, so
		// this is an issue that became one: nothing to start.
		return t.Move(Done)
	case t.Trigger.Action == TriggerLabeled && !hasLabel(issue.Labels, t.Trigger.Label):
		// Removed again before this step ran, perhaps delivered after the
		// removal: what the issue carries now decides, not the order in
		// which deliveries arrived. A removal after this check cancels the
		// fix instead (commands.unlabeled).
		f.Logger.InfoContext(ctx, "label removed before the task started", "task_id", t.ID, "issue", t.Issue)
		return t.Move(Done)
	case strings.TrimSpace(issue.Body) == "":
		return f.desk().reply(ctx, t, fmt.Sprintf(
			"@%s what should I fix? The issue has no description: describe the problem in it and ask again, or write the instructions in a comment: `%s fix <instructions>`.",
			t.Requester.Login, f.Command))
	}
	now := f.now()
	fix := &Task{
		Kind:       KindFix,
		State:      Queued,
		Repo:       t.Repo,
		Issue:      t.Issue,
		IssueTitle: issue.Title,
		AskedAt:    t.AskedAt,
		Requester:  t.Requester,
		Settings:   &s,
		CreatedAt:  now,
		RunAfter:   now,
	}
	d := Delivery{ID: t.DeliveryID + triggerSuffix, Event: "issues", Action: t.Trigger.Action, ReceivedAt: now}
	err = f.Store.Record(ctx, d, fix)
	switch {
	case errors.Is(err, ErrDuplicate):
		// An earlier try of this step recorded the fix and died before
		// saving t.
	case errors.Is(err, ErrActive):
		// Answered as a second /agent fix is, rather than ignored: adding
		// the label is a request, and without a word the person who added
		// it would wait for a task that never starts.
		return f.commands().busy(ctx, t)
	case err != nil:
		return retryf(err, "recording the fix asked on #%d failed", t.Issue)
	default:
		f.Logger.InfoContext(ctx, "issue event started a fix", "task_id", t.ID, "fix_task_id", fix.ID, "action", t.Trigger.Action, "issue", t.Issue)
	}
	return t.Move(Done)
}

func hasLabel(labels []string, name string) bool {
	for _, l := range labels {
		if strings.EqualFold(l, name) {
			return true
		}
	}
	return false
}
