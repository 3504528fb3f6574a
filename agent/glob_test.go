package agent

import (
	"strings"
	"testing"
)

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
		m, err := compileGlob(tt.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tt.pattern, err)
			continue
		}
		if got := m.match(tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	for _, bad := range []string{"a[b/]c", "a[.-0]b", "{..,a}/x", "a/{b,..}", "{a,b,c,d,e,f,g,h}{a,b,c,d,e,f,g,h}{a,b}"} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted", bad)
		}
	}
	for _, good := range []string{"..,x", "a[0-9]b", "a..b", "{a,b,c,d,e,f,g,h}{a,b,c,d,e,f,g,h}", "[{]x", "a,b"} {
		if _, err := compileGlob(good); err != nil {
			t.Errorf("compileGlob(%q): %v", good, err)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern string
		path    string
		want    bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "cmd/main.go", true}, // no '/': the file name at any depth
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"a/**", "a/b/c", true},
		{"a/**", "b/a/c", false},
		{"a/**/c.go", "a/c.go", true},
		{"a/**/c.go", "a/x/y/c.go", true},
		{"a/**/**/c.go", "a/x/c.go", true},
		{"./src/*.go", "src/x.go", true},
		{"src/*.{go,md}", "src/x.md", true},
		{"src/*.{go,md}", "src/x.txt", false},
		{"{a,b/{c,d}}/x", "b/d/x", true},
		{"{a,b/{c,d}}/x", "b/e/x", false},
		{"?.txt", "ab.txt", false},
		{"[ab].txt", "b.txt", true},
		{"docs", "docs/x", false},
	}
	for _, tt := range tests {
		m, err := compileGlob(tt.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tt.pattern, err)
			continue
		}
		if got := m.match(tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	for _, bad := range []string{"", "[", "/abs/*", "../x", "a/../b", "{a,b", "a}", strings.Repeat("{a,b}", 8)} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted", bad)
		}
	}
}
