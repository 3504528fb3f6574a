// Package difftest reads a unified diff as GitHub does when it decides
// where a review comment may go: the new file's lines each hunk shows. It
// serves the fakes of GitHub (internal/fakegithub, task/tasktest) and is
// written apart from the product's parser (review.Ranges) on purpose: a
// fake that shared it would agree with its bugs.
//
// Import rule: none of review.
package difftest

import (
	"strconv"
	"strings"
)

// Hunk is the lines Start to End of the new file at Path that one hunk
// shows (its context and added lines).
type Hunk struct {
	Path       string
	Start, End int
}

// Contains tells whether line of path is in h.
func (h Hunk) Contains(path string, line int) bool {
	return h.Path == path && h.Start <= line && line <= h.End
}

// RightHunks reads the right side of each hunk of a git diff. A hunk's
// lines are counted from its header, so a line of its body that looks
// like a header ("+++ b/x" adding "++ b/x") is read as the line it is. A
// deleted file's hunks show no new lines.
func RightHunks(diff string) []Hunk {
	var out []Hunk
	path := ""
	oldLeft, newLeft := 0, 0
	for _, l := range strings.Split(diff, "\n") {
		if oldLeft > 0 || newLeft > 0 {
			switch {
			case l == "" || l[0] == ' ':
				oldLeft, newLeft = oldLeft-1, newLeft-1
				continue
			case l[0] == '-':
				oldLeft--
				continue
			case l[0] == '+':
				newLeft--
				continue
			case l[0] == '\\': // "\ No newline at end of file"
				continue
			}
			// A hunk shorter than its header says: read on as headers.
			oldLeft, newLeft = 0, 0
		}
		switch {
		case strings.HasPrefix(l, "diff --git "):
			path = ""
		case strings.HasPrefix(l, "+++ "):
			p, _, _ := strings.Cut(strings.TrimPrefix(l, "+++ "), "\t")
			path = ""
			if p != "/dev/null" {
				path = strings.TrimPrefix(p, "b/")
			}
		case strings.HasPrefix(l, "@@ "):
			f := strings.Fields(l)
			if len(f) < 3 {
				continue
			}
			_, o, ok1 := side(f[1], "-")
			start, n, ok2 := side(f[2], "+")
			if !ok1 || !ok2 {
				continue
			}
			oldLeft, newLeft = o, n
			if path != "" && n > 0 {
				out = append(out, Hunk{path, start, start + n - 1})
			}
		}
	}
	return out
}

// side reads one side of a hunk header, "+c,d" or "+c" (one line).
func side(s, sign string) (start, n int, ok bool) {
	s, found := strings.CutPrefix(s, sign)
	if !found {
		return 0, 0, false
	}
	a, b, counted := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	n = 1
	if counted {
		if n, err = strconv.Atoi(b); err != nil {
			return 0, 0, false
		}
	}
	return start, n, true
}
