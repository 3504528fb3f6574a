package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/task"
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
	r := e.waitState(1, task.AwaitingApproval).Request
	e.comment("a1", 1, owner, "/approve "+r.ID)
	e.waitState(1, task.Running)

	// While the sandbox sleeps, deliveries are still taken and answered.
	if code := e.comment("s1", 1, owner, "/agent status"); code != http.StatusAccepted {
		t.Fatalf("a delivery during the run answered %d", code)
	}
	e.waitComment(1, "▶️ Running an approved command")
	if st := e.waitState(1, task.Running); st.Request.Result != nil {
		t.Fatalf("the run finished before the status reply; the test proves nothing (result %+v)", st.Request.Result)
	}

	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	res := done.Request.Result
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
