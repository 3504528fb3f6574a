package agent

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/untrusted"
)

// The map of the repository that the first message carries: a tree of its
// directories with the number of files under each, so that the model starts
// knowing where things are instead of spending turns on glob. It is a plain
// tree rather than a ranked outline of symbols (Aider's repository map):
// that needs a parser per language, and the tree already names the places.
const (
	mapBlock    = "untrusted-repository-map"
	maxMapBytes = 3 << 10 // the tree's lines
	// maxMapDepth is the deepest directory level a map shows; a deeper
	// tree says little more than its directories' counts.
	maxMapDepth = 6
)

// mapDir is a directory of the map, with the number of files under it.
type mapDir struct {
	files []string           // its own files, in walk (lexical) order
	dirs  map[string]*mapDir // its subdirectories
	total int                // files under it, at any depth
}

func newMapDir() *mapDir { return &mapDir{dirs: map[string]*mapDir{}} }

// addMap appends the map of the workspace to the first message, once, on
// the first turn of a task. A State saved mid-task by a release without
// maps (Turns > 0) gets none: its conversation went on without one, and a
// first message that changes midway would only confuse the model and break
// the prompt cache. The map becomes part of the brief, which compaction
// keeps (briefOf). undo takes the map out again, for a turn that fails and
// so leaves st as it found it; once a compaction has folded the map into
// the brief, it stays. Only the context's end is an error: a map that
// cannot be made is left out.
func (a *Agent) addMap(ctx context.Context, st *State, ws *workspace) (undo func(), err error) {
	undo = func() {}
	if st.Mapped || st.Turns > 0 || st.BriefBytes > 0 || len(st.Messages) < 2 {
		return undo, nil
	}
	m, err := ws.repoMap(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return undo, fmt.Errorf("agent: map the repository: %w", err)
		}
		a.log.Warn("the repository could not be mapped; the first message goes without its map", "err", err)
		return undo, nil
	}
	before := st.Messages[1].Content
	st.Messages[1].Content = strings.TrimRight(before, "\n") + "\n\n" + m
	st.Mapped = true
	return func() {
		if st.BriefBytes == 0 && len(st.Messages) > 1 {
			st.Messages[1].Content, st.Mapped = before, false
		}
	}, nil
}

// repoMap is the map's section of the first message: a sentence on what
// it shows, and the tree in its block.
func (w *workspace) repoMap(ctx context.Context) (string, error) {
	root := newMapDir()
	walked, err := w.walkIgnoring(ctx, func(rel string, _ fs.DirEntry) error {
		parts := strings.Split(rel, "/")
		d := root
		d.total++
		for _, p := range parts[:len(parts)-1] {
			sub := d.dirs[p]
			if sub == nil {
				sub = newMapDir()
				d.dirs[p] = sub
			}
			d = sub
			d.total++
		}
		d.files = append(d.files, parts[len(parts)-1])
		return nil
	})
	if err != nil {
		return "", err
	}
	tree, shown := root.render()
	var b strings.Builder
	fmt.Fprintf(&b, "A map of the repository (%s; files ignored by .gitignore and the .git directory are left out): %s. "+
		"Use glob and grep to see more.", words.Count(root.total, "file", "files"), shown)
	if walked.truncated {
		fmt.Fprintf(&b, " The listing stopped after %d entries: the counts are lower bounds.", maxWalkEntries)
	}
	if n := walked.ignoresSkipped; n > 0 {
		fmt.Fprintf(&b, " %s %s not read, being over the bounds on ignore patterns, so files %s ignore may be listed.",
			words.Count(n, ".gitignore file", ".gitignore files"), words.Plural(n, "was", "were"), words.Plural(n, "it", "they"))
	}
	b.WriteString("\n")
	b.WriteString(untrusted.Block(mapBlock, "", tree))
	b.WriteString("\n")
	return b.String(), nil
}

// render is the tree in maxMapBytes, and what it shows. It takes the most
// detailed form that fits: every file; else the directories to the deepest
// level that fits, with the top level's files; else as many top-level
// entries as fit.
func (d *mapDir) render() (tree, shown string) {
	if d.total == 0 {
		return "(no files)\n", "the repository has no files"
	}
	var b strings.Builder
	if d.write(&b, 0, math.MaxInt, true) && b.Len() <= maxMapBytes {
		return b.String(), "every file, with the number of files under each directory"
	}
	for depth := maxMapDepth; depth >= 1; depth-- {
		b.Reset()
		if d.write(&b, 0, depth, false) && b.Len() <= maxMapBytes {
			return b.String(), fmt.Sprintf("the files at the top level, and the directories to a depth of %d "+
				"with the number of files under each", depth)
		}
	}
	// Even the top level does not fit: as many of its entries as do.
	b.Reset()
	d.write(&b, 0, 1, false)
	lines := strings.SplitAfter(b.String(), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last "\n"
	var out strings.Builder
	for i, l := range lines {
		note := fmt.Sprintf("[… %d more entries of the top level]\n", len(lines)-i)
		if out.Len()+len(l)+len(note) > maxMapBytes {
			out.WriteString(note)
			break
		}
		out.WriteString(l)
	}
	return out.String(), "the first entries of the top level, with the number of files under each directory"
}

// write writes d's entries at level (0 for the root) to b: its files when
// allFiles or at the root, then its directories with their counts, and
// their entries down to depth levels. It stops, reporting false, once b is
// over maxMapBytes.
func (d *mapDir) write(b *strings.Builder, level, depth int, allFiles bool) bool {
	indent := strings.Repeat("  ", level)
	if allFiles || level == 0 {
		for _, f := range d.files {
			b.WriteString(indent + mapName(f) + "\n")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.dirs)) {
		sub := d.dirs[name]
		fmt.Fprintf(b, "%s%s/ (%s)\n", indent, mapName(name), words.Count(sub.total, "file", "files"))
		if b.Len() > maxMapBytes {
			return false
		}
		if level+1 < depth && !sub.write(b, level+1, depth, allFiles) {
			return false
		}
	}
	return b.Len() <= maxMapBytes
}

// mapName is a file name as one line of the map: quoted if it holds
// characters that would break the line or hide in it.
func mapName(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == '"' }) >= 0 ||
		strings.TrimSpace(s) != s {
		return strconv.Quote(s)
	}
	return s
}
