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
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCommand(tc.cmd)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("CheckCommand = %v, want it to name %s", err, tc.refused)
			}
			// What is shown escaped holds nothing CheckCommand refuses, and
			// names what was there.
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
