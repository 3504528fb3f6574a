package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/hardlink"
	"github.com/pullwright/pullwright/untrusted"
)

// Bounds of the changes a run may bring back, checked again here
// whatever the runner bounded: the workspace is the agent's.
const (
	maxKeptFiles = 200
	maxKeptBytes = 16 << 20
)

// Kept is what KeepChanges did with a run's changes: either every file
// applied (Files, with the lines each added and deleted; Deleted those
// removed), or none, and Refused says which changes refused all of them.
type Kept struct {
	Files   []pullwright.FileStat   `json:"files,omitempty"`
	Added   []string                `json:"added,omitempty"`
	Deleted []string                `json:"deleted,omitempty"`
	Refused []pullwright.FileChange `json:"refused,omitempty"`
	// Note is why nothing could be kept at all (the runner's KeptNote).
	Note string `json:"note,omitempty"`
}

// KeepChanges makes the files a run changed (pullwright.RunResult.Changes,
// its note in note) the agent's own change in the workspace at workdir,
// under every rule its file tools obey: a path is cleaned and confined as
// write_file's, nothing in .git, nothing protected (st.Limits.Protected,
// as given or where a link leads), no link followed out of the workspace
// or written through, and bounded. It is all or nothing: one change
// refused (here, or by the runner: a link the command made, a file too
// large) and none is applied, so that the workspace never holds half of
// what a command did.
func KeepChanges(st *State, workdir string, changes []pullwright.FileChange, note string) (Kept, error) {
	if note != "" {
		return Kept{Note: note}, nil
	}
	w, err := openWorkspace(workdir)
	if err != nil {
		return Kept{}, fmt.Errorf("keep the run's changes: %w", err)
	}
	defer w.Close()
	var protected []string
	if st != nil {
		protected = st.Limits.Protected
	}
	var k Kept
	var total int
	targets := make([]string, len(changes))
	deleted := map[string]bool{}
	for _, c := range changes {
		if c.Deleted && c.Refused == "" {
			deleted[c.Path] = true
		}
	}
	for i, c := range changes {
		total += len(c.Content)
		if c.Refused != "" {
			k.Refused = append(k.Refused, c)
			continue
		}
		rp, err := w.writable(c.Path, protected)
		if err == nil && rp != c.Path {
			err = errorf("%s is a symbolic link in the workspace, and a command's change is never written through one", c.Path)
		}
		if err == nil {
			fi, serr := w.root.Lstat(rp)
			switch {
			case serr != nil:
			case !c.Deleted && !fi.Mode().IsRegular():
				err = errorf("%s is not a regular file in the workspace", c.Path)
			case fi.Mode().IsRegular() && hardlink.Count(fi) > 1:
				// Written in place, it would change the file's other
				// names, which may be outside the workspace; even a
				// deletion reads it first, to count its lines.
				err = errorf("%s is a hard link in the workspace (the file has %d names), and a command's change never goes through one", c.Path, hardlink.Count(fi))
			}
		}
		if err == nil && !c.Deleted {
			// Each directory on the way is one, or a file the same
			// changes delete first (a file the command replaced by a
			// directory).
			for d := path.Dir(rp); d != "." && err == nil; d = path.Dir(d) {
				if fi, serr := w.root.Lstat(d); serr == nil && !fi.IsDir() && !deleted[d] {
					err = errorf("%s is in %s, which is a file in the workspace", c.Path, d)
				}
			}
		}
		if err != nil {
			k.Refused = append(k.Refused, pullwright.FileChange{Path: c.Path, Refused: toolText(err)})
			continue
		}
		targets[i] = rp
	}
	switch {
	case len(changes) > maxKeptFiles:
		return Kept{Note: fmt.Sprintf("%d files changed, more than the %d a run may keep", len(changes), maxKeptFiles)}, nil
	case total > maxKeptBytes:
		return Kept{Note: fmt.Sprintf("the changed files are %d bytes, more than the %d a run may keep", total, maxKeptBytes)}, nil
	case len(k.Refused) > 0:
		return k, nil
	}
	// Deletions first: a file the command replaced by a directory goes
	// before the directory's files are written.
	order := make([]int, 0, len(changes))
	for i, c := range changes {
		if c.Deleted {
			order = append(order, i)
		}
	}
	for i, c := range changes {
		if !c.Deleted {
			order = append(order, i)
		}
	}
	for _, i := range order {
		c := changes[i]
		rp := targets[i]
		old, rerr := w.root.ReadFile(rp)
		if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return k, fmt.Errorf("keep %s: %w", c.Path, rerr)
		}
		if c.Deleted {
			if rerr == nil {
				if err := w.root.Remove(rp); err != nil {
					return k, fmt.Errorf("keep the deletion of %s: %w", c.Path, err)
				}
				k.Deleted = append(k.Deleted, c.Path)
				k.Files = append(k.Files, lineStat(c.Path, string(old), ""))
			}
			continue
		}
		if dir := path.Dir(rp); dir != "." {
			if err := w.root.MkdirAll(dir, 0o755); err != nil {
				return k, fmt.Errorf("keep %s: %w", c.Path, err)
			}
		}
		if err := w.root.WriteFile(rp, c.Content, 0o644); err != nil {
			return k, fmt.Errorf("keep %s: %w", c.Path, err)
		}
		mode := fs.FileMode(0o644)
		if c.Executable {
			mode = 0o755
		}
		if err := w.root.Chmod(rp, mode); err != nil {
			return k, fmt.Errorf("keep the mode of %s: %w", c.Path, err)
		}
		if rerr != nil {
			k.Added = append(k.Added, c.Path)
		}
		k.Files = append(k.Files, lineStat(c.Path, string(old), string(c.Content)))
	}
	slices.SortFunc(k.Files, func(a, b pullwright.FileStat) int { return strings.Compare(a.Path, b.Path) })
	return k, nil
}

// keptPath is a path a command chose, as the agent is told it outside
// any untrusted block: one line, no delimiter.
func keptPath(p string) string { return untrusted.Neutralise(untrusted.OneLine(p, 200)) }

// toolText is an error's text as the model may read it.
func toolText(err error) string {
	var te *toolError
	if errors.As(err, &te) {
		return te.msg
	}
	return describe(err)
}

// lineStat counts the lines from old to new adds and deletes.
func lineStat(p, old, new string) pullwright.FileStat {
	st := pullwright.FileStat{Path: p}
	for _, d := range diff.Do(old, new) {
		n := strings.Count(d.Text, "\n")
		if !strings.HasSuffix(d.Text, "\n") && d.Text != "" {
			n++
		}
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			st.Added += n
		case diffmatchpatch.DiffDelete:
			st.Deleted += n
		}
	}
	return st
}

// Text is what the agent is told of k, after the command's output.
func (k Kept) Text() string {
	var b strings.Builder
	switch {
	case k.Note != "":
		b.WriteString("Nothing the command changed was kept: " + k.Note + ".")
	case len(k.Refused) > 0:
		b.WriteString("Nothing the command changed was kept, because some of its changes may not be made:\n")
		for _, r := range k.Refused {
			fmt.Fprintf(&b, "- %s: %s\n", keptPath(r.Path), untrusted.Neutralise(untrusted.OneLine(r.Refused, 300)))
		}
		b.WriteString("Make the change another way, or leave it and say so in your summary.")
	case len(k.Files) == 0:
		b.WriteString("The command changed no file of the repository; nothing was kept.")
	default:
		fmt.Fprintf(&b, "Kept what the command changed, now part of your change (%d files):\n", len(k.Files))
		for _, f := range k.Files {
			what := "changed"
			switch {
			case slices.Contains(k.Deleted, f.Path):
				what = "deleted"
			case slices.Contains(k.Added, f.Path):
				what = "added"
			}
			fmt.Fprintf(&b, "- %s %s (+%d -%d)\n", keptPath(f.Path), what, f.Added, f.Deleted)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Summary is one line for the record of runs: why nothing was kept, or
// "" when something was (the record lists the files).
func (k Kept) Summary() string {
	switch {
	case k.Note != "":
		return k.Note
	case len(k.Refused) > 0:
		paths := make([]string, 0, len(k.Refused))
		for _, r := range k.Refused {
			paths = append(paths, r.Path)
		}
		return "refused, because some changes may not be made: " + strings.Join(paths, ", ")
	case len(k.Files) == 0:
		return "the command changed no file of the repository"
	}
	return ""
}

// WithKept is result (a RunResult) with what k kept said after its first
// line, before the command's output, so that the output stays the end
// of the tool result, where the agent's bound on it expects it.
func WithKept(result string, k Kept) string {
	head, rest, _ := strings.Cut(result, "\n")
	return head + "\n" + k.Text() + "\n" + rest
}
