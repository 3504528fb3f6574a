package agent

import "testing"

// TestGlobWrapper holds what compileGlob adds to doublestar: a class stays
// within one path element, and {…} alternatives stay few.
func TestGlobWrapper(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"a[^b]c", "a/c", false},
		{"a[!b]c", "a/c", false},
		{"a[!b]c", "axc", true},
		{"a[!b]c", "abc", false},
		{"*[^_]x.go", "a/x.go", false},
		{"{a,b/{c,d}}/[!x]", "b/c/y", true},
	}
	for _, tt := range tests {
		m, err := compileGlob(tt.pattern, false)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tt.pattern, err)
			continue
		}
		if got := m.match(tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	for _, bad := range []string{"a[b/]c", "a[.-0]b", "{..,a}/x", "a/{b,..}", "{a,b,c,d,e,f,g,h}{a,b,c,d,e,f,g,h}{a,b}"} {
		if _, err := compileGlob(bad, false); err == nil {
			t.Errorf("compileGlob(%q) accepted", bad)
		}
	}
	for _, good := range []string{"..,x", "a[0-9]b", "a..b", "{a,b,c,d,e,f,g,h}{a,b,c,d,e,f,g,h}", "[{]x", "a,b"} {
		if _, err := compileGlob(good, false); err != nil {
			t.Errorf("compileGlob(%q): %v", good, err)
		}
	}
}
