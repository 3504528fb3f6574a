package task_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// TestFixFailures drives a fix that ends without a pull request, and checks
// the end the issue is told of.
func TestFixFailures(t *testing.T) {
	cases := []struct {
		name  string
		setup func(w *world)
		// state is where the fix ends; why is part of its error, or of its
		// reply when it ends done without working.
		state task.State
		why   string
		check func(t *testing.T, w *world, fix *task.Task)
	}{
		{
			name:  "a reader is refused",
			setup: func(w *world) { w.gh.Roles["alice"] = "read" },
			state: task.Done,
			why:   "@alice sorry:",
		},
		{
			name:  "a broken configuration is reported to a writer",
			setup: func(w *world) { w.gh.SetFile("main", ".github/pullwright.yml", "trigger: [\n") },
			state: task.Failed,
			why:   "`.github/pullwright.yml` on `main` cannot be used",
			check: func(t *testing.T, w *world, fix *task.Task) {
				// The failure reaches the issue through Finish.
				if st := w.status(fix); !strings.Contains(st.Text(), "cannot be used") {
					t.Errorf("status comment %q", st.Text())
				}
			},
		},
		{
			name: "a broken configuration is not shown to a reader",
			setup: func(w *world) {
				w.gh.SetFile("main", ".github/pullwright.yml", "trigger: [\n")
				w.gh.Roles["alice"] = "read"
			},
			state: task.Done,
			why:   "@alice sorry:",
		},
		{
			name: "the installation's rate",
			setup: func(w *world) {
				op := policy.DefaultOperator()
				op.Rate.ConcurrentTasks = 1
				w.flow.Operator = op
				w.gh.Issues[2] = pullwright.Issue{Title: "Another"}
				w.agent.Script = []tasktest.Turn{pending("make", map[string]string{"a.txt": "a\n"})}
				w.ask(&task.Task{Kind: task.KindFix, Issue: 2, Requester: person("bob")})
				w.drain()
			},
			state: task.Done,
			why:   "1 task is already running for this installation",
		},
		{
			name: "the agent changes nothing",
			setup: func(w *world) {
				w.agent.Script = []tasktest.Turn{finish("Nothing", nil)}
			},
			state: task.Failed,
			why:   "the agent finished without changing any file",
		},
		{
			name: "the agent changes a protected path",
			setup: func(w *world) {
				w.agent.Script = []tasktest.Turn{finish("CI", map[string]string{".github/workflows/ci.yml": "on: push\n"})}
			},
			state: task.Failed,
			why:   "the change touches paths this repository protects",
			check: func(t *testing.T, w *world, fix *task.Task) {
				if len(w.ws.Pushes) != 0 {
					t.Errorf("pushed %+v", w.ws.Pushes)
				}
			},
		},
		{
			name: "the agent spends its budget before changing anything",
			setup: func(w *world) {
				// The agent checks its budget before a model call: the turn
				// that finds it spent writes nothing.
				w.agent.Script = []tasktest.Turn{
					{Progress: task.Progress{Plan: []pullwright.PlanItem{{Title: "find the typo", Status: "in_progress"}}, Steps: []string{"read README.md"}}},
					{Err: task.Fatal("the agent used up its budget (tokens)", task.ErrBudget)},
				}
			},
			state: task.Failed,
			why:   "the agent used up its budget (tokens) before it changed any file, so there is nothing to propose",
			check: func(t *testing.T, w *world, fix *task.Task) {
				st := w.status(fix).Text()
				for _, want := range []string{"**Out of budget**: the agent used up its budget (tokens)", "- [ ] find the typo *(in progress)*", "- read README.md"} {
					if !strings.Contains(st, want) {
						t.Errorf("the status comment lacks %q:\n%s", want, st)
					}
				}
				if len(w.gh.Opened) != 0 {
					t.Errorf("opened %+v", w.gh.Opened)
				}
			},
		},
		{
			name: "the agent asks to run on its last turn",
			setup: func(w *world) {
				turn := pending("make", nil)
				turn.Progress.Turns = 40
				w.agent.Script = []tasktest.Turn{turn}
			},
			state: task.Failed,
			why:   "with a request to run `make` that it could not have used. No file had been changed yet.",
		},
		{
			name: "the wall-time budget",
			setup: func(w *world) {
				w.agent.Script = []tasktest.Turn{{During: func() { w.clock.Advance(3 * time.Hour) }, Progress: task.Progress{Plan: []pullwright.PlanItem{{Title: "think"}}}}}
			},
			state: task.Failed,
			why:   "the task used its wall-time budget",
		},
		{
			name: "the wall-time budget after some work",
			setup: func(w *world) {
				w.agent.Script = []tasktest.Turn{{Write: map[string]string{"README.md": "half fixed\n"}, During: func() { w.clock.Advance(3 * time.Hour) },
					Progress: task.Progress{Plan: []pullwright.PlanItem{{Title: "fix the typo", Status: "in_progress"}}, Steps: []string{"edited README.md"}}}}
			},
			state: task.Done,
			why:   "",
			check: func(t *testing.T, w *world, fix *task.Task) {
				if len(w.gh.Opened) != 1 || !w.gh.Opened[0].Draft {
					t.Fatalf("opened %+v, want one draft", w.gh.Opened)
				}
				body := w.gh.Opened[0].Body
				for _, want := range []string{"**Out of budget**: the task used its wall-time budget", "- [ ] fix the typo *(in progress)*", "- edited README.md"} {
					if !strings.Contains(body, want) {
						t.Errorf("the draft's body lacks %q:\n%s", want, body)
					}
				}
			},
		},
		{
			name:  "the model fails",
			setup: func(w *world) { w.agent.StartErr = errors.New("bad request") },
			state: task.Failed,
			why:   "starting the agent failed",
		},
		{
			name: "the clone keeps failing",
			setup: func(w *world) {
				for range 3 {
					w.ws.FailNext("Clone", errors.New("connection reset"))
				}
			},
			state: task.Failed,
			why:   "cloning " + cloneURL + " failed",
			check: func(t *testing.T, w *world, fix *task.Task) {
				if st := w.status(fix); !strings.Contains(st.Text(), "cloning") {
					t.Errorf("status comment %q", st.Text())
				}
			},
		},
		{
			name: "the branch name is taken twice",
			setup: func(w *world) {
				w.ws.Commit(cloneURL, "agent/1-fix-the-typo", nil, "a person's")
				w.ws.Commit(cloneURL, "agent/1-fix-the-typo-1", nil, "a person's")
			},
			state: task.Failed,
			why:   "already exist",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			c.setup(w)
			fix := w.fix("fix the typo")
			w.drain()
			got := w.want(fix.ID, c.state)
			text := got.Error
			if c.state == task.Done && c.why != "" {
				text = w.reply(fix)
			}
			if !strings.Contains(text, c.why) {
				t.Errorf("the task says %q, want %q", text, c.why)
			}
			if c.check != nil {
				c.check(t, w, got)
			}
		})
	}
}

func TestAFailedStepIsRetried(t *testing.T) {
	w := newWorld(t)
	w.gh.FailNext("Issue", errors.New("502 Bad Gateway"))
	w.gh.FailNext("UpsertComment", errors.New("502 Bad Gateway"))
	w.agent.Script = []tasktest.Turn{finish("Fix", map[string]string{"README.md": "fixed\n"})}
	fix := w.fix("")
	w.drain()
	w.want(fix.ID, task.Done)
	if w.gh.Asked["Issue"] != 2 {
		t.Errorf("the issue was read %d times", w.gh.Asked["Issue"])
	}
	if st := w.status(fix); st.Edits == 0 || len(w.gh.Opened) != 1 {
		t.Errorf("status %+v, pull requests %d", st, len(w.gh.Opened))
	}
}

// A task picked up where its workspace is gone rebuilds it from the store.
func TestALostWorkspaceIsRebuilt(t *testing.T) {
	w, fix := parked(t, "")
	w.ws.Forget(tasktest.Job(fix).Workdir)
	w.answer(task.KindApprove, "maint", 12, "")
	w.drain()
	done := w.want(fix.ID, task.Done)
	if len(w.ws.Clones) != 2 || !strings.HasSuffix(w.ws.Clones[1], " "+tasktest.Job(fix).Branch) {
		t.Errorf("clones %v", w.ws.Clones)
	}
	if got := w.runner.Files[0]["README.md"]; got != "# widget\n\nNo typo.\n" {
		t.Errorf("the run had README.md %q", got)
	}
	if tasktest.Job(done).PRNumber == 0 {
		t.Error("no pull request")
	}
}

func TestAPersonPushesWhileTheAgentWorks(t *testing.T) {
	cases := []struct {
		name string
		// theirs is what the person pushes to the task's branch.
		theirs map[string]string
		state  task.State
		why    string
	}{
		{"other files: the change moves on top", map[string]string{"docs.md": "theirs\n"}, task.Done, ""},
		{"the same file: the change is kept aside", map[string]string{"main.go": "theirs\n"}, task.Failed, "its change is on branch `agent/1-fix-the-typo-pullwright-1`"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, fix := parked(t, "")
			w.agent.Script = []tasktest.Turn{{
				During:   func() { w.ws.Commit(cloneURL, tasktest.Job(fix).Branch, c.theirs, "a person's push") },
				Write:    map[string]string{"main.go": "package main // ours\n"},
				Progress: task.Progress{Finished: true, Title: "Fix", Summary: "fixed"},
			}}
			w.answer(task.KindApprove, "maint", 12, "")
			w.drain()
			got := w.want(fix.ID, c.state)
			if !strings.Contains(got.Error, c.why) {
				t.Fatalf("error %q, want %q", got.Error, c.why)
			}
			head := w.ws.Ref(cloneURL, tasktest.Job(fix).Branch)
			if c.state == task.Done {
				files := w.ws.Lookup(head).Files
				if files["docs.md"] != "theirs\n" || files["main.go"] != "package main // ours\n" || len(tasktest.Job(got).Rebased) != 1 {
					t.Errorf("branch files %v, rebased %v", files, tasktest.Job(got).Rebased)
				}
				return
			}
			if w.ws.Lookup(head).Files["main.go"] != "theirs\n" {
				t.Error("the person's push was overwritten")
			}
			aside := w.ws.Ref(cloneURL, fmt.Sprintf("%s-pullwright-%d", tasktest.Job(fix).Branch, fix.ID))
			if aside == "" || w.ws.Lookup(aside).Files["main.go"] != "package main // ours\n" {
				t.Errorf("the kept-aside branch is at %q", aside)
			}
		})
	}
}
