package localrun_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/replay"
	"github.com/pullwright/pullwright/localrun"
	"github.com/pullwright/pullwright/policy"
)

// The oracle replay through `bot run` end to end (issue 40): a real commit's
// parent checked out, `bot run` driven by internal/replay's scripted model
// (the calls a careful model would make, answer by answer from the tools'
// results), and the commit bot run leaves on its branch compared with the
// real one, path by path, mode and blob id. agent/replay_test.go replays
// many more commits through the tools alone; this shows the whole way to a
// branch (workspace clone, tools, commit with modes, push) keeps them.

// replayModel is a fake model that plays script: each answer is the
// script's next calls, given the tool results of the answer before. An
// answer once given is kept, so a request asked again gets it again.
func replayModel(t *testing.T, script *replay.Script) *fakellm.Server {
	var (
		mu      sync.Mutex // the server holds its lock; this guards answers for the test's reads
		answers []fakellm.Step
	)
	return fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		mu.Lock()
		defer mu.Unlock()
		turn := fakellm.Turn(req)
		for len(answers) <= turn {
			var results []string
			if len(answers) > 0 {
				results = lastResults(req)
			}
			calls, err := script.Next(results)
			if err != nil {
				t.Errorf("the script: %v", err)
				return fakellm.Step{Content: "the script failed"}
			}
			if len(calls) == 0 {
				return fakellm.Step{Content: "nothing more to do"}
			}
			var step fakellm.Step
			for _, c := range calls {
				step.ToolCalls = append(step.ToolCalls, fakellm.ToolCall{Name: c.Name, Arguments: c.Args})
			}
			answers = append(answers, step)
		}
		return answers[turn]
	})
}

// lastResults are the tool results after req's last answer, in order.
func lastResults(req openai.ChatCompletionRequest) []string {
	var out []string
	for _, m := range req.Messages {
		switch m.Role {
		case openai.ChatMessageRoleAssistant:
			out = nil
		case openai.ChatMessageRoleTool:
			out = append(out, m.Content)
		}
	}
	return out
}

// replayThroughBotRun checks out commit's parent in work (a clone of the
// repository holding commit), runs bot run there with the scripted model
// of commit, and returns how the tree on bot run's branch differs from
// commit's ("" when it is the same) and the script.
func replayThroughBotRun(t *testing.T, work string, blobs *replay.Blobs, commit string) (string, *replay.Script) {
	t.Helper()
	parent := gitCmd(t, work, "rev-parse", commit+"^")
	subject := gitCmd(t, work, "log", "-1", "--format=%s", commit)
	gitCmd(t, work, "checkout", "-q", "-f", "-B", "replay", parent)
	gitCmd(t, work, "clean", "-q", "-f", "-d", "-x")
	script, err := replay.New(work, blobs, parent, commit, "Replay "+subject)
	if err != nil {
		t.Fatal(err)
	}
	llm := replayModel(t, script)
	o, _, stderr := options(t, work, llm, strings.NewReader(""), false)
	o.Instructions = "make commit " + commit
	o.Branch = "pullwright/replay-" + commit[:12]
	o.YesTo = []string{"true"} // no command is asked: the script runs none
	res, err := localrun.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%.12s %s: bot run: %v\nstderr:\n%s", commit, subject, err, stderr)
	}
	if !res.Finished || res.Branch != o.Branch {
		t.Fatalf("%.12s %s: finished %v (%s), branch %q\nstderr:\n%s", commit, subject, res.Finished, res.Stopped, res.Branch, stderr)
	}
	// Every call the model made must have worked.
	for i, req := range llm.Requests() {
		for _, r := range lastResults(req) {
			if strings.HasPrefix(r, "error: ") {
				t.Errorf("%.12s %s: a tool call of answer %d failed: %s", commit, subject, i, strings.SplitN(r, "\n", 2)[0])
			}
		}
	}
	got, err := replay.LsTree(work, o.Branch)
	if err != nil {
		t.Fatal(err)
	}
	want, err := replay.LsTree(work, commit)
	if err != nil {
		t.Fatal(err)
	}
	if gitCmd(t, work, "rev-parse", o.Branch+"^") != parent {
		t.Errorf("%.12s: bot run's commit is not on the parent", commit)
	}
	return strings.Join(replay.TreeDiff(got, want), "; "), script
}

// cloneForReplay is a clone of src to check parents out in (a full one:
// bot run reads it with go-git, which does not follow alternates), with the
// user's identity bot run commits as.
func cloneForReplay(t *testing.T, src string) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	gitCmd(t, filepath.Dir(work), "clone", "-q", "--no-checkout", src, work)
	gitCmd(t, work, "config", "user.name", userName)
	gitCmd(t, work, "config", "user.email", userEmail)
	gitCmd(t, work, "config", "core.autocrlf", "false")
	return work
}

// TestReplayThroughBotRun replays commits made in a new repository, each
// a shape of change bot run must carry to its branch: the tree of the
// branch is the commit's, bytes and modes.
func TestReplayThroughBotRun(t *testing.T) {
	src := t.TempDir()
	gitCmd(t, src, "init", "-q", "-b", "main")
	gitCmd(t, src, "config", "user.name", userName)
	gitCmd(t, src, "config", "user.email", userEmail)
	gitCmd(t, src, "config", "core.autocrlf", "false")
	write := func(p, content string, mode os.FileMode) {
		t.Helper()
		writeFile(t, src, p, content)
		if err := os.Chmod(filepath.Join(src, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	var body strings.Builder
	for i := range 30 {
		fmt.Fprintf(&body, "func f%d() {\n\treturn nil\n}\n\n", i)
	}
	write("main.go", "package main\n\n"+body.String(), 0o644)
	write("lib/util.go", "package lib\n\nfunc A() int {\n\treturn 1\n}\n", 0o644)
	write("run.sh", "#!/bin/sh\necho hi\n", 0o755)
	write("win.txt", "one\r\ntwo\r\nthree\r\nfour\r\n", 0o644)
	write("tail.txt", "a\nb", 0o644)
	write("gone.txt", "bye\n", 0o644)
	gitCmd(t, src, "add", "-A")
	gitCmd(t, src, "commit", "-q", "-m", "Start")

	steps := []struct {
		name string
		do   func()
		kind byte // a kind of change the commit must have, as the script sees it
	}{
		{"a delete", func() { os.Remove(filepath.Join(src, "gone.txt")) }, 'D'},
		{"a rename with an edit", func() {
			os.Remove(filepath.Join(src, "lib/util.go"))
			write("internal/util/util.go", "package lib\n\nfunc A() int {\n\treturn 2\n}\n", 0o644)
		}, 'R'},
		{"a mode change", func() { write("run.sh", "#!/bin/sh\necho hi\n", 0o644) }, 'X'},
		{"a CRLF file edited across lines", func() { write("win.txt", "one\r\n2\r\n3\r\nfour\r\n", 0o644) }, 'M'},
		{"a new file", func() { write("docs/new.md", "# New\n\nA file.\n", 0o644) }, 'A'},
		{"an insertion at EOF without a final newline", func() { write("tail.txt", "a\nb\nc", 0o644) }, 'M'},
		{"repeated lines and an insertion at the top", func() {
			write("main.go", "// Package main.\npackage main\n\n"+
				strings.Replace(body.String(), "func f7() {\n\treturn nil\n", "func f7() {\n\treturn 7\n", 1), 0o644)
		}, 'M'},
	}
	var commits []string
	for _, s := range steps {
		s.do()
		gitCmd(t, src, "add", "-A")
		gitCmd(t, src, "commit", "-q", "-m", s.name)
		commits = append(commits, gitCmd(t, src, "rev-parse", "HEAD"))
	}
	work := cloneForReplay(t, src)
	blobs, err := replay.NewBlobs(work)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	for i, s := range steps {
		diff, script := replayThroughBotRun(t, work, blobs, commits[i])
		if diff != "" {
			t.Errorf("%s: the branch differs from the commit: %s", s.name, diff)
		}
		if !script.Kinds[s.kind] || script.NotExpressible != "" || len(script.Failures) > 0 {
			t.Errorf("%s: kinds %q, not expressible %q, failures %q", s.name, slices.Sorted(func(y func(byte) bool) {
				for k := range script.Kinds {
					if !y(k) {
						return
					}
				}
			}), script.NotExpressible, script.Failures)
		}
	}
	// The CRLF file kept its line ends on the branch.
	if got := gitCmd(t, work, "cat-file", "blob", "pullwright/replay-"+commits[3][:12]+":win.txt"); got != "one\r\n2\r\n3\r\nfour" {
		t.Errorf("win.txt on the branch = %q", got)
	}
}

// TestReplayHistoryThroughBotRun replays the newest commits of this
// repository's own history through bot run, when PULLWRIGHT_REPLAY_BOTRUN
// says how many:
//
//	PULLWRIGHT_REPLAY_BOTRUN=10 go test -run TestReplayHistoryThroughBotRun -v ./localrun/
//
// A commit is left out (and counted) when bot run cannot make it with the
// tools alone: a root or merge commit, a path no agent may write
// (policy.AlwaysProtected), a file the tools cannot write (binary, not
// UTF-8, a symlink), or more answers than the default turn budget.
func TestReplayHistoryThroughBotRun(t *testing.T) {
	n := os.Getenv("PULLWRIGHT_REPLAY_BOTRUN")
	if n == "" {
		t.Skip("set PULLWRIGHT_REPLAY_BOTRUN=10 to replay this repository's newest commits through bot run")
	}
	want, err := strconv.Atoi(n)
	if err != nil || want < 1 {
		t.Fatalf("PULLWRIGHT_REPLAY_BOTRUN=%q: want a number", n)
	}
	top, err := replay.Git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		t.Skipf("not in a git repository: %v", err)
	}
	work := cloneForReplay(t, strings.TrimSpace(string(top)))
	blobs, err := replay.NewBlobs(work)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	all := strings.Fields(gitCmd(t, work, "log", "--no-merges", "--format=%H"))
	skipped := map[string]int{}
	exact, tried := 0, 0
	for _, c := range all {
		if tried == want {
			break
		}
		if why := notForBotRun(t, work, blobs, c); why != "" {
			skipped[why]++
			continue
		}
		tried++
		diff, _ := replayThroughBotRun(t, work, blobs, c)
		if diff != "" {
			t.Errorf("%.12s: the branch differs from the commit: %s", c, diff)
			continue
		}
		exact++
	}
	t.Logf("replayed through bot run: %d commits, %d exact; left out: %v", tried, exact, skipped)
}

// notForBotRun says why commit is left out of the replay through bot run,
// "" when it is not.
func notForBotRun(t *testing.T, work string, blobs *replay.Blobs, commit string) string {
	t.Helper()
	parent, err := replay.Git(work, "rev-parse", "--verify", "-q", commit+"^")
	if err != nil {
		return "root commit"
	}
	script, err := replay.New(work, blobs, strings.TrimSpace(string(parent)), commit, "")
	if err != nil {
		t.Fatal(err)
	}
	edited := 0
	for _, c := range script.Changes {
		for _, p := range []string{c.OldPath, c.NewPath} {
			if _, ok := policy.ProtectedBy(policy.AlwaysProtected, p); ok {
				return "a protected path"
			}
		}
		if c.Status == 'M' || c.Status == 'R' {
			edited++
		}
	}
	// Dry run of the answers: the reads take one window a file at least,
	// then one answer of file operations, one per edited file, finish.
	var answers int
	var results []string
	for {
		calls, err := script.Next(results)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) == 0 {
			break
		}
		answers++
		results = nil
	}
	switch {
	case script.NotExpressible != "":
		return "not expressible"
	case answers > policy.DefaultOperator().Defaults.MaxTurns:
		return "over the turn budget"
	}
	return ""
}
