package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The oracle replay (issue 40, "How we will know"): real commits replayed
// through the agent's tools by a scripted model that does what a careful
// model would, and the tree at the end compared with the commit's, bytes,
// executable bits and the set of paths. It measures whether the tools can
// express the patches a repository really gets, and what that costs in
// calls, turns and tokens; not whether a model finds the patch.
//
// The scripted model, per commit: it reads every file it will edit
// (read_file, window by window), then in one answer deletes (delete_file),
// moves (move_file, git's rename detection), writes new files and go.sum
// (write_file) and sets modes (set_executable); then for each modified
// file one answer with an edit_file per hunk of `git diff -U0`, bottom-up,
// each old_text the hunk's lines grown one line at a time (before, then
// after) until it occurs once in the file; an insertion anchors on the line
// before it (or after it, at the top). Then it calls finish.

// replayCommit is one commit's change as the replay sees it.
type replayChange struct {
	status           byte // A, D, M, R, T (git diff-tree --raw)
	oldMode, newMode string
	oldSHA, newSHA   string
	oldPath, newPath string
}

// replayCall is one tool call the scripted model made, and its answer.
type replayCall struct {
	name, args, result string
}

// replayResult is what replaying one commit gave.
type replayResult struct {
	commit, subject string
	// notExpressible, when set, is why the tools cannot write this commit
	// (a binary file, text that is not UTF-8, a symlink): the replay still
	// runs and compares the rest, but the commit counts apart.
	notExpressible string
	// needsKept: the commit changes go.sum, which a careful model gets from
	// `go mod tidy` run with its changes kept; the replay writes it instead.
	needsKept bool
	// skipped are the paths the tools cannot write, left out of the
	// comparison.
	skipped  map[string]bool
	kinds    map[byte]bool // its changes' statuses (A, D, M, R, T), and X for a mode change
	failures []string      // why the tree differs, or which call failed
	calls    []replayCall
	turns    [][]replayCall // the calls of each answer, finish last (empty)
}

func (r replayResult) exact() bool { return len(r.failures) == 0 }

// git runs git in dir and returns its output.
func gitOut(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// blobStore reads git objects through one `git cat-file --batch`.
type blobStore struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func newBlobStore(repo string) (*blobStore, error) {
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir = repo
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start git cat-file: %w", err)
	}
	return &blobStore{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

func (b *blobStore) close() {
	b.in.Close()
	_ = b.cmd.Wait()
}

func (b *blobStore) blob(sha string) ([]byte, error) {
	if _, err := fmt.Fprintln(b.in, sha); err != nil {
		return nil, err
	}
	head, err := b.out.ReadString('\n')
	if err != nil {
		return nil, err
	}
	f := strings.Fields(head)
	if len(f) != 3 {
		return nil, fmt.Errorf("cat-file %s: %q", sha, head)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return nil, err
	}
	data := make([]byte, n+1) // and the newline after it
	if _, err := io.ReadFull(b.out, data); err != nil {
		return nil, err
	}
	return data[:n], nil
}

// treeEntry is a file of a git tree.
type treeEntry struct{ mode, sha string }

func lsTree(repo, commit string) (map[string]treeEntry, error) {
	out, err := gitOut(repo, "ls-tree", "-r", "-z", "--full-tree", commit)
	if err != nil {
		return nil, err
	}
	m := map[string]treeEntry{}
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("ls-tree: %q", rec)
		}
		m[p] = treeEntry{mode: f[0], sha: f[2]}
	}
	return m, nil
}

// replayer holds a directory kept equal to some tree of the repository.
type replayer struct {
	repo  string
	dir   string
	blobs *blobStore
	have  map[string]treeEntry // what dir holds, when known
	agent *Agent
}

// sync makes r.dir hold the tree want, writing only what differs from what
// it holds.
func (r *replayer) sync(want map[string]treeEntry) error {
	if r.have == nil {
		if err := os.RemoveAll(r.dir); err != nil {
			return err
		}
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return err
		}
		r.have = map[string]treeEntry{}
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
		data, err := r.blobs.blob(e.sha)
		if err != nil {
			return err
		}
		switch e.mode {
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

// snapshot is the tree dir holds: each file's git mode and blob id.
func snapshot(dir string) (map[string]treeEntry, error) {
	m := map[string]treeEntry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var data []byte
		mode := "100644"
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			data, mode = []byte(t), "120000"
		default:
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
			if fi.Mode().Perm()&0o100 != 0 {
				mode = "100755"
			}
		}
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(data))
		h.Write(data)
		m[rel] = treeEntry{mode: mode, sha: hex.EncodeToString(h.Sum(nil))}
		return nil
	})
	return m, err
}

// treeDiff names how got differs from want.
func treeDiff(got, want map[string]treeEntry) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, p+": missing")
		case g.sha != w.sha:
			out = append(out, p+": content differs")
		case g.mode != w.mode:
			out = append(out, fmt.Sprintf("%s: mode %s, want %s", p, g.mode, w.mode))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, p+": should not exist")
		}
	}
	slices.Sort(out)
	return out
}

// emptyTree is git's empty tree, the parent of a root commit.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

func commitChanges(repo, parent, commit string) ([]replayChange, error) {
	out, err := gitOut(repo, "diff-tree", "-r", "-z", "-M", "--raw", parent, commit)
	if err != nil {
		return nil, err
	}
	recs := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	var cs []replayChange
	for i := 0; i < len(recs); i++ {
		meta := recs[i]
		if meta == "" {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(meta, ":"))
		if len(f) != 5 {
			return nil, fmt.Errorf("diff-tree: %q", meta)
		}
		c := replayChange{status: f[4][0], oldMode: f[0], newMode: f[1], oldSHA: f[2], newSHA: f[3]}
		i++
		c.oldPath, c.newPath = recs[i], recs[i]
		if c.status == 'R' || c.status == 'C' {
			i++
			c.newPath = recs[i]
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// hunk is one hunk of `git diff -U0`: lines [oldStart, oldStart+oldLen)
// of the old file become [newStart, newStart+newLen) of the new (1-based;
// a zero-length range starts after its line).
type hunk struct{ oldStart, oldLen, newStart, newLen int }

var hunkHeader = regexp.MustCompile(`(?m)^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

func diffHunks(repo, oldSHA, newSHA string) ([]hunk, error) {
	out, err := gitOut(repo, "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv",
		"--diff-algorithm=myers", "--text", oldSHA, newSHA)
	if err != nil {
		return nil, err
	}
	var hs []hunk
	for _, m := range hunkHeader.FindAllStringSubmatch(string(out), -1) {
		n := func(s string) int {
			if s == "" {
				return 1
			}
			v, _ := strconv.Atoi(s)
			return v
		}
		hs = append(hs, hunk{n(m[1]), n(m[2]), n(m[3]), n(m[4])})
	}
	return hs, nil
}

// modelView is a file's text as the tools show it and take it: without a
// byte order mark, and with "\n" line ends when all its line ends are
// "\r\n". crlf and bom say which.
func modelView(data string) (text string, crlf, bomb bool) {
	if strings.HasPrefix(data, "\ufeff") {
		data, bomb = data[3:], true
	}
	if n := strings.Count(data, "\n"); n > 0 && strings.Count(data, "\r\n") == n {
		data, crlf = strings.ReplaceAll(data, "\r\n", "\n"), true
	}
	return data, crlf, bomb
}

// splitKeep splits text into lines that keep their "\n".
func splitKeep(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// minimalEdit is the edit of hunk h a careful model sends: the hunk's old
// lines of content (its current text, as the tools show it) grown one line
// at a time, before and then after, until they occur once, and the same
// lines with the hunk's new lines in their place.
func minimalEdit(content string, h hunk, newLines []string) (old, repl string, ok bool) {
	lines := splitKeep(content)
	a := h.oldStart - 1 // the old lines are lines[a:b]
	if h.oldLen == 0 {
		a = h.oldStart // an insertion after line oldStart
	}
	b := a + h.oldLen
	ins := strings.Join(newLines, "")
	lo, hi := a, b
	if lo == hi {
		// A pure insertion anchors on the line before it, or after it at
		// the top of the file.
		switch {
		case lo > 0:
			lo--
		case hi < len(lines):
			hi++
		default:
			return "", "", false // an empty file: write_file it
		}
	}
	offset := func(i int) int {
		n := 0
		for _, l := range lines[:i] {
			n += len(l)
		}
		return n
	}
	for before := true; ; before = !before {
		old = strings.Join(lines[lo:hi], "")
		if strings.Count(content, old) == 1 && strings.Index(content, old) == offset(lo) {
			break
		}
		if before && lo > 0 || hi == len(lines) {
			lo--
		} else {
			hi++
		}
	}
	repl = strings.Join(lines[lo:a], "") + ins + strings.Join(lines[b:hi], "")
	return old, repl, true
}

// replayOne replays commit (whose parent tree is parent) in r.dir, which
// already holds the parent's tree.
func (r *replayer) replayOne(ctx context.Context, parent, commit string, want map[string]treeEntry) (replayResult, error) {
	res := replayResult{commit: commit}
	changes, err := commitChanges(r.repo, parent, commit)
	if err != nil {
		return res, err
	}
	res.kinds = map[byte]bool{}
	for _, c := range changes {
		res.kinds[c.status] = true
		if c.status != 'A' && c.status != 'D' && c.oldMode != c.newMode {
			res.kinds['X'] = true
		}
	}
	ws, err := openWorkspace(r.dir)
	if err != nil {
		return res, err
	}
	defer ws.Close()
	st := &State{}
	call := func(turn *[]replayCall, name string, v any) string {
		b, _ := json.Marshal(v)
		out, _, _ := r.agent.runTool(toolEnv{ctx: ctx, ws: ws, st: st, maxOutput: r.agent.cfg.MaxToolOutput},
			toolCallOf(name, string(b)))
		c := replayCall{name: name, args: string(b), result: out}
		res.calls = append(res.calls, c)
		*turn = append(*turn, c)
		if strings.HasPrefix(out, "error: ") {
			res.failures = append(res.failures, fmt.Sprintf("%s %s: %s", name, b, firstLine(out)))
		}
		return out
	}
	res.skipped = map[string]bool{}
	unexpressible := func(why, p string) {
		res.skipped[p] = true
		if res.notExpressible == "" {
			res.notExpressible = why
		}
	}
	textOf := func(sha, p string) (string, bool, error) {
		data, err := r.blobs.blob(sha)
		if err != nil {
			return "", false, err
		}
		switch {
		case bytes.IndexByte(data[:min(len(data), binarySniffBytes)], 0) >= 0:
			unexpressible("binary file "+p, p)
			return "", false, nil
		case !utf8.Valid(data):
			unexpressible("text that is not UTF-8 in "+p, p)
			return "", false, nil
		}
		return string(data), true, nil
	}

	// Reads: every file to be edited, window by window, all files at once.
	var edits []replayChange
	for _, c := range changes {
		if (c.status == 'M' || c.status == 'R') && c.oldSHA != c.newSHA && c.newPath != "go.sum" {
			edits = append(edits, c)
		}
		if c.newPath == "go.sum" && c.status != 'D' || c.oldPath == "go.sum" && c.status == 'R' {
			res.needsKept = true
		}
	}
	next := map[string]int{}
	for _, c := range edits {
		next[c.oldPath] = 1
	}
	for rounds := 0; len(next) > 0; rounds++ {
		if rounds == maxReadRounds {
			res.failures = append(res.failures, fmt.Sprintf("reading %v took more than %d windows", slices.Sorted(mapsKeys(next)), rounds))
			break
		}
		var turn []replayCall
		for _, p := range slices.Sorted(mapsKeys(next)) {
			out := call(&turn, ToolReadFile, map[string]any{"path": p, "start_line": next[p], "max_lines": maxReadLines})
			// The footer is the last line that starts with "[": the
			// file's own lines start with their numbers, and may hold
			// the footer's words (this package's tests do).
			footer := out[strings.LastIndex(out, "\n[")+1:]
			if m := readOn.FindStringSubmatch(footer); m != nil {
				next[p], _ = strconv.Atoi(m[1])
			} else {
				delete(next, p)
			}
		}
		res.turns = append(res.turns, turn)
	}

	// One answer: deletes, moves, new files, go.sum and modes.
	var turn []replayCall
	for _, c := range changes {
		if c.status == 'D' || c.status == 'T' {
			call(&turn, ToolDeleteFile, map[string]any{"path": c.oldPath})
		}
	}
	moves := slices.DeleteFunc(slices.Clone(changes), func(c replayChange) bool { return c.status != 'R' })
	for len(moves) > 0 {
		// A move waits for its destination to be moved away first.
		free := slices.IndexFunc(moves, func(m replayChange) bool {
			return !slices.ContainsFunc(moves, func(o replayChange) bool { return o.oldPath == m.newPath })
		})
		if free < 0 {
			res.failures = append(res.failures, "renames form a cycle: move_file cannot swap paths")
			free = 0
		}
		m := moves[free]
		call(&turn, ToolMoveFile, map[string]any{"from": m.oldPath, "to": m.newPath})
		moves = slices.Delete(moves, free, free+1)
	}
	for _, c := range changes {
		write := c.status == 'A' || c.status == 'T' || c.status == 'C'
		if c.newPath == "go.sum" && c.status != 'D' && c.oldSHA != c.newSHA {
			write = true
		}
		if !write {
			continue
		}
		switch c.newMode {
		case "120000":
			unexpressible("symlink "+c.newPath, c.newPath)
			continue
		case "160000":
			unexpressible("submodule "+c.newPath, c.newPath)
			continue
		}
		text, ok, err := textOf(c.newSHA, c.newPath)
		if err != nil {
			return res, err
		}
		if ok {
			call(&turn, ToolWriteFile, map[string]any{"path": c.newPath, "content": text})
		}
	}
	for _, c := range changes {
		if c.status == 'D' {
			continue
		}
		oldExec := c.oldMode == "100755"
		if c.status == 'A' || c.status == 'T' || c.status == 'C' {
			oldExec = false
		}
		if newExec := c.newMode == "100755"; newExec != oldExec {
			call(&turn, ToolSetExecutable, map[string]any{"path": c.newPath, "executable": newExec})
		}
	}
	if len(turn) > 0 {
		res.turns = append(res.turns, turn)
	}

	// One answer per modified file: its hunks, bottom-up.
	for _, c := range edits {
		if c.oldMode == "120000" || c.newMode == "120000" {
			unexpressible("symlink "+c.newPath, c.newPath)
			continue
		}
		newText, ok, err := textOf(c.newSHA, c.newPath)
		if err != nil {
			return res, err
		}
		if _, ok2, err := textOf(c.oldSHA, c.oldPath); err != nil {
			return res, err
		} else if !ok || !ok2 {
			continue
		}
		newView, newCRLF, newBOM := modelView(newText)
		hunks, err := diffHunks(r.repo, c.oldSHA, c.newSHA)
		if err != nil {
			return res, err
		}
		newLines := splitKeep(newView)
		var turn []replayCall
		for _, h := range slices.Backward(hunks) {
			data, err := os.ReadFile(filepath.Join(r.dir, c.newPath))
			if err != nil {
				res.failures = append(res.failures, fmt.Sprintf("%s: %v", c.newPath, err))
				break
			}
			cur, crlf, bomb := modelView(string(data))
			if crlf != newCRLF || bomb != newBOM {
				res.failures = append(res.failures, c.newPath+": the commit changes its line ends or byte order mark, "+
					"which edit_file and write_file keep")
				break
			}
			old, repl, ok := minimalEdit(cur, h, newLines[h.newStart-1+boolInt(h.newLen == 0):][:h.newLen])
			if !ok {
				call(&turn, ToolWriteFile, map[string]any{"path": c.newPath, "content": newText})
				break
			}
			call(&turn, ToolEditFile, map[string]any{"path": c.newPath, "old_text": old, "new_text": repl})
		}
		res.turns = append(res.turns, turn)
	}
	res.turns = append(res.turns, nil) // finish

	got, err := snapshot(r.dir)
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
	if d := treeDiff(got, want); len(d) > 0 {
		res.failures = append(res.failures, "tree differs: "+strings.Join(d[:min(len(d), 5)], "; "))
	}
	return res, nil
}

// maxReadRounds bounds the windows of one file the scripted model reads.
const maxReadRounds = 200

var readOn = regexp.MustCompile(`use start_line (\d+) to read on\]`)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
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
// its own.
func replayCommits(t testing.TB, repo string, commits []string) []replayResult {
	t.Helper()
	blobs, err := newBlobStore(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.close()
	r := &replayer{repo: repo, dir: filepath.Join(t.TempDir(), "w"), blobs: blobs, agent: newTestAgent(t, Config{})}
	var out []replayResult
	for _, c := range commits {
		parent := emptyTree
		if p, err := gitOut(repo, "rev-parse", "--verify", "-q", c+"^"); err == nil {
			parent = strings.TrimSpace(string(p))
		}
		before, err := lsTree(repo, parent)
		if err != nil {
			t.Fatal(err)
		}
		after, err := lsTree(repo, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.sync(before); err != nil {
			t.Fatal(err)
		}
		res, err := r.replayOne(context.Background(), parent, c, after)
		if err != nil {
			t.Fatalf("replay %s: %v", c, err)
		}
		subj, _ := gitOut(repo, "log", "-1", "--format=%s", c)
		res.subject = strings.TrimSpace(string(subj))
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
	fmt.Fprintf(&b, "need a kept command (go.sum; written with write_file here): %d, of them exact (the rest, where not expressible): %d\n", kept, keptExact)
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

// TestReplayHarness replays a handful of commits made in a new repository,
// each a shape of change the tools must express, so that the harness
// itself is tested wherever the tests run.
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
			write("go.sum", "example.com/a v1.0.0 h1:x=\n", 0o644)
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
			write("go.sum", "example.com/a v1.0.0 h1:x=\nexample.com/b v1.0.0 h1:y=\n", 0o644)
		}},
	}
	var commits []string
	for _, s := range steps {
		s.do()
		git("add", "-A")
		git("commit", "-q", "-m", s.name)
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	results := replayCommits(t, repo, commits)
	t.Log("\n" + replaySummary(results, fixedPromptBytes(t), DefaultMaxTurns))
	for i, r := range results {
		if !r.exact() {
			t.Errorf("%s: not replayed exactly: %v", steps[i].name, r.failures)
		}
		if binary := strings.HasPrefix(steps[i].name, "a binary file"); binary != (r.notExpressible != "") {
			t.Errorf("%s: not expressible = %q", steps[i].name, r.notExpressible)
		}
		if want := i == 0 || i == len(steps)-1; r.needsKept != want {
			t.Errorf("%s: needs a kept command = %v, want %v", steps[i].name, r.needsKept, want)
		}
	}
	used := map[string]bool{}
	for _, r := range results {
		for _, c := range r.calls {
			used[c.name] = true
		}
	}
	for _, n := range []string{ToolWriteFile, ToolEditFile, ToolDeleteFile, ToolMoveFile, ToolSetExecutable, ToolReadFile} {
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

// The harness must see a wrong tree: a replay whose tools did something
// else than the commit fails.
func TestReplayTreeDiff(t *testing.T) {
	want := map[string]treeEntry{"a": {"100644", "1"}, "b": {"100755", "2"}, "c": {"100644", "3"}}
	got := map[string]treeEntry{"a": {"100644", "1"}, "b": {"100644", "2"}, "d": {"100644", "4"}}
	d := treeDiff(got, want)
	wantD := []string{"b: mode 100644, want 100755", "c: missing", "d: should not exist"}
	if !slices.Equal(d, wantD) {
		t.Errorf("treeDiff = %q, want %q", d, wantD)
	}
}

func TestMinimalEdit(t *testing.T) {
	content := "a\nx\nb\nx\nc\n"
	for _, tc := range []struct {
		name      string
		h         hunk
		newLines  []string
		old, repl string
	}{
		{"unique line", hunk{1, 1, 1, 1}, []string{"A\n"}, "a\n", "A\n"},
		{"repeated line grows before", hunk{4, 1, 4, 1}, []string{"y\n"}, "b\nx\n", "b\ny\n"},
		{"repeated first line grows after", hunk{2, 1, 2, 1}, []string{"y\n"}, "a\nx\n", "a\ny\n"},
		{"insertion anchors before", hunk{5, 0, 6, 1}, []string{"d\n"}, "c\n", "c\nd\n"},
		{"insertion at the top anchors after", hunk{0, 0, 1, 1}, []string{"z\n"}, "a\n", "z\na\n"},
		{"deletion", hunk{3, 1, 2, 0}, nil, "b\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, repl, ok := minimalEdit(content, tc.h, tc.newLines)
			if !ok || old != tc.old || repl != tc.repl {
				t.Errorf("minimalEdit = %q, %q, %v; want %q, %q", old, repl, ok, tc.old, tc.repl)
			}
		})
	}
}

// TestReplayHistory replays this repository's own history. It takes
// minutes, so it runs only when PULLWRIGHT_REPLAY says how many of the
// newest commits (or "all"); every commit that deletes, renames or changes
// the mode of a file or changes go.sum is replayed as well.
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
	results := replayCommits(t, repo, commits)
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
