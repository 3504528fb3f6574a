package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The edit-robustness benchmark (issue 40, "How we will know"): edit sites
// in real files, and old_text perturbed the way models get it wrong. An
// edit must land on the right place or answer with lines that hold it; it
// must never change the file other than exactly as intended. That last is
// a correctness property, so the test asserts it; the shares are figures.

// robustCategory is one way a model gets old_text wrong.
type robustCategory string

const (
	catExact          robustCategory = "exact (control)"
	catTrailDropped   robustCategory = "trailing white space dropped"
	catTrailAdded     robustCategory = "trailing white space added"
	catTabs4          robustCategory = "tabs as 4 spaces"
	catTabs8          robustCategory = "tabs as 8 spaces"
	catCRLF           robustCategory = "CRLF file, old_text with LF"
	catNumbersOld     robustCategory = "line numbers kept in old_text"
	catNumbersBoth    robustCategory = "line numbers kept in old_text and new_text"
	catTooLittle      robustCategory = "too little context (ambiguous)"
	catOneWordChanged robustCategory = "one word changed (must not apply)"
)

var robustCategories = []robustCategory{catExact, catTrailDropped, catTrailAdded, catTabs4, catTabs8, catCRLF,
	catNumbersOld, catNumbersBoth, catTooLittle, catOneWordChanged}

// robustCase is one edit_file call on a file and what must come of it.
type robustCase struct {
	cat      robustCategory
	file     string // the file's name, for messages
	content  string // the file before the call (bytes on disk)
	old, new string
	intended string // the file after the intended edit; "" when it must not apply
	// literal, when set, is also right: old_text replaced where it occurs
	// as written (dropped white space at the end of its last line stays).
	literal string
	line    int // 1-based line the answer of a refused edit must name
}

// robustOutcome is how a case ended.
type robustOutcome string

const (
	outApplied   robustOutcome = "applied at the right place"
	outAnswered  robustOutcome = "answered with the right lines"
	outMissed    robustOutcome = "answered without the right lines"
	outMustNot   robustOutcome = "applied although old_text was wrong"
	outWrong     robustOutcome = "WRONG PLACE"
	outUnchanged robustOutcome = "no change and no error"
)

func (o robustOutcome) right() bool { return o == outApplied || o == outAnswered }

var (
	robustWord    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]{2,}`)
	answerLines   = regexp.MustCompile(`at (?:lines? )((?:\d+(?:, | and )?)+)`)
	nearestRange  = regexp.MustCompile(`The nearest text is at lines? (\d+)(?:-(\d+))?`)
	leadingTabs   = regexp.MustCompile(`(?m)^\t+`)
	maxSitesOfCat = 6
)

// robustCases makes the cases of one file (text with "\n" line ends), at
// sites picked by rng.
func robustCases(name, text string, rng *rand.Rand) []robustCase {
	lines := splitKeep(text)
	var cases []robustCase
	// Sites: two or three lines, none blank, whose text occurs once.
	type site struct{ first, n int }
	var sites, tabbed []site
	for i := range lines {
		n := 2 + rng.IntN(2)
		if i+n > len(lines) {
			break
		}
		ok := true
		for _, l := range lines[i : i+n] {
			if strings.TrimSpace(l) == "" || len(l) > 300 {
				ok = false
			}
		}
		if !ok || strings.Count(text, joinSite(lines, i, n)) != 1 {
			continue
		}
		sites = append(sites, site{i, n})
		if strings.HasPrefix(lines[i], "\t") {
			tabbed = append(tabbed, site{i, n})
		}
	}
	pick := func(from []site) []site {
		from = slices.Clone(from)
		rng.Shuffle(len(from), func(i, j int) { from[i], from[j] = from[j], from[i] })
		return from[:min(len(from), maxSitesOfCat)]
	}
	// The intended edit: a line inserted after the site's first line, with
	// its indentation, and the last line's end changed.
	edit := func(ls []string, s site, tag string) string {
		out := slices.Clone(ls[s.first : s.first+s.n])
		ins := indentOf(out[0]) + "robust edit " + tag + "\n"
		out = slices.Insert(out, 1, ins)
		last := len(out) - 1
		out[last] = strings.TrimSuffix(out[last], "\n") + " // robust"
		return strings.Join(out, "")
	}
	// at replaces the site's lines (without the last line's end) in ls
	// with repl.
	at := func(ls []string, s site, repl string) string {
		before := strings.Join(ls[:s.first], "")
		mid := strings.Join(ls[s.first:s.first+s.n], "")
		after := strings.Join(ls[s.first+s.n:], "")
		if strings.HasSuffix(mid, "\n") {
			after = "\n" + after
		}
		return before + repl + after
	}
	noEnd := func(s string) string { return strings.TrimSuffix(s, "\n") }
	for k, s := range pick(sites) {
		tag := fmt.Sprintf("%s %d", "e", k)
		old, repl := noEnd(joinSite(lines, s.first, s.n)), noEnd(edit(lines, s, tag))
		cases = append(cases, robustCase{cat: catExact, content: text, old: old, new: repl, intended: at(lines, s, repl), line: s.first + 1})
	}
	// Trailing white space: a copy of the file with some lines ending in
	// spaces or a tab, edited with old_text from the clean file; and the
	// clean file edited with old_text whose lines end in spaces.
	var dirty []string
	for i, l := range lines {
		if strings.TrimSpace(l) != "" && i%3 == 0 {
			l = strings.TrimSuffix(l, "\n") + []string{"  ", "\t", " "}[i%2] + "\n"
			if !strings.HasSuffix(lines[i], "\n") {
				l = strings.TrimSuffix(l, "\n")
			}
		}
		dirty = append(dirty, l)
	}
	dirtyText := strings.Join(dirty, "")
	for k, s := range pick(sites) {
		if !slices.ContainsFunc(dirty[s.first:s.first+s.n], func(l string) bool { return trimRight(l) != strings.TrimSuffix(l, "\n") }) {
			continue // no line of the site has trailing white space
		}
		repl := noEnd(edit(lines, s, fmt.Sprintf("t %d", k)))
		old := noEnd(joinSite(lines, s.first, s.n))
		c := robustCase{cat: catTrailDropped, content: dirtyText, old: old, new: repl, intended: at(dirty, s, repl), line: s.first + 1}
		if strings.Count(dirtyText, old) == 1 {
			c.literal = strings.Replace(dirtyText, old, repl, 1)
		}
		cases = append(cases, c)
	}
	for k, s := range pick(sites) {
		old := strings.ReplaceAll(noEnd(joinSite(lines, s.first, s.n)), "\n", "  \n") + "  "
		repl := noEnd(edit(lines, s, fmt.Sprintf("a %d", k)))
		cases = append(cases, robustCase{cat: catTrailAdded, content: text, old: old, new: repl, intended: at(lines, s, repl), line: s.first + 1})
	}
	for _, tc := range []struct {
		cat robustCategory
		sp  string
	}{{catTabs4, "    "}, {catTabs8, "        "}} {
		spaces := func(s string) string {
			return leadingTabs.ReplaceAllStringFunc(s, func(t string) string { return strings.Repeat(tc.sp, len(t)) })
		}
		for k, s := range pick(tabbed) {
			repl := noEnd(edit(lines, s, fmt.Sprintf("s %d", k)))
			cases = append(cases, robustCase{cat: tc.cat, content: text, old: spaces(noEnd(joinSite(lines, s.first, s.n))),
				new: spaces(repl), intended: at(lines, s, repl), line: s.first + 1})
		}
	}
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	for k, s := range pick(sites) {
		repl := noEnd(edit(lines, s, fmt.Sprintf("c %d", k)))
		cases = append(cases, robustCase{cat: catCRLF, content: crlf(text), old: noEnd(joinSite(lines, s.first, s.n)),
			new: repl, intended: crlf(at(lines, s, repl)), line: s.first + 1})
	}
	numbered := func(s string, first int) string {
		ls := strings.Split(s, "\n")
		for i := range ls {
			ls[i] = fmt.Sprintf("%5d\t%s", first+i, ls[i])
		}
		return strings.Join(ls, "\n")
	}
	for k, s := range pick(sites) {
		repl := noEnd(edit(lines, s, fmt.Sprintf("n %d", k)))
		old := numbered(noEnd(joinSite(lines, s.first, s.n)), s.first+1)
		cases = append(cases, robustCase{cat: catNumbersOld, content: text, old: old, new: repl, intended: at(lines, s, repl), line: s.first + 1})
		// The model copies the numbers of the lines it keeps into
		// new_text, and writes the line it adds without one.
		rl := strings.Split(repl, "\n")
		for i := range rl {
			if i != 1 {
				rl[i] = fmt.Sprintf("%5d\t%s", s.first+1+i-min(i, 1), rl[i])
			}
		}
		cases = append(cases, robustCase{cat: catNumbersBoth, content: text, old: old, new: strings.Join(rl, "\n"),
			intended: at(lines, s, repl), line: s.first + 1})
	}
	// Too little context: one line, at least 8 characters, that occurs
	// more than once; the intended place is one of them.
	var repeated []site
	for i, l := range lines {
		t := noEnd(l)
		if len(strings.TrimSpace(t)) >= 8 && strings.Count(text, t) > 1 && strings.Count(text, t) == countLines(lines, t) {
			repeated = append(repeated, site{i, 1})
		}
	}
	for _, s := range pick(repeated) {
		old := noEnd(lines[s.first])
		cases = append(cases, robustCase{cat: catTooLittle, content: text, old: old, new: old + " // robust", line: s.first + 1})
	}
	// One word changed: a word of the site replaced by another word of the
	// file, so that old_text matches nowhere as written.
	vocab := robustWord.FindAllString(text, -1)
	slices.Sort(vocab)
	vocab = slices.Compact(vocab)
	for k, s := range pick(sites) {
		site := noEnd(joinSite(lines, s.first, s.n))
		locs := robustWord.FindAllStringIndex(site, -1)
		if len(locs) == 0 || len(vocab) < 2 {
			continue
		}
		var old string
		for range 10 {
			l := locs[rng.IntN(len(locs))]
			w := vocab[rng.IntN(len(vocab))]
			if w == site[l[0]:l[1]] {
				continue
			}
			cand := site[:l[0]] + w + site[l[1]:]
			if strings.Contains(text, cand) {
				continue // the text of another place: any tool would take it
			}
			old = cand
			line := s.first + 1 + strings.Count(site[:l[0]], "\n")
			repl := noEnd(edit(lines, s, fmt.Sprintf("w %d", k)))
			cases = append(cases, robustCase{cat: catOneWordChanged, content: text, old: old, new: repl, line: line})
			break
		}
	}
	for i := range cases {
		cases[i].file = name
	}
	return cases
}

func joinSite(lines []string, first, n int) string { return strings.Join(lines[first:first+n], "") }

// countLines counts the lines of ls whose text, without its end, is t.
func countLines(ls []string, t string) int {
	n := 0
	for _, l := range ls {
		if strings.TrimSuffix(l, "\n") == t {
			n++
		}
	}
	return n
}

// runRobustCase runs c's edit in dir and says how it ended.
func runRobustCase(a *Agent, ws *workspace, dir string, c robustCase) (robustOutcome, string, error) {
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
		return "", "", err
	}
	raw, _ := json.Marshal(map[string]any{"path": "f", "old_text": c.old, "new_text": c.new})
	out, _, _ := a.runTool(toolEnv{ctx: context.Background(), ws: ws, st: &State{}, maxOutput: a.cfg.MaxToolOutput},
		toolCallOf(ToolEditFile, string(raw)))
	got, err := os.ReadFile(p)
	if err != nil {
		return "", "", err
	}
	switch {
	case string(got) != c.content && c.intended != "" && (string(got) == c.intended || string(got) == c.literal):
		return outApplied, out, nil
	case string(got) != c.content && c.intended == "" && c.cat == catOneWordChanged:
		// Applied at the site itself is still a change the model did not
		// ask for in those words; anywhere else is a wrong place.
		return outMustNot, out, nil
	case string(got) != c.content:
		return outWrong, out, nil
	case !strings.HasPrefix(out, "error: "):
		return outUnchanged, out, nil
	}
	if answerNames(out, c.line) {
		return outAnswered, out, nil
	}
	return outMissed, out, nil
}

// answerNames reports whether a refused edit's answer names line: in the
// lines of an ambiguous old_text, or the range of the nearest text.
func answerNames(out string, line int) bool {
	if m := nearestRange.FindStringSubmatch(out); m != nil {
		from, _ := strconv.Atoi(m[1])
		to := from
		if m[2] != "" {
			to, _ = strconv.Atoi(m[2])
		}
		return from <= line && line <= to
	}
	if m := answerLines.FindStringSubmatch(out); m != nil {
		for _, f := range regexp.MustCompile(`\d+`).FindAllString(m[1], -1) {
			if n, _ := strconv.Atoi(f); n == line {
				return true
			}
		}
	}
	return false
}

// robustRun runs the cases of files and returns the outcomes by category.
func robustRun(t *testing.T, files map[string]string) (map[robustCategory]map[robustOutcome]int, []string) {
	t.Helper()
	a := newTestAgent(t, Config{})
	dir := t.TempDir()
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	counts := map[robustCategory]map[robustOutcome]int{}
	var bad []string
	rng := rand.New(rand.NewPCG(40, 40))
	for _, name := range slices.Sorted(mapsKeys(files)) {
		for _, c := range robustCases(name, files[name], rng) {
			o, out, err := runRobustCase(a, ws, dir, c)
			if err != nil {
				t.Fatal(err)
			}
			if counts[c.cat] == nil {
				counts[c.cat] = map[robustOutcome]int{}
			}
			counts[c.cat][o]++
			if !o.right() {
				bad = append(bad, fmt.Sprintf("%s, %s, line %d: %s\nold_text %q\n%s", c.file, c.cat, c.line, o, c.old, firstLine(out)))
			}
		}
	}
	return counts, bad
}

func robustSummary(counts map[robustCategory]map[robustOutcome]int) (string, int, int, int) {
	var b strings.Builder
	total, right, wrong := 0, 0, 0
	fmt.Fprintf(&b, "%-44s %5s %7s %8s %7s %7s\n", "category", "cases", "applied", "answered", "missed", "WRONG")
	for _, cat := range robustCategories {
		m := counts[cat]
		n := 0
		for _, v := range m {
			n += v
		}
		if n == 0 {
			continue
		}
		total += n
		right += m[outApplied] + m[outAnswered]
		wrong += m[outWrong]
		fmt.Fprintf(&b, "%-44s %5d %7d %8d %7d %7d\n", cat, n, m[outApplied], m[outAnswered],
			m[outMissed]+m[outMustNot]+m[outUnchanged], m[outWrong])
	}
	fmt.Fprintf(&b, "right place or right lines: %d of %d (%.1f%%); wrong place: %d\n", right, total,
		100*float64(right)/float64(max(total, 1)), wrong)
	return b.String(), total, right, wrong
}

// TestEditRobustness perturbs old_text at sites of the real files in
// testdata/robust (or, with PULLWRIGHT_ROBUST=<commit>, of 50 text files
// of this repository at that commit) and asserts that no edit lands on a
// wrong place.
//
//	PULLWRIGHT_ROBUST=966ecd2 go test -run TestEditRobustness -v ./agent/
func TestEditRobustness(t *testing.T) {
	files := map[string]string{}
	if rev := os.Getenv("PULLWRIGHT_ROBUST"); rev != "" {
		files = repoFiles(t, rev, 50)
	} else {
		ents, err := os.ReadDir("testdata/robust")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".txt") {
				files[e.Name()] = readFile(t, filepath.Join("testdata/robust", e.Name()))
			}
		}
	}
	counts, bad := robustRun(t, files)
	summary, total, right, wrong := robustSummary(counts)
	t.Logf("%d files\n%s", len(files), summary)
	for _, b := range bad {
		t.Log(b)
	}
	if total < 100 {
		t.Errorf("only %d cases: the sites are too few to say anything", total)
	}
	if wrong > 0 {
		t.Errorf("%d edits changed a file other than as intended (a wrong place)", wrong)
	}
	for _, cat := range robustCategories {
		if len(counts[cat]) == 0 {
			t.Errorf("no case of %s", cat)
		}
	}
	t.Logf("share right: %d of %d", right, total)
}

// repoFiles picks n text files of this repository at rev, by a fixed
// seed, among its source and documentation files of 1 KB to 200 KB.
func repoFiles(t *testing.T, rev string, n int) map[string]string {
	t.Helper()
	top, err := gitOut(".", "rev-parse", "--show-toplevel")
	if err != nil {
		t.Skipf("not in a git repository: %v", err)
	}
	repo := strings.TrimSpace(string(top))
	tree, err := lsTree(repo, rev)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := newBlobStore(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.close()
	var names []string
	for _, p := range slices.Sorted(mapsKeys(tree)) {
		switch filepath.Ext(p) {
		case ".go", ".md", ".yml", ".yaml", ".sh", ".html", ".py", ".toml", ".sql":
			if tree[p].mode == "100644" || tree[p].mode == "100755" {
				names = append(names, p)
			}
		}
	}
	rng := rand.New(rand.NewPCG(40, 50))
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	files := map[string]string{}
	for _, p := range names {
		if len(files) == n {
			break
		}
		data, err := blobs.blob(tree[p].sha)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 1<<10 || len(data) > 200<<10 || strings.Contains(string(data), "\r") {
			continue
		}
		files[p] = string(data)
	}
	return files
}

// The scoring must see a wrong place, a missed answer and a right one.
func TestRobustScoring(t *testing.T) {
	a := newTestAgent(t, Config{})
	dir := t.TempDir()
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	text := "alpha one\nbeta two\nalpha one\ngamma three\n"
	for _, tc := range []struct {
		name string
		c    robustCase
		want robustOutcome
	}{
		{"applied", robustCase{cat: catExact, content: text, old: "beta two", new: "beta 2", intended: strings.Replace(text, "beta two", "beta 2", 1)}, outApplied},
		{"applied elsewhere", robustCase{cat: catExact, content: text, old: "beta two", new: "beta 2", intended: strings.Replace(text, "gamma", "x", 1)}, outWrong},
		{"ambiguous names the line", robustCase{cat: catTooLittle, content: text, old: "alpha one", new: "x", line: 3}, outAnswered},
		{"ambiguous misses the line", robustCase{cat: catTooLittle, content: text, old: "alpha one", new: "x", line: 2}, outMissed},
		{"nearest holds the line", robustCase{cat: catOneWordChanged, content: text, old: "gamma threx", new: "x", line: 4}, outAnswered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, out, err := runRobustCase(a, ws, dir, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("outcome %q, want %q; answer:\n%s", got, tc.want, out)
			}
		})
	}
}

// A known failure of edit_file's answer to a near miss (issue 40): when
// the lines of old_text that match are common ones ("}", "\t}") and the
// line that differs is the only one that says where, the answer shows the
// first place the common lines occur, or none at all, not the place that
// is nearest. The benchmark's "one word changed" category measures how
// often (55 of 295 cases over 50 files of this repository at 966ecd2). The
// test is skipped while the failure stands and passes once it is fixed.
func TestNearMissNamesTheRareLine(t *testing.T) {
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, "func f%d() error {\n\tif x%d {\n\t\treturn nil\n\t}\n\treturn nil\n}\n\n", i, i)
	}
	b.WriteString("func split(p string) (string, []string) {\n\tif p == \"\" {\n\t\treturn \"\", nil\n\t}\n\treturn clean, parts\n}\n")
	text := b.String()
	line := 1 + strings.Count(text[:strings.Index(text, "\treturn clean")], "\n")
	a := newTestAgent(t, Config{})
	dir := t.TempDir()
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	c := robustCase{cat: catOneWordChanged, content: text, old: "\t}\n\treturn clear, parts\n}", new: "x", line: line}
	got, out, err := runRobustCase(a, ws, dir, c)
	if err != nil {
		t.Fatal(err)
	}
	switch got {
	case outAnswered:
	default:
		t.Errorf("outcome %q, want the answer to name line %d:\n%s", got, line, out)
	}
}
