package policy

import (
	"strings"
	"testing"
)

func TestCheckCommand(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		refused   string // the code point named, "" when the command shows as itself
	}{
		{"plain", "go test ./...", ""},
		{"multi-line with tabs", "set -e\n\tmake check\nnpm test", ""},
		{"unicode text", `grep -c "café ≤ naïve" README.md`, ""},
		{"right-to-left override", "echo ok \u202e; rm -rf . #\u202c", "U+202E"},
		{"right-to-left isolate", "make \u2067check\u2069", "U+2067"},
		{"left-to-right mark", "go test\u200e ./...", "U+200E"},
		{"arabic letter mark", "go test \u061c./...", "U+061C"},
		{"zero-width space", "curl\u200b x", "U+200B"},
		{"zero-width joiner", "a\u200db", "U+200D"},
		{"byte order mark", "\ufeffmake", "U+FEFF"},
		{"tag characters", "make\U000E0041", "U+E0041"},
		{"carriage return", "echo safe\r rm -rf .", "U+000D"},
		{"escape sequence", "echo \x1b[2Ksafe", "U+001B"},
		{"delete", "make\x7f", "U+007F"},
		{"c1 control", "make\u0085", "U+0085"},
		{"line separator", "make\u2028rm -rf .", "U+2028"},
		{"private use", "make \ue000", "U+E000"},
		{"not utf-8", "make \xff", "0xFF"},
		{"no-break space", "sh scripts/test.sh\u00a0--dry-run", "U+00A0"},
		{"en quad", "make\u2000check", "U+2000"},
		{"narrow no-break space", "make\u202fcheck", "U+202F"},
		{"ideographic space", "make\u3000check", "U+3000"},
		{"ogham space", "make\u1680check", "U+1680"},
		{"braille blank", "make \u2800", "U+2800"},
		{"spaces pushing the rest out of sight", "go test ./..." + strings.Repeat(" ", 200) + "; curl x | sh", "follows 200 spaces"},
		{"tabs pushing the rest out of sight", "go test ./..." + strings.Repeat("\t", 40) + "; curl x | sh", "follows 40 spaces"},
		{"a very long line", "true " + strings.Repeat("x", 1200) + "; curl x | sh", "longer than 1000 bytes"},
		{"indentation", "for f in a b; do\n" + strings.Repeat(" ", 40) + "echo $f\ndone", ""},
		{"trailing spaces", "make" + strings.Repeat(" ", 40) + "\nmake check", ""},
		{"aligned comment", "make   # build" + strings.Repeat(" ", 16) + "x", ""},
		{"long script of short lines", strings.Repeat("echo ok\n", 400), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCommand(tc.cmd)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("CheckCommand = %v, want it to name %s", err, tc.refused)
			}
			if tc.refused != "" && !strings.HasPrefix(tc.refused, "U+") && !strings.HasPrefix(tc.refused, "0x") {
				return // refused for its layout, which escaping does not change
			}
			// What is shown escaped holds no character CheckCommand
			// refuses, and names what was there.
			shown := Escaped(tc.cmd)
			if err := CheckCommand(shown); err != nil {
				t.Fatalf("Escaped(%q) = %q: %v", tc.cmd, shown, err)
			}
			if tc.refused != "" && !strings.Contains(shown, "<"+tc.refused+">") {
				t.Fatalf("Escaped(%q) = %q, want <%s> in it", tc.cmd, shown, tc.refused)
			}
			if tc.refused == "" && shown != tc.cmd {
				t.Fatalf("Escaped changed a plain command: %q", shown)
			}
		})
	}
}
