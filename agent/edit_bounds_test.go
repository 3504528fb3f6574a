package agent

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// expected_matches set to the count an ambiguous edit's error names, with
// a long new_text: the result's size is known before it is built, and an
// edit that would make the file larger than a write may be is refused
// without taking the memory of its result first.
func TestEditManyMatchesRefusedBeforeBuilding(t *testing.T) {
	const n, k = 1 << 16, 1 << 10 // a result of 64 MiB
	content, repl := strings.Repeat("a", n), strings.Repeat("b", k)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := planEdit(content, "a", repl, n, "a.txt")
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the edit would make a.txt at least %d bytes; the limit is %d", n*k, maxWriteBytes)) {
		t.Fatalf("err = %v, want the size refused", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > maxWriteBytes {
		t.Errorf("refusing the edit allocated %d bytes, more than a write may hold (%d)", got, maxWriteBytes)
	}

	// Through the tool, by the tolerant tiers too: the file is unchanged.
	a := newTestAgent(t, Config{})
	dir := workspaceDir(t, map[string]string{"f.txt": strings.Repeat("x  \n", n)})
	got, _ := callTool(t, a, dir, &State{}, ToolEditFile,
		args(t, map[string]any{"path": "f.txt", "old_text": "x\n", "new_text": repl + "\n", "expected_matches": n}))
	if !strings.Contains(got, "the limit is") {
		t.Errorf("result = %.300s", got)
	}
	if readDisk(t, dir, "f.txt") != strings.Repeat("x  \n", n) {
		t.Error("the file was changed")
	}
}

// The refusal is the write's own: an edit that leaves a large file no
// larger is not refused, however its line ends are written.
func TestResultSize(t *testing.T) {
	for _, tc := range []struct {
		content string
		spans   []span
		repl    string
		size    int
		grown   bool
	}{
		{"aaaa", []span{{0, 1}, {2, 3}}, "bb", 6, true},
		{"aaaa", []span{{0, 2}}, "b", 3, false},
		{"aaaa", []span{{0, 1}}, "b", 4, false},
		// Larger as text, but not once each "\n" is "\r\n".
		{"a\n\n\nb", []span{{1, 4}}, "xyzw", 6, false},
		{"a\nb", []span{{1, 2}}, "\n\n", 4, true},
	} {
		size, grown := resultSize(tc.content, tc.spans, tc.repl)
		if size != tc.size || grown != tc.grown {
			t.Errorf("resultSize(%q, %v, %q) = %d, %v; want %d, %v", tc.content, tc.spans, tc.repl, size, grown, tc.size, tc.grown)
		}
	}
}

// An old_text of many identical lines and one that differs, against a
// file of such lines: the tolerant tiers take steps in proportion to the
// lines of both, not to their product.
func TestFindLinesIsLinear(t *testing.T) {
	const n, k = 1 << 14, 1000
	lines := splitLines(strings.Repeat("a\n", n))
	want := strings.Split(strings.Repeat("a\n", k)+"b", "\n")
	for _, tr := range tiers {
		var w work
		if found := findLines(lines, want, tr.key, &w); len(found) != 0 {
			t.Errorf("%s: found %v", tr.how, found)
		}
		if w.n > 3*(n+k) {
			t.Errorf("%s: %d steps for %d lines and %d lines of old_text", tr.how, w.n, n, k)
		}
	}
}

// findLines finds what a line-by-line comparison finds: the first match,
// then the next one after it, and so on.
func TestFindLinesAsNaive(t *testing.T) {
	naive := func(lines []line, want []string, key func(string) string) []int {
		var found []int
		for i := 0; i+len(want) <= len(lines); {
			if linesAt(lines, i, want, key) {
				found = append(found, i)
				i += len(want)
				continue
			}
			i++
		}
		return found
	}
	rng := rand.New(rand.NewPCG(40, 3))
	words := []string{"a", "a ", " a", "b", "", "\tb "}
	pick := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return out
	}
	for range 2000 {
		text := strings.Join(pick(1+rng.IntN(30)), "\n")
		want := pick(1 + rng.IntN(4))
		lines := splitLines(text)
		for _, tr := range tiers {
			got := findLines(lines, want, tr.key, &work{})
			if exp := naive(lines, want, tr.key); !slices.Equal(got, exp) {
				t.Fatalf("%s: findLines(%q, %q) = %v, want %v", tr.how, text, want, got, exp)
			}
		}
	}
}

// One long line of old_text with many distinct trigrams, against a file of
// many short lines: the trigram search takes steps of the smaller line's
// trigrams, and old_text's line is cut before its trigrams are taken.
func TestNearestTrigramStepsAreBounded(t *testing.T) {
	const n = 1 << 14
	rng := rand.New(rand.NewPCG(40, 5))
	b := make([]byte, 20000)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	lines := splitLines(strings.Repeat("abc\n", n))
	nw := newNearestWork()
	nearest(lines, []string{"abc" + string(b)}, nw)
	if max := 2 * 4 * n; nw.trigrams.n > max {
		t.Errorf("%d trigram steps for %d lines of 3 bytes, want at most %d", nw.trigrams.n, n, max)
	}
	if nw.cut() {
		t.Error("a search of 64 KiB was cut")
	}
}

// A file too large to search whole gets a not-found answer in bounded
// steps, which says the search was cut; a small one is searched whole.
func TestNearestSaysWhenCut(t *testing.T) {
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "line number %d of the file\n", i)
	}
	b.WriteString("func target(alpha, beta int) string {\n")
	lines := splitLines(b.String())
	old := []string{"func target(alpha, beta int) strings {"}

	err := notFound("f", lines, old, "", newNearestWork())
	if msg := err.Error(); !strings.Contains(msg, "The nearest text is at line 5001") || strings.Contains(msg, "cut short") {
		t.Errorf("uncut search: %s", msg)
	}

	nw := &nearestWork{trigrams: work{limit: 1000}, cells: work{limit: maxDistanceCells}}
	err = notFound("f", lines, old, "", nw)
	if nw.trigrams.n > 1000 {
		t.Errorf("%d trigram steps, past the limit of 1000", nw.trigrams.n)
	}
	if msg := err.Error(); !strings.Contains(msg, "search for the nearest lines was cut short") || strings.Contains(msg, "line 5001") {
		t.Errorf("cut search: %s", msg)
	}

	// Many places alike in long lines: the scoring stops at its bound.
	long := strings.Repeat("x", snippetLineBytes)
	lines = splitLines(strings.Repeat(long+"\n", 200))
	nw = &nearestWork{trigrams: work{limit: maxTrigramSteps}, cells: work{limit: 10 * snippetLineBytes * snippetLineBytes}}
	nearest(lines, []string{long + "y", long + "z"}, nw)
	if !nw.cells.cut || nw.cells.n > nw.cells.limit {
		t.Errorf("scoring: %d cells of %d, cut %v", nw.cells.n, nw.cells.limit, nw.cells.cut)
	}
}

// read_file's line numbers are taken off old_text only when they name the
// lines where the rest of it is; a file's own numbered rows are text.
func TestEditLineNumbersMustNameTheLines(t *testing.T) {
	cases := []struct {
		name, file, old, new string
		wantFile             string // "" when refused
		want                 string
	}{
		{name: "a TSV row missing a trailing space",
			file: "1\tAlice \n2\tBob\n\nAlice\nBob\n", old: "1\tAlice\n2\tBob\n", new: "1\tAlicia\n2\tBob\n",
			wantFile: "1\tAlicia\n2\tBob\n\nAlice\nBob\n", want: "trailing white space"},
		{name: "numbers of the lines, trailing space dropped",
			file: "a\nfoo  \nbar\n", old: "    2\tfoo\n    3\tbar\n", new: "    2\tFOO\n    3\tbar\n",
			wantFile: "a\nFOO\nbar\n", want: "line-number prefixes; they were left out; old_text matched only when trailing white space"},
		{name: "numbers of other lines",
			file: "a\nfoo\nbar\n", old: "    1\tfoo\n    2\tbar", new: "    1\tx\n    2\ty",
			want: "the file's lines 1-2 do not hold the rest of it"},
		{name: "numbers that do not count up",
			file: "foo\nbar\nfoo\n", old: "1\tfoo\n3\tbar", new: "1\tx\n3\ty",
			want: "found 0 times"},
		{name: "numbers of the place when the text is also elsewhere",
			file: "x\nfoo\nx\nfoo\n", old: "    4\tfoo", new: "    4\tbaz",
			wantFile: "x\nfoo\nx\nbaz\n", want: "line-number prefixes"},
	}
	a := newTestAgent(t, Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := workspaceDir(t, map[string]string{"f.tsv": tc.file})
			got, _ := callTool(t, a, dir, &State{}, ToolEditFile,
				args(t, map[string]any{"path": "f.tsv", "old_text": tc.old, "new_text": tc.new}))
			want := tc.wantFile
			if want == "" {
				want = tc.file
			}
			if disk := readDisk(t, dir, "f.tsv"); disk != want {
				t.Errorf("file = %q, want %q; result:\n%s", disk, want, got)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("result lacks %q:\n%s", tc.want, got)
			}
		})
	}
}

// An edit of many places names the first of them, and how many more.
func TestSnippetsNameAFewPlaces(t *testing.T) {
	const n = maxListedMatches + 10
	e, err := planEdit(strings.Repeat("a\n\n\n\n\n\n\n\n", n), "a", "b", n, "f")
	if err != nil {
		t.Fatal(err)
	}
	where, _ := snippets(e)
	if !strings.HasPrefix(where, "line 1, line 9, ") || !strings.HasSuffix(where, "line 153 and 10 more places") {
		t.Errorf("where = %q", where)
	}
}
