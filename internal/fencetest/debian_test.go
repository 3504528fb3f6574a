package fencetest

import (
	"slices"
	"testing"
)

// An egg-info's requires.txt becomes the Requires-Dist pip reads: its
// sections are extras and markers, and a line outside them is a plain
// requirement.
func TestRequiresTxt(t *testing.T) {
	got := requiresTxt("attrs>=19.2.0\niniconfig\n\n[:python_version < \"3.11\"]\ntomli>=1.0.0\n\n[testing]\nmock\n\n[docs:sys_platform == \"win32\"]\ncolorama\n")
	want := []string{
		"attrs>=19.2.0",
		"iniconfig",
		`tomli>=1.0.0; (python_version < "3.11")`,
		`mock; extra == "testing"`,
		`colorama; extra == "docs" and (sys_platform == "win32")`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("requiresTxt = %q, want %q", got, want)
	}
}
