// Package review checks a review the agent wrote against the diff it
// reviews and gives it the form GitHub takes: the lines a comment may be
// placed on (the right side of a hunk), the suggestion block around a
// replacement, and the comments that no line can carry moved into the
// review's body. It is pure: no I/O.
//
// Import rule: only pullwright, inert, policy, untrusted and
// internal/words.
package review

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/inert"
	"github.com/pullwright/pullwright/internal/words"
)

// Ranges reads a unified diff (git's form, as GitHub serves a pull
// request's) and returns, per hunk, the lines of the new file it shows:
// its context and added lines. GitHub takes a review comment on those and
// no others ("must be part of the diff"), and a range's start in the same
// hunk as its end. A deleted file has none.
func Ranges(diff string) []pullwright.LineRange {
	var out []pullwright.LineRange
	for l := range diffLines(diff) {
		if l.header && l.n > 0 {
			out = append(out, pullwright.LineRange{Path: l.path, Start: l.start, End: l.start + l.n - 1})
		}
	}
	return out
}

// Added reads a unified diff and returns the runs of lines it adds, in
// the new file: what changed, without the context around it.
func Added(diff string) []pullwright.LineRange {
	var out []pullwright.LineRange
	n := 0
	for l := range diffLines(diff) {
		switch {
		case l.header:
			n = l.start
		case strings.HasPrefix(l.text, "+"):
			if k := len(out) - 1; k >= 0 && out[k].Path == l.path && out[k].End == n-1 {
				out[k].End = n
			} else {
				out = append(out, pullwright.LineRange{Path: l.path, Start: n, End: n})
			}
			n++
		case strings.HasPrefix(l.text, " "):
			n++
		}
	}
	return out
}

// diffLine is a hunk's line of a unified diff, in the file of the new
// side's path, or, when header is set, a hunk's header that reads, with
// the first line and the length of the hunk's new side.
type diffLine struct {
	path     string
	text     string
	header   bool
	start, n int
}

// diffLines are the hunks' headers and lines of a unified diff, file by
// file, for Ranges and Added. A file with no new side (deleted) has none,
// and neither has a hunk whose header does not read, up to the next one.
func diffLines(diff string) iter.Seq[diffLine] {
	return func(yield func(diffLine) bool) {
		path, in := "", false
		for _, line := range strings.Split(diff, "\n") {
			switch {
			case strings.HasPrefix(line, "diff --git "):
				path, in = "", false
			case (strings.HasPrefix(line, "+++ ") || strings.HasPrefix(line, "--- ")) && !in:
				// Once a hunk began, "+++ " is an added line that starts
				// with "++ ", not the next file's header.
				if strings.HasPrefix(line, "+++ ") {
					path = newPath(strings.TrimPrefix(line, "+++ "))
				}
			case strings.HasPrefix(line, "@@ "):
				start, n, ok := newSide(line)
				in = ok && path != ""
				if in && !yield(diffLine{path: path, text: line, header: true, start: start, n: n}) {
					return
				}
			case in:
				if !yield(diffLine{path: path, text: line}) {
					return
				}
			}
		}
	}
}

// newPath is the path a "+++ " line names, "" for /dev/null.
func newPath(s string) string {
	s = strings.TrimRight(s, "\t\r")
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, "b/")
}

// newSide reads "+c,d" of a hunk header "@@ -a,b +c,d @@".
func newSide(header string) (start, n int, ok bool) {
	f := strings.Fields(header)
	if len(f) < 3 || !strings.HasPrefix(f[2], "+") {
		return 0, 0, false
	}
	s, count, found := strings.Cut(f[2][1:], ",")
	start, err := strconv.Atoi(s)
	if err != nil {
		return 0, 0, false
	}
	n = 1
	if found {
		if n, err = strconv.Atoi(count); err != nil {
			return 0, 0, false
		}
	}
	return start, n, true
}

// Intersect keeps the lines of a that are also in b, range by range, so
// that each result lies in one range of a and one of b: a hunk of the
// pull request's diff that a later push also touched.
func Intersect(a, b []pullwright.LineRange) []pullwright.LineRange {
	var out []pullwright.LineRange
	for _, x := range a {
		for _, y := range b {
			if x.Path != y.Path {
				continue
			}
			s, e := max(x.Start, y.Start), min(x.End, y.End)
			if s <= e {
				out = append(out, pullwright.LineRange{Path: x.Path, Start: s, End: e})
			}
		}
	}
	return out
}

// Check tells whether a comment on lines start to line of path fits in
// one of ranges, with an error that says where comments on that file may
// go when it does not. start is 0 for a comment on one line.
func Check(ranges []pullwright.LineRange, path string, start, line int) error {
	if line < 1 {
		return fmt.Errorf("line must be 1 or more, not %d", line)
	}
	if start < 0 || (start > 0 && start > line) {
		return fmt.Errorf("start_line %d must come before line %d", start, line)
	}
	if start == 0 {
		start = line
	}
	var here []string
	for _, r := range ranges {
		if r.Path != path {
			continue
		}
		if r.Start <= start && line <= r.End {
			return nil
		}
		here = append(here, Span(r.Start, r.End))
	}
	what := "line " + strconv.Itoa(line) + " of " + path + " is"
	if start != line {
		what = "lines " + Span(start, line) + " of " + path + " are"
	}
	if len(here) == 0 {
		return fmt.Errorf("%s has no lines in the diff under review, so it cannot be commented on; say it in the summary instead", path)
	}
	return fmt.Errorf("%s not within one hunk of the diff under review; comments on %s may go on lines %s (a range must stay within one of them), or say it in the summary",
		what, path, strings.Join(here, ", "))
}

// Span names lines a to b as people write them: "7", or "7-9".
func Span(a, b int) string {
	if a == b {
		return strconv.Itoa(a)
	}
	return strconv.Itoa(a) + "-" + strconv.Itoa(b)
}

// Suggestion is a comment's body with a GitHub suggestion block that
// replaces the commented lines with text. The fence is longer than any
// run of backticks at the start of one of text's lines, so text holding
// ``` cannot close it.
func Suggestion(body, text string) string {
	// A lone carriage return ends a line in CommonMark too: a fence after
	// one would close the block early.
	text = strings.TrimSuffix(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	n := 3
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimLeft(l, " \t")
		k := 0
		for k < len(l) && l[k] == '`' {
			k++
		}
		n = max(n, k+1)
	}
	fence := strings.Repeat("`", n)
	var b strings.Builder
	if body = strings.TrimSpace(body); body != "" {
		b.WriteString(body)
		b.WriteString("\n\n")
	}
	b.WriteString(fence + "suggestion\n")
	if text != "" {
		b.WriteString(text + "\n")
	}
	b.WriteString(fence)
	return b.String()
}

// Bounds of what a review posts, in bytes: well under the 65536
// characters GitHub takes in a body, so that no part of a review makes
// GitHub refuse all of it. The agent's review tools refuse more than
// these, and Place cuts what still exceeds them, with a note.
const (
	// MaxSuggestion bounds a suggestion's replacement text.
	MaxSuggestion = 16 << 10
	// MaxComment bounds a line comment, its suggestion block included.
	MaxComment = 32 << 10
	// MaxSummary bounds the review's summary.
	MaxSummary = 32 << 10
	// MaxBody bounds the review's body: what was reviewed, the summary,
	// and the comments moved into it.
	MaxBody = 48 << 10
)

// Place turns the agent's draft into the review to post on head: the
// comments that fit in ranges become line comments (with their suggestion
// blocks), the others are quoted in the body under the lines they were
// meant for, so nothing the agent wrote is lost. intro, when set, opens
// the body (what was reviewed). The agent's words (the summary and every
// comment) are made inert for h's GitHub (inert.Markdown): they may have
// been steered by the diff they review, so they ping no one, hide nothing
// and show no image from elsewhere; a suggestion block is kept byte for
// byte. What exceeds the bounds above is cut with
// a note: a suggestion too long is left out (a cut one would replace the
// lines with part of the text), and the comments moved into the body
// that do not fit in it are counted.
func Place(d pullwright.ReviewDraft, ranges []pullwright.LineRange, head, intro string, h inert.Hosts) pullwright.NewReview {
	r := pullwright.NewReview{CommitID: head}
	var outside []string
	for _, c := range d.Comments {
		body := commentBody(c, h)
		start := c.StartLine
		if start == c.Line {
			// GitHub refuses a range whose start does not precede its end.
			start = 0
		}
		if Check(ranges, c.Path, start, c.Line) != nil {
			where := c.Path + ":" + Span(max(start, 1), c.Line)
			if start == 0 {
				where = c.Path + ":" + strconv.Itoa(c.Line)
			}
			outside = append(outside, fmt.Sprintf("**`%s`** (not in the diff)\n\n%s", strings.ReplaceAll(where, "`", "'"), body))
			continue
		}
		r.Comments = append(r.Comments, pullwright.NewReviewComment{Path: c.Path, Line: c.Line, StartLine: start, Body: body})
	}
	parts := slices.DeleteFunc([]string{strings.TrimSpace(intro), safe(d.Summary, MaxSummary, h)}, func(s string) bool { return s == "" })
	body := strings.Join(parts, "\n\n")
	if len(outside) > 0 {
		const heading, sep = "### Comments on lines outside the diff\n\n", "\n\n---\n\n"
		// Room for the heading and the note of what did not fit.
		room := MaxBody - len(body) - len(heading) - 200
		var kept []string
		for i, o := range outside {
			if len(o)+len(sep) > room {
				n := len(outside) - i
				kept = append(kept, fmt.Sprintf("*(%d more %s left out: a review's body holds at most %d bytes.)*", n, words.Plural(n, "comment is", "comments are"), MaxBody))
				r.LeftOut = n
				break
			}
			room -= len(o) + len(sep)
			kept = append(kept, o)
		}
		if body != "" {
			body += "\n\n"
		}
		body += heading + strings.Join(kept, sep)
	}
	r.Body = cut(body, MaxBody)
	return r
}

// commentBody is a draft comment's body as posted, within MaxComment: its
// text and its suggestion block, or a note where a suggestion too long to
// post was.
func commentBody(c pullwright.DraftComment, h inert.Hosts) string {
	if c.Suggestion == nil {
		return safe(c.Body, MaxComment, h)
	}
	block := Suggestion("", *c.Suggestion)
	// The same bounds the agent's tool holds a suggestion to (its text,
	// and the comment it makes): what the agent was told it may post is
	// never dropped here.
	if len(*c.Suggestion) > MaxSuggestion || len(block)+2 > MaxComment {
		note := fmt.Sprintf("*(A suggested replacement of %d bytes is left out: a suggestion may have at most %d.)*", len(*c.Suggestion), MaxSuggestion)
		body := safe(c.Body, MaxComment-len(note)-2, h)
		if body == "" {
			return note
		}
		return body + "\n\n" + note
	}
	return Suggestion(safe(c.Body, MaxComment-len(block)-2, h), *c.Suggestion)
}

// safe is s, the agent's Markdown, made inert for h's GitHub within n
// bytes: cut first, so that what is posted is whole, and cut shorter when
// the escapes made it longer.
func safe(s string, n int, h inert.Hosts) string {
	keep := n
	for keep > 0 {
		out := inert.Markdown(cut(strings.TrimSpace(s), keep), h)
		if len(out) <= n {
			return out
		}
		keep -= len(out) - n
	}
	return ""
}

// cut keeps s within n bytes: a longer s is cut at a line's end (or a
// character's), a code fence it leaves open is closed, and a note says how
// much was left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := n - 100
	for keep > 0 {
		k := keep
		if i := strings.LastIndexByte(s[:k], '\n'); i > k/2 {
			k = i
		}
		for k > 0 && !utf8.RuneStart(s[k]) {
			k--
		}
		out := strings.TrimRight(s[:k], " \t\r\n")
		if fence := openFence(out); fence != "" {
			out += "\n" + fence
		}
		out += fmt.Sprintf("\n\n*(cut: %d more bytes are left out.)*", len(s)-k)
		if len(out) <= n {
			return out
		}
		keep -= len(out) - n
	}
	return ""
}

// openFence is the fence of a fenced code block s leaves open ("```",
// "~~~~", …), "" when it closes all it opens.
func openFence(s string) string {
	open := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimLeft(l, " ")
		if open != "" {
			run := len(l) - len(strings.TrimLeft(l, open[:1]))
			if run >= len(open) && strings.TrimSpace(l[run:]) == "" {
				open = ""
			}
			continue
		}
		for _, ch := range []string{"`", "~"} {
			if run := len(l) - len(strings.TrimLeft(l, ch)); run >= 3 {
				open = l[:run]
			}
		}
	}
	return open
}
