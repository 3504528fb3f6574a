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
// want times, or else want times by one of the tolerant tiers. Its errors
// say where old_text was found, or what the file holds nearest to it.
//
// The whitespace tiers are tried on old_text as given before its line
// numbers are taken off, and read_file's numbers are taken off only when
// they name the lines where the rest of old_text is: a file's own numbered
// lines (a TSV file whose first column is a number) are never read as
// prefixes, so an edit of them cannot land on other lines.
func planEdit(content, old, repl string, want int, name string) (edited, error) {
	at := indexAll(content, old)
	if len(at) == want {
		return replaceAt(content, name, at, len(old), repl, "")
	}
	if len(at) > 0 {
		return edited{}, ambiguous(name, content, at, want, "")
	}
	lines := splitLines(content)
	oldLines := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	var w work
	for _, t := range tiers {
		found := findLines(lines, oldLines, t.key, &w)
		switch {
		case len(found) == 0:
			continue
		case len(found) != want:
			return edited{}, ambiguous(name, content, lineStarts(lines, found), want, " when "+t.how+" is ignored")
		}
		return applyTier(content, name, lines, found, old, oldLines, repl, t, "")
	}
	note := ""
	if o, r, first, ok := withoutLineNumbers(old, repl); ok {
		const how = "old_text had read_file's line-number prefixes; they were left out"
		oLines := strings.Split(strings.TrimSuffix(o, "\n"), "\n")
		if i := first - 1; want == 1 && i < len(lines) {
			if strings.HasPrefix(content[lines[i].start:], o) {
				return replaceAt(content, name, []int{lines[i].start}, len(o), r, how)
			}
			for _, t := range tiers {
				if linesAt(lines, i, oLines, t.key) {
					return applyTier(content, name, lines, []int{i}, o, oLines, r, t, how+"; ")
				}
			}
		}
		note = fmt.Sprintf("old_text's lines start with read_file's line numbers, but the file's %s not hold the rest of it "+
			"(the numbers were not taken off). ", lineRange(first-1, first+len(oLines)-2)+words.Plural(len(oLines), " does", " do"))
		oldLines = oLines
	}
	return edited{}, notFound(name, lines, oldLines, note, newNearestWork())
}

// tier is a tolerant match: whole lines whose keys are equal.
type tier struct {
	key func(string) string
	how string
}

var tiers = []tier{
	{trimRight, "trailing white space"},
	{strings.TrimSpace, "indentation"},
}

// applyTier replaces the whole lines of old found by t at found with repl.
func applyTier(content, name string, lines []line, found []int, old string, oldLines []string, repl string, t tier, how string) (edited, error) {
	r := strings.TrimSuffix(repl, "\n")
	if !strings.HasSuffix(old, "\n") {
		r = repl
	}
	how += "old_text matched only when " + t.how + " is ignored"
	if t.how == "indentation" {
		var ok bool
		if r, ok = reindent(lines, found, oldLines, r); !ok {
			return edited{}, errorf("old_text matches %s at %s only when indentation is ignored, and its indentation "+
				"differs from the file's in a way that cannot be carried over to new_text; copy the lines with "+
				"their exact indentation (read the file again)", name, lineRange(found[0], found[0]+len(oldLines)-1))
		}
		how += "; new_text was re-indented as the file is"
	}
	// Each match is the whole lines, without the last line's end.
	spans := make([]span, 0, len(found))
	for _, f := range found {
		last := lines[f+len(oldLines)-1]
		spans = append(spans, span{lines[f].start, last.start + len(strings.TrimSuffix(last.text, "\n"))})
	}
	r = keepCR(lines, found, len(oldLines), r)
	return replaceSpans(content, name, spans, r, how)
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

func replaceAt(content, name string, at []int, n int, repl, how string) (edited, error) {
	spans := make([]span, len(at))
	for i, a := range at {
		spans[i] = span{a, a + n}
	}
	return replaceSpans(content, name, spans, repl, how)
}

// replaceSpans replaces spans of content with repl. It works out the
// result's size first, and refuses one that the file could not be written
// with (see workspace.editFile: more than maxWriteBytes, and larger than
// the file) before building anything: many matches of a long new_text
// would otherwise take memory without bound first.
func replaceSpans(content, name string, spans []span, repl, how string) (edited, error) {
	if size, grown := resultSize(content, spans, repl); size > maxWriteBytes && grown {
		return edited{}, errorf("the edit would make %s at least %d bytes; the limit is %d: replace fewer occurrences at a time, "+
			"or write a shorter new_text", name, size, maxWriteBytes)
	}
	var b strings.Builder
	e := edited{how: how, changes: make([]span, 0, len(spans))}
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
	return e, nil
}

// resultSize is the size of content with spans replaced by repl, and
// whether the file grows however its lines end: the text is larger, and
// so is the text with "\r\n" line ends.
func resultSize(content string, spans []span, repl string) (size int, grown bool) {
	size = len(content)
	lineEnds, replEnds := 0, strings.Count(repl, "\n")
	for _, s := range spans {
		size += len(repl) - (s.end - s.start)
		lineEnds += replEnds - strings.Count(content[s.start:s.end], "\n")
	}
	return size, size > len(content) && size+lineEnds > len(content)
}

// line is one line of a text: its offset and its text with its "\n".
type line struct {
	start int
	text  string
}

func splitLines(s string) []line {
	out := make([]line, 0, strings.Count(s, "\n")+1)
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
// without overlapping, comparing lines by their key. It is linear in the
// lines of both (Knuth-Morris-Pratt over the keys' numbers), and counts
// its steps in w.
func findLines(lines []line, want []string, key func(string) string, w *work) []int {
	ids := map[string]int{}
	pat := make([]int, len(want))
	for k, s := range want {
		id, ok := ids[key(s)]
		if !ok {
			id = len(ids)
			ids[key(s)] = id
		}
		pat[k] = id
	}
	// fail[k] is the length of the longest proper prefix of pat[:k+1]
	// that is also its suffix.
	fail := make([]int, len(pat))
	for i, j := 1, 0; i < len(pat); i++ {
		for j > 0 && pat[i] != pat[j] {
			j = fail[j-1]
			w.n++
		}
		if pat[i] == pat[j] {
			j++
		}
		fail[i] = j
		w.n++
	}
	var found []int
	j := 0
	for i, l := range lines {
		id, ok := ids[key(l.text)]
		if !ok {
			id = -1
		}
		for j > 0 && id != pat[j] {
			j = fail[j-1]
			w.n++
		}
		if id == pat[j] {
			j++
		}
		w.n++
		if j == len(pat) {
			found = append(found, i+1-len(pat))
			j = 0
		}
	}
	return found
}

// linesAt reports whether the lines want are at lines[i:], by their key.
func linesAt(lines []line, i int, want []string, key func(string) string) bool {
	if i < 0 || i+len(want) > len(lines) {
		return false
	}
	for k, s := range want {
		if key(lines[i+k].text) != key(s) {
			return false
		}
	}
	return true
}

// work counts the steps of a search, and bounds them when limit is set.
type work struct {
	n, limit int
	cut      bool // a step was refused
}

// spend takes n steps, unless they would pass the limit or a step was
// refused before.
func (w *work) spend(n int) bool {
	if w.cut || w.limit > 0 && w.n+n > w.limit {
		w.cut = true
		return false
	}
	w.n += n
	return true
}

func lineStarts(lines []line, idx []int) []int {
	at := make([]int, len(idx))
	for i, n := range idx {
		at[i] = lines[n].start
	}
	return at
}

// lineNumberPrefix is read_file's "   12\t" before a line.
var lineNumberPrefix = regexp.MustCompile(`^ *([0-9]+)\t`)

// withoutLineNumbers strips read_file's line numbers from old, when every
// line of it has one and they count up by one from first, and from repl's
// lines that have one.
func withoutLineNumbers(old, repl string) (o, r string, first int, ok bool) {
	strip := func(s string, all bool) (string, int, bool) {
		ls := strings.Split(s, "\n")
		n, first := 0, 0
		for i, l := range ls {
			if m := lineNumberPrefix.FindStringSubmatchIndex(l); m != nil {
				num, err := strconv.Atoi(l[m[2]:m[3]])
				if all && (err != nil || num < 1 || n > 0 && num != first+n) {
					return s, 0, false
				}
				if n == 0 {
					first = num
				}
				ls[i] = l[m[1]:]
				n++
			} else if all && !(i == len(ls)-1 && l == "") {
				return s, 0, false
			}
		}
		return strings.Join(ls, "\n"), first, n > 0
	}
	o, first, ok = strip(old, true)
	if !ok {
		return old, repl, 0, false
	}
	r, _, _ = strip(repl, false)
	return o, r, first, true
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
// the file, numbered, and the first line of them that differs. note, if
// any, comes before the nearest lines.
func notFound(name string, lines []line, oldLines []string, note string, nw *nearestWork) error {
	msg := fmt.Sprintf("old_text found 0 times in %s, expected 1; old_text must match the file's text, "+
		"whitespace and indentation included (leading and trailing white space of whole lines is forgiven)", name)
	start, score := nearest(lines, oldLines, nw)
	cut := ""
	if nw.cut() {
		cut = " The search for the nearest lines was cut short (the file is too large to search whole): " +
			"read the part of the file you mean to edit and copy old_text from it."
	}
	if score == 0 {
		if cut != "" {
			return errorf("%s. %sNo lines resembling it were found in the part of the file searched.%s", msg, note, cut)
		}
		return errorf("%s. %sNo lines of the file resemble it: read the file again.", msg, note)
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
	return errorf("%s. %sThe nearest text is at %s:\n%s\n%sCopy old_text from these lines as they are (without the line numbers).%s",
		msg, note, lineRange(start, end-1), untrusted.Block("untrusted-file", " path="+strconv.Quote(name), b.String()), diff, cut)
}

// Bounds of the search for the nearest lines, whose steps grow faster than
// the file: trigram steps (a line's trigrams taken, or looked up in
// another line's) and edit-distance cells (one byte of a line against one
// of another). Files of a few hundred kilobytes are searched whole.
const (
	maxTrigramSteps  = 16 << 20
	maxDistanceCells = 64 << 20
)

// nearestWork is the work of one search for the nearest lines.
type nearestWork struct{ trigrams, cells work }

func newNearestWork() *nearestWork {
	return &nearestWork{trigrams: work{limit: maxTrigramSteps}, cells: work{limit: maxDistanceCells}}
}

func (nw *nearestWork) cut() bool { return nw.trigrams.cut || nw.cells.cut }

// nearest is the line where the file's lines best resemble old's, and a
// score above 0 when some do (0: none does). Candidate places come from
// the lines of old found in the file as they are (a line found often, like
// "}", says little of where, and weighs less) and from the file's lines
// most like old's most distinctive lines; each is then scored by the edit
// distance of its lines to old's, so that the rare line decides, not the
// first one. The trigram search and the scoring stop at nw's bounds: the
// places found until then are scored, the first ones first.
func nearest(lines []line, old []string, nw *nearestWork) (start int, score float64) {
	const maxVotingLines = 50 // a line found more often gives no votes
	index := map[string][]int{}
	for _, o := range old {
		if t := strings.TrimSpace(o); t != "" {
			index[t] = nil
		}
	}
	for i, l := range lines {
		t := strings.TrimSpace(l.text)
		if at, ok := index[t]; ok && len(at) <= maxVotingLines {
			index[t] = append(at, i)
		}
	}
	votes := map[int]float64{}
	for k, o := range old {
		t := strings.TrimSpace(o)
		if n := len(index[t]); t == "" || n == 0 || n > maxVotingLines {
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
	type cand struct {
		i   int
		sim float64
	}
	var (
		wants [][]uint32
		best  [][]cand // of each want, the 10 most alike, most alike first
		buf   []uint32
	)
	for _, k := range ks[:min(len(ks), 3)] {
		wants = append(wants, trigrams(strings.TrimSpace(old[k]), nil))
		best = append(best, nil)
	}
	for i, l := range lines {
		t := strings.TrimSpace(l.text)
		if !nw.trigrams.spend(min(len(t), snippetLineBytes)) {
			break
		}
		buf = trigrams(t, buf)
		for w, want := range wants {
			if !nw.trigrams.spend(min(len(want), len(buf))) {
				break
			}
			sim := similarity(want, buf)
			c := best[w]
			if sim == 0 || len(c) == 10 && sim <= c[9].sim {
				continue
			}
			// After the places as alike, which come earlier in the file.
			at := len(c) - 1
			for at >= 0 && c[at].sim < sim {
				at--
			}
			c = slices.Insert(c, at+1, cand{i, sim})
			best[w] = c[:min(len(c), 10)]
		}
	}
	var alike []int // places from trigrams, kept whatever the votes
	for w, k := range ks[:len(wants)] {
		for _, c := range best[w] {
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
	starts = starts[:min(len(starts), 100)]
	// The order places are scored in matters only when the scoring is cut:
	// the ten best voted, those from trigrams, the rest.
	n := min(len(starts), 10)
	starts = slices.Concat(starts[:n], alike, starts[n:])
	// Score each place by how alike its lines are to old's, over at most
	// the first 20 lines of old that are not blank.
	scored := ks
	if len(scored) > 20 {
		scored = slices.Clone(ks[:20])
	}
	slices.Sort(scored)
	top := -1.0
	seen := map[int]bool{}
	for _, s := range starts {
		if seen[s] {
			continue
		}
		seen[s] = true
		cells := 0
		for _, k := range scored {
			if s+k < len(lines) {
				cells += min(len(strings.TrimSpace(old[k])), snippetLineBytes) * min(len(strings.TrimSpace(lines[s+k].text)), snippetLineBytes)
			}
		}
		if !nw.cells.spend(cells) {
			break
		}
		sum := 0.0
		for _, k := range scored {
			if s+k < len(lines) {
				sum += editRatio(strings.TrimSpace(old[k]), strings.TrimSpace(lines[s+k].text))
			}
		}
		if sum > top || sum == top && s < start {
			top, start = sum, s
		}
	}
	if len(scored) == 0 || top/float64(len(scored)) < 0.5 {
		return 0, 0
	}
	return start, top
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

// trigrams is the distinct trigrams of s's first snippetLineBytes bytes,
// sorted, in buf's storage.
func trigrams(s string, buf []uint32) []uint32 {
	s = s[:min(len(s), snippetLineBytes)]
	buf = buf[:0]
	for i := 0; i+3 <= len(s); i++ {
		buf = append(buf, uint32(s[i])<<16|uint32(s[i+1])<<8|uint32(s[i+2]))
	}
	slices.Sort(buf)
	return slices.Compact(buf)
}

// similarity is the Jaccard index of two trigram sets (sorted), in steps
// of the smaller set.
func similarity(a, b []uint32) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	common := 0
	for _, t := range a {
		if _, ok := slices.BinarySearch(b, t); ok {
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
		if len(ranges) < maxListedMatches {
			ranges = append(ranges, lineRange(first, last))
		} else if len(ranges) == maxListedMatches {
			ranges = append(ranges, "")
		}
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
	if len(ranges) > maxListedMatches {
		ranges[maxListedMatches] = fmt.Sprintf("%d more places", len(e.changes)-maxListedMatches)
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
