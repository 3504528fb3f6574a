package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The scripted model, per commit: it reads every file it will edit
// (read_file, window by window, all files in one answer per window), then
// in one answer deletes (delete_file), moves (move_file, git's rename
// detection), writes new files and go.sum (write_file) and sets modes
// (set_executable); then for each modified file one answer with an
// edit_file per hunk of `git diff -U0`, bottom-up, each old_text the
// hunk's lines grown one line at a time (before, then after) until it
// occurs once in the file; an insertion anchors on the line before it (or
// after it, at the top). When the commit changes go.sum and the caller
// gave a Tidy, go.sum is not written with the new files: after the edits
// the script asks run for Tidy's command with keep_changes, and when the
// run failed or left go.mod or go.sum other than the commit's, writes
// them with write_file in one more answer. Then it calls finish.

// The agent's limits the script obeys (agent/workspace.go; the agent's
// tests check that they agree).
const (
	// MaxReadLines is read_file's largest max_lines.
	MaxReadLines = 2000
	// BinarySniffBytes: a NUL in the first this many bytes means binary,
	// which the file tools do not write.
	BinarySniffBytes = 8000
	// maxReadRounds bounds the windows of one file the script reads.
	maxReadRounds = 200
)

// Tool names, as the model calls them.
const (
	ReadFile      = "read_file"
	WriteFile     = "write_file"
	EditFile      = "edit_file"
	DeleteFile    = "delete_file"
	MoveFile      = "move_file"
	SetExecutable = "set_executable"
	Run           = "run"
	Finish        = "finish"
)

// The files `go mod tidy` writes.
var tidyFiles = []string{"go.mod", "go.sum"}

// Tidy is how a script gets go.sum: by asking run for Command (`go mod
// tidy`, with what settings the runner needs) with keep_changes.
type Tidy struct {
	Command, Reason string
	// Look reads a file of the workspace as the run's kept changes left
	// it (ok false when there is none): the oracle's look, which is no
	// tool call and costs the model nothing. It tells the script whether
	// the run gave the commit's go.mod and go.sum, which a real model
	// would judge from the command's output and the go.sum it expects.
	Look func(path string) (data []byte, ok bool, err error)
}

// How a kept tidy did (Script.Tidied).
const (
	// TidyExact: the run's kept changes left go.mod and go.sum the
	// commit's.
	TidyExact = "exact"
	// TidyFailed: the run did not exit 0, or nothing it changed was
	// kept; go.sum was written with write_file.
	TidyFailed = "failed"
	// TidyDiffered: the run's kept changes left go.mod or go.sum other
	// than the commit's; they were written with write_file.
	TidyDiffered = "differed"
)

// Call is one tool call of the scripted model: the tool and its JSON
// arguments.
type Call struct{ Name, Args string }

func callOf(name string, v any) Call {
	b, _ := json.Marshal(v) // maps of strings, numbers and booleans
	return Call{Name: name, Args: string(b)}
}

// ModelView is a file's text as the tools show it and take it: without a
// byte order mark, and with "\n" line ends when all its line ends are
// "\r\n". crlf and bom say which.
func ModelView(data string) (text string, crlf, bom bool) {
	if strings.HasPrefix(data, "\ufeff") {
		data, bom = data[3:], true
	}
	if n := strings.Count(data, "\n"); n > 0 && strings.Count(data, "\r\n") == n {
		data, crlf = strings.ReplaceAll(data, "\r\n", "\n"), true
	}
	return data, crlf, bom
}

// SplitKeep splits text into lines that keep their "\n".
func SplitKeep(text string) []string {
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

// MinimalEdit is the edit of hunk h a careful model sends: the hunk's old
// lines of content (its current text, as the tools show it) grown one line
// at a time, before and then after, until they occur once, and the same
// lines with the hunk's new lines in their place. ok is false for an empty
// file, which has nothing to anchor on: write_file it.
func MinimalEdit(content string, h Hunk, newLines []string) (old, repl string, ok bool) {
	lines := SplitKeep(content)
	a := h.OldStart - 1 // the old lines are lines[a:b]
	if h.OldLen == 0 {
		a = h.OldStart // an insertion after line OldStart
	}
	b := a + h.OldLen
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
			return "", "", false
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

// Script is the scripted model of one commit: Next gives the calls of each
// answer from the results of the one before.
type Script struct {
	// Changes are the commit's files; Kinds their statuses (A, C, D, M,
	// R, T), and X for a mode change.
	Changes []Change
	Kinds   map[byte]bool
	// NotExpressible, when set, is why the tools cannot write this commit
	// (a binary file, text that is not UTF-8, a symlink, a submodule); the
	// script writes the rest, and Skipped are the paths left out.
	NotExpressible string
	Skipped        map[string]bool
	// NeedsKept: the commit changes go.sum, which a careful model gets
	// from `go mod tidy` run with its changes kept. Without Tidy the
	// script writes it with write_file instead.
	NeedsKept bool
	// Tidy, set before the first Next, has the script ask for go.sum
	// from a kept `go mod tidy` (see Tidy).
	Tidy *Tidy
	// Tidied is how that run did: "" when none was asked, else
	// TidyExact, TidyFailed or TidyDiffered; TidyNote says why it fell
	// back (the command's last line of output, or the files that
	// differed).
	Tidied, TidyNote string
	// Failures are what the script could not do (a rename cycle, a change
	// of line ends, a file too long to read); the tools' own errors are
	// the caller's to see in their results.
	Failures []string

	title, summary string
	blobs          *Blobs
	repo, commit   string
	edits          []Change // modified files, in the commit's order
	next           map[string]int
	reading        []string // the paths of the last read answer, in order
	phase          int
	readRounds     int
}

// Phases of a script.
const (
	phaseRead = iota
	phaseFiles
	phaseEdits
	phaseTidy
	phaseFallback
	phaseFinish
	phaseDone
)

// New is the script of commit against parent (a commit, or EmptyTree) in
// repo, reading blobs through blobs. Its finish call takes title, as a
// model would name its change.
func New(repo string, blobs *Blobs, parent, commit, title string) (*Script, error) {
	changes, err := Changes(repo, parent, commit)
	if err != nil {
		return nil, err
	}
	s := &Script{Changes: changes, Kinds: map[byte]bool{}, Skipped: map[string]bool{},
		title: title, summary: fmt.Sprintf("Replays commit %.12s.", commit),
		blobs: blobs, repo: repo, commit: commit, next: map[string]int{}}
	for _, c := range changes {
		s.Kinds[c.Status] = true
		if c.Status != 'A' && c.Status != 'D' && c.OldMode != c.NewMode {
			s.Kinds['X'] = true
		}
		if (c.Status == 'M' || c.Status == 'R') && c.OldSHA != c.NewSHA && c.NewPath != "go.sum" {
			s.edits = append(s.edits, c)
			s.next[c.OldPath] = 1
		}
		if c.NewPath == "go.sum" && c.Status != 'D' || c.OldPath == "go.sum" && c.Status == 'R' {
			s.NeedsKept = true
		}
	}
	return s, nil
}

var readOn = regexp.MustCompile(`use start_line (\d+) to read on\]`)

// Next is the next answer's calls, given the results of the last answer's
// calls in order (nil before the first). The last answer is one finish
// call; after it Next returns nil.
func (s *Script) Next(results []string) ([]Call, error) {
	if s.phase == phaseRead {
		for i, p := range s.reading {
			if i >= len(results) {
				s.Failures = append(s.Failures, "read_file of "+p+" has no result")
				delete(s.next, p)
				continue
			}
			// The footer is the last line that starts with "[": the
			// file's own lines start with their numbers, and may hold
			// the footer's words.
			out := results[i]
			footer := out[strings.LastIndex(out, "\n[")+1:]
			if m := readOn.FindStringSubmatch(footer); m != nil {
				s.next[p], _ = strconv.Atoi(m[1])
			} else {
				delete(s.next, p)
			}
		}
		s.reading = nil
		if len(s.next) > 0 {
			if s.readRounds >= maxReadRounds {
				s.Failures = append(s.Failures, fmt.Sprintf("reading %v took more than %d windows", slices.Sorted(keys(s.next)), maxReadRounds))
				clear(s.next)
			} else {
				var calls []Call
				for _, p := range slices.Sorted(keys(s.next)) {
					calls = append(calls, callOf(ReadFile, map[string]any{"path": p, "start_line": s.next[p], "max_lines": MaxReadLines}))
					s.reading = append(s.reading, p)
				}
				s.readRounds++
				return calls, nil
			}
		}
		s.phase = phaseFiles
	}
	if s.phase == phaseFiles {
		s.phase = phaseEdits
		calls, err := s.files()
		if err != nil || len(calls) > 0 {
			return calls, err
		}
	}
	for s.phase == phaseEdits {
		if len(s.edits) == 0 {
			s.phase = phaseTidy
			break
		}
		c := s.edits[0]
		s.edits = s.edits[1:]
		calls, err := s.edit(c)
		if err != nil || len(calls) > 0 {
			return calls, err
		}
	}
	if s.phase == phaseTidy {
		s.phase = phaseFinish
		if s.tidying() {
			s.phase = phaseFallback
			return []Call{callOf(Run, map[string]any{"command": s.Tidy.Command, "reason": s.Tidy.Reason, "keep_changes": true})}, nil
		}
	}
	if s.phase == phaseFallback {
		s.phase = phaseFinish
		calls, err := s.fallback(results)
		if err != nil || len(calls) > 0 {
			return calls, err
		}
	}
	if s.phase == phaseFinish {
		s.phase = phaseDone
		return []Call{callOf(Finish, map[string]string{"title": s.title, "summary": s.summary})}, nil
	}
	return nil, nil
}

// unexpressible leaves p out, for why.
func (s *Script) unexpressible(why, p string) {
	s.Skipped[p] = true
	if s.NotExpressible == "" {
		s.NotExpressible = why
	}
}

// text is blob sha of p as text, ok false when the tools cannot write it.
func (s *Script) text(sha, p string) (string, bool, error) {
	data, err := s.blobs.Blob(sha)
	if err != nil {
		return "", false, err
	}
	switch {
	case bytes.IndexByte(data[:min(len(data), BinarySniffBytes)], 0) >= 0:
		s.unexpressible("binary file "+p, p)
		return "", false, nil
	case !utf8.Valid(data):
		s.unexpressible("text that is not UTF-8 in "+p, p)
		return "", false, nil
	}
	return string(data), true, nil
}

// files is the answer that deletes, moves, writes new files and go.sum,
// and sets modes.
func (s *Script) files() ([]Call, error) {
	var calls []Call
	for _, c := range s.Changes {
		if c.Status == 'D' || c.Status == 'T' {
			calls = append(calls, callOf(DeleteFile, map[string]any{"path": c.OldPath}))
		}
	}
	moves := slices.DeleteFunc(slices.Clone(s.Changes), func(c Change) bool { return c.Status != 'R' })
	for len(moves) > 0 {
		// A move waits for its destination to be moved away first.
		free := slices.IndexFunc(moves, func(m Change) bool {
			return !slices.ContainsFunc(moves, func(o Change) bool { return o.OldPath == m.NewPath })
		})
		if free < 0 {
			s.Failures = append(s.Failures, "renames form a cycle: move_file cannot swap paths")
			free = 0
		}
		m := moves[free]
		calls = append(calls, callOf(MoveFile, map[string]any{"from": m.OldPath, "to": m.NewPath}))
		moves = slices.Delete(moves, free, free+1)
	}
	for _, c := range s.Changes {
		write := c.Status == 'A' || c.Status == 'T' || c.Status == 'C'
		if c.NewPath == "go.sum" && c.Status != 'D' && c.OldSHA != c.NewSHA {
			write = !s.tidying() // the kept run writes it
		}
		if !write {
			continue
		}
		switch c.NewMode {
		case "120000":
			s.unexpressible("symlink "+c.NewPath, c.NewPath)
			continue
		case "160000":
			s.unexpressible("submodule "+c.NewPath, c.NewPath)
			continue
		}
		text, ok, err := s.text(c.NewSHA, c.NewPath)
		if err != nil {
			return nil, err
		}
		if ok {
			calls = append(calls, callOf(WriteFile, map[string]any{"path": c.NewPath, "content": text}))
		}
	}
	for _, c := range s.Changes {
		if c.Status == 'D' || s.Skipped[c.NewPath] {
			continue // nothing to set on a file left out
		}
		oldExec := c.OldMode == "100755"
		if c.Status == 'A' || c.Status == 'T' || c.Status == 'C' {
			oldExec = false
		}
		if newExec := c.NewMode == "100755"; newExec != oldExec {
			calls = append(calls, callOf(SetExecutable, map[string]any{"path": c.NewPath, "executable": newExec}))
		}
	}
	return calls, nil
}

// edit is the answer that edits modified file c, hunk by hunk from the
// bottom. It follows the file's text as its edits change it, as a model
// that read the file knows it.
func (s *Script) edit(c Change) ([]Call, error) {
	if c.OldMode == "120000" || c.NewMode == "120000" {
		s.unexpressible("symlink "+c.NewPath, c.NewPath)
		return nil, nil
	}
	newText, ok, err := s.text(c.NewSHA, c.NewPath)
	if err != nil {
		return nil, err
	}
	oldText, ok2, err := s.text(c.OldSHA, c.OldPath)
	if err != nil || !ok || !ok2 {
		return nil, err
	}
	newView, newCRLF, newBOM := ModelView(newText)
	cur, crlf, bom := ModelView(oldText)
	if crlf != newCRLF || bom != newBOM {
		s.Failures = append(s.Failures, c.NewPath+": the commit changes its line ends or byte order mark, "+
			"which edit_file and write_file keep")
		return nil, nil
	}
	hunks, err := Hunks(s.repo, c.OldSHA, c.NewSHA)
	if err != nil {
		return nil, err
	}
	newLines := SplitKeep(newView)
	var calls []Call
	for _, h := range slices.Backward(hunks) {
		first := h.NewStart - 1
		if h.NewLen == 0 {
			first++
		}
		old, repl, ok := MinimalEdit(cur, h, newLines[first:][:h.NewLen])
		if !ok {
			calls = append(calls, callOf(WriteFile, map[string]any{"path": c.NewPath, "content": newText}))
			break
		}
		calls = append(calls, callOf(EditFile, map[string]any{"path": c.NewPath, "old_text": old, "new_text": repl}))
		cur = strings.Replace(cur, old, repl, 1)
	}
	return calls, nil
}

// tidying says the script asks the kept run for go.sum: it has a Tidy,
// and the commit changes go.sum in place (adds it, or changes its
// content).
func (s *Script) tidying() bool {
	return s.Tidy != nil && slices.ContainsFunc(s.Changes, func(c Change) bool {
		return c.NewPath == "go.sum" && c.Status != 'D' && c.Status != 'R' && c.OldSHA != c.NewSHA
	})
}

// fallback is what the script does with the kept run's result (the
// first of results): nothing when it left go.mod and go.sum the
// commit's, else one answer that writes those that are not.
func (s *Script) fallback(results []string) ([]Call, error) {
	out := ""
	if len(results) > 0 {
		out = results[0]
	}
	var calls []Call
	var differ []string
	for _, p := range tidyFiles {
		want, wok := "", true
		id, err := Git(s.repo, "rev-parse", "--verify", "-q", s.commit+":"+p)
		if err != nil {
			wok = false // the commit has none
		} else if data, err := s.blobs.Blob(strings.TrimSpace(string(id))); err != nil {
			return nil, err
		} else {
			want = string(data)
		}
		got, gok, err := s.Tidy.Look(p)
		if err != nil {
			return nil, err
		}
		if gok == wok && string(got) == want {
			continue
		}
		differ = append(differ, p)
		if !wok {
			calls = append(calls, callOf(DeleteFile, map[string]any{"path": p}))
			continue
		}
		calls = append(calls, callOf(WriteFile, map[string]any{"path": p, "content": want}))
	}
	failed, why := tidyFailed(out)
	switch {
	case failed:
		s.Tidied, s.TidyNote = TidyFailed, why
	case len(differ) > 0:
		s.Tidied, s.TidyNote = TidyDiffered, strings.Join(differ, " and ")+" differed"
	default:
		s.Tidied = TidyExact
	}
	return calls, nil
}

// tidyFailed reads a kept run's result (agent.WithKept of agent.RunResult:
// the exit code, what was kept, the output in a block): whether the
// command failed or kept nothing it changed, and why: the last line of
// its output, or why nothing was kept.
func tidyFailed(result string) (bool, string) {
	head, rest, _ := strings.Cut(result, "\n")
	kept, _, _ := strings.Cut(rest, "\n")
	nothing := strings.HasPrefix(kept, "Nothing the command changed was kept")
	switch {
	case !strings.HasPrefix(head, "exit code "):
		return true, head // not run at all
	case strings.HasPrefix(head, "exit code 0 ") && !nothing:
		return false, ""
	case strings.HasPrefix(head, "exit code 0 "):
		return true, kept
	}
	why := head
	if out, ok := strings.CutSuffix(strings.TrimRight(result, "\n"), "</untrusted-output>"); ok {
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if last := strings.TrimSpace(lines[len(lines)-1]); last != "" && !strings.HasPrefix(last, "<untrusted-output") {
			why = last
		}
	}
	return true, why
}

func keys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
