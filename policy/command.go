package policy

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/pullwright/pullwright/untrusted"
)

// CheckCommand reports, as an error, the first character of a command
// that a maintainer asked to approve it would not see as itself: bytes
// that are not UTF-8, control characters other than tab and line feed,
// and characters that render as nothing or reorder what follows them
// (bidirectional overrides and isolates, the "Trojan Source" trick;
// zero-width and other format characters; line and paragraph separators;
// private use; spaces other than the ASCII space, which look like it and
// are not one to the shell, and blank braille). Such a command shows one
// thing in the request and runs another, so it is never shown for
// approval. So is a command that pushes part of itself out of sight: a
// code block does not wrap, so a long run of spaces inside a line, or a
// very long line, hides what follows it off to the right.
func CheckCommand(cmd string) error {
	spaces, lineStart := 0, 0
	for i := 0; i < len(cmd); {
		r, size := utf8.DecodeRuneInString(cmd[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Errorf("byte %d of the command (0x%02X) is not UTF-8 text", i, cmd[i])
		case unshown(r):
			return fmt.Errorf("byte %d of the command is %U, a character that does not show as itself to the person who approves it", i, r)
		case r == '\n':
			spaces, lineStart = 0, i+1
		case r == ' ' || r == '\t':
			spaces++
		default:
			if spaces > maxSpaceRun && i-spaces > lineStart {
				return fmt.Errorf("byte %d of the command follows %d spaces, which would push it out of sight of the person who approves it", i, spaces)
			}
			spaces = 0
		}
		if i-lineStart >= maxLineBytes {
			return fmt.Errorf("a line of the command is longer than %d bytes, too long to be read whole where it is approved; split it", maxLineBytes)
		}
		i += size
	}
	return nil
}

// What a maintainer sees of a line of a command in a request without
// scrolling: a run of spaces within a line longer than maxSpaceRun, or a
// line longer than maxLineBytes, hides what follows.
const (
	maxSpaceRun  = 16
	maxLineBytes = 1000
)

// Escaped is s with every character CheckCommand refuses written as its
// code point, "<U+202E>": text shown to a maintainer that must show what
// it holds, whatever the renderer does with such characters.
func Escaped(s string) string {
	var out []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, "<0x%02X>", s[i])
		case unshown(r):
			out = fmt.Appendf(out, "<%U>", r)
		default:
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

// unshown reports the characters that do not show as themselves in a
// command (see CheckCommand).
func unshown(r rune) bool {
	if r == '\t' || r == '\n' {
		return false
	}
	return unicode.IsControl(r) || untrusted.IsInvisible(r) || r == 0x2800 ||
		r != ' ' && unicode.In(r, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs)
}
