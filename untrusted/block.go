package untrusted

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// delimiter matches anything that could open or close one of our blocks,
// with the spacing and case variations a model might still read as a tag.
var delimiter = regexp.MustCompile(`(?i)<(\s*/?\s*(?:untrusted|maintainer-instructions|repository-guidance))`)

// Neutralise makes text safe to put inside a delimited block: no tag of ours
// can open or close in it.
func Neutralise(s string) string {
	return delimiter.ReplaceAllString(s, "&lt;$1")
}

// Block wraps untrusted text in <name attrs>…</name>. The text is
// neutralised; name and attrs are the caller's and must already be safe
// (see Login, and OneLine for a quoted value).
func Block(name, attrs, text string) string {
	text = Neutralise(text)
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return "<" + name + attrs + ">\n" + text + "</" + name + ">"
}

// OneLine makes s safe to show on one line of a prompt, outside a block:
// its runs of white space become one space, it is cut to n bytes and
// neutralised.
func OneLine(s string, n int) string {
	return Neutralise(Cut(strings.Join(strings.Fields(s), " "), n))
}

var loginChars = regexp.MustCompile(`[^A-Za-z0-9_.\-\[\]]`)

// Login sanitises a GitHub login for use in an attribute or a mention.
func Login(s string) string {
	s = loginChars.ReplaceAllString(s, "")
	if s == "" {
		return "unknown"
	}
	return Cut(s, 64)
}

// Cut cuts s to at most n bytes on a rune boundary, marking the cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
