package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/replay"
	"github.com/pullwright/pullwright/runner"
)

// The oracle replay (issue 40, "How we will know"): real commits replayed
// through the agent's tools by a scripted model that does what a careful
// model would, and the tree at the end compared with the commit's, bytes,
// executable bits and the set of paths. It measures whether the tools can
// express the patches a repository really gets, and what that costs in
// calls, turns and tokens; not whether a model finds the patch.
//
// The scripted model is internal/replay's Script; localrun's replay_test.go
// plays the same script through `bot run`.

// replayCall is one tool call the scripted model made, and its answer.
type replayCall struct {
	name, args, result string
}

// replayResult is what replaying one commit gave.
type replayResult struct {
	commit, subject string
	// notExpressible, needsKept, skipped, tidied and tidyNote are the
	// script's (see replay.Script).
	notExpressible   string
	needsKept        bool
	skipped          map[string]bool
	tidied, tidyNote string
	kinds            map[byte]bool // its changes' statuses (A, D, M, R, T), and X for a mode change
	failures         []string      // why the tree differs, or which call failed
	calls            []replayCall
	turns            [][]replayCall // the calls of each answer, finish last (empty)
}

func (r replayResult) exact() bool { return len(r.failures) == 0 }

// gitOut runs git in dir and returns its output.
func gitOut(dir string, args ...string) ([]byte, error) { return replay.Git(dir, args...) }

// The names robust_test.go reads files of this repository with.
var splitKeep = replay.SplitKeep

type treeEntry struct{ mode, sha string }

func lsTree(repo, commit string) (map[string]treeEntry, error) {
	tree, err := replay.LsTree(repo, commit)
	m := make(map[string]treeEntry, len(tree))
	for p, e := range tree {
		m[p] = treeEntry{mode: e.Mode, sha: e.SHA}
	}
	return m, err
}

type blobStore struct{ *replay.Blobs }

func newBlobStore(repo string) (blobStore, error) {
	b, err := replay.NewBlobs(repo)
	return blobStore{b}, err
}

func (b blobStore) blob(sha string) ([]byte, error) { return b.Blob(sha) }
func (b blobStore) close()                          { b.Close() }

// replayer holds a directory kept equal to some tree of the repository.
type replayer struct {
	repo  string
	dir   string
	blobs *replay.Blobs
	have  map[string]replay.Entry // what dir holds, when known
	agent *Agent
	// runner, when set, answers the scripted model's run requests: a
	// commit that changes go.sum gets it from tidy (a kept run of
	// tidy), as bot run answers a request. Without it go.sum is
	// written with write_file.
	runner runner.Runner
	tidy   string
}

// sync makes r.dir hold the tree want, writing only what differs from what
// it holds.
func (r *replayer) sync(want map[string]replay.Entry) error {
	if r.have == nil {
		if err := os.RemoveAll(r.dir); err != nil {
			return err
		}
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return err
		}
		r.have = map[string]replay.Entry{}
	}
	for p := range r.have {
		if _, ok := want[p]; !ok {
			if err := os.Remove(filepath.Join(r.dir, p)); err != nil {
				return err
			}
		}
	}
	for p, e := range want {
		if r.have[p] == e {
			continue
		}
		full := filepath.Join(r.dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		_ = os.Remove(full)
		data, err := r.blobs.Blob(e.SHA)
		if err != nil {
			return err
		}
		switch e.Mode {
		case "120000":
			err = os.Symlink(string(data), full)
		case "100755":
			err = os.WriteFile(full, data, 0o755)
		case "160000": // a submodule: an empty directory, as git checks it out
			err = os.MkdirAll(full, 0o755)
		default:
			err = os.WriteFile(full, data, 0o644)
		}
		if err != nil {
			return err
		}
	}
	r.have = want
	return pruneEmptyDirs(r.dir)
}

// pruneEmptyDirs removes the directories that hold no file, as a git
// checkout has none.
func pruneEmptyDirs(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range slices.Backward(dirs) {
		if ents, err := os.ReadDir(d); err == nil && len(ents) == 0 {
			if err := os.Remove(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// replayOne replays commit (whose parent tree is parent) in r.dir, which
// already holds the parent's tree: the script's calls go through the
// agent's tools, answer by answer, and the tree they leave is compared
// with want, the commit's.
func (r *replayer) replayOne(ctx context.Context, parent, commit, subject string, want map[string]replay.Entry) (replayResult, error) {
	res := replayResult{commit: commit, subject: subject}
	s, err := replay.New(r.repo, r.blobs, parent, commit, subject)
	if err != nil {
		return res, err
	}
	if r.runner != nil {
		s.Tidy = &replay.Tidy{Command: r.tidy, Reason: "go.mod changed: bring go.sum in line with it",
			Look: func(p string) ([]byte, bool, error) {
				data, err := os.ReadFile(filepath.Join(r.dir, p))
				if errors.Is(err, fs.ErrNotExist) {
					return nil, false, nil
				}
				return data, err == nil, err
			}}
	}
	ws, err := openWorkspace(r.dir)
	if err != nil {
		return res, err
	}
	defer ws.Close()
	st := &State{}
	var results []string
	for {
		calls, err := s.Next(results)
		if err != nil {
			return res, err
		}
		if len(calls) == 0 {
			break
		}
		if calls[0].Name == replay.Finish {
			// finish costs a turn, not a tool result.
			res.turns = append(res.turns, nil)
			continue
		}
		results = nil
		var turn []replayCall
		for i, c := range calls {
			tc := toolCallOf(c.Name, c.Args)
			tc.ID = fmt.Sprintf("call_%d_%d", len(res.turns), i)
			out, _, _ := r.agent.runTool(toolEnv{ctx: ctx, ws: ws, st: st, callID: tc.ID, maxOutput: r.agent.cfg.MaxToolOutput}, tc)
			if st.Pending != nil {
				if out, err = r.resolve(ctx, st, tc); err != nil {
					return res, err
				}
			}
			rc := replayCall{name: c.Name, args: c.Args, result: out}
			res.calls = append(res.calls, rc)
			turn = append(turn, rc)
			results = append(results, out)
			if strings.HasPrefix(out, "error: ") {
				res.failures = append(res.failures, fmt.Sprintf("%s %s: %s", c.Name, c.Args, firstLine(out)))
			}
		}
		res.turns = append(res.turns, turn)
	}
	res.kinds, res.notExpressible, res.needsKept, res.skipped = s.Kinds, s.NotExpressible, s.NeedsKept, s.Skipped
	res.tidied, res.tidyNote = s.Tidied, s.TidyNote
	res.failures = append(s.Failures, res.failures...)

	got, err := replay.Snapshot(r.dir)
	if err != nil {
		return res, err
	}
	r.have = got
	if len(res.skipped) > 0 || len(res.failures) > 0 {
		r.have = nil // what dir holds is in doubt: the next sync starts anew
	}
	for p := range res.skipped {
		delete(got, p)
		delete(want, p)
	}
	if d := replay.TreeDiff(got, want); len(d) > 0 {
		res.failures = append(res.failures, "tree differs: "+strings.Join(d[:min(len(d), 5)], "; "))
	}
	return res, nil
}

// resolve answers st's pending run request, made by call tc, as bot run
// does (localrun's request): the command runs on an export of the
// workspace's current files, what it changed is kept in the workspace
// under the file tools' rules (KeepChanges), and the result goes to the
// conversation with Resolve. It returns that tool message.
func (r *replayer) resolve(ctx context.Context, st *State, tc openai.ToolCall) (string, error) {
	req := *st.Pending
	st.Messages = append(st.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{tc}})
	export := r.dir + ".run"
	defer os.RemoveAll(export)
	if err := exportFiles(r.dir, export); err != nil {
		return "", err
	}
	res, err := r.runner.Run(ctx, pullwright.RunSpec{Dir: export, Command: req.Command, KeepChanges: req.KeepChanges,
		Timeout: 5 * time.Minute, Labels: map[string]string{"pullwright.run": "replay"}})
	if err != nil {
		return "", fmt.Errorf("run %q: %w", req.Command, err)
	}
	if res.NotStarted {
		return "", fmt.Errorf("run %q did not start: %s", req.Command, res.Output)
	}
	result := RunResult(res.ExitCode, res.Output, res.Truncated, res.TimedOut, res.Duration)
	if req.KeepChanges {
		k, err := KeepChanges(st, r.dir, res.Changes, res.KeptNote)
		if err != nil {
			return "", err
		}
		result = WithKept(result, k)
	}
	if err := r.agent.Resolve(st, result); err != nil {
		return "", err
	}
	return st.Messages[len(st.Messages)-1].Content, nil
}

// exportFiles writes the files dir holds (bytes, executable bits,
// symbolic links) into a new directory to, as bot run exports the
// workspace's tree for a run: dir holds no .git and no file git would
// leave out.
func exportFiles(dir, to string) error {
	if err := os.RemoveAll(to); err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		dst := filepath.Join(to, rel)
		fi, err := d.Info()
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, dst)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, fi.Mode().Perm())
	})
}

// The script obeys the tools' limits: they must agree.
func TestReplayLimits(t *testing.T) {
	if replay.MaxReadLines != maxReadLines || replay.BinarySniffBytes != binarySniffBytes {
		t.Errorf("replay's limits %d lines, %d bytes; the tools' %d, %d",
			replay.MaxReadLines, replay.BinarySniffBytes, maxReadLines, binarySniffBytes)
	}
	for _, n := range []string{replay.ReadFile, replay.WriteFile, replay.EditFile, replay.DeleteFile,
		replay.MoveFile, replay.SetExecutable, replay.Run, replay.Finish} {
		if !slices.ContainsFunc(toolDefs(), func(d openai.Tool) bool { return d.Function.Name == n }) {
			t.Errorf("replay calls %s, which is no tool", n)
		}
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// replayCommits replays commits (oldest first) of repo in a directory of
// its own. With run, a commit that changes go.sum asks run for the
// command tidy with its changes kept (see replayer).
func replayCommits(t testing.TB, repo string, commits []string, run runner.Runner, tidy string) []replayResult {
	t.Helper()
	blobs, err := replay.NewBlobs(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	r := &replayer{repo: repo, dir: filepath.Join(t.TempDir(), "w"), blobs: blobs, agent: newTestAgent(t, Config{}),
		runner: run, tidy: tidy}
	var out []replayResult
	for _, c := range commits {
		parent := replay.EmptyTree
		if p, err := gitOut(repo, "rev-parse", "--verify", "-q", c+"^"); err == nil {
			parent = strings.TrimSpace(string(p))
		}
		before, err := replay.LsTree(repo, parent)
		if err != nil {
			t.Fatal(err)
		}
		after, err := replay.LsTree(repo, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.sync(before); err != nil {
			t.Fatal(err)
		}
		subj, _ := gitOut(repo, "log", "-1", "--format=%s", c)
		res, err := r.replayOne(context.Background(), parent, c, strings.TrimSpace(string(subj)), after)
		if err != nil {
			t.Fatalf("replay %s: %v", c, err)
		}
		out = append(out, res)
	}
	return out
}

// replayCost is what replaying one commit cost a model.
type replayCost struct {
	calls, edits, turns int
	// toolTokens is the tool calls' arguments and results over 4;
	// briefTokens adds the fixed part (system prompt and tool
	// definitions) once per turn; promptTokens is what the requests really
	// carry: every turn sends the fixed part and all the calls and results
	// before it.
	toolTokens, briefTokens, promptTokens int
}

// fixedPromptBytes is what every request of a fix carries before any
// message of the task: the system prompt and the tool definitions.
func fixedPromptBytes(t testing.TB) int {
	defs, err := json.Marshal(toolDefs())
	if err != nil {
		t.Fatal(err)
	}
	return len(systemPrompt) + len(defs)
}

func costOf(r replayResult, fixed int) replayCost {
	var c replayCost
	history := 0
	for _, turn := range r.turns {
		c.turns++
		c.promptTokens += (fixed + history) / 4
		for _, call := range turn {
			history += len(call.name) + len(call.args) + len(call.result)
			c.calls++
			if call.name == ToolEditFile {
				c.edits++
			}
		}
	}
	c.toolTokens = history / 4
	c.briefTokens = c.toolTokens + c.turns*fixed/4
	return c
}

// replaySummary renders the figures of a replay.
func replaySummary(results []replayResult, fixed, maxTurns int) string {
	var b strings.Builder
	var exact, expressible, kept, keptExact, overBudget int
	var costs []replayCost
	for _, r := range results {
		if r.needsKept {
			kept++
			if r.exact() {
				keptExact++
			}
		}
		if r.notExpressible != "" {
			continue
		}
		expressible++
		if r.exact() {
			exact++
		}
		c := costOf(r, fixed)
		costs = append(costs, c)
		if c.turns > maxTurns {
			overBudget++
		}
	}
	fmt.Fprintf(&b, "commits: %d; not expressible: %d; replayed exactly: %d of %d expressible (%.1f%%)\n",
		len(results), len(results)-expressible, exact, expressible, 100*float64(exact)/float64(max(expressible, 1)))
	fmt.Fprintf(&b, "change go.sum (need a kept command): %d, of them exact (the rest, where not expressible): %d\n", kept, keptExact)
	b.WriteString(tidySummary(results))
	if kept > 0 {
		var sum replayCost
		for _, r := range results {
			if r.needsKept {
				c := costOf(r, fixed)
				sum.calls, sum.turns, sum.toolTokens, sum.promptTokens = sum.calls+c.calls, sum.turns+c.turns,
					sum.toolTokens+c.toolTokens, sum.promptTokens+c.promptTokens
			}
		}
		n := float64(kept)
		fmt.Fprintf(&b, "  per commit that changes go.sum: mean %.1f tool calls, %.1f turns, %.0f tool tokens, %.0f prompt tokens\n",
			float64(sum.calls)/n, float64(sum.turns)/n, float64(sum.toolTokens)/n, float64(sum.promptTokens)/n)
	}
	fmt.Fprintf(&b, "fixed prompt (system prompt + tool definitions): %d bytes, ~%d tokens a turn\n", fixed, fixed/4)
	stat := func(name string, f func(replayCost) int) {
		v := make([]int, len(costs))
		sum := 0
		for i, c := range costs {
			v[i] = f(c)
			sum += v[i]
		}
		slices.Sort(v)
		if len(v) == 0 {
			return
		}
		q := func(p float64) int { return v[min(len(v)-1, int(p*float64(len(v))))] }
		fmt.Fprintf(&b, "%-36s mean %9.1f  p50 %8d  p90 %8d  max %8d\n", name, float64(sum)/float64(len(v)), q(.5), q(.9), v[len(v)-1])
	}
	stat("tool calls per patch (reads incl.)", func(c replayCost) int { return c.calls })
	stat("edit_file calls per patch", func(c replayCost) int { return c.edits })
	stat("turns per patch (finish incl.)", func(c replayCost) int { return c.turns })
	stat("tool tokens per patch (bytes/4)", func(c replayCost) int { return c.toolTokens })
	stat("+ fixed part each turn", func(c replayCost) int { return c.briefTokens })
	stat("prompt tokens, history resent", func(c replayCost) int { return c.promptTokens })
	fmt.Fprintf(&b, "patches over the turn budget of %d: %d\n", maxTurns, overBudget)
	for _, k := range []struct {
		kind byte
		name string
	}{{'A', "add a file"}, {'D', "delete a file"}, {'R', "rename a file"}, {'X', "change a mode"}, {'T', "change a type"}, {'M', "modify a file"}} {
		n, ok := 0, 0
		for _, r := range results {
			if r.kinds[k.kind] {
				n++
				if r.exact() {
					ok++
				}
			}
		}
		fmt.Fprintf(&b, "commits that %s: %d, replayed exactly (the rest, where not expressible): %d\n", k.name, n, ok)
	}
	calls := map[string]int{}
	for _, r := range results {
		for _, c := range r.calls {
			calls[c.name]++
		}
	}
	for _, name := range slices.Sorted(mapsKeys(calls)) {
		fmt.Fprintf(&b, "%s calls: %d\n", name, calls[name])
	}
	for _, r := range results {
		if c := costOf(r, fixed); c.turns > maxTurns {
			fmt.Fprintf(&b, "over the turn budget %.12s %s: %d turns, %d calls (%d edits), ~%d prompt tokens\n",
				r.commit, r.subject, c.turns, c.calls, c.edits, c.promptTokens)
		}
	}
	for _, r := range results {
		switch {
		case r.notExpressible != "":
			rest := "the rest replayed exactly"
			if !r.exact() {
				rest = "the rest FAILED: " + strings.Join(r.failures, " | ")
			}
			fmt.Fprintf(&b, "not expressible %.12s %s: %s; %s\n", r.commit, r.subject, r.notExpressible, rest)
		case !r.exact():
			fmt.Fprintf(&b, "FAILED %.12s %s: %s\n", r.commit, r.subject, strings.Join(r.failures, " | "))
		}
	}
	return b.String()
}

// tidySummary renders how the commits that change go.sum got it: from a
// kept run of tidy alone, or written with write_file after it, and why.
func tidySummary(results []replayResult) string {
	var b strings.Builder
	var asked, exact, notAsked int
	type why struct{ outcome, note string }
	fell := map[why][]string{}
	for _, r := range results {
		switch {
		case !r.needsKept:
		case r.tidied == "":
			notAsked++
		default:
			asked++
			if r.tidied == replay.TidyExact {
				exact++
			} else {
				w := why{r.tidied, r.tidyNote}
				fell[w] = append(fell[w], r.commit[:min(len(r.commit), 7)])
			}
		}
	}
	if notAsked > 0 {
		fmt.Fprintf(&b, "go.sum written with write_file, no run asked: %d\n", notAsked)
	}
	if asked == 0 {
		return b.String()
	}
	failed, differed := 0, 0
	for w, cs := range fell {
		if w.outcome == replay.TidyFailed {
			failed += len(cs)
		} else {
			differed += len(cs)
		}
	}
	fmt.Fprintf(&b, "go.sum from a kept run of tidy: %d asked; reproduced exactly by it: %d; written with write_file after it: %d "+
		"(tidy failed: %d; tidy's go.mod or go.sum differed: %d)\n", asked, exact, asked-exact, failed, differed)
	ws := slices.SortedFunc(maps.Keys(fell), func(a, b why) int { return strings.Compare(a.outcome+a.note, b.outcome+b.note) })
	for _, w := range ws {
		fmt.Fprintf(&b, "  tidy %s (%s): %d: %s\n", w.outcome, w.note, len(fell[w]), strings.Join(fell[w], " "))
	}
	return b.String()
}

// fakeTidy is a runner whose every command is a made-up tidy, quick and
// without a module cache: go.sum gets a line per module go.mod requires,
// and a go.mod that requires example.com/broken fails, as tidy fails
// offline for a module the cache lacks.
type fakeTidy struct{}

func (fakeTidy) Run(_ context.Context, s pullwright.RunSpec) (pullwright.RunResult, error) {
	mod, err := os.ReadFile(filepath.Join(s.Dir, "go.mod"))
	if err != nil {
		return pullwright.RunResult{ExitCode: 1, Output: "go: go.mod file not found\n"}, nil
	}
	if strings.Contains(string(mod), "example.com/broken") {
		return pullwright.RunResult{ExitCode: 1, KeptNote: "the command did not exit 0, so nothing it changed is kept",
			Output: "go: finding module for package example.com/broken\n\texample.com/broken@v1.0.0: module lookup disabled by GOPROXY=off\n"}, nil
	}
	res := pullwright.RunResult{Duration: time.Second}
	if sum := fakeSum(string(mod)); readOr(filepath.Join(s.Dir, "go.sum")) != sum {
		res.Changes = []pullwright.FileChange{{Path: "go.sum", Content: []byte(sum)}}
	}
	return res, nil
}

// fakeSum is the go.sum fakeTidy writes for mod.
func fakeSum(mod string) string {
	var b strings.Builder
	for _, l := range strings.Split(mod, "\n") {
		if f := strings.Fields(strings.TrimPrefix(l, "require ")); len(f) == 2 && strings.HasPrefix(f[1], "v") {
			fmt.Fprintf(&b, "%s %s h1:%s=\n", f[0], f[1], f[0])
		}
	}
	return b.String()
}

func readOr(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// TestReplayHarness replays a handful of commits made in a new repository,
// each a shape of change the tools must express, so that the harness
// itself is tested wherever the tests run. go.sum comes from a kept run
// of fakeTidy.
func TestReplayHarness(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := gitOut(repo, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
			"-c", "core.autocrlf=false", "-c", "commit.gpgsign=false"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(p, content string, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(repo, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	var body strings.Builder
	for i := range 30 {
		fmt.Fprintf(&body, "func f%d() {\n\treturn nil\n}\n\n", i)
	}
	type step struct {
		name string
		do   func()
	}
	steps := []step{
		{"root: new files", func() {
			write("main.go", "package main\n\n"+body.String(), 0o644)
			write("lib/util.go", "package lib\n\nfunc A() int {\n\treturn 1\n}\n", 0o644)
			write("run.sh", "#!/bin/sh\necho hi\n", 0o755)
			write("win.txt", "one\r\ntwo\r\nthree\r\n", 0o644)
			write("tail.txt", "a\nb", 0o644)
			write("gone.txt", "bye\n", 0o644)
			write("quote.txt", "[showing lines 1-2 of 9; use start_line 1 to read on]\nx\n", 0o644)
			write("go.mod", "module example.com/m\n\ngo 1.22\n\nrequire example.com/a v1.0.0\n", 0o644)
			write("go.sum", fakeSum(readFile(t, filepath.Join(repo, "go.mod"))), 0o644)
		}},
		{"a delete", func() { os.Remove(filepath.Join(repo, "gone.txt")) }},
		{"a rename with an edit", func() {
			os.Remove(filepath.Join(repo, "lib/util.go"))
			write("internal/util/util.go", "package lib\n\nfunc A() int {\n\treturn 2\n}\n", 0o644)
		}},
		{"a mode change", func() {
			os.Chmod(filepath.Join(repo, "run.sh"), 0o644)
			write("tool.sh", "#!/bin/sh\n", 0o755)
		}},
		{"a CRLF file, and a file that quotes read_file's footer", func() {
			write("win.txt", "one\r\n2\r\nthree\r\nfour\r\n", 0o644)
			write("quote.txt", "[showing lines 1-2 of 9; use start_line 1 to read on]\ny\n", 0o644)
		}},
		{"an insertion at EOF without a final newline", func() { write("tail.txt", "a\nb\nc", 0o644) }},
		{"repeated lines: context must grow", func() {
			write("main.go", "package main\n\n"+strings.Replace(body.String(), "func f7() {\n\treturn nil\n", "func f7() {\n\treturn 7\n", 1)+
				"// the end\n", 0o644)
		}},
		{"a binary file, not expressible, beside an edit", func() {
			write("logo.png", "\x89PNG\r\n\x1a\n\x00\x00", 0o644)
			write("tail.txt", "a\nB\nc", 0o644)
		}},
		{"an insertion at the top and go.sum", func() {
			write("main.go", "// Package main.\n"+readFile(t, filepath.Join(repo, "main.go")), 0o644)
			write("go.mod", "module example.com/m\n\ngo 1.22\n\nrequire (\n\texample.com/a v1.0.0\n\texample.com/b v1.0.0\n)\n", 0o644)
			write("go.sum", fakeSum(readFile(t, filepath.Join(repo, "go.mod"))), 0o644)
		}},
		{"go.sum that tidy does not write", func() {
			write("go.sum", readFile(t, filepath.Join(repo, "go.sum"))+"example.com/old v0.1.0 h1:z=\n", 0o644)
		}},
		{"go.sum of a go.mod that tidy fails on", func() {
			write("go.mod", readFile(t, filepath.Join(repo, "go.mod"))+"\nrequire example.com/broken v1.0.0\n", 0o644)
			write("go.sum", fakeSum(readFile(t, filepath.Join(repo, "go.mod"))), 0o644)
		}},
	}
	// How the kept tidy does, by step.
	tidied := map[string]string{
		"root: new files":                       replay.TidyExact,
		"an insertion at the top and go.sum":    replay.TidyExact,
		"go.sum that tidy does not write":       replay.TidyDiffered,
		"go.sum of a go.mod that tidy fails on": replay.TidyFailed,
	}
	var commits []string
	for _, s := range steps {
		s.do()
		git("add", "-A")
		git("commit", "-q", "-m", s.name)
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	results := replayCommits(t, repo, commits, fakeTidy{}, "go mod tidy")
	t.Log("\n" + replaySummary(results, fixedPromptBytes(t), DefaultMaxTurns))
	for i, r := range results {
		if !r.exact() {
			t.Errorf("%s: not replayed exactly: %v", steps[i].name, r.failures)
		}
		if binary := strings.HasPrefix(steps[i].name, "a binary file"); binary != (r.notExpressible != "") {
			t.Errorf("%s: not expressible = %q", steps[i].name, r.notExpressible)
		}
		if want := tidied[steps[i].name] != ""; r.needsKept != want {
			t.Errorf("%s: needs a kept command = %v, want %v", steps[i].name, r.needsKept, want)
		}
		if r.tidied != tidied[steps[i].name] {
			t.Errorf("%s: the kept tidy %q (%s), want %q", steps[i].name, r.tidied, r.tidyNote, tidied[steps[i].name])
		}
		// The run costs a turn; a fallback one more.
		runs := 0
		for _, c := range r.calls {
			if c.name == ToolRun {
				runs++
				if !strings.HasPrefix(c.result, "exit code ") {
					t.Errorf("%s: the run's result is %q", steps[i].name, c.result)
				}
			}
		}
		if want := min(1, len(tidied[steps[i].name])); runs != want {
			t.Errorf("%s: %d runs, want %d", steps[i].name, runs, want)
		}
	}
	if r := results[len(results)-1]; !strings.Contains(r.tidyNote, "module lookup disabled by GOPROXY=off") {
		t.Errorf("a failed tidy's note is %q, want its last line of output", r.tidyNote)
	}
	used := map[string]bool{}
	for _, r := range results {
		for _, c := range r.calls {
			used[c.name] = true
		}
	}
	for _, n := range []string{ToolWriteFile, ToolEditFile, ToolDeleteFile, ToolMoveFile, ToolSetExecutable, ToolReadFile, ToolRun} {
		if !used[n] {
			t.Errorf("the replay never used %s", n)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// localTidy is the runner and the command that get go.sum in the history
// replay: `go mod tidy` run for real by the local runner, offline, on
// this machine's module cache (the local runner ignores RunSpec.Env, so
// the settings are in the command). Without a go command, or with
// PULLWRIGHT_REPLAY_TIDY=off, it is nil, and go.sum is written with
// write_file.
func localTidy(t *testing.T) (runner.Runner, string) {
	if os.Getenv("PULLWRIGHT_REPLAY_TIDY") == "off" {
		t.Log("PULLWRIGHT_REPLAY_TIDY=off: go.sum is written with write_file")
		return nil, ""
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Logf("no go command (%v): go.sum is written with write_file", err)
		return nil, ""
	}
	out, err := exec.Command(goBin, "env", "GOMODCACHE").Output()
	cache := strings.TrimSpace(string(out))
	if err != nil || cache == "" || strings.ContainsAny(cache, " \t\n'\"$`\\") {
		t.Logf("no module cache to use (%q, %v): go.sum is written with write_file", cache, err)
		return nil, ""
	}
	return &runner.Local{TempDir: t.TempDir(), Path: filepath.Dir(goBin) + ":" + runner.DefaultPath, Logger: slog.New(slog.DiscardHandler)},
		"GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GOMODCACHE=" + cache + " go mod tidy"
}

// TestReplayHistory replays this repository's own history. It takes
// minutes, so it runs only when PULLWRIGHT_REPLAY says how many of the
// newest commits (or "all"); every commit that deletes, renames or changes
// the mode of a file or changes go.sum is replayed as well. A commit that
// changes go.sum asks for `go mod tidy` with its changes kept, and runs it
// (localTidy).
//
//	PULLWRIGHT_REPLAY=200 go test -run TestReplayHistory -v ./agent/
func TestReplayHistory(t *testing.T) {
	n := os.Getenv("PULLWRIGHT_REPLAY")
	if n == "" {
		t.Skip("set PULLWRIGHT_REPLAY=200 (or all) to replay this repository's history")
	}
	top, err := gitOut(".", "rev-parse", "--show-toplevel")
	if err != nil {
		t.Skipf("not in a git repository: %v", err)
	}
	repo := strings.TrimSpace(string(top))
	if sh, _ := gitOut(repo, "rev-parse", "--is-shallow-repository"); strings.TrimSpace(string(sh)) == "true" {
		t.Log("the clone is shallow: only the history it has is replayed")
	}
	out, err := gitOut(repo, "log", "--no-merges", "--format=%H")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Fields(string(out))
	want := len(all)
	if n != "all" {
		if want, err = strconv.Atoi(n); err != nil {
			t.Fatalf("PULLWRIGHT_REPLAY=%q: want a number or all", n)
		}
	}
	pick := map[string]bool{}
	for _, c := range all[:min(want, len(all))] {
		pick[c] = true
	}
	// Every commit that deletes, renames or changes the mode of a file,
	// or changes go.sum.
	raw, err := gitOut(repo, "log", "--no-merges", "-M", "--format=@%H", "--raw", "--no-abbrev")
	if err != nil {
		t.Fatal(err)
	}
	cur := ""
	for _, l := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(l, "@"); ok {
			cur = h
			continue
		}
		meta, p, ok := strings.Cut(l, "\t")
		f := strings.Fields(strings.TrimPrefix(meta, ":"))
		if !ok || len(f) != 5 {
			continue
		}
		status := f[4][0]
		modeChange := f[0] != f[1] && status != 'A' && status != 'D'
		if status == 'D' || status == 'R' || status == 'T' || modeChange || p == "go.sum" || strings.HasSuffix(p, "\tgo.sum") {
			pick[cur] = true
		}
	}
	var commits []string
	for _, c := range slices.Backward(all) {
		if pick[c] {
			commits = append(commits, c)
		}
	}
	run, tidy := localTidy(t)
	results := replayCommits(t, repo, commits, run, tidy)
	summary := replaySummary(results, fixedPromptBytes(t), DefaultMaxTurns)
	t.Log("\n" + summary)
	if p := os.Getenv("PULLWRIGHT_REPLAY_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(summary), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range results {
		if r.notExpressible == "" && !r.exact() {
			t.Errorf("%.12s %s: not replayed exactly: %s", r.commit, r.subject, strings.Join(r.failures, " | "))
		}
	}
}
