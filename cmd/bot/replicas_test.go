package main_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/pgtest"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// Three bot serve replicas on one Postgres, deliveries spread across them.
// One task meets three kill -9s: of the replica working on it while a
// model call is in flight, of a replica while it waits for approval, and of
// the replica running the approved command. It goes on on another replica
// each time, and GitHub sees everything exactly once. Deliveries sent
// again to another replica create nothing.
func TestReplicasOnPostgresLoseNothing(t *testing.T) {
	const command = "sleep 3; grep -c commit README.md"
	steps := []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		{ToolCalls: []fakellm.ToolCall{call("write_file", map[string]any{"path": "NOTES.md", "content": "Spelling is checked by hand.\n"})}},
		{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": command, "reason": "check that the typo is gone"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit", "summary": "Fixed and checked."})}},
	}
	const killAt = 1 // the second model call is in flight at the first kill
	var (
		mu    sync.Mutex
		turns []int
	)
	inFlight, killed := make(chan struct{}), make(chan struct{})
	llm := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		n := fakellm.Turn(req)
		mu.Lock()
		turns = append(turns, n)
		first := n == killAt && slices.Index(turns, killAt) == len(turns)-1
		mu.Unlock()
		if first {
			close(inFlight)
			<-killed
			return fakellm.Step{Status: http.StatusServiceUnavailable}
		}
		return steps[min(n, len(steps)-1)]
	})
	h := botproc.New(t, llm, botproc.Options{DatabaseURL: pgtest.URL(t), Env: []string{"BOT_LEASE=3s"}})
	h.GitHub.SetPermission(botproc.Owner, botproc.Repo, "maintainer", "write")
	replicas := []*botproc.Bot{h.Bot, h.AddReplica(), h.AddReplica()}
	holder := func(id int64) *botproc.Bot {
		t.Helper()
		owner := h.LeaseOwner(id)
		for _, b := range replicas {
			if b.Running() && b.Holds(owner) {
				return b
			}
		}
		t.Fatalf("no live replica holds task %d (lease owner %q)", id, owner)
		return nil
	}
	other := func(not *botproc.Bot) *botproc.Bot {
		for _, b := range replicas {
			if b != not && b.Running() {
				return b
			}
		}
		t.Fatal("no other live replica")
		return nil
	}

	// 1. Killed while working: the model's second call is in flight.
	fix := h.CommentPayload(1, botproc.Owner, "/agent fix the typo")
	if code := h.DeliverTo(replicas[1], "fix-1", "issue_comment", fix); code != http.StatusAccepted {
		t.Fatalf("fix answered %d", code)
	}
	select {
	case <-inFlight:
	case <-time.After(60 * time.Second):
		t.Fatalf("the model never got its second call")
	}
	id := h.Latest(1).ID
	first := holder(id)
	first.Kill()
	close(killed)
	if code := h.DeliverTo(other(first), "fix-1", "issue_comment", fix); code != http.StatusOK {
		t.Errorf("the fix sent again to another replica answered %d, want 200", code)
	}

	// 2. Killed while it waits: the task is a row, taken up by no one.
	waiting := h.WaitState(1, task.AwaitingApproval)
	r := tasktest.Job(waiting).Request
	if r == nil || r.Command != command {
		t.Fatalf("request = %+v", r)
	}
	first.Restart()
	second := other(first)
	second.Kill()
	approve := h.CommentPayload(1, "maintainer", "/approve")
	if code := h.DeliverTo(first, "approve-1", "issue_comment", approve); code != http.StatusAccepted {
		t.Fatalf("/approve answered %d", code)
	}

	// 3. Killed while the approved command runs.
	var running *task.Task
	h.Eventually(60*time.Second, func() bool {
		running = h.Latest(1)
		return running.State == task.Running && h.LeaseOwner(running.ID) != ""
	}, func() string { return "the approved command never started: " + botproc.Describe(running) })
	time.Sleep(time.Second) // inside its three seconds
	third := holder(id)
	third.Kill()
	if code := h.DeliverTo(other(third), "approve-1", "issue_comment", approve); code != http.StatusOK {
		t.Errorf("/approve sent again to another replica answered %d, want 200", code)
	}
	second.Restart()

	done := h.WaitState(1, task.Done)
	if n := h.Crashes(done.ID); n != 2 {
		t.Errorf("crashes = %d, want 2 (the kill while working, the kill while running)", n)
	}
	mu.Lock()
	got := slices.Clone(turns)
	mu.Unlock()
	if want := []int{0, killAt, killAt, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("model calls by turn = %v, want %v", got, want)
	}
	// An approval covers one run: the one the kill cut short is reported
	// as such, on its check run and to the model, and not run again.
	runs := h.CheckRuns(task.RunCheck)
	if len(runs) != 1 || runs[0].Conclusion != "failure" || runs[0].HeadSHA != r.SHA || !strings.Contains(runs[0].Text, "interrupted") {
		t.Errorf("run check runs = %+v, want one, interrupted, on %s", runs, r.SHA)
	}
	var result string
	for _, m := range llm.Requests()[len(got)-1].Messages {
		if m.Role == openai.ChatMessageRoleTool && strings.Contains(m.Content, "interrupted") {
			result = m.Content
		}
	}
	if result == "" {
		t.Errorf("the model was not told that its run was interrupted")
	}
	ac := h.CheckRuns(task.ApprovalCheck)
	if len(ac) != 1 || ac[0].Conclusion != "success" || !strings.Contains(ac[0].Title, "maintainer") {
		t.Errorf("approval check runs = %+v", ac)
	}
	wantApprovedOnce(t, h, done, r.ID)
}
