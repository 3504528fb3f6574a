package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/untrusted"
)

// The search tools: glob lists files by path, grep searches their lines.

// Bounds of grep's own, below the tool output cap (Config.MaxToolOutput,
// 16 KiB by default), so that the footer saying what was left out is never
// what the cap cuts.
const (
	maxGrepContext     = 10       // context_lines
	maxGrepOutputBytes = 12 << 10 // the lines and file names shown
)

// grep's output modes (output_mode), named as Claude Code's Grep names them.
const (
	grepContent = "content"
	grepFiles   = "files_with_matches"
)

func runGlob(env toolEnv, raw json.RawMessage) (toolResult, error) {
	var a struct {
		Pattern string `json:"pattern"`
	}
	if err := toolsByName[ToolGlob].decodeArgs(raw, &a); err != nil {
		return toolResult{}, err
	}
	m, err := compileGlob(a.Pattern)
	if err != nil {
		return toolResult{}, err
	}
	var b strings.Builder
	n := 0
	truncated, err := env.ws.walk(env.ctx, func(rel string, _ fs.DirEntry) error {
		if !m.match(rel) {
			return nil
		}
		n++
		if n <= maxGlobResults {
			b.WriteString(rel)
			b.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		return toolResult{}, errorf("glob %q: %s", a.Pattern, describe(err))
	}
	if n == 0 {
		b.WriteString("no files match " + strconv.Quote(a.Pattern) + "\n")
	}
	if n > maxGlobResults {
		fmt.Fprintf(&b, "[… %d more files not shown; narrow the pattern]\n", n-maxGlobResults)
	}
	if truncated {
		fmt.Fprintf(&b, "[the search stopped after %d entries; narrow the pattern]\n", maxWalkEntries)
	}
	return toolResult{text: b.String(), step: fmt.Sprintf("glob `%s` (%d %s)", a.Pattern, n, words.Plural(n, "file", "files"))}, nil
}

type grepArgs struct {
	Pattern      string `json:"pattern"`
	PathGlob     string `json:"path_glob"`
	OutputMode   string `json:"output_mode"`
	ContextLines int    `json:"context_lines"`
}

func runGrep(env toolEnv, raw json.RawMessage) (toolResult, error) {
	var a grepArgs
	if err := toolsByName[ToolGrep].decodeArgs(raw, &a); err != nil {
		return toolResult{}, err
	}
	if a.Pattern == "" {
		return toolResult{}, errorf("pattern is empty")
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return toolResult{}, errorf("pattern is not a valid RE2 regular expression: %v", err)
	}
	var m *globMatcher
	if a.PathGlob != "" {
		if m, err = compileGlob(a.PathGlob); err != nil {
			return toolResult{}, err
		}
	}
	mode := grepContent
	switch strings.ToLower(strings.TrimSpace(a.OutputMode)) {
	case "", grepContent:
	case grepFiles, "files", "count":
		// "count" is Claude Code's third mode: files_with_matches gives
		// the counts already.
		mode = grepFiles
	default:
		return toolResult{}, errorf("output_mode %q: use %q (matching lines) or %q (file names with their match counts)",
			a.OutputMode, grepContent, grepFiles)
	}
	if a.ContextLines < 0 || a.ContextLines > maxGrepContext {
		return toolResult{}, errorf("context_lines must be between 0 and %d, got %d", maxGrepContext, a.ContextLines)
	}
	g := &grepRun{re: re, mode: mode, context: a.ContextLines}
	truncated, err := env.ws.walk(env.ctx, func(rel string, _ fs.DirEntry) error {
		if m != nil && !m.match(rel) {
			return nil
		}
		if data, ok := env.ws.grepContent(rel); ok {
			g.file(rel, data)
		}
		return nil
	})
	if err != nil {
		return toolResult{}, errorf("grep: %s", describe(err))
	}
	return toolResult{
		text:  g.result(a, truncated),
		block: "untrusted-search-results",
		step:  fmt.Sprintf("grep `%s` (%d %s)", a.Pattern, g.matches, words.Plural(g.matches, "match", "matches")),
	}, nil
}

// grepRun is one grep under way. It counts every match and every file
// with one, up to the walk's bound, but shows only the first maxGrepMatches
// matches (or maxGlobResults files) within maxGrepOutputBytes: the totals
// tell the model how much narrower to search.
type grepRun struct {
	re      *regexp.Regexp
	mode    string
	context int

	b                strings.Builder
	searched         int  // files searched
	matches, files   int  // in all
	shown, shownFile int  // matches and files shown
	full             bool // the byte budget stopped the listing
}

// file searches one file's lines.
func (g *grepRun) file(rel string, data []byte) {
	g.searched++
	lines := byteLines(data)
	var hits []int // indexes into lines
	for i, l := range lines {
		if g.re.Match(l) {
			hits = append(hits, i)
		}
	}
	if len(hits) == 0 {
		return
	}
	g.matches += len(hits)
	g.files++
	if g.full {
		return
	}
	if g.mode == grepFiles {
		if g.shownFile == maxGlobResults {
			return
		}
		line := fmt.Sprintf("%s: %d %s\n", rel, len(hits), words.Plural(len(hits), "match", "matches"))
		if !g.fits(line) {
			return
		}
		g.b.WriteString(line)
		g.shownFile++
		return
	}
	g.showContent(rel, lines, hits)
}

// showContent writes the matches of one file that still fit, as
// "path:12: text", with context lines as "path-11- text" and "--" between
// groups that are not adjacent (grep's and ripgrep's notation).
func (g *grepRun) showContent(rel string, lines [][]byte, hits []int) {
	last := -1 // the last line written of this file
	for _, h := range hits {
		if g.shown == maxGrepMatches {
			return
		}
		lo, hi := max(h-g.context, last+1, 0), min(h+g.context, len(lines)-1)
		var chunk strings.Builder
		if g.context > 0 && (last >= 0 && lo > last+1 || last < 0 && g.shown > 0) {
			chunk.WriteString("--\n")
		}
		// The lines before the hit are no hits: an earlier hit's turn
		// wrote the lines up to the next hit (last).
		for i := lo; i < h; i++ {
			fmt.Fprintf(&chunk, "%s-%d- %s\n", rel, i+1, untrusted.Cut(string(lines[i]), maxGrepLineBytes))
		}
		fmt.Fprintf(&chunk, "%s:%d: %s\n", rel, h+1, untrusted.Cut(string(lines[h]), maxGrepLineBytes))
		// The lines after the hit stop at the next hit, which its own
		// turn writes.
		end := h
		for i := h + 1; i <= hi && !g.re.Match(lines[i]); i++ {
			fmt.Fprintf(&chunk, "%s-%d- %s\n", rel, i+1, untrusted.Cut(string(lines[i]), maxGrepLineBytes))
			end = i
		}
		if !g.fits(chunk.String()) {
			return
		}
		g.b.WriteString(chunk.String())
		g.shown++
		last = end
	}
}

// fits reports whether s may still be shown, and notes when the byte
// budget is reached.
func (g *grepRun) fits(s string) bool {
	if g.b.Len()+len(s) > maxGrepOutputBytes {
		g.full = true
		return false
	}
	return true
}

// result is the listing with its footer.
func (g *grepRun) result(a grepArgs, truncated bool) string {
	if g.matches == 0 {
		fmt.Fprintf(&g.b, "no matches for %s in %d %s\n", strconv.Quote(a.Pattern), g.searched, words.Plural(g.searched, "file", "files"))
	}
	total := fmt.Sprintf("%d %s in %d %s", g.matches, words.Plural(g.matches, "match", "matches"), g.files, words.Plural(g.files, "file", "files"))
	why := ""
	if g.full {
		why = fmt.Sprintf(" (the output is bounded to %d KiB)", maxGrepOutputBytes>>10)
	}
	switch {
	case g.mode == grepFiles && g.shownFile < g.files:
		fmt.Fprintf(&g.b, "[showing the first %d of %d files with matches%s; %s in all; narrow the pattern or use path_glob]\n",
			g.shownFile, g.files, why, total)
	case g.mode == grepContent && g.shown < g.matches:
		fmt.Fprintf(&g.b, "[showing the first %d of %s%s; narrow the pattern or path_glob, or use output_mode %q to see which files match]\n",
			g.shown, total, why, grepFiles)
	case g.mode == grepFiles && g.matches > 0:
		fmt.Fprintf(&g.b, "[%s]\n", total)
	}
	if truncated {
		fmt.Fprintf(&g.b, "[the search stopped after %d entries, so the counts are lower bounds; use path_glob]\n", maxWalkEntries)
	}
	return g.b.String()
}

// byteLines splits data into lines without their "\n" or "\r\n".
func byteLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		out = append(out, bytes.TrimSuffix(l, []byte("\r")))
	}
	return out
}

// grepContent returns the content of a searchable file: regular (through
// symlinks inside the workspace), of one name (oneName), not too large,
// not binary.
func (w *workspace) grepContent(rel string) ([]byte, bool) {
	rp, err := w.resolve(rel)
	if err != nil {
		return nil, false
	}
	f, err := w.root.Open(rp)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxGrepFileBytes || oneName(rel, fi, "searched") != nil {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGrepFileBytes+1))
	if err != nil || len(data) > maxGrepFileBytes || isBinary(data) {
		return nil, false
	}
	return data, true
}
