package policy

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// CheckCommand reports, as an error, the first character of a command
// that a maintainer asked to approve it would not see as itself: bytes
// that are not UTF-8, control characters other than tab and line feed,
// and characters that render as nothing or reorder what follows them
// (bidirectional overrides and isolates, the "Trojan Source" trick;
// zero-width and other format characters; line and paragraph separators;
// private use). Such a command shows one thing in the request and runs
// another, so it is never shown for approval.
func CheckCommand(cmd string) error {
	for i := 0; i < len(cmd); {
		r, size := utf8.DecodeRuneInString(cmd[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Errorf("byte %d of the command (0x%02X) is not UTF-8 text", i, cmd[i])
		case unshown(r):
			return fmt.Errorf("byte %d of the command is %U, a character that does not show as itself to the person who approves it", i, r)
		}
		i += size
	}
	return nil
}

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
	return unicode.IsControl(r) || invisibleRune(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs)
}
