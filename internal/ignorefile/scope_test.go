package ignorefile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

var unbounded = Limits{FileBytes: 1 << 20, TotalBytes: 1 << 20, Patterns: 1 << 20, Generic: 1 << 20}

func child(s *Scope, dir string, data string) *Scope {
	var domain []string
	if dir != "" {
		domain = strings.Split(dir, "/")
	}
	return s.Child(domain, int64(len(data)), func() ([]byte, error) { return []byte(data), nil })
}

// A chain of scopes gives the verdict of go-git's matcher over all their
// patterns in order, plain names looked up or not.
func TestScopeAgreesWithMatcher(t *testing.T) {
	files := []struct{ dir, data string }{
		{"", "build/\n*.log\nvendor\n!keep.log\n/top\ntmp \ndocs/*.html\n"},
		{"a", "!build/\nkeep.log\n*.tmp\n!x.tmp\nvendor/\nvendor\n!vendor/\n"},
		{"a/b", "!*.log\nbuild\nnested/deep\n**/gen\n"},
	}
	s := NewRoot(unbounded)
	var all []gitignore.Pattern
	for _, f := range files {
		s = child(s, f.dir, f.data)
		var domain []string
		if f.dir != "" {
			domain = strings.Split(f.dir, "/")
		}
		all = append(all, Parse([]byte(f.data), domain)...)
	}
	m := gitignore.NewMatcher(all)
	var paths [][]string
	for _, dir := range []string{"", "a", "a/b", "a/b/c", "x"} {
		for _, name := range []string{"build", "x.log", "keep.log", "vendor", "top", "tmp", "y.tmp", "x.tmp",
			"docs", "docs/i.html", "nested", "nested/deep", "gen", "gen/z.go", "build/o.o", "ok.go"} {
			p := name
			if dir != "" {
				p = dir + "/" + name
			}
			paths = append(paths, strings.Split(p, "/"))
		}
	}
	for _, p := range paths {
		for _, dir := range []bool{false, true} {
			if got, want := s.Ignored(p, dir), m.Match(p, dir); got != want {
				t.Errorf("%s (dir %v): ignored %v, go-git's matcher says %v", strings.Join(p, "/"), dir, got, want)
			}
		}
	}
}

func TestScopeLimits(t *testing.T) {
	lines := func(n int, format string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, format+"\n", i)
		}
		return b.String()
	}
	lim := Limits{FileBytes: 1 << 10, TotalBytes: 4 << 10, Patterns: 300, Generic: 100}
	root := NewRoot(lim)
	big := strings.Repeat("x\n", 600) // 1200 bytes: over FileBytes
	if s := child(root, "", big); s != root || root.Tally().Skipped != 1 {
		t.Fatalf("a file over FileBytes was read (skipped %d)", root.Tally().Skipped)
	}
	top := child(root, "", lines(60, "g%d*")) // 60 generic
	if top == root {
		t.Fatal("a file within the limits was not read")
	}
	if s := child(top, "a", lines(50, "h%d*")); s != top || root.Tally().Skipped != 2 {
		t.Fatalf("a file taking its chain over Generic was read (skipped %d)", root.Tally().Skipped)
	}
	b := child(top, "b", lines(200, "n%d"))
	if b == top {
		t.Fatal("plain names count against Generic")
	}
	if s := child(top, "c", lines(50, "m%d")); s != top || root.Tally().Skipped != 3 {
		t.Fatalf("a file over Patterns was read (skipped %d)", root.Tally().Skipped)
	}
	// Plain names are looked up, not matched one by one.
	before := root.Tally().Work
	if !b.Ignored([]string{"b", "n7"}, false) {
		t.Fatal("b/n7 is not ignored")
	}
	if w := root.Tally().Work - before; w > 61 {
		t.Errorf("matching b/n7 took %d pattern matches, want at most 61 (60 generic and the name)", w)
	}
}
