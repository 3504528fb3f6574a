// Package ignorefile reads a .gitignore-style file into go-git's patterns:
// the agent's workspace walks the repository's own ignore files with it,
// and bot run the user's global excludes, which go-git does not read.
package ignorefile

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Parse is the patterns of data, an ignore file in the directory domain
// (its path's parts; nil for the repository's root or a global file):
// one per line, blank lines and comments left out, as git reads them.
func Parse(data []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	for _, line := range Lines(data) {
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// Lines are the pattern lines of data, an ignore file: blank lines and
// comments left out, line ends taken off.
func Lines(data []byte) []string {
	var ls []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ls = append(ls, line)
	}
	return ls
}
