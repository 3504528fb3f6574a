package agent

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/untrusted"
)

// How edit_file finds old_text, and what it answers. Models copy text from
// read_file's numbered lines, drop trailing spaces, write tabs as spaces and
// never see a CRLF file's \r: Aider measured nine times more failed edits
// with its whitespace-tolerant matching turned off. So a match is tried in
// tiers, each applied only when it is unique (or has exactly the expected
// count): the exact text; the text without read_file's line-number
// prefixes; whole lines equal but for trailing white space; whole lines
// equal but for indentation, with new_text re-indented the file's way.
// Nothing looser is tried, so that an edit never lands on a wrong place:
// when no tier finds old_text, the answer shows the nearest lines instead.

// Bounds of what an edit answers.
const (
	snippetContext   = 3  // unchanged lines shown around a change
	maxSnippetLines  = 40 // lines of one change shown
	maxSnippets      = 3  // changes shown, of an edit that made several
	maxListedMatches = 20 // line numbers named for an ambiguous old_text
	snippetLineBytes = 500
	maxNearestLines  = 12 // lines of the nearest candidate shown
)

// textStyle is how a file writes its text. The tools show and take text
// with "\n" line ends and no byte order mark; a file keeps its own.
type textStyle struct {
	bom   bool // starts with a UTF-8 byte order mark
	crlf  bool // every line ends with "\r\n"
	final bool // ends with a line end
}

const bom = "\ufeff"

// splitStyle returns data's text as the tools see it, and its style. A
// file whose line ends are mixed keeps its "\r"s in the text (crlf is
// false), so that nothing changes but what an edit replaces.
func splitStyle(data string) (string, textStyle) {
	var s textStyle
	if strings.HasPrefix(data, bom) {
		s.bom, data = true, data[len(bom):]
	}
	if n := strings.Count(data, "\n"); n > 0 && strings.Count(data, "\r\n") == n {
		s.crlf, data = true, strings.ReplaceAll(data, "\r\n", "\n")
	}
	s.final = strings.HasSuffix(data, "\n")
	return data, s
}

// join writes text (with "\n" line ends) in the style s.
func (s textStyle) join(text string) string {
	if s.crlf {
		text = strings.ReplaceAll(text, "\n", "\r\n")
	}
	if s.bom {
		text = bom + text
	}
	return text
}

// modelText is what the model sent as the tools read it: a byte order mark
// and "\r\n" line ends copied from elsewhere are dropped, since the file's
// own style is put back when it is written.
func modelText(s string, style textStyle) string {
	s = strings.TrimPrefix(s, bom)
	if style.crlf {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	return s
}

// edited is an edit worked out on a file's text.
type edited struct {
	text    string
	changes []span // where new_text went in text, in order
	how     string // how old_text was found, when not as given ("" if exact)
	// before and after are the file's bytes, for the syntax check.
	before, after []byte
}

// span is a byte range of a text.
type span struct{ start, end int }

// planEdit replaces old with repl in content, which must hold old exactly
// want times, or else once by one of the tolerant tiers. Its errors say
// where old_text was found, or what the file holds nearest to it.
func planEdit(content, old, repl string, want int, name string) (edited, error) {
	at := indexAll(content, old)
	if len(at) == want {
		return replaceAt(content, at, len(old), repl, ""), nil
	}
	if len(at) > 0 {
		return edited{}, ambiguous(name, content, at, want, "")
	}
	if o, r, ok := withoutLineNumbers(old, repl); ok {
		// Only at the start of a line: read_file's numbers stood before
		// whole lines, and a number-and-tab may be the file's own text
		// (a TSV file), whose rest could match inside another line.
		at := slices.DeleteFunc(indexAll(content, o), func(a int) bool { return a > 0 && content[a-1] != '\n' })
		if len(at) == want {
			return replaceAt(content, at, len(o), r, "old_text had read_file's line-number prefixes; they were left out"), nil
		} else if len(at) > 0 {
			return edited{}, ambiguous(name, content, at, want, " (without read_file's line-number prefixes)")
		}
		old, repl = o, r
	}
	lines := splitLines(content)
	oldLines := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	for _, tier := range []struct {
		eq  func(a, b string) bool
		how string
	}{
		{func(a, b string) bool { return trimRight(a) == trimRight(b) }, "trailing white space"},
		{func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) }, "indentation"},
	} {
		found := findLines(lines, oldLines, tier.eq)
		switch {
		case len(found) == 0:
			continue
		case len(found) != want:
			return edited{}, ambiguous(name, content, lineStarts(lines, found), want, " when "+tier.how+" is ignored")
		}
		r := strings.TrimSuffix(repl, "\n")
		if !strings.HasSuffix(old, "\n") {
			r = repl
		}
		how := "old_text matched only when " + tier.how + " is ignored"
		if tier.how == "indentation" {
			var ok bool
			if r, ok = reindent(lines, found, oldLines, r); !ok {
				return edited{}, errorf("old_text matches %s at %s only when indentation is ignored, and its indentation "+
					"differs from the file's in a way that cannot be carried over to new_text; copy the lines with "+
					"their exact indentation (read the file again)", name, lineRange(found[0], found[0]+len(oldLines)-1))
			}
			how += "; new_text was re-indented as the file is"
		}
		at := make([]int, len(found))
		for i, f := range found {
			at[i] = lines[f].start
		}
		// Each match is the whole lines, without the last line's end.
		var spans []span
		for _, f := range found {
			last := lines[f+len(oldLines)-1]
			spans = append(spans, span{lines[f].start, last.start + len(strings.TrimSuffix(last.text, "\n"))})
		}
		r = keepCR(lines, found, len(oldLines), r)
		return replaceSpans(content, spans, r, how), nil
	}
	return edited{}, notFound(name, lines, oldLines)
}

// indexAll is the offsets of the non-overlapping occurrences of s in text,
// as strings.Count counts them.
func indexAll(text, s string) []int {
	var at []int
	for i := 0; ; {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + len(s)
	}
}

func replaceAt(content string, at []int, n int, repl, how string) edited {
	spans := make([]span, len(at))
	for i, a := range at {
		spans[i] = span{a, a + n}
	}
	return replaceSpans(content, spans, repl, how)
}

func replaceSpans(content string, spans []span, repl, how string) edited {
	var b strings.Builder
	e := edited{how: how}
	prev := 0
	for _, s := range spans {
		b.WriteString(content[prev:s.start])
		start := b.Len()
		b.WriteString(repl)
		e.changes = append(e.changes, span{start, b.Len()})
		prev = s.end
	}
	b.WriteString(content[prev:])
	e.text = b.String()
	return e
}

// line is one line of a text: its offset and its text with its "\n".
type line struct {
	start int
	text  string
}

func splitLines(s string) []line {
	var out []line
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '\n')
		end := len(s)
		if j >= 0 {
			end = i + j + 1
		}
		out = append(out, line{i, s[i:end]})
		i = end
	}
	return out
}

func trimRight(s string) string { return strings.TrimRight(s, " \t\r\n") }

// findLines is where the lines want start in lines, one after another
// without overlapping, comparing line by line with eq.
func findLines(lines []line, want []string, eq func(a, b string) bool) []int {
	var found []int
	for i := 0; i+len(want) <= len(lines); {
		ok := true
		for k, w := range want {
			if !eq(lines[i+k].text, w) {
				ok = false
				break
			}
		}
		if ok {
			found = append(found, i)
			i += len(want)
			continue
		}
		i++
	}
	return found
}

func lineStarts(lines []line, idx []int) []int {
	at := make([]int, len(idx))
	for i, n := range idx {
		at[i] = lines[n].start
	}
	return at
}

// lineNumberPrefix is read_file's "   12\t" before a line.
var lineNumberPrefix = regexp.MustCompile(`^ *[0-9]+\t`)

// withoutLineNumbers strips read_file's line numbers from old, when every
// line of it has one, and from repl's lines that have one.
func withoutLineNumbers(old, repl string) (string, string, bool) {
	strip := func(s string, all bool) (string, bool) {
		ls := strings.Split(s, "\n")
		n := 0
		for i, l := range ls {
			if loc := lineNumberPrefix.FindStringIndex(l); loc != nil {
				ls[i] = l[loc[1]:]
				n++
			} else if all && !(i == len(ls)-1 && l == "") {
				return s, false
			}
		}
		return strings.Join(ls, "\n"), n > 0
	}
	o, ok := strip(old, true)
	if !ok {
		return old, repl, false
	}
	r, _ := strip(repl, false)
	return o, r, true
}

// reindent carries the difference between old_text's indentation and the
// file's (at the lines found) over to new_text: each indentation of old_text
// stands for one of the file's. It fails when that is not one-to-one (the
// model flattened the code) or a line of new_text is indented in a way
// that cannot be mapped, rather than guess.
func reindent(lines []line, found []int, oldLines []string, repl string) (string, bool) {
	m := map[string]string{}
	for _, f := range found {
		for k, o := range oldLines {
			if strings.TrimSpace(o) == "" {
				continue
			}
			oi, fi := indentOf(o), indentOf(lines[f+k].text)
			if prev, ok := m[oi]; ok && prev != fi {
				return "", false
			}
			m[oi] = fi
		}
	}
	seen := map[string]string{}
	for o, f := range m {
		if prev, ok := seen[f]; ok && prev != o {
			return "", false
		}
		seen[f] = o
	}
	unitFrom, unitTo := indentUnit(m)
	out := strings.Split(repl, "\n")
	for i, l := range out {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := indentOf(l)
		if f, ok := m[ind]; ok {
			out[i] = f + l[len(ind):]
			continue
		}
		// A deeper line than any of old_text's: the longest known
		// indentation it starts with, then whole units of indentation.
		keys := slices.Collect(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
		mapped := false
		for _, k := range keys {
			rest, ok := strings.CutPrefix(ind, k)
			if !ok {
				continue
			}
			if unitFrom == "" || len(rest)%len(unitFrom) != 0 || strings.Repeat(unitFrom, len(rest)/len(unitFrom)) != rest {
				break
			}
			out[i] = m[k] + strings.Repeat(unitTo, len(rest)/len(unitFrom)) + l[len(ind):]
			mapped = true
			break
		}
		if !mapped {
			return "", false
		}
	}
	return strings.Join(out, "\n"), true
}

func indentOf(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

// indentUnit is one level of indentation in old_text's way and in the
// file's, read from two indentations one level apart ("" when unknown).
func indentUnit(m map[string]string) (from, to string) {
	for o, f := range m {
		for o2, f2 := range m {
			if r, ok := strings.CutPrefix(o2, o); ok && r != "" {
				if r2, ok := strings.CutPrefix(f2, f); ok && r2 != "" && (from == "" || len(r) < len(from)) {
					from, to = r, r2
				}
			}
		}
	}
	return from, to
}

// keepCR ends the lines of repl with "\r" when every line it replaces did
// (a file of mixed line ends, whose \r the model never saw).
func keepCR(lines []line, found []int, n int, repl string) string {
	for _, f := range found {
		for k := range n {
			if !strings.HasSuffix(strings.TrimSuffix(lines[f+k].text, "\n"), "\r") {
				return repl
			}
		}
	}
	ls := strings.Split(repl, "\n")
	for i, l := range ls {
		if !strings.HasSuffix(l, "\r") {
			ls[i] = l + "\r"
		}
	}
	return strings.Join(ls, "\n")
}

// ambiguous is the error of an old_text found at offsets at, not want times.
func ambiguous(name, content string, at []int, want int, how string) error {
	nums := make([]string, 0, min(len(at), maxListedMatches))
	for i, a := range at {
		if i == maxListedMatches {
			nums = append(nums, fmt.Sprintf("%d more", len(at)-i))
			break
		}
		nums = append(nums, strconv.Itoa(1+strings.Count(content[:a], "\n")))
	}
	hint := "add surrounding lines to old_text to make it unique, or set expected_matches to replace all of them"
	if len(at) < want {
		hint = "set expected_matches to the number of occurrences you mean to replace"
	}
	return errorf("old_text found %d times in %s%s, expected %d: at %s %s; %s", len(at), name, how, want,
		words.Plural(len(at), "line", "lines"), words.Join(nums), hint)
}

// notFound is the error of an old_text no tier found: the nearest lines of
// the file, numbered, and the first line of them that differs.
func notFound(name string, lines []line, oldLines []string) error {
	msg := fmt.Sprintf("old_text found 0 times in %s, expected 1; old_text must match the file's text, "+
		"whitespace and indentation included (leading and trailing white space of whole lines is forgiven)", name)
	start, score := nearest(lines, oldLines)
	if score == 0 {
		return errorf("%s. No lines of the file resemble it: read the file again.", msg)
	}
	end := min(start+len(oldLines), len(lines), start+maxNearestLines)
	var b strings.Builder
	for i := start; i < end; i++ {
		fmt.Fprintf(&b, "%5d\t%s\n", i+1, untrusted.Cut(strings.TrimRight(lines[i].text, "\r\n"), snippetLineBytes))
	}
	diff := ""
	for k, o := range oldLines {
		i := start + k
		if i >= len(lines) {
			diff = fmt.Sprintf("old_text has %d lines, more than the file has from line %d. ", len(oldLines), start+1)
			break
		}
		if strings.TrimSpace(lines[i].text) != strings.TrimSpace(o) {
			diff = fmt.Sprintf("Line %d of old_text, %s, differs from line %d of the file. ", k+1,
				strconv.Quote(untrusted.Cut(strings.TrimSpace(o), 120)), i+1)
			break
		}
	}
	return errorf("%s. The nearest text is at %s:\n%s\n%sCopy old_text from these lines as they are (without the line numbers).",
		msg, lineRange(start, end-1), untrusted.Block("untrusted-file", " path="+strconv.Quote(name), b.String()), diff)
}

// nearest is the line where the file's lines best resemble old's, and a
// score above 0 when some do (0: none does). Candidate places come from
// the lines of old found in the file as they are (a line found often, like
// "}", says little of where, and weighs less) and from the file's lines
// most like old's most distinctive lines; each is then scored by the edit
// distance of its lines to old's, so that the rare line decides, not the
// first one.
func nearest(lines []line, old []string) (start int, score float64) {
	index := map[string][]int{}
	for i, l := range lines {
		if t := strings.TrimSpace(l.text); t != "" {
			index[t] = append(index[t], i)
		}
	}
	votes := map[int]float64{}
	for k, o := range old {
		t := strings.TrimSpace(o)
		if n := len(index[t]); t == "" || n == 0 || n > 50 {
			continue
		}
		for _, i := range index[t] {
			if s := i - k; s >= 0 {
				votes[s] += 1 / float64(len(index[t]))
			}
		}
	}
	// Old's longest lines are its most distinctive: the file's lines most
	// like them, by shared trigrams, are candidates too.
	ks := make([]int, 0, len(old))
	for k, o := range old {
		if strings.TrimSpace(o) != "" {
			ks = append(ks, k)
		}
	}
	slices.SortStableFunc(ks, func(a, b int) int { return len(strings.TrimSpace(old[b])) - len(strings.TrimSpace(old[a])) })
	var alike []int // places from trigrams, kept whatever the votes
	fileTri := make([]map[string]bool, len(lines))
	for i, l := range lines {
		fileTri[i] = trigrams(strings.TrimSpace(l.text))
	}
	for _, k := range ks[:min(len(ks), 3)] {
		want := trigrams(strings.TrimSpace(old[k]))
		type cand struct {
			i   int
			sim float64
		}
		var cands []cand
		for i := range lines {
			if sim := similarity(want, fileTri[i]); sim > 0 {
				cands = append(cands, cand{i, sim})
			}
		}
		slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.sim, a.sim) })
		for _, c := range cands[:min(len(cands), 10)] {
			alike = append(alike, max(c.i-k, 0))
		}
	}
	starts := slices.Collect(maps.Keys(votes))
	slices.SortFunc(starts, func(a, b int) int {
		if c := cmp.Compare(votes[b], votes[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	starts = append(starts[:min(len(starts), 100)], alike...)
	// Score each place by how alike its lines are to old's, over at most
	// the first 20 lines of old that are not blank.
	scored := ks
	if len(scored) > 20 {
		scored = slices.Clone(ks[:20])
	}
	slices.Sort(scored)
	best := -1.0
	for _, s := range starts {
		sum := 0.0
		for _, k := range scored {
			if s+k < len(lines) {
				sum += editRatio(strings.TrimSpace(old[k]), strings.TrimSpace(lines[s+k].text))
			}
		}
		if sum > best || sum == best && s < start {
			best, start = sum, s
		}
	}
	if len(scored) == 0 || best/float64(len(scored)) < 0.5 {
		return 0, 0
	}
	return start, best
}

// editRatio is 1 less the edit distance of a and b over the longer's
// length: 1 for equal strings. Lines are cut to snippetLineBytes first, to
// bound the work.
func editRatio(a, b string) float64 {
	a, b = untrusted.Cut(a, snippetLineBytes), untrusted.Cut(b, snippetLineBytes)
	if a == b {
		return 1
	}
	return 1 - float64(words.Distance(a, b))/float64(max(len(a), len(b)))
}

func trigrams(s string) map[string]bool {
	m := map[string]bool{}
	for i := 0; i+3 <= len(s); i++ {
		m[s[i:i+3]] = true
	}
	return m
}

// similarity is the Jaccard index of two trigram sets.
func similarity(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	common := 0
	for t := range a {
		if b[t] {
			common++
		}
	}
	return float64(common) / float64(len(a)+len(b)-common)
}

// lineRange names lines first to last (0-based) for the model, 1-based.
func lineRange(first, last int) string {
	if first == last {
		return fmt.Sprintf("line %d", first+1)
	}
	return fmt.Sprintf("lines %d-%d", first+1, last+1)
}

// snippets shows the lines around each change of e, numbered as read_file
// numbers them, so that the model sees what its edit did. Changes close
// together share one window.
func snippets(e edited) (where, shown string) {
	lines := splitLines(e.text)
	var ranges []string
	var windows []span // of line indexes, inclusive
	for _, c := range e.changes {
		first := lineAt(lines, c.start)
		last := first
		if c.end > c.start {
			last = lineAt(lines, c.end-1)
		}
		ranges = append(ranges, lineRange(first, last))
		from, to := max(first-snippetContext, 0), min(last+snippetContext, len(lines)-1)
		if n := len(windows); n > 0 && from <= windows[n-1].end+1 {
			windows[n-1].end = max(windows[n-1].end, to)
			continue
		}
		windows = append(windows, span{from, to})
	}
	var b strings.Builder
	for i, w := range windows {
		if i == maxSnippets {
			fmt.Fprintf(&b, "[%d more places changed are not shown]\n", len(windows)-i)
			break
		}
		if i > 0 {
			b.WriteString("…\n")
		}
		for n := w.start; n <= w.end; n++ {
			if n-w.start == maxSnippetLines {
				fmt.Fprintf(&b, "[… %d more lines not shown]\n", w.end-n+1)
				break
			}
			fmt.Fprintf(&b, "%5d\t%s\n", n+1, untrusted.Cut(strings.TrimRight(lines[n].text, "\r\n"), snippetLineBytes))
		}
	}
	if len(lines) == 0 {
		b.WriteString("(the file is now empty)\n")
	}
	return words.Join(ranges), b.String()
}

// lineAt is the index of the line holding offset off.
func lineAt(lines []line, off int) int {
	i, _ := slices.BinarySearchFunc(lines, off, func(l line, off int) int {
		switch {
		case l.start+len(l.text) <= off:
			return -1
		case l.start > off:
			return 1
		}
		return 0
	})
	return min(i, max(len(lines)-1, 0))
}

// syntaxNote is what a tool that wrote path says of its syntax: nothing
// when it parses (or its language is not checked), why when it could not be
// checked, else the first error
// with the lines around it, and whether the file parsed before (before is
// nil for a new file). The change is kept either way. SWE-agent's linting
// edit, which refused a change that broke the syntax, was worth 3 points
// of SWE-bench Lite in its paper; its current editor, OpenHands and Aider
// keep the change and show the error instead, as here: a change may pass
// through a broken state on purpose, and a checker can be wrong.
func syntaxNote(path string, before, after []byte) string {
	e, skipped := checkSyntax(path, after)
	if skipped != "" {
		return "\nSyntax check: not done, " + skipped + "."
	}
	if e == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nSyntax check: " + e.String() + ". ")
	if before != nil {
		// The content before is parsed only when the new one fails.
		if was, skipped := checkSyntax(path, before); was != nil {
			b.WriteString("The file did not parse before this change either (" + was.String() + ").")
		} else if skipped != "" {
			b.WriteString("Whether the file parsed before this change is not known: " + skipped + ".")
		} else {
			b.WriteString("The file parsed before this change: fix the error next.")
		}
	} else {
		b.WriteString("Fix it next.")
	}
	text, _ := splitStyle(string(after))
	lines := splitLines(text)
	if e.Line >= 1 && e.Line <= len(lines) {
		var near strings.Builder
		for n := max(e.Line-3, 1); n <= min(e.Line+2, len(lines)); n++ {
			mark := " "
			if n == e.Line {
				mark = ">"
			}
			fmt.Fprintf(&near, "%s%4d\t%s\n", mark, n, untrusted.Cut(strings.TrimRight(lines[n-1].text, "\r\n"), snippetLineBytes))
		}
		b.WriteString("\n" + untrusted.Block("untrusted-file", " path="+strconv.Quote(path), near.String()))
	}
	return b.String()
}
