package localrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/internal/syncbuf"
	"github.com/pullwright/pullwright/localrun"
)

// The user's repository of the tests: the skeleton issue's README typo.
const (
	readme     = "# Hello-World\n\nRemember to comitt your work.\n"
	fixed      = "# Hello-World\n\nRemember to commit your work.\n"
	mainGo     = "package main\n\nfunc main() {}\n"
	userName   = "Ada Lovelace"
	userEmail  = "ada@example.com"
	workBranch = "pullwright/fix-the-readme-typo"
	instr      = "fix the README typo"
)

// gitCmd runs git in dir, isolated from the machine's configuration.
func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_DATE=2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes the user's checkout: a real repository on branch main with
// two commits, the user's identity in its configuration, and, when dirty,
// an uncommitted change to main.go.
func newRepo(t *testing.T, dirty bool, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q", "-b", "main")
	gitCmd(t, dir, "config", "user.name", userName)
	gitCmd(t, dir, "config", "user.email", userEmail)
	writeFile(t, dir, "main.go", mainGo)
	gitCmd(t, dir, "add", ".")
	gitCmd(t, dir, "commit", "-q", "-m", "Start")
	writeFile(t, dir, "README.md", readme)
	for name, content := range extra {
		writeFile(t, dir, name, content)
	}
	gitCmd(t, dir, "add", ".")
	gitCmd(t, dir, "commit", "-q", "-m", "Add a README")
	if dirty {
		writeFile(t, dir, "main.go", mainGo+"// work in progress\n")
	}
	return dir
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot is what must not change in the user's checkout.
type snapshot struct{ branch, head, status, readme, mainGo string }

func take(t *testing.T, dir string) snapshot {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return snapshot{
		branch: gitCmd(t, dir, "rev-parse", "--abbrev-ref", "HEAD"),
		head:   gitCmd(t, dir, "rev-parse", "HEAD"),
		status: gitCmd(t, dir, "status", "--porcelain"),
		readme: read("README.md"),
		mainGo: read("main.go"),
	}
}

func branches(t *testing.T, dir string) []string {
	t.Helper()
	return strings.Fields(gitCmd(t, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads/"))
}

func call(name string, v any) fakellm.ToolCall {
	b, _ := json.Marshal(v)
	return fakellm.ToolCall{Name: name, Arguments: string(b)}
}

func step(calls ...fakellm.ToolCall) fakellm.Step { return fakellm.Step{ToolCalls: calls} }

func run(command, reason string) fakellm.Step {
	return step(call("run", map[string]string{"command": command, "reason": reason}))
}

var (
	readStep = step(
		call("plan", map[string]any{"items": []map[string]string{{"title": "Fix the typo", "status": "in_progress"}}}),
		call("read_file", map[string]any{"path": "README.md"}),
	)
	editStep   = step(call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"}))
	finishStep = step(call("finish", map[string]string{"title": "Fix the spelling of commit in the README", "summary": "The README said `comitt`; it now says `commit`."}))
)

// fixScript is the skeleton issue's model: it reads the README, fixes it,
// asks to run two commands, and finishes.
func fixScript() []fakellm.Step {
	return []fakellm.Step{readStep, editStep, run("cat README.md", "check the fix"), run("go vet ./...", "vet the code"), finishStep}
}

// options are the Options of a test run against llm, with the local
// runner; the terminal seam says stdin is one when tty is true.
func options(t *testing.T, dir string, llm *fakellm.Server, stdin io.Reader, tty bool) (localrun.Options, *syncbuf.Buffer, *syncbuf.Buffer) {
	stdout, stderr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	return localrun.Options{
		Repo:         dir,
		Instructions: instr,
		BaseURL:      llm.URL,
		Model:        "test-model",
		LLMRetries:   -1,
		Runner:       localrun.RunnerLocal,
		Stdin:        stdin,
		Stdout:       stdout,
		Stderr:       stderr,
		IsTerminal:   func(f any) bool { return tty && f == stdin },
		TempDir:      t.TempDir(),
	}, stdout, stderr
}

// toolResults are the tool messages of the last request the model got.
func toolResults(reqs []openai.ChatCompletionRequest) []string {
	if len(reqs) == 0 {
		return nil
	}
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

// lastResult is the newest tool result request i carried.
func lastResult(t *testing.T, reqs []openai.ChatCompletionRequest, i int) string {
	t.Helper()
	if i >= len(reqs) {
		t.Fatalf("the model got %d requests, want at least %d", len(reqs), i+1)
	}
	res := toolResults(reqs[:i+1])
	if len(res) == 0 {
		t.Fatalf("request %d carries no tool result", i)
	}
	return res[len(res)-1]
}

func mustContain(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, s)
		}
	}
}

func TestRunAsksAndLeavesABranch(t *testing.T) {
	dir := newRepo(t, true, nil)
	before := take(t, dir)
	llm := fakellm.New(t, fixScript()...)
	o, stdout, stderr := options(t, dir, llm, strings.NewReader("y\nn flaky\n"), true)

	res, err := localrun.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
	}

	// The user's checkout: same branch, commit, status and files.
	if after := take(t, dir); after != before {
		t.Errorf("the user's checkout changed:\nbefore %+v\nafter  %+v", before, after)
	}
	// The new branch: one commit on HEAD with the fix and nothing else,
	// by the user.
	if res.Branch != workBranch || len(res.Commits) != 1 {
		t.Fatalf("Result: branch %q, commits %q; want %s and one commit", res.Branch, res.Commits, workBranch)
	}
	if got := gitCmd(t, dir, "rev-parse", workBranch); got != res.Commits[0] {
		t.Errorf("branch %s is at %s, want %s", workBranch, got, res.Commits[0])
	}
	if got := gitCmd(t, dir, "rev-parse", workBranch+"^"); got != before.head {
		t.Errorf("the commit's parent is %s, want HEAD %s", got, before.head)
	}
	if got := gitCmd(t, dir, "show", workBranch+":README.md"); got != strings.TrimSpace(fixed) {
		t.Errorf("README.md on the branch:\n%s", got)
	}
	if got := gitCmd(t, dir, "diff", "--name-only", before.head, workBranch); got != "README.md" {
		t.Errorf("the branch changes %q, want README.md only (the uncommitted main.go stays out)", got)
	}
	if got := gitCmd(t, dir, "log", "-1", "--format=%an <%ae>%n%s", workBranch); got != userName+" <"+userEmail+">\nFix the spelling of commit in the README" {
		t.Errorf("commit author and subject:\n%s", got)
	}
	gitCmd(t, dir, "fsck", "--no-progress")

	// The model saw the command's output, then the reason of the rejection.
	reqs := llm.Requests()
	if len(reqs) != 5 {
		t.Fatalf("the model got %d requests, want 5", len(reqs))
	}
	mustContain(t, "the result of cat", lastResult(t, reqs, 3), "exit code 0", "Remember to commit your work.")
	mustContain(t, "the result of go vet", lastResult(t, reqs, 4), "rejected by @", ": flaky")

	// The user saw each question with command, reason, where it runs
	// and the files, as the request comment shows them.
	errOut := stderr.String()
	mustContain(t, "stderr", errOut,
		"$ cat README.md", "Why: check the fix", "$ go vet ./...", "Why: vet the code",
		"! It would run on the files of the workspace (tree `", "without a sandbox", "    README.md (+1 −1)",
		"[y] yes", "UNSANDBOXED", "rejected `go vet ./...`: flaky",
		"warning: 1 uncommitted change (`main.go`)", "edited README.md", "[>] Fix the typo")
	if n := strings.Count(errOut, "The agent asks to run a command"); n != 2 {
		t.Errorf("asked %d times, want 2", n)
	}
	mustContain(t, "stdout", stdout.String(), "Done: Fix the spelling", "New branch "+workBranch, res.Commits[0],
		"git switch "+workBranch, "git diff main..."+workBranch, "README.md | 2 +-")
}

func TestRunAnswers(t *testing.T) {
	twice := []fakellm.Step{readStep, editStep, run("cat README.md", "check"), run("cat README.md", "check again"), finishStep}
	tests := []struct {
		name  string
		steps []fakellm.Step
		stdin string
		tty   bool
		yesTo []string
		// asked is how many questions the user gets; results are what the
		// model must see after each of the two requests (requests 3 and 4).
		asked   int
		results [2][]string
	}{
		{
			name: "yes-to without a terminal", steps: fixScript(), yesTo: []string{" cat README.md "},
			results: [2][]string{{"exit code 0", "Remember to commit"}, {"rejected by @", ": not on the --yes-to list"}},
		},
		{
			name: "yes-to at a terminal asks for the rest", steps: fixScript(), tty: true, stdin: "n not now\n", yesTo: []string{"cat README.md"},
			asked:   1,
			results: [2][]string{{"exit code 0"}, {": not now"}},
		},
		{
			name: "a approves the same command again", steps: twice, tty: true, stdin: "a\n",
			asked:   1,
			results: [2][]string{{"exit code 0"}, {"exit code 0"}},
		},
		{
			name: "y approves once", steps: twice, tty: true, stdin: "y\nno\nit is the same\n",
			asked:   2,
			results: [2][]string{{"exit code 0"}, {": it is the same"}},
		},
		{
			name: "an unknown answer is asked again", steps: twice, tty: true, stdin: "maybe\ny\nn\n\n",
			asked:   2,
			results: [2][]string{{"exit code 0"}, {": no reason given"}},
		},
		{
			name: "the end of the input rejects and stops asking", steps: twice, tty: true, stdin: "",
			asked:   1,
			results: [2][]string{{": no answer: the input ended"}, {": not on the --yes-to list, and it could not be asked"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t, false, nil)
			llm := fakellm.New(t, tt.steps...)
			o, _, stderr := options(t, dir, llm, strings.NewReader(tt.stdin), tt.tty)
			o.YesTo = tt.yesTo
			res, err := localrun.Run(context.Background(), o)
			if err != nil {
				t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
			}
			if !res.Finished || res.Branch != workBranch {
				t.Errorf("Result %+v", res)
			}
			reqs := llm.Requests()
			for i, wants := range tt.results {
				mustContain(t, "the result of request "+string(rune('1'+i)), lastResult(t, reqs, 3+i), wants...)
			}
			if n := strings.Count(stderr.String(), "The agent asks to run a command"); n != tt.asked {
				t.Errorf("asked %d times, want %d\n%s", n, tt.asked, stderr)
			}
		})
	}
}

func TestRunRefusesInputThatIsNotATerminal(t *testing.T) {
	dir := newRepo(t, false, nil)
	llm := fakellm.New(t)
	o, _, _ := options(t, dir, llm, strings.NewReader("y\n"), false)
	_, err := localrun.Run(context.Background(), o)
	if !errors.Is(err, localrun.ErrNotTerminal) {
		t.Fatalf("Run: %v, want ErrNotTerminal", err)
	}
	mustContain(t, "the error", err.Error(), "not a terminal", "--yes-to")
	if llm.Calls() != 0 {
		t.Errorf("the model was called %d times", llm.Calls())
	}
	if got := branches(t, dir); len(got) != 1 || got[0] != "main" {
		t.Errorf("branches %q, want only main", got)
	}
}

func TestRunRefusesToStart(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string, o *localrun.Options)
		want  []string
	}{
		{
			name: "invalid configuration",
			setup: func(t *testing.T, dir string, o *localrun.Options) {
				writeFile(t, dir, ".github/pullwright.yml", "budget:\n  max_turns: 5\n  max_turnz: 6\n")
				gitCmd(t, dir, "add", ".")
				gitCmd(t, dir, "commit", "-q", "-m", "Configure")
			},
			want: []string{".github/pullwright.yml:3:", "max_turnz"},
		},
		{
			name: "branch taken",
			setup: func(t *testing.T, dir string, o *localrun.Options) {
				gitCmd(t, dir, "branch", "feature")
				o.Branch = "feature"
			},
			want: []string{"branch feature already exists"},
		},
		{
			name: "detached HEAD",
			setup: func(t *testing.T, dir string, o *localrun.Options) {
				gitCmd(t, dir, "checkout", "-q", "--detach")
			},
			want: []string{"HEAD is detached"},
		},
		{
			name:  "not a repository",
			setup: func(t *testing.T, dir string, o *localrun.Options) { o.Repo = t.TempDir() },
			want:  []string{"is not in a git repository"},
		},
		{
			name:  "unknown runner",
			setup: func(t *testing.T, dir string, o *localrun.Options) { o.Runner = "podman" },
			want:  []string{`runner "podman"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t, false, nil)
			llm := fakellm.New(t)
			o, _, _ := options(t, dir, llm, strings.NewReader(""), true)
			tt.setup(t, dir, &o)
			before := branches(t, dir)
			_, err := localrun.Run(context.Background(), o)
			if err == nil {
				t.Fatal("Run succeeded")
			}
			mustContain(t, "the error", err.Error(), tt.want...)
			if llm.Calls() != 0 {
				t.Errorf("the model was called %d times", llm.Calls())
			}
			if after := branches(t, dir); strings.Join(after, " ") != strings.Join(before, " ") {
				t.Errorf("branches %q, were %q", after, before)
			}
		})
	}
}

func TestRunPicksAFreeBranchAndReadsTheConfiguration(t *testing.T) {
	dir := newRepo(t, false, map[string]string{
		".github/pullwright.yml": "test_command: go test ./...\nbudget:\n  max_turns: 7\n",
	})
	gitCmd(t, dir, "branch", workBranch)
	llm := fakellm.New(t, readStep, editStep, finishStep)
	o, _, stderr := options(t, dir, llm, strings.NewReader(""), true)
	res, err := localrun.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	if want := workBranch + "-2"; res.Branch != want {
		t.Errorf("branch %q, want %q", res.Branch, want)
	}
	if got := gitCmd(t, dir, "rev-parse", workBranch); got != gitCmd(t, dir, "rev-parse", "main") {
		t.Errorf("the existing branch %s moved", workBranch)
	}
	first := llm.Requests()[0].Messages[1].Content
	mustContain(t, "the first message", first, "go test ./...", "fix the README typo")
	mustContain(t, "stderr", stderr.String(), "budget: 7 turns")
}

func TestRunWithoutChangesCreatesNoBranch(t *testing.T) {
	dir := newRepo(t, false, nil)
	llm := fakellm.New(t, readStep, finishStep)
	o, stdout, _ := options(t, dir, llm, strings.NewReader(""), true)
	res, err := localrun.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "" || len(branches(t, dir)) != 1 {
		t.Errorf("branch %q created; branches %q", res.Branch, branches(t, dir))
	}
	mustContain(t, "stdout", stdout.String(), "no branch was created")
}

// TestRunOutOfBudget: the last turn offers only finish; a model that does
// something else stops the run with its work on the branch and the bot's
// account of the plan and steps in the report, and one that finishes there
// is reported as out of budget.
func TestRunOutOfBudget(t *testing.T) {
	cases := []struct {
		name     string
		last     fakellm.Step
		finished bool
		want     []string
	}{
		{"no finish", readStep, false, []string{
			"Stopped: the agent used up its budget (turns: 3 of 3 used).",
			"What the agent did, and what is left:",
			"so it wrote no summary",
			"- [ ] Fix the typo *(in progress)*",
			"edited README.md",
			"New branch " + workBranch,
		}},
		{"finish on the last turn", finishStep, true, []string{
			"Out of budget: the agent used up its budget (turns: 3 of 3 used); it finished on its last turn: Fix the spelling of commit in the README",
			"The agent's summary, in its own words:",
			"New branch " + workBranch,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := newRepo(t, false, map[string]string{".github/pullwright.yml": "budget:\n  max_turns: 3\n"})
			llm := fakellm.New(t, readStep, editStep, c.last)
			o, stdout, _ := options(t, dir, llm, strings.NewReader(""), true)
			res, err := localrun.Run(context.Background(), o)
			if c.finished != (err == nil) {
				t.Fatalf("Run: %v", err)
			}
			if !c.finished && !strings.Contains(err.Error(), "budget") {
				t.Fatalf("Run: %v, want a budget error", err)
			}
			if res.Branch != workBranch || res.Finished != c.finished || res.OutOfBudget == "" {
				t.Fatalf("Result %+v", res)
			}
			if got := gitCmd(t, dir, "show", workBranch+":README.md"); got != strings.TrimSpace(fixed) {
				t.Errorf("README.md on the branch:\n%s", got)
			}
			if reqs := llm.Requests(); len(reqs[2].Tools) != 1 || reqs[2].Tools[0].Function.Name != "finish" {
				t.Errorf("the last turn offered %d tools, want finish alone", len(reqs[2].Tools))
			}
			mustContain(t, "stdout", stdout.String(), c.want...)
			if !c.finished {
				if got := gitCmd(t, dir, "log", "-1", "--format=%B", workBranch); !strings.HasPrefix(got, "WIP: fix the README typo") || !strings.Contains(got, "so it wrote no summary") {
					t.Errorf("commit message %q", got)
				}
			}
		})
	}
}

// Ctrl-C at a question: the run stops, the work so far is saved on the new
// branch, and the user's checkout is untouched.
func TestRunInterruptedSavesTheWork(t *testing.T) {
	dir := newRepo(t, false, nil)
	before := take(t, dir)
	llm := fakellm.New(t, readStep, editStep, run("cat README.md", "check"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdin, w := io.Pipe() // nobody answers
	defer w.Close()
	o, _, stderr := options(t, dir, llm, stdin, true)
	stderr.Watch(func(all string) {
		if strings.Contains(all, "Run it") {
			cancel()
		}
	})
	res, err := localrun.Run(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Run: %v, want interrupted", err)
	}
	if res.Branch != workBranch {
		t.Fatalf("Result %+v", res)
	}
	if got := gitCmd(t, dir, "show", workBranch+":README.md"); got != strings.TrimSpace(fixed) {
		t.Errorf("README.md on the branch:\n%s", got)
	}
	if after := take(t, dir); after != before {
		t.Errorf("the user's checkout changed:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestRunDockerEngineMissing(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	dir := newRepo(t, false, nil)
	llm := fakellm.New(t)
	o, _, _ := options(t, dir, llm, strings.NewReader(""), true)
	o.Runner = localrun.RunnerDocker
	_, err := localrun.Run(context.Background(), o)
	if err == nil {
		t.Fatal("Run succeeded without a Docker engine")
	}
	mustContain(t, "the error", err.Error(), "Docker engine does not answer", "--runner local")
	if got := branches(t, dir); len(got) != 1 {
		t.Errorf("branches %q", got)
	}
}

func TestRunInTheDockerSandbox(t *testing.T) {
	image := sandboxtest.Image(t)
	dir := newRepo(t, false, nil)
	llm := fakellm.New(t, fixScript()...)
	o, _, stderr := options(t, dir, llm, strings.NewReader("y\nn flaky\n"), true)
	o.Runner = localrun.RunnerDocker
	o.Image = image
	res, err := localrun.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	if res.Branch != workBranch {
		t.Errorf("Result %+v", res)
	}
	reqs := llm.Requests()
	mustContain(t, "the result of cat", lastResult(t, reqs, 3), "exit code 0", "Remember to commit your work.")
	mustContain(t, "stderr", stderr.String(), "in the Docker sandbox", "image "+image)
}

// A linked worktree (git worktree add) on another branch: the run starts
// from that branch and the new branch lands in the shared repository.
func TestRunInALinkedWorktree(t *testing.T) {
	primary := newRepo(t, false, nil)
	wt := filepath.Join(t.TempDir(), "wt")
	gitCmd(t, primary, "worktree", "add", "-q", "-b", "feature", wt)
	writeFile(t, wt, "NOTES.md", "notes\n")
	gitCmd(t, wt, "add", ".")
	gitCmd(t, wt, "commit", "-q", "-m", "Notes")
	before := gitCmd(t, wt, "rev-parse", "HEAD")
	llm := fakellm.New(t, readStep, editStep, finishStep)
	o, stdout, stderr := options(t, wt, llm, strings.NewReader(""), true)
	res, err := localrun.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	if got := gitCmd(t, primary, "rev-parse", workBranch+"^"); got != before || res.Base != before {
		t.Errorf("the branch starts at %s (Base %s), want feature's %s", got, res.Base, before)
	}
	if got := gitCmd(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); got != "feature" {
		t.Errorf("the worktree is on %s", got)
	}
	if got := gitCmd(t, primary, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("the main checkout is on %s", got)
	}
	mustContain(t, "stdout", stdout.String(), "git diff feature..."+workBranch)
}

func TestRunNoFreeBranchName(t *testing.T) {
	dir := newRepo(t, false, nil)
	gitCmd(t, dir, "branch", "pullwright") // refs/heads/pullwright/… cannot exist next to it
	llm := fakellm.New(t)
	o, _, _ := options(t, dir, llm, strings.NewReader(""), true)
	_, err := localrun.Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "--branch") {
		t.Fatalf("Run: %v, want an error suggesting --branch", err)
	}
	o.Branch = "ai/typo"
	llm2 := fakellm.New(t, readStep, editStep, finishStep)
	o.BaseURL = llm2.URL
	res, err := localrun.Run(context.Background(), o)
	if err != nil || res.Branch != "ai/typo" {
		t.Fatalf("Run with --branch: %+v, %v", res, err)
	}
}

// A run has the files the question showed: a file the agent wrote and git
// ignores is not part of it, and the agent is told so.
func TestRunLeavesOutFilesGitIgnores(t *testing.T) {
	dir := newRepo(t, false, map[string]string{".gitignore": "*.local.sh\n"})
	llm := fakellm.New(t,
		step(call("write_file", map[string]string{"path": "check.local.sh", "content": "echo HIDDEN CODE RAN\n"})),
		editStep,
		run("sh check.local.sh; ls", "check"),
		finishStep,
	)
	o, _, stderr := options(t, dir, llm, strings.NewReader("y\n"), true)
	if _, err := localrun.Run(context.Background(), o); err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
	}
	got := lastResult(t, llm.Requests(), 3)
	if strings.Contains(got, "HIDDEN CODE RAN") {
		t.Fatalf("the run had a file git ignores:\n%s", got)
	}
	mustContain(t, "the run's result", got, "README.md", "not part of this run, because git ignores them: check.local.sh")
	mustContain(t, "stderr", stderr.String(), "    README.md (+1 −1)")
}
