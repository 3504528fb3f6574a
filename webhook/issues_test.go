package webhook

import (
	"fmt"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// installed adds the installation an App's delivery carries to a sample
// payload that has none (issues.labeled.json, issues.unlabeled.json).
func installed(m map[string]any) {
	m["installation"] = map[string]any{"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
}

// labelled names the label an issues delivery adds or removes.
func labelled(name string) func(map[string]any) {
	return func(m map[string]any) { obj(m, "label")["name"] = name }
}

// assignedTo sets the user an assigned delivery assigns.
func assignedTo(login string) func(map[string]any) {
	return func(m map[string]any) {
		a := obj(m, "assignee")
		a["login"], a["type"] = login, "Bot"
	}
}

// sentBy sets who caused an event that has no comment.
func sentBy(login, typ string) func(map[string]any) {
	return func(m map[string]any) {
		s := obj(m, "sender")
		s["login"], s["type"] = login, typ
	}
}

// TestIssueEvents: a label added or removed by a person, or the bot
// assigned, becomes a trigger task for the worker to weigh, dated by
// GitHub's time of the change; everything else is only recorded.
func TestIssueEvents(t *testing.T) {
	const (
		labeled   = "issues.labeled.json"
		unlabeled = "issues.unlabeled.json"
		assigned  = "issues.assigned.json"
	)
	tests := []struct {
		name string
		cfg  func(*Config)
		file string
		edit func(map[string]any)
		// why is the outcome logged; kind "" means no task.
		why    string
		action string
		label  string
		at     time.Time
	}{
		// GitHub's samples as sent: no installation, or someone else assigned.
		{name: "labeled as sent", file: labeled, why: "no_installation"},
		{name: "unlabeled as sent", file: unlabeled, why: "no_installation"},
		{name: "assigned to a person", file: assigned, why: "assigned_to_other"},

		{name: "label added", file: labeled, edit: installed, why: "label_added", action: task.TriggerLabeled, label: "bug", at: time.Date(2019, 5, 15, 15, 20, 18, 0, time.UTC)},
		{name: "label removed", file: unlabeled, edit: installed, why: "label_removed", action: task.TriggerUnlabeled, label: "bug", at: time.Date(2019, 5, 15, 15, 20, 26, 0, time.UTC)},
		{name: "the bot assigned", file: assigned, edit: assignedTo(botLogin), why: "assigned", action: task.TriggerAssigned, at: time.Date(2019, 5, 15, 15, 20, 18, 0, time.UTC)},
		{name: "the bot assigned, any case", file: assigned, edit: assignedTo("PullWright[bot]"), why: "assigned", action: task.TriggerAssigned, at: time.Date(2019, 5, 15, 15, 20, 18, 0, time.UTC)},
		{name: "a one-token run needs no installation", cfg: func(c *Config) { c.OneToken = true }, file: labeled, why: "label_added", action: task.TriggerLabeled, label: "bug", at: time.Date(2019, 5, 15, 15, 20, 18, 0, time.UTC)},
		{name: "a time that does not parse", file: labeled, edit: then(installed, func(m map[string]any) { obj(m, "issue")["updated_at"] = "soon" }), why: "label_added", action: task.TriggerLabeled, label: "bug"},
		{name: "a locked issue's label removed", file: unlabeled, edit: then(installed, func(m map[string]any) { obj(m, "issue")["locked"] = true }), why: "label_removed", action: task.TriggerUnlabeled, label: "bug", at: time.Date(2019, 5, 15, 15, 20, 26, 0, time.UTC)},

		// Never the bot's own doing, nor another bot's.
		{name: "labeled by the bot", file: labeled, edit: then(installed, sentBy(botLogin, "Bot")), why: "issue_event_by_self"},
		{name: "labeled by the bot as a user", file: labeled, edit: then(installed, sentBy("Pullwright[bot]", "User")), why: "issue_event_by_self"},
		{name: "assigned by the bot", file: assigned, edit: then(assignedTo(botLogin), sentBy(botLogin, "Bot")), why: "issue_event_by_self"},
		{name: "labeled by another bot", file: labeled, edit: then(installed, sentBy("triage[bot]", "Bot")), why: "issue_event_by_bot"},
		{name: "labeled by a listed bot", cfg: func(c *Config) { c.AllowedBots = []string{"triage[bot]"} }, file: labeled, edit: then(installed, sentBy("triage[bot]", "Bot")),
			why: "label_added", action: task.TriggerLabeled, label: "bug", at: time.Date(2019, 5, 15, 15, 20, 18, 0, time.UTC)},

		{name: "label on a pull request", file: labeled, edit: then(installed, onPR), why: "issue_event_ignored"},
		{name: "label added to a locked issue", file: labeled, edit: then(installed, func(m map[string]any) { obj(m, "issue")["locked"] = true }), why: "issue_locked"},
		{name: "label without a name", file: labeled, edit: then(installed, labelled("")), why: "issue_event_incomplete"},
		{name: "no label", file: labeled, edit: then(installed, func(m map[string]any) { delete(m, "label") }), why: "issue_event_incomplete"},
		{name: "no sender", file: labeled, edit: then(installed, func(m map[string]any) { delete(m, "sender") }), why: "issue_event_incomplete"},
		{name: "unassigned", file: assigned, edit: then(assignedTo(botLogin), func(m map[string]any) { m["action"] = "unassigned" }), why: "issue_event_ignored"},
		{name: "opened", file: "issues.opened.ghes.json", why: "issue_event_ignored"},
		{name: "not served", cfg: func(c *Config) { c.Serves = func(int64, string) bool { return false } }, file: labeled, edit: installed, why: "not_served"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newFakeRecorder()
			var why string
			h, _ := newHandler(t, rec, func(c *Config) {
				c.Observe = func(_, outcome string) { why = outcome }
				if tt.cfg != nil {
					tt.cfg(c)
				}
			})
			id := fmt.Sprintf("issues-%d", i)
			w := serve(h, delivery{event: "issues", id: id, body: variant(t, tt.file, tt.edit)})
			if why != tt.why {
				t.Errorf("outcome %q, want %q", why, tt.why)
			}
			deliveries, tasks := rec.snapshot()
			if _, ok := deliveries[id]; !ok {
				t.Fatalf("delivery not recorded; status %d", w.Code)
			}
			if tt.action == "" {
				if w.Code != 200 || len(tasks) != 0 {
					t.Fatalf("status %d, tasks %+v; want 200 and none", w.Code, tasks)
				}
				return
			}
			if w.Code != 202 || len(tasks) != 1 {
				t.Fatalf("status %d, %d tasks; want 202 and one", w.Code, len(tasks))
			}
			got := tasks[0]
			inst := int64(1)
			if tt.cfg != nil && tt.edit == nil {
				inst = 0 // the one-token run's sample names none
			}
			wantRepo := pullwright.Repo{InstallationID: inst, Owner: "Codertocat", Name: "Hello-World", CloneURL: "https://github.com/Codertocat/Hello-World.git", DefaultBranch: "master", ID: 186853002}
			if got.Kind != task.KindTrigger || got.Trigger == nil || *got.Trigger != (task.TriggerRef{Action: tt.action, Label: tt.label}) ||
				got.Issue != 1 || got.IssueTitle != "Spelling error in the README file" || got.CommentID != 0 || got.Instructions != "" ||
				got.Repo != wantRepo || got.State != task.Queued || got.DeliveryID != id {
				t.Errorf("task %+v, trigger %+v", got, got.Trigger)
			}
			if got.Requester.Login == "" || got.Requester.Login != map[bool]string{true: "triage[bot]", false: "Codertocat"}[tt.name == "labeled by a listed bot"] {
				t.Errorf("requester %+v", got.Requester)
			}
			if !got.AskedAt.Equal(tt.at) {
				t.Errorf("asked at %v, want %v", got.AskedAt, tt.at)
			}
		})
	}
}

// A label added while a fix is active is still recorded as a trigger: the
// store's one-fix rule is for fixes, and the worker answers it as busy
// once it knows the label is the repository's.
func TestLabelWhileAFixIsActive(t *testing.T) {
	rec := newFakeRecorder()
	h, _ := newHandler(t, rec, nil)
	fix := delivery{event: "issue_comment", id: "a", body: variant(t, "issue_comment.created.json", commentBody("/agent fix it"))}
	label := delivery{event: "issues", id: "b", body: variant(t, "issues.labeled.json", installed)}
	for _, d := range []delivery{fix, label} {
		if w := serve(h, d); w.Code != 202 {
			t.Fatalf("%s: status %d", d.id, w.Code)
		}
	}
	if _, tasks := rec.snapshot(); len(tasks) != 2 || tasks[1].Kind != task.KindTrigger {
		t.Fatalf("tasks %+v", tasks)
	}
}
