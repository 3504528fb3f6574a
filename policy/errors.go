package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pullwright/pullwright/internal/words"
)

// maxErrors bounds how many problems one file reports: a maintainer fixes
// the first screenful and pushes again, and a pathological file must not
// produce a comment longer than GitHub accepts.
const maxErrors = 20

// Error is one problem in a configuration file.
type Error struct {
	// Line is 1-based; 0 when the problem has no single line (a value
	// that was not written at all, or a file that could not be read).
	Line int `json:"line"`
	// Key is the dotted path of the setting, e.g. "sandbox.memory" or
	// "auto_approve[1].pattern"; empty for the file as a whole.
	Key string `json:"key,omitempty"`
	// Msg says what is wrong and, where it helps, how to write it.
	Msg string `json:"msg"`
}

// Errors is every problem found in one file, in line order. Load,
// LoadOperator and Resolve return it (as error) so that the caller can
// post all of them at once rather than one per push.
type Errors struct {
	// File names the file in messages: Path for a repository's file;
	// empty for the operator's file until the caller, which knows its
	// name, sets it.
	File string  `json:"file,omitempty"`
	List []Error `json:"errors"`
	// More counts the problems left out beyond maxErrors.
	More int `json:"more,omitempty"`
}

func (e *Errors) add(line int, key, format string, args ...any) {
	if len(e.List) >= maxErrors {
		e.More++
		return
	}
	// One problem, one line: a message quoting the parser must not
	// break the "file:line: key: message" form.
	oneLine := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")
	e.List = append(e.List, Error{Line: max(line, 0), Key: oneLine.Replace(key), Msg: oneLine.Replace(fmt.Sprintf(format, args...))})
}

// err returns e as an error, or a nil error (not a nil *Errors, which
// would compare non-nil) when there is nothing to report. Problems are
// sorted by line so that the report reads like the file (and by key
// within a line written in flow style); those without a line come last.
func (e *Errors) err() error {
	if e == nil || len(e.List) == 0 {
		return nil
	}
	slices.SortStableFunc(e.List, func(a, b Error) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Key, b.Key))
	})
	return e
}

// Error renders one problem per line, "file:line: key: message", the
// form editors and CI logs turn into links.
func (e *Errors) Error() string {
	var b strings.Builder
	for i, x := range e.List {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.where(x))
		if x.Key != "" {
			b.WriteString(x.Key)
			b.WriteString(": ")
		}
		b.WriteString(x.Msg)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n%s(and %d more %s not shown)", e.where(Error{}), e.More, words.Plural(e.More, "problem", "problems"))
	}
	return b.String()
}

func (e *Errors) where(x Error) string {
	switch {
	case e.File != "" && x.Line > 0:
		return e.File + ":" + strconv.Itoa(x.Line) + ": "
	case e.File != "":
		return e.File + ": "
	case x.Line > 0:
		return "line " + strconv.Itoa(x.Line) + ": "
	}
	return ""
}

// Markdown renders the problems as a bullet list for a GitHub comment.
// Messages quote what the file says, and the file is written by whoever
// can push to the default branch, so user text is escaped: it must not
// close a code span, start a link or an HTML tag, or mention anyone.
func (e *Errors) Markdown() string {
	var b strings.Builder
	for _, x := range e.List {
		b.WriteString("- ")
		if e.File != "" {
			b.WriteString(codeSpan(e.File))
			if x.Line > 0 {
				b.WriteString(" line ")
				b.WriteString(strconv.Itoa(x.Line))
			}
		} else if x.Line > 0 {
			b.WriteString("line ")
			b.WriteString(strconv.Itoa(x.Line))
		}
		if x.Key != "" {
			if e.File != "" || x.Line > 0 {
				b.WriteString(", ")
			}
			b.WriteString(codeSpan(x.Key))
		}
		if e.File != "" || x.Line > 0 || x.Key != "" {
			b.WriteString(": ")
		}
		b.WriteString(escapeMarkdown(x.Msg))
		b.WriteByte('\n')
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "- … and %d more %s not shown\n", e.More, words.Plural(e.More, "problem", "problems"))
	}
	return b.String()
}

// codeSpan renders s as inline code. Backticks cannot be escaped inside a
// code span, so they are replaced by a look-alike; line breaks would end
// the bullet, so they become spaces.
func codeSpan(s string) string {
	s = strings.NewReplacer("`", "ˋ", "\r", " ", "\n", " ").Replace(s)
	if s == "" {
		return "` `"
	}
	return "`" + s + "`"
}

// markdownEscaper backslash-escapes the ASCII punctuation that starts
// markdown or HTML constructs, and breaks @mentions with an invisible
// entity (the way Renovate and Dependabot quote logins) so a message that
// repeats a team name does not notify the team.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", `\<`, ">", `\>`, "#", `\#`, "|", `\|`, "~", `\~`, "!", `\!`,
	"@", "@&#8203;", "\r", " ", "\n", " ",
)

func escapeMarkdown(s string) string { return markdownEscaper.Replace(s) }
