package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// With the default runner an approved command runs in the Docker sandbox,
// and the bot goes on answering while it runs: the run holds one worker,
// not the webhook handler or the other workers.
func TestApprovedCommandRunsInDockerWhileTheBotServes(t *testing.T) {
	image := sandboxtest.Image(t)
	t.Setenv("PULLWRIGHT_CANARY", "must-not-reach-the-sandbox")
	e := newEnv(t, newRunLLM(t, "sleep 2; env; grep -c commit README.md"), func(c *app.Config) {
		c.Runner, c.SandboxImage = "docker", image
	})
	e.comment("d1", 1, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	e.comment("a1", 1, owner, "/approve "+r.ID)
	e.waitState(1, task.Running)

	// While the sandbox sleeps, deliveries are still taken and answered.
	if code := e.comment("s1", 1, owner, "/agent status"); code != http.StatusAccepted {
		t.Fatalf("a delivery during the run answered %d", code)
	}
	e.waitComment(1, "▶️ Running an approved command")
	if st := e.waitState(1, task.Running); tasktest.Job(st).Request.Result != nil {
		t.Fatalf("the run finished before the status reply; the test proves nothing (result %+v)", tasktest.Job(st).Request.Result)
	}

	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	res := tasktest.Job(done).Request.Result
	if res == nil || res.ExitCode != 0 || !strings.Contains(res.Output, "HOME=/tmp") || !strings.HasSuffix(strings.TrimSpace(res.Output), "1") {
		t.Fatalf("run result = %+v", res)
	}
	for _, leak := range []string{"PULLWRIGHT_CANARY", "sk-test", "GITHUB_", "OPENAI_"} {
		if strings.Contains(res.Output, leak) {
			t.Fatalf("the sandbox's environment shows %s:\n%s", leak, res.Output)
		}
	}
	if runs := checkRunsNamed(e.gh, task.RunCheck); len(runs) != 1 || runs[0].Conclusion != "success" {
		t.Fatalf("run check runs = %+v", runs)
	}
}

// The attack of the review: the agent (or the issue steering it) hides
// files from git behind a harmless edit, and the maintainer approves a
// test run of a commit that only fixes a typo. The hidden files must not
// run, with either runner: a run has the approved commit's files only, and
// the agent is told what was left out.
func TestFilesGitIgnoresDoNotRun(t *testing.T) {
	t.Parallel()
	for _, runnerName := range []string{"local", "docker"} {
		t.Run(runnerName, func(t *testing.T) {
			image := ""
			if runnerName == "docker" {
				image = sandboxtest.Image(t)
			}
			llm := fakellm.NewByTurn(t,
				fakellm.Step{ToolCalls: []fakellm.ToolCall{call("write_file", map[string]any{"path": ".gitignore", "content": "*\n"})}},
				fakellm.Step{ToolCalls: []fakellm.ToolCall{call("write_file", map[string]any{"path": "go.mod", "content": "module hidden\n\ngo 1.21\n"})}},
				fakellm.Step{ToolCalls: []fakellm.ToolCall{call("write_file", map[string]any{"path": "zz_test.go",
					"content": "package main\n\nimport \"testing\"\n\nfunc TestHidden(t *testing.T) { t.Fatal(\"HIDDEN CODE RAN\") }\n"})}},
				fakellm.Step{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
				fakellm.Step{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": "go test ./...", "reason": "run the tests"})}},
				fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit", "summary": "Fixed."})}},
			)
			e := newEnv(t, llm, func(c *app.Config) { c.Runner, c.SandboxImage = runnerName, image })
			e.comment("d1", 1, owner, "/agent fix the typo")
			r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
			shown := e.waitComment(1, "asks to run a command").Body
			if !strings.Contains(shown, "`README.md`") || strings.Contains(shown, "zz_test.go") || strings.Contains(shown, "go.mod") {
				t.Fatalf("the request comment does not list exactly the typo fix:\n%s", shown)
			}
			e.comment("a1", 1, owner, "/approve "+r.ID)
			done := e.waitTask(1)
			res := tasktest.Job(done).Request.Result
			if res == nil {
				t.Fatalf("no run result: %s", done.Error)
			}
			if strings.Contains(res.Output, "HIDDEN CODE RAN") || res.ExitCode == 0 {
				t.Fatalf("the run had the files git ignores (exit %d):\n%s", res.ExitCode, res.Output)
			}
			if !strings.Contains(res.Output, "not part of this run, because git ignores them: .gitignore, go.mod, zz_test.go") {
				t.Errorf("the agent is not told what the run left out:\n%s", res.Output)
			}
		})
	}
}

// A repository's sandbox.disk reaches the sandbox: an approved command that
// writes past it fails inside the sandbox with "no space left on device",
// and the agent sees that as the command's result, with the limits named.
func TestWritingPastTheDiskLimitIsAResult(t *testing.T) {
	t.Parallel()
	image := sandboxtest.Image(t)
	e := newEnv(t, newRunLLM(t, "dd if=/dev/zero of=big bs=1M count=64; echo exit=$?"), func(c *app.Config) {
		c.Runner, c.SandboxImage = "docker", image
	})
	e.configure("sandbox:\n  disk: 16MiB\n")
	e.comment("d1", 1, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	e.comment("a1", 1, owner, "/approve "+r.ID)
	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	res := tasktest.Job(done).Request.Result
	if res == nil || !strings.Contains(strings.ToLower(res.Output), "no space left on device") ||
		!strings.Contains(res.Output, "[out of space: /workspace holds at most 16 MiB") {
		t.Fatalf("run result = %+v", res)
	}
	if got := lastToolResult(e.llm); !strings.Contains(got, "[out of space:") {
		t.Fatalf("the model got %q", got)
	}
}
