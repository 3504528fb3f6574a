package task_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// event records the issue event action (label name) by login, dated at
// on GitHub's clock (now when zero), as the webhook would.
func (w *world) event(action, label, login string, at time.Time) *task.Task {
	return w.ask(&task.Task{Kind: task.KindTrigger, Issue: 1, Requester: person(login), AskedAt: at,
		Trigger: &task.TriggerRef{Action: action, Label: label}})
}

// labels sets the labels issue 1 carries now.
func (w *world) labels(names ...string) {
	is := w.gh.Issues[1]
	is.Labels = names
	w.gh.Issues[1] = is
}

// latestFix is the newest fix on issue 1, or nil.
func (w *world) latestFix() *task.Task {
	w.t.Helper()
	got, err := w.store.Latest(w.ctx, (&task.Task{Repo: w.repo, Issue: 1}).IssueKey())
	if errors.Is(err, task.ErrNotFound) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return got
}

// An issue event starts a fix only when it is the repository's label (or
// the bot assigned), and the fix is then asked as a comment would ask it:
// its permission check, its brief, its pull request.
func TestIssueEventsStartAFix(t *testing.T) {
	cases := []struct {
		name   string
		config string
		action string
		label  string
		login  string
		// carries are the labels the issue has when the worker gets to it.
		carries []string
		// body replaces the issue's description when not nil.
		body *string
		// fix is where the fix ends ("" when none starts); reply is part of
		// the one reply the event's task or its fix posted.
		fix   task.State
		reply string
	}{
		{name: "the default label", action: task.TriggerLabeled, label: "pullwright", login: "alice", carries: []string{"bug", "pullwright"}, fix: task.Done},
		{name: "the label in another case", action: task.TriggerLabeled, label: "PullWright", login: "alice", carries: []string{"PullWright"}, fix: task.Done},
		{name: "the repository's label", config: "label: fix it\n", action: task.TriggerLabeled, label: "fix it", login: "alice", carries: []string{"fix it"}, fix: task.Done},
		{name: "the default once the repository names another", config: "label: fix it\n", action: task.TriggerLabeled, label: "pullwright", login: "alice", carries: []string{"pullwright"}},
		{name: "another label", action: task.TriggerLabeled, label: "bug", login: "alice", carries: []string{"bug"}},
		{name: "a broken file, silently", config: "label: [x]\n", action: task.TriggerLabeled, label: "pullwright", login: "alice", carries: []string{"pullwright"}},
		{name: "removed before the worker got to it", action: task.TriggerLabeled, label: "pullwright", login: "alice", carries: []string{"bug"}},
		{name: "added by a reader", action: task.TriggerLabeled, label: "pullwright", login: "mallory", carries: []string{"pullwright"}, fix: task.Done, reply: "@mallory sorry:"},
		{name: "on an issue with no description", action: task.TriggerLabeled, label: "pullwright", login: "alice", carries: []string{"pullwright"}, body: new(string), reply: "what should I fix?"},
		{name: "the bot assigned", action: task.TriggerAssigned, login: "bob", fix: task.Done},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			if c.config != "" {
				w.gh.SetFile("main", ".github/pullwright.yml", c.config)
			}
			w.labels(c.carries...)
			if c.body != nil {
				is := w.gh.Issues[1]
				is.Body = *c.body
				w.gh.Issues[1] = is
			}
			w.agent.Script = []tasktest.Turn{finish("Fix the README typo", map[string]string{"README.md": "# widget\n\nNo typo.\n"})}
			ev := w.event(c.action, c.label, c.login, time.Time{})
			w.drain()
			w.want(ev.ID, task.Done)
			fix := w.latestFix()
			if c.fix == "" {
				if fix != nil {
					t.Fatalf("a fix started: %+v", fix)
				}
			} else {
				if fix == nil {
					t.Fatal("no fix started")
				}
				got := w.want(fix.ID, c.fix)
				if got.Requester != person(c.login) || got.Instructions != "" || !got.AskedAt.Equal(ev.AskedAt) || got.Settings == nil {
					t.Errorf("fix %+v", got)
				}
			}
			opened := c.fix == task.Done && c.reply == ""
			if got := len(w.gh.Opened) == 1; got != opened {
				t.Errorf("pull requests opened: %d, want one: %v", len(w.gh.Opened), opened)
			}
			if opened {
				if brief := w.agent.Briefs[0]; brief.Body != "README says widgte." || brief.Requester != c.login {
					t.Errorf("brief %+v", brief)
				}
			}
			var replies []string
			for _, cm := range w.gh.Comments {
				if strings.HasSuffix(cm.Marker, "-reply") {
					replies = append(replies, cm.Text())
				}
			}
			switch {
			case c.reply == "" && len(replies) != 0:
				t.Errorf("replies %q, want none", replies)
			case c.reply != "" && (len(replies) != 1 || !strings.Contains(replies[0], c.reply)):
				t.Errorf("replies %q, want one with %q", replies, c.reply)
			}
		})
	}
}

// The label added while a fix runs on the issue is answered as a second
// "/agent fix" is, and removing it cancels the fix like "/agent cancel".
func TestLabelBesideAFix(t *testing.T) {
	cases := []struct {
		name   string
		action string
		label  string
		login  string
		// before dates the event a minute before the fix was asked.
		before bool
		reply  string
		fix    task.State
	}{
		{name: "added again", action: task.TriggerLabeled, label: "pullwright", login: "bob", reply: "is already working on this issue", fix: task.AwaitingApproval},
		{name: "removed", action: task.TriggerUnlabeled, label: "pullwright", login: "bob", reply: "Cancelling task 1", fix: task.Cancelled},
		{name: "removed by a reader", action: task.TriggerUnlabeled, label: "pullwright", login: "mallory", reply: "@mallory sorry:", fix: task.AwaitingApproval},
		{name: "another label removed", action: task.TriggerUnlabeled, label: "bug", login: "bob", fix: task.AwaitingApproval},
		{name: "removed before the fix was asked", action: task.TriggerUnlabeled, label: "pullwright", login: "bob", before: true, fix: task.AwaitingApproval},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, fix := parked(t, "")
			w.labels("pullwright")
			var at time.Time
			if c.before {
				at = fix.AskedAt.Add(-time.Minute)
			}
			ev := w.event(c.action, c.label, c.login, at)
			w.drain()
			w.want(ev.ID, task.Done)
			got := w.want(fix.ID, c.fix)
			if c.fix == task.Cancelled && got.CancelledBy != c.login {
				t.Errorf("cancelled by %q", got.CancelledBy)
			}
			if c.reply == "" {
				for _, cm := range w.gh.Comments {
					if strings.HasSuffix(cm.Marker, "-reply") {
						t.Errorf("reply %q, want none", cm.Text())
					}
				}
				return
			}
			if r := w.reply(ev); !strings.Contains(r, c.reply) {
				t.Errorf("reply %q, want %q", r, c.reply)
			}
		})
	}
}

// Taking the label off an issue whose task has ended says nothing.
func TestUnlabelWithoutATask(t *testing.T) {
	w := newWorld(t)
	ev := w.event(task.TriggerUnlabeled, "pullwright", "bob", time.Time{})
	w.drain()
	w.want(ev.ID, task.Done)
	if len(w.gh.Comments) != 0 {
		t.Errorf("comments %+v", w.gh.Comments)
	}
}

// A label step repeated after a crash (the fix recorded, the step not
// saved) starts no second fix.
func TestLabelStepReplayed(t *testing.T) {
	w := newWorld(t)
	w.labels("pullwright")
	ev := w.event(task.TriggerLabeled, "pullwright", "alice", time.Time{})
	for range 2 {
		again := *ev
		if err := w.flow.Step(w.ctx, &again); err != nil || again.State != task.Done {
			t.Fatalf("step: %v, %s", err, again.State)
		}
	}
	fix := w.latestFix()
	if fix == nil || fix.ID != ev.ID+1 {
		t.Fatalf("fix %+v", fix)
	}
	if len(w.gh.Comments) != 0 {
		t.Errorf("comments %+v", w.gh.Comments)
	}
}
