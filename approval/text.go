package approval

import (
	"fmt"
	"strings"

	"github.com/pullwright/pullwright/policy"
)

// Text is r as a terminal shows it: the same sentences as the request
// comment, in its order (the warnings, the agent's reason, the rest), with the same escaping of what does not show as itself
// (policy.Escaped) and no markup a terminal would print as is. Every line
// ends with a newline.
func Text(r Request) string {
	var b strings.Builder
	what, prompt := "run a command", "    $ "
	if r.Tool != nil {
		what, prompt = "call a tool", "    "
	}
	fmt.Fprintf(&b, "The agent asks to %s · request %s · digest %s\n", what, r.ID, r.ShortDigest())
	b.WriteString(indent(Escape(r.Command), prompt))
	sentence := func(s Sentence) {
		mark := "  "
		if s.Warning {
			mark = "! "
		}
		b.WriteString(mark + PlainText(s) + "\n")
		if s.Kind == KindSetup && r.Setup.Diff != "" {
			b.WriteString(indent(Escape(r.Setup.Diff), "    "))
		}
	}
	warnings, rest := r.Parts()
	for _, s := range warnings {
		sentence(s)
	}
	if reason := oneLine(r.Reason); reason != "" {
		b.WriteString("  Why: " + Escape(reason) + "\n")
	}
	for _, s := range rest {
		sentence(s)
	}
	if len(r.Files) > 0 {
		b.WriteString("  Files changed so far:\n")
		for i, f := range r.Files {
			if i == MaxFilesShown {
				fmt.Fprintf(&b, "    and %d more\n", len(r.Files)-i)
				break
			}
			fmt.Fprintf(&b, "    %s (+%d −%d)\n", Line(f.Path), f.Added, f.Deleted)
		}
	}
	return b.String()
}

// MaxFilesShown bounds the files a rendering lists one by one: an agent
// that writes thousands must not push the rest of the request out of
// sight (or out of a comment's size).
const MaxFilesShown = 100

// PlainText is s as one line of text, every value escaped as the comment
// escapes it.
func PlainText(s Sentence) string {
	var b strings.Builder
	for _, sp := range s.Spans {
		switch {
		case sp.Code:
			b.WriteString("`" + Line(sp.Text) + "`")
		case sp.Login:
			b.WriteString("@" + Line(sp.Text))
		default:
			b.WriteString(Line(sp.Text))
		}
	}
	return b.String()
}

// Escape is policy.Escaped: what does not show as itself is written as
// its code point, on every surface alike. Line breaks and tabs are kept,
// for the command and the diff, which are shown as blocks.
func Escape(s string) string { return policy.Escaped(s) }

// Line is Escape for a value shown within a line (a path, a name, an
// error): its line breaks and tabs are written as their code points too,
// so that it cannot start a line of its own that looks like ours.
func Line(s string) string {
	return strings.NewReplacer("\n", "<U+000A>", "\t", "<U+0009>").Replace(Escape(s))
}

// indent prefixes each line of s with prefix and ends it with a newline.
func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+strings.Repeat(" ", len(prefix))) + "\n"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
