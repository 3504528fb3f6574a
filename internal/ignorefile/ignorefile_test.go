package ignorefile

import "testing"

func TestParse(t *testing.T) {
	ps := Parse([]byte("# build output\r\nbuild/\r\n\n  \n*.log\n!keep.log\n"), []string{"sub"})
	if len(ps) != 3 {
		t.Fatalf("%d patterns, want 3", len(ps))
	}
	for _, tc := range []struct {
		path []string
		dir  bool
		want bool
	}{
		{[]string{"sub", "build"}, true, true},
		{[]string{"build"}, true, false}, // outside the file's directory
		{[]string{"sub", "x.log"}, false, true},
		{[]string{"sub", "keep.log"}, false, false},
	} {
		matched := false
		for _, p := range ps {
			if r := p.Match(tc.path, tc.dir); r != 0 {
				matched = r == 1 // gitignore.Exclude
			}
		}
		if matched != tc.want {
			t.Errorf("%v: ignored %v, want %v", tc.path, matched, tc.want)
		}
	}
}
