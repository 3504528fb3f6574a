package untrusted

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzVisible(f *testing.F) {
	for _, tt := range visibleTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Visible(in)
		if len(out) > len(in) {
			t.Fatalf("output longer than input: %q → %q", in, out)
		}
		if strings.Contains(out, "<!--") {
			t.Fatalf("a comment opener left: %q → %q", in, out)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("output is not UTF-8: %q → %q", in, out)
		}
		for i, r := range out {
			if IsInvisible(r) {
				t.Fatalf("invisible %U left at %d: %q → %q", r, i, in, out)
			}
		}
		// The same text as the TeX of one math span of each kind: a
		// macro never reaches the model from math.
		tex := mathBody(in)
		for _, math := range []string{"$" + tex + "$", "$$" + tex + "$$", "$`" + tex + "`$", "```math\n" + tex + "\n```"} {
			if tex == "" && math[1] != '`' {
				continue
			}
			if out := Visible(math); strings.Contains(out, `\`) {
				t.Fatalf("a backslash left in math: %q → %q", math, out)
			}
		}
	})
}

// mathBody makes of s the TeX of one math span of any kind, on one line,
// with nothing that could end it early or be removed before the span is
// found.
func mathBody(s string) string {
	s = strings.Map(func(r rune) rune {
		if IsInvisible(r) || r == utf8.RuneError || strings.ContainsRune("$`<\n\r", r) {
			return -1
		}
		return r
	}, s)
	s = strings.TrimLeft(s, " \t\v\f")
	s = strings.TrimRight(s, " \t\v\f\\")
	return s
}
