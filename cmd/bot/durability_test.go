package main_test

// Kill -9 tests: the real bot binary is killed with SIGKILL at the moments
// that matter and started again on the same database; the task must finish
// with nothing lost and nothing done twice on GitHub. Each runs on SQLite
// and on Postgres (botproc.OnEachDatabase).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	botproc.Cleanup()
	os.Exit(code)
}

func call(name string, v any) fakellm.ToolCall {
	b, _ := json.Marshal(v)
	return fakellm.ToolCall{Name: name, Arguments: string(b)}
}

// turn is how far a conversation got: the number of model answers in it.
// A scripted model that answers by it gives a resumed or replayed turn the
// same answer as the lost one.
var (
	pullsCreated     = regexp.MustCompile(`^/repos/[^/]+/[^/]+/pulls$`)
	checkRunsCreated = regexp.MustCompile(`^/repos/[^/]+/[^/]+/check-runs$`)
	commentsCreated  = regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/\d+/comments$`)
)

// wantComments checks that the bot's comments on number carry exactly the
// markers want (task-N-<what> for each what), once each.
func wantComments(t *testing.T, h *botproc.Harness, number int, id int64, what ...string) {
	t.Helper()
	want := map[string]int{}
	for _, w := range what {
		want[fmt.Sprintf("task-%d-%s", id, w)] = 1
	}
	got := h.BotComments(number)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bot comments on #%d by marker = %v, want %v", number, got, want)
	}
}

// startKillTest starts the bot on the database of opts with the scripted
// model llm, and asks it, as the repository's owner, to work on issue 1
// with instructions ("/agent …"): how every kill test begins.
func startKillTest(t *testing.T, llm *fakellm.Server, opts botproc.Options, instructions string) *botproc.Harness {
	t.Helper()
	h := botproc.New(t, llm, opts)
	if code := h.Comment("fix-1", 1, botproc.Owner, instructions); code != http.StatusAccepted {
		t.Fatalf("fix answered %d", code)
	}
	return h
}

// wantApprovedOnce checks that a task done after one approved run left
// everything on GitHub exactly once: one pull request, out of draft; the
// status, request and done comments on the issue, the request's on the
// pull request; two check runs (approval, run); four comments created.
// It returns the pull request.
func wantApprovedOnce(t *testing.T, h *botproc.Harness, done *task.Task, requestID string) fakegithub.PullRequest {
	t.Helper()
	prs := h.GitHub.PullRequests(botproc.Owner, botproc.Repo)
	if len(prs) != 1 || prs[0].Draft || prs[0].Head != tasktest.Job(done).Branch {
		t.Fatalf("pull requests = %+v", prs)
	}
	wantComments(t, h, 1, done.ID, "status", "request-"+requestID, "done")
	wantComments(t, h, prs[0].Number, done.ID, "request-"+requestID+"-pr")
	if n := h.Posts(http.MethodPost, pullsCreated); n != 1 {
		t.Errorf("%d pull requests created, want 1", n)
	}
	if n := h.Posts(http.MethodPost, checkRunsCreated); n != 2 {
		t.Errorf("%d check runs created, want 2 (approval, run)", n)
	}
	if n := h.Posts(http.MethodPost, commentsCreated); n != 4 {
		t.Errorf("%d comments created, want 4 (status, request on the issue and the PR, link)", n)
	}
	return prs[0]
}

// killPoint is the model call a kill test kills the bot in: the model
// holds that call (hold) until the test has killed the bot that made it
// (killInFlight), so the kill lands in the middle of a step, never
// between two.
type killPoint struct{ inFlight, killed chan struct{} }

func newKillPoint() killPoint {
	return killPoint{inFlight: make(chan struct{}), killed: make(chan struct{})}
}

// hold is the model's answer to the call to kill in, given once: it waits
// for the kill, and the bot that asked is dead by then, so the answer goes
// nowhere.
func (k killPoint) hold() fakellm.Step {
	close(k.inFlight)
	<-k.killed
	return fakellm.Step{Status: http.StatusServiceUnavailable}
}

// killInFlight waits up to wait for the held call, failing with never
// if it does not come, and kills the bot while the call is in flight.
func (k killPoint) killInFlight(t *testing.T, h *botproc.Harness, wait time.Duration, never string) {
	t.Helper()
	select {
	case <-k.inFlight:
	case <-time.After(wait):
		t.Fatalf("%s\n%s", never, h.Bot.Logs())
	}
	h.Bot.Kill()
	close(k.killed)
}

func TestKillDuringApprovalWaitLosesNothing(t *testing.T) {
	botproc.OnEachDatabase(t, killDuringApprovalWaitLosesNothing)
}

func killDuringApprovalWaitLosesNothing(t *testing.T, databaseURL string) {
	const command = "grep -c commit README.md"
	steps := []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": command, "reason": "check that the typo is gone"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit in the README", "summary": "Fixed and checked."})}},
	}
	llm := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		return steps[min(fakellm.Turn(req), len(steps)-1)]
	})
	h := startKillTest(t, llm, botproc.Options{DatabaseURL: databaseURL}, "/agent fix the typo")
	// The approver: the bot first asks for its permission at the /approve.
	h.GitHub.SetPermission(botproc.Owner, botproc.Repo, "maintainer", "write")

	// Parked: the state is saved and no worker holds the task any more.
	waiting := h.WaitState(1, task.AwaitingApproval)
	r := tasktest.Job(waiting).Request
	if r == nil || r.Command != command || r.SHA == "" || r.CheckRunID == 0 || r.CommentID == 0 {
		t.Fatalf("request = %+v", r)
	}
	if ac := h.CheckRuns(task.ApprovalCheck); len(ac) != 1 || ac[0].Conclusion != "action_required" || ac[0].ExternalID != r.ID {
		t.Fatalf("approval check runs before the kill = %+v", ac)
	}

	h.Bot.Kill()

	// The row is all there is, and it is intact.
	saved := h.Latest(1)
	if saved.State != task.AwaitingApproval || tasktest.Job(saved).Request == nil || tasktest.Job(saved).Request.ID != r.ID || tasktest.Job(saved).Request.Answer != nil || h.Crashes(saved.ID) != 0 {
		t.Fatalf("after kill -9 the store holds %s", botproc.Describe(saved))
	}
	if h.Leased(saved.ID) {
		t.Fatalf("a parked task holds a lease")
	}

	h.Bot.Restart()
	// Nothing happens on its own after the restart: the request still waits.
	time.Sleep(300 * time.Millisecond)
	if n := llm.Calls(); n != 2 {
		t.Fatalf("the model was called %d times before the answer, want 2", n)
	}
	if st := h.Latest(1); st.State != task.AwaitingApproval {
		t.Fatalf("after the restart, before any answer: %s", botproc.Describe(st))
	}

	if code := h.Comment("approve-1", 1, "maintainer", "/approve"); code != http.StatusAccepted {
		t.Fatalf("/approve answered %d", code)
	}
	done := h.WaitState(1, task.Done)

	// The command ran, once, and its result reached the model.
	runs := h.CheckRuns(task.RunCheck)
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "success" || runs[0].HeadSHA != r.SHA {
		t.Fatalf("run check runs = %+v", runs)
	}
	ac := h.CheckRuns(task.ApprovalCheck)
	if len(ac) != 1 || ac[0].Conclusion != "success" || !strings.Contains(ac[0].Title, "maintainer") {
		t.Fatalf("approval check runs = %+v", ac)
	}
	reqs := llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model was called %d times, want 3 (edit, run, finish)", len(reqs))
	}
	var result string
	for _, m := range reqs[2].Messages {
		if m.Role == openai.ChatMessageRoleTool && strings.Contains(m.Content, "exit code") {
			result = m.Content
		}
	}
	if !strings.Contains(result, "exit code 0") {
		t.Fatalf("the model's run result = %q", result)
	}

	// One pull request, out of draft; each comment once.
	prs := wantApprovedOnce(t, h, done, r.ID)
	if !strings.Contains(prs.Body, "Fixes #1") {
		t.Errorf("the pull request does not link the issue:\n%s", prs.Body)
	}
	commits := h.Git.Commits(t, botproc.Owner, botproc.Repo, tasktest.Job(done).Branch)
	if len(commits) != 2 || commits[0].SHA != r.SHA {
		t.Fatalf("branch history %+v: want the base and the one checkpoint", commits)
	}
}

func TestKillBetweenTurnsResumes(t *testing.T) { botproc.OnEachDatabase(t, killBetweenTurnsResumes) }

func killBetweenTurnsResumes(t *testing.T, databaseURL string) {
	steps := []fakellm.Step{
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		{ToolCalls: []fakellm.ToolCall{call("write_file", map[string]any{"path": "NOTES.md", "content": "Spelling is checked by hand.\n"})}},
		{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "main.go", "old_text": "func main", "new_text": "// main does nothing.\nfunc main"})}},
		{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit", "summary": "README fixed, a note and a comment added."})}},
	}
	const killAt = 2 // the third model call (after two turns) is in flight at the kill
	var (
		mu    sync.Mutex
		turns []int // fakellm.Turn of every request, in order
	)
	kill := newKillPoint()
	llm := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		n := fakellm.Turn(req)
		mu.Lock()
		turns = append(turns, n)
		first := n == killAt && slices.Index(turns, killAt) == len(turns)-1
		mu.Unlock()
		if first {
			return kill.hold()
		}
		return steps[min(n, len(steps)-1)]
	})
	// A short lease, so the restarted bot takes the dead one's task soon.
	h := startKillTest(t, llm, botproc.Options{Env: []string{"BOT_LEASE=3s"}, DatabaseURL: databaseURL}, "/agent fix the typo")
	kill.killInFlight(t, h, 60*time.Second, "the model never got its third call")

	// What the dead bot left: two turns and their files, and its lease.
	saved := h.Latest(1)
	if saved.State != task.Working || tasktest.Job(saved).Turns != killAt || len(tasktest.Job(saved).Files) != 2 {
		t.Fatalf("after kill -9 the store holds %s, files %v", botproc.Describe(saved), tasktest.Job(saved).Files)
	}
	if !h.Leased(saved.ID) {
		t.Fatalf("the killed worker's lease is gone; the kill was not in the middle of a step")
	}
	h.Bot.Restart()
	done := h.WaitState(1, task.Done)
	if n := h.Crashes(done.ID); n != 1 {
		t.Errorf("crashes = %d, want 1 (the kill)", n)
	}

	// The model was asked turns 0, 1, 2 (lost with the bot), 2 again, 3:
	// the interrupted call was redone once, and no earlier turn was.
	mu.Lock()
	got := slices.Clone(turns)
	mu.Unlock()
	if want := []int{0, 1, killAt, killAt, 3}; !slices.Equal(got, want) {
		t.Fatalf("model calls by turn = %v, want %v", got, want)
	}
	// The resumed call is the lost one, word for word: it carries the
	// earlier turns' tool calls and their results.
	reqs := llm.Requests()
	lost, resumed := reqs[2].Messages, reqs[3].Messages
	if a, b := mustJSON(t, lost), mustJSON(t, resumed); a != b {
		t.Errorf("the resumed conversation differs from the one the killed bot sent:\nbefore: %s\nafter:  %s", a, b)
	}
	var calls []string
	for _, m := range resumed {
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.Function.Name+" "+tc.Function.Arguments)
		}
	}
	if len(calls) != 2 || !strings.Contains(calls[0], "edit_file") || !strings.Contains(calls[0], "comitt") || !strings.Contains(calls[1], "write_file") {
		t.Fatalf("tool calls in the resumed conversation = %q", calls)
	}

	// The branch: the base and one commit with all three changes.
	base, err := h.Git.RevParse(t, botproc.Owner, botproc.Repo, "master")
	if err != nil {
		t.Fatal(err)
	}
	commits := h.Git.Commits(t, botproc.Owner, botproc.Repo, tasktest.Job(done).Branch)
	if len(commits) != 2 || commits[1].SHA != base {
		t.Fatalf("branch history = %+v, want base %s and one commit", commits, base)
	}
	for path, want := range map[string]string{
		"README.md": "# Hello-World\n\nRemember to commit your work.\n",
		"NOTES.md":  "Spelling is checked by hand.\n",
		"main.go":   "package main\n\n// main does nothing.\nfunc main() {}\n",
	} {
		if got, err := h.Git.ReadFile(t, botproc.Owner, botproc.Repo, tasktest.Job(done).Branch, path); err != nil || got != want {
			t.Errorf("%s on the branch = %q, %v; want %q", path, got, err, want)
		}
	}

	// Nothing on GitHub twice.
	prs := h.GitHub.PullRequests(botproc.Owner, botproc.Repo)
	if len(prs) != 1 || prs[0].Draft || prs[0].Head != tasktest.Job(done).Branch {
		t.Fatalf("pull requests = %+v", prs)
	}
	wantComments(t, h, 1, done.ID, "status", "done")
	if n := h.Posts(http.MethodPost, pullsCreated); n != 1 {
		t.Errorf("%d pull requests created, want 1", n)
	}
	if n := h.Posts(http.MethodPost, commentsCreated); n != 2 {
		t.Errorf("%d comments created, want 2 (status, link)", n)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKillAfterCompactionResumes kills the bot while the call after a
// compaction is in flight. The compaction was saved before that call: the
// restarted bot makes the lost call again word for word, and no second
// summary is asked for.
func TestKillAfterCompactionResumes(t *testing.T) {
	botproc.OnEachDatabase(t, killAfterCompactionResumes)
}

func killAfterCompactionResumes(t *testing.T, databaseURL string) {
	// Each write carries a large file in the model's own answer, which
	// elision cannot shrink: the conversation must be compacted.
	const parts = 8
	part := func(k int) fakellm.Step {
		if k >= parts {
			return fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Add the notes", "summary": "Eight parts written."})}}
		}
		body := strings.Repeat(fmt.Sprintf("Part %d of the notes, a line long enough to count.\n", k), 200)
		return fakellm.Step{ToolCalls: []fakellm.ToolCall{call("write_file", map[string]any{"path": fmt.Sprintf("notes/part-%d.md", k), "content": body})}}
	}
	// The step is read from the conversation's latest write, so a call
	// made again after the kill gets the lost call's answer, even though
	// the compaction changed how many answers the conversation holds.
	latestPart := regexp.MustCompile(`notes/part-(\d+)\.md`)
	next := func(req openai.ChatCompletionRequest) int {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			for _, tc := range req.Messages[i].ToolCalls {
				if m := latestPart.FindStringSubmatch(tc.Function.Arguments); m != nil {
					var k int
					fmt.Sscan(m[1], &k)
					return k + 1
				}
			}
		}
		return 0
	}
	var (
		mu          sync.Mutex
		calls       int
		compactions int
		lostCall    = -1 // index of the call in flight at the kill
	)
	kill := newKillPoint()
	llm := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		mu.Lock()
		calls++
		if len(req.Tools) == 0 {
			compactions++
			mu.Unlock()
			return fakellm.Step{Content: fmt.Sprintf("SUMMARY-%d: you wrote the first parts of the notes.", compactions)}
		}
		first := compactions == 1 && lostCall < 0
		if first {
			lostCall = calls - 1
		}
		mu.Unlock()
		if first {
			return kill.hold()
		}
		return part(next(req))
	}).CountTokens(fakellm.DefaultBytesPerToken)
	config := filepath.Join(t.TempDir(), "operator.yml")
	if err := os.WriteFile(config, []byte("models:\n  profiles:\n    test-model: {context_window: 16000, context_share: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startKillTest(t, llm, botproc.Options{Env: []string{"BOT_LEASE=3s", "BOT_CONFIG=" + config}, DatabaseURL: databaseURL}, "/agent write the notes")
	kill.killInFlight(t, h, 90*time.Second, "no call followed a compaction")

	saved := h.Latest(1)
	var st struct {
		Compactions int `json:"compactions"`
		Turns       int `json:"turns"`
	}
	if err := json.Unmarshal(tasktest.Job(saved).Conversation, &st); err != nil || st.Compactions != 1 {
		t.Fatalf("after kill -9 the stored conversation has %d compactions (%v), want 1: %s", st.Compactions, err, botproc.Describe(saved))
	}
	h.Bot.Restart()
	done := h.WaitState(1, task.Done)

	mu.Lock()
	n := compactions
	mu.Unlock()
	reqs := llm.Requests()
	// Later compactions are new ones (the task goes on growing); none
	// was paid for and then lost, and none was made twice. That holds
	// across the kill; a step whose lease ran out besides (a machine too
	// loaded to renew it) is replayed whole, its compaction with it, as
	// any step is: then only the kill's own guarantee is checked.
	if crashes := h.Crashes(done.ID); crashes != 1 {
		t.Logf("%d crashes (the kill, and %d leases that ran out): a replayed step may have asked for its compaction again", crashes, crashes-1)
	} else {
		if err := json.Unmarshal(tasktest.Job(done).Conversation, &st); err != nil || st.Compactions != n {
			t.Errorf("%d compaction calls, the finished conversation counts %d (%v): one was lost", n, st.Compactions, err)
		}
		seen := map[string]bool{}
		for _, r := range reqs {
			if len(r.Tools) == 0 {
				if k := mustJSON(t, r.Messages); seen[k] {
					t.Errorf("a compaction was asked for twice: %.300s", k)
				} else {
					seen[k] = true
				}
			}
		}
	}
	if lostCall < 0 || lostCall+1 >= len(reqs) {
		t.Fatalf("lost call %d of %d", lostCall, len(reqs))
	}
	if a, b := mustJSON(t, reqs[lostCall].Messages), mustJSON(t, reqs[lostCall+1].Messages); a != b {
		t.Errorf("the call made after the restart differs from the lost one:\nbefore: %.600s\nafter:  %.600s", a, b)
	}
	if !strings.Contains(reqs[lostCall].Messages[1].Content, "SUMMARY-1") {
		t.Errorf("the lost call does not carry the summary: %.300q", reqs[lostCall].Messages[1].Content)
	}
	for k := range parts {
		path := fmt.Sprintf("notes/part-%d.md", k)
		if got, err := h.Git.ReadFile(t, botproc.Owner, botproc.Repo, tasktest.Job(done).Branch, path); err != nil || !strings.HasPrefix(got, fmt.Sprintf("Part %d ", k)) {
			t.Errorf("%s on the branch = %.40q, %v", path, got, err)
		}
	}
	if n := h.Posts(http.MethodPost, pullsCreated); n != 1 {
		t.Errorf("%d pull requests created, want 1", n)
	}
}
