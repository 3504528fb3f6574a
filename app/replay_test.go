package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/ghapp"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/gitserver"
	"github.com/pullwright/pullwright/internal/pgtest"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// TestEveryStepCanBeReplayed runs a fix task step by step with the real
// flow, and after every step throws its outcome away, as if the process died
// before saving it, and runs the step again from what the store held. In
// the "other machine" variant the workspace is also wiped before each replay
// and the default branch moves on. Either way the task must end with one
// status comment, one link, one pull request and one commit.
//
// With a run request in the middle, the request is approved when the task
// waits, and everything about it must also exist once: its comments, its
// check runs and the draft pull request that becomes ready.
//
// It runs on every database the bot can use: a replayed step reads the
// store (HoldBranch, Usage), and each store must answer it the same way.
func TestEveryStepCanBeReplayed(t *testing.T) {
	t.Parallel()
	for _, db := range databases {
		t.Run(db, func(t *testing.T) { everyStepCanBeReplayed(t, db) })
	}
}

func everyStepCanBeReplayed(t *testing.T, db string) {
	for _, tc := range []struct{ otherMachine, withRun bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		otherMachine, withRun := tc.otherMachine, tc.withRun
		t.Run(fmt.Sprintf("other machine %v, run %v", otherMachine, withRun), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const owner, name = "acme", "widgets"
			gh := fakegithub.New(t)
			gh.AddInstallation(1, owner+"/"+name)
			gh.AddIssue(owner, name, fakegithub.Issue{Number: 1, Title: "Typo in README", Body: "comitt"})
			gh.SetPermission(owner, name, "alice", "write")
			trigger := gh.AddComment(owner, name, 1, "alice", "/agent fix the typo")
			git := gitserver.New(t, gitserver.Options{Auth: func(_, pass string) bool { return gh.TokenCanAccess(pass, owner+"/"+name) }})
			git.CreateRepo(t, owner, name, "main", map[string]string{"README.md": "Remember to comitt.\n", "other.txt": "x\n"})

			// The model's answer depends only on how far the conversation
			// got, so a replayed turn gets the same answer again.
			answers := []fakellm.Step{
				{ToolCalls: []fakellm.ToolCall{{Name: "edit_file", Arguments: `{"path":"README.md","old_text":"comitt","new_text":"commit"}`}}},
				{ToolCalls: []fakellm.ToolCall{{Name: "write_file", Arguments: `{"path":"docs/NOTE.md","content":"spelling checked\n"}`}}},
				{ToolCalls: []fakellm.ToolCall{{Name: "finish", Arguments: `{"title":"Fix README typo","summary":"comitt → commit"}`}}},
			}
			if withRun {
				run := fakellm.Step{ToolCalls: []fakellm.ToolCall{{Name: "run", Arguments: `{"command":"grep -c commit README.md","reason":"check"}`}}}
				answers = append(answers[:2], run, answers[2])
			}
			llm := fakellm.NewByTurn(t, answers...)

			dir := t.TempDir()
			flow := replayFlow(ctx, t, openStore(ctx, t, db), gh, llm, dir)

			tk := &task.Task{
				ID: 1, Kind: task.KindFix, State: task.Queued, Issue: 1, CommentID: trigger,
				Repo:         pullwright.Repo{InstallationID: 1, Owner: owner, Name: name, CloneURL: git.CloneURL(owner, name), DefaultBranch: "main"},
				Requester:    task.Person{Login: "alice", ID: 7},
				Instructions: "fix the typo",
			}
			var moves []string
			for steps := 0; !tk.State.Terminal(); steps++ {
				if steps > 30 {
					t.Fatalf("no end after %d steps; at %s", steps, tk.State)
				}
				if tk.State == task.AwaitingApproval && tasktest.Job(tk).Request.Answer == nil {
					// A maintainer approves; the worker that claims the task
					// finds the answer on it.
					tasktest.Job(tk).Request.Answer = &task.Answer{Verdict: task.Approved, By: "alice", At: time.Now()}
				}
				saved := snapshot(t, tk)
				tk.Claim = 2 * steps // the first try, in one claim of the task
				if err := flow.Step(ctx, tk); err != nil {
					t.Fatalf("step from %s: %v", saved.State, err)
				}
				// The process dies here, before the store learns of the step.
				if otherMachine {
					if err := os.RemoveAll(filepath.Join(dir, "1")); err != nil {
						t.Fatal(err)
					}
					git.Push(t, owner, name, "main", map[string]string{"other.txt": fmt.Sprintf("moved %d\n", steps)}, "Someone else's work")
				}
				replay := snapshot(t, saved)
				replay.Claim = 2*steps + 1 // the replay, in the next claim
				if err := flow.Step(ctx, replay); err != nil {
					t.Fatalf("replayed step from %s: %v", saved.State, err)
				}
				moves = append(moves, string(saved.State)+"→"+string(replay.State))
				tk = replay
			}
			if tk.State != task.Done {
				t.Fatalf("task ended %s: %s (moves %v)", tk.State, tk.Error, moves)
			}

			prs := gh.PullRequests(owner, name)
			if len(prs) != 1 || !strings.Contains(prs[0].Body, "Fixes #1") || prs[0].Draft {
				t.Fatalf("pull requests = %+v", prs)
			}
			var status, links, requests int
			for _, c := range gh.Comments(owner, name, 1) {
				switch {
				case c.Author != gh.BotLogin():
				case strings.Contains(c.Body, "pullwright:task-1-request-1-1 "):
					requests++
				case strings.Contains(c.Body, "pullwright:task-1-status"):
					status++
					if !strings.Contains(c.Body, "✅ Done") {
						t.Errorf("status comment not final:\n%s", c.Body)
					}
				case strings.Contains(c.Body, "pullwright:task-1-done"):
					links++
				default:
					t.Errorf("unexpected bot comment %q", c.Body)
				}
			}
			if status != 1 || links != 1 {
				t.Errorf("%d status and %d link comments, want 1 and 1", status, links)
			}
			subject := "Fix README typo"
			if withRun {
				subject = "WIP: checkpoint before request 1-1"
				if requests != 1 {
					t.Errorf("%d request comments on the issue, want 1", requests)
				}
				if n := len(gh.Comments(owner, name, prs[0].Number)); n != 1 {
					t.Errorf("%d comments on the pull request, want the request only", n)
				}
				checks := map[string]int{}
				for _, cr := range gh.CheckRuns(owner, name) {
					checks[cr.Name+" "+cr.Conclusion]++
				}
				// Every step is replayed here, the run too: a run whose
				// outcome was lost is reported as interrupted, never run
				// again on the same approval.
				if checks[task.ApprovalCheck+" success"] != 1 || checks[task.RunCheck+" failure"] != 1 || len(checks) != 2 {
					t.Errorf("check runs = %v, want one approval (success) and one run (interrupted)", checks)
				}
			}
			commits := git.Commits(t, owner, name, tasktest.Job(tk).Branch)
			if commits[0].Subject != subject || commits[1].SHA != tasktest.Job(tk).BaseSHA {
				t.Fatalf("branch history: %+v, want one commit (%q) on the base %s", commits[:2], subject, tasktest.Job(tk).BaseSHA)
			}
			// Files the agent did not touch are as the task's base had them,
			// not as the default branch has them now.
			otherAtBase, err := git.ReadFile(t, owner, name, tasktest.Job(tk).BaseSHA, "other.txt")
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range map[string]string{"README.md": "Remember to commit.\n", "docs/NOTE.md": "spelling checked\n", "other.txt": otherAtBase} {
				if got, err := git.ReadFile(t, owner, name, tasktest.Job(tk).Branch, path); err != nil || got != want {
					t.Errorf("%s on the branch = %q, %v; want %q", path, got, err, want)
				}
			}
		})
	}
}

// TestEveryStepOfAPullRequestTaskCanBeReplayed is the same for a fix asked
// on a pull request without instructions: the agent addresses its two
// review threads and the task pushes onto the pull request's branch and
// answers each thread. With "every step", someone pushes to that branch
// between every step and its replay, also between a push the bot made and
// the record of it; with "on the bot's push", once, right after the bot's
// first push (made for a request to run a command), which it did not live
// to record. Either way the bot's commit and every one of theirs must end on
// the branch, with nothing forced and nothing posted twice, and a request
// must be bound to what the branch holds. It too runs on every database.
func TestEveryStepOfAPullRequestTaskCanBeReplayed(t *testing.T) {
	t.Parallel()
	for _, db := range databases {
		t.Run(db, func(t *testing.T) { everyStepOfAPullRequestTaskCanBeReplayed(t, db) })
	}
}

func everyStepOfAPullRequestTaskCanBeReplayed(t *testing.T, db string) {
	for _, tc := range []struct {
		name                        string
		everyStep, onBotPush, isRun bool
		// commits is how many commits each push of a person's has.
		commits int
	}{
		{name: "alone"},
		{name: "a person pushes every step", everyStep: true, commits: 1},
		{name: "a person pushes on the bot's push", onBotPush: true, isRun: true, commits: 1},
		// More than the first deepening of the shallow clone brings, so
		// the bot's own commit is found only in deeper history.
		{name: "a person pushes many commits on the bot's push", onBotPush: true, isRun: true, commits: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const owner, name, branch, pr = "acme", "widgets", "docs", 2
			gh := fakegithub.New(t)
			gh.AddInstallation(1, owner+"/"+name)
			gh.SetPermission(owner, name, "alice", "write")
			git := gitserver.New(t, gitserver.Options{Auth: func(_, pass string) bool { return gh.TokenCanAccess(pass, owner+"/"+name) }})
			git.CreateRepo(t, owner, name, "main", map[string]string{"README.md": "Hello.\n"})
			head := git.Push(t, owner, name, branch, map[string]string{"docs.md": "How to comitt.\n"}, "Add docs")
			gh.Refs, gh.Diffs, gh.CloneURL = git.Ref, git.Diff, git.CloneURL
			gh.AddPullRequest(owner, name, fakegithub.PullRequestSeed{Number: pr, Title: "Docs", Author: "bob", HeadRef: branch, BaseRef: "main"})
			var roots []int64
			for _, body := range []string{"Typo: comitt.", "Add a title."} {
				roots = append(roots, gh.AddReviewComment(owner, name, pr, fakegithub.ReviewComment{
					Author: "alice", Body: body, Path: "docs.md", Line: 1, DiffHunk: "@@ -0,0 +1 @@\n+How to comitt.", CommitID: head,
				}))
			}
			trigger := gh.AddComment(owner, name, pr, "alice", "/agent fix")

			answers := []fakellm.Step{
				{ToolCalls: []fakellm.ToolCall{{Name: "edit_file", Arguments: `{"path":"docs.md","old_text":"comitt","new_text":"commit"}`}}},
				{ToolCalls: []fakellm.ToolCall{{Name: "edit_file", Arguments: `{"path":"docs.md","old_text":"How","new_text":"# Docs\n\nHow"}`}}},
				{ToolCalls: []fakellm.ToolCall{{Name: "finish", Arguments: `{"title":"Address the review","summary":"Both done.","replies":[{"thread":1,"reply":"Fixed the typo."},{"thread":2,"reply":"Added a title."}]}`}}},
			}
			if tc.isRun {
				run := fakellm.Step{ToolCalls: []fakellm.ToolCall{{Name: "run", Arguments: `{"command":"cat docs.md","reason":"check"}`}}}
				answers = append(answers[:1], append([]fakellm.Step{run}, answers[1:]...)...)
			}
			llm := fakellm.NewByTurn(t, answers...)
			flow := replayFlow(ctx, t, openStore(ctx, t, db), gh, llm, t.TempDir())
			tk := &task.Task{
				ID: 1, Kind: task.KindFix, State: task.Queued, Issue: pr, IsPR: true, CommentID: trigger,
				Repo:      pullwright.Repo{InstallationID: 1, Owner: owner, Name: name, CloneURL: git.CloneURL(owner, name), DefaultBranch: "main"},
				Requester: task.Person{Login: "alice", ID: 7},
			}
			var theirs []string
			for steps := 0; !tk.State.Terminal(); steps++ {
				if steps > 40 {
					t.Fatalf("no end after %d steps; at %s", steps, tk.State)
				}
				if tk.State == task.AwaitingApproval && tasktest.Job(tk).Request.Answer == nil {
					if tip, _ := git.RevParse(t, owner, name, branch); tc.onBotPush && tasktest.Job(tk).Request.SHA != tip {
						t.Fatalf("the request is bound to %s, the branch holds %s", tasktest.Job(tk).Request.SHA, tip)
					}
					tasktest.Job(tk).Request.Answer = &task.Answer{Verdict: task.Approved, By: "alice", At: time.Now()}
				}
				saved := snapshot(t, tk)
				tk.Claim = 2 * steps
				if err := flow.Step(ctx, tk); err != nil {
					t.Fatalf("step from %s: %v", saved.State, err)
				}
				// The process dies before the store learns of the step,
				// and someone pushes to the pull request's branch.
				if tc.everyStep || (tc.onBotPush && tasktest.Job(saved).PushedSHA == "" && tasktest.Job(tk).PushedSHA != "" && len(theirs) == 0) {
					for i := range tc.commits {
						theirs = append(theirs, git.Push(t, owner, name, branch, map[string]string{fmt.Sprintf("person-%d-%d.txt", steps, i): "mine\n"}, "A person's work"))
					}
				}
				replay := snapshot(t, saved)
				replay.Claim = 2*steps + 1
				if err := flow.Step(ctx, replay); err != nil {
					t.Fatalf("replayed step from %s: %v", saved.State, err)
				}
				tk = replay
			}
			if tk.State != task.Done {
				t.Fatalf("task ended %s: %s", tk.State, tk.Error)
			}
			if tc.onBotPush && len(theirs) != tc.commits {
				t.Fatalf("the person pushed %d commits, want %d at once after the bot's push", len(theirs), tc.commits)
			}

			// The branch holds the agent's change and every person's
			// commit; no pull request was opened.
			if got, _ := git.ReadFile(t, owner, name, branch, "docs.md"); got != "# Docs\n\nHow to commit.\n" {
				t.Errorf("docs.md = %q", got)
			}
			tip, _ := git.RevParse(t, owner, name, branch)
			for _, sha := range append(theirs, head) {
				if _, err := git.Git(owner, name, "merge-base", "--is-ancestor", sha, tip); err != nil {
					t.Errorf("commit %s is not on the branch any more: %v", sha, err)
				}
			}
			if len(tasktest.Job(tk).Pull.Commits) == 0 {
				t.Fatal("no commit recorded as pushed")
			}
			for _, c := range tasktest.Job(tk).Pull.Commits {
				if _, err := git.Git(owner, name, "merge-base", "--is-ancestor", c, tip); err != nil {
					t.Errorf("the bot's commit %s is not on the branch: %v", c, err)
				}
			}
			if prs := gh.PullRequests(owner, name); len(prs) != 1 {
				t.Errorf("pull requests = %+v", prs)
			}
			// One reply per thread, one status comment, one report.
			replies := map[int64]int{}
			for _, c := range gh.ReviewComments(owner, name, pr) {
				if c.Author == gh.BotLogin() {
					replies[c.InReplyTo]++
				}
			}
			if len(replies) != 2 || replies[roots[0]] != 1 || replies[roots[1]] != 1 {
				t.Errorf("bot replies by thread = %v, want one under each of %v", replies, roots)
			}
			var status, done int
			for _, c := range gh.Comments(owner, name, pr) {
				switch {
				case c.Author != gh.BotLogin():
				case strings.Contains(c.Body, "pullwright:task-1-status"):
					status++
				case strings.Contains(c.Body, "pullwright:task-1-done"):
					done++
				case tc.isRun && strings.Contains(c.Body, "pullwright:task-1-request-1-1 "):
					if !strings.Contains(c.Body, "- `docs.md` (+1 −1)\n\n</details>") {
						t.Errorf("the request lists other files than the agent's:\n%s", c.Body)
					}
				default:
					t.Errorf("unexpected bot comment %q", c.Body)
				}
			}
			if status != 1 || done != 1 {
				t.Errorf("%d status and %d report comments, want 1 and 1", status, done)
			}
		})
	}
}

// databases names the stores the bot can use (app.OpenStore's schemes),
// for tests that must hold on each of them.
var databases = []string{"sqlite", "postgres"}

// openStore opens an empty store of the kind db names, through OpenStore as
// the bot does, closed when the test ends. "postgres" is a database of the
// test's own on the server internal/pgtest names: skipped without one,
// failed with CI=true.
func openStore(ctx context.Context, t *testing.T, db string) task.Store {
	t.Helper()
	var url string
	switch db {
	case "sqlite":
		url = "sqlite://" + filepath.Join(t.TempDir(), "db")
	case "postgres":
		url = pgtest.URL(t)
	default:
		t.Fatalf("no store %q", db)
	}
	store, err := OpenStore(ctx, url)
	if err != nil {
		t.Fatalf("open the %s store: %v", db, err)
	}
	// Registered after pgtest's drop of the database, so it runs before it.
	t.Cleanup(func() { store.Close() })
	return store
}

// replayFlow is the real flow of a fix task, on the fake GitHub and the
// scripted model, with store and the local runner, working in dir.
func replayFlow(ctx context.Context, t *testing.T, store task.Store, gh *fakegithub.Server, llm *fakellm.Server, dir string) *task.Flow {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	app, err := ghapp.New(ghapp.Config{AppID: gh.AppID, PrivateKey: gh.PrivateKeyPEM(), BaseURL: gh.URL, Logger: log, MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	llmAgent, err := agent.New(agent.Config{BaseURL: llm.URL, APIKey: "k", Model: "m", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return &task.Flow{
		Store: store, GitHub: app, Agent: model{llmAgent}, Workspaces: workspaces{}, Dir: dir,
		BranchName: repo.BranchName, Command: "/agent", Logger: log, GitTimeout: 30 * time.Second,
		Runner: runner.NewLocal(t.TempDir(), log),
	}
}

// snapshot is the task as the store would give it back: its JSON, and the
// answer to its request, which the store keeps apart from the task's data.
func snapshot(t *testing.T, in *task.Task) *task.Task {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := new(task.Task)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	if tasktest.Job(in).Request != nil && tasktest.Job(in).Request.Answer != nil {
		a := *tasktest.Job(in).Request.Answer
		tasktest.Job(out).Request.Answer = &a
	}
	return out
}
