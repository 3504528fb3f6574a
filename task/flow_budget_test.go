package task_test

import (
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// TestOutOfBudget: a task whose agent runs out of budget ends with its
// work so far in a draft pull request and a summary of what it did and
// what is left, in the pull request and the status comment: the agent's,
// if it finished on its last turn, else the bot's, from the plan and the
// steps, which claims nothing the agent did not record.
func TestOutOfBudget(t *testing.T) {
	plan := []pullwright.PlanItem{{Title: "fix the README", Status: "done"}, {Title: "fix main.go", Status: "in_progress"}, {Title: "add a test", Status: "pending"}}
	cases := []struct {
		name   string
		config string
		script []tasktest.Turn
		// want are parts of the pull request's body and the status
		// comment; not, of neither; reply is a part of the final reply.
		want, not []string
		title     string
		reply     string
	}{
		{
			name: "the agent did not finish",
			script: []tasktest.Turn{
				{Write: map[string]string{"README.md": "half done\n"}, Progress: task.Progress{Plan: plan, Steps: []string{"edited README.md", "read main.go"}}},
				{Err: task.Fatal("the agent used up its budget (turns: 40 of 40 used)", task.ErrBudget)},
			},
			want: []string{
				"**Out of budget**: the agent used up its budget (turns: 40 of 40 used) before the work was done.",
				"so it wrote no summary",
				"(1 of 3 items marked done by the agent)",
				"- [x] fix the README", "- [ ] fix main.go *(in progress)*", "- [ ] add a test",
				"- edited README.md", "- read main.go",
			},
			title: "Fix the typo",
			reply: "the pull request stays a draft: the agent used up its budget (turns: 40 of 40 used) before the work was done.",
		},
		{
			name: "the agent finished on its last turn",
			// The required command is not asked for: the pull request is
			// a draft whatever it says.
			config: "require_passing: make check\n",
			script: []tasktest.Turn{{
				Write:    map[string]string{"README.md": "half done\n"},
				Progress: task.Progress{Finished: true, Title: "Fix the README", Summary: "Fixed the README; main.go is left.", OutOfBudget: "turns: 40 of 40 used", Plan: plan},
			}},
			want:  []string{"**Out of budget**: the agent used up its budget (turns: 40 of 40 used) before the work was done.", "Fixed the README; main.go is left."},
			not:   []string{"so it wrote no summary"},
			title: "Fix the README",
			reply: "the pull request stays a draft: the agent used up its budget (turns: 40 of 40 used)",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			if c.config != "" {
				w.gh.SetFile("main", ".github/pullwright.yml", c.config)
			}
			w.agent.Script = c.script
			fix := w.fix("fix the typo")
			w.drain()
			done := w.want(fix.ID, task.Done)
			if len(w.gh.Opened) != 1 {
				t.Fatalf("pull requests opened: %+v", w.gh.Opened)
			}
			pr := w.gh.Opened[0]
			if !pr.Draft || !tasktest.Job(done).Draft {
				t.Errorf("the pull request is not a draft: %+v", pr)
			}
			if pr.Title != c.title {
				t.Errorf("title = %q, want %q", pr.Title, c.title)
			}
			if head := w.ws.Ref(cloneURL, tasktest.Job(done).Branch); head == "" || w.ws.Lookup(head).Files["README.md"] != "half done\n" {
				t.Errorf("the work so far is not on the branch (at %q)", head)
			}
			status := w.status(fix).Text()
			for _, want := range c.want {
				if !strings.Contains(pr.Body, want) {
					t.Errorf("the pull request's body lacks %q:\n%s", want, pr.Body)
				}
				if !strings.Contains(status, want) {
					t.Errorf("the status comment lacks %q:\n%s", want, status)
				}
			}
			for _, not := range c.not {
				if strings.Contains(pr.Body, not) || strings.Contains(status, not) {
					t.Errorf("%q is in the pull request or the status comment", not)
				}
			}
			if r := w.gh.Comment(1, "task-1-done").Text(); !strings.Contains(r, c.reply) {
				t.Errorf("reply = %q, want %q", r, c.reply)
			}
			if len(tasktest.Job(done).Runs) != 0 || tasktest.Job(done).Request != nil {
				t.Errorf("the task asked to run something: %+v", tasktest.Job(done).Runs)
			}
		})
	}
}

// TestOutOfBudgetOnAPullRequest: a fix whose commits go onto a pull
// request's branch opens no draft of its own when its agent runs out: it
// stops with its work on its branch, and the status comment gives the
// bot's summary.
func TestOutOfBudgetOnAPullRequest(t *testing.T) {
	w, _ := pullWorld(t, false, map[string]string{"feature.go": "package feature\n"})
	w.agent.Script = []tasktest.Turn{
		{Write: map[string]string{"feature.go": "package feature\n\n// half done\n"}, Progress: task.Progress{Plan: []pullwright.PlanItem{{Title: "document the feature", Status: "in_progress"}}}},
		{Err: task.Fatal("the agent used up its budget (tokens: 4,000,000 of 4,000,000 used)", task.ErrBudget)},
	}
	fix := w.fixPull("document it", nil)
	w.drain()
	got := w.want(fix.ID, task.Failed)
	if !strings.Contains(got.Error, "stopped: the agent used up its budget (tokens: 4,000,000 of 4,000,000 used)") {
		t.Errorf("error = %q", got.Error)
	}
	if len(w.gh.Opened) != 0 {
		t.Errorf("opened %+v", w.gh.Opened)
	}
	status := w.gh.Comment(7, "task-1-status").Text()
	for _, want := range []string{"**Out of budget**", "- [ ] document the feature *(in progress)*", "so it wrote no summary"} {
		if !strings.Contains(status, want) {
			t.Errorf("the status comment lacks %q:\n%s", want, status)
		}
	}
}
