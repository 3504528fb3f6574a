package ignorefile

import (
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Limits bound the ignore files one walk of a repository reads, so that
// a repository cannot make the walk slow or large with them: every
// directory may hold a .gitignore, and every path is matched against the
// patterns of all the files above it.
type Limits struct {
	FileBytes  int64 // one file; a larger one is not read
	TotalBytes int64 // all the files read, together
	Patterns   int   // all the files' patterns, together
	// Generic is the most patterns one path is matched against one by
	// one, along its directories' files. A pattern that is a plain name
	// (node_modules, .DS_Store, build/) is looked up instead, and does
	// not count.
	Generic int
}

// Tally is what the ignore files of one walk cost.
type Tally struct {
	lim      Limits
	bytes    int64
	patterns int
	// Skipped counts the ignore files left unread because they were over
	// the limits: their patterns do not apply.
	Skipped int
	// Work counts the patterns paths were matched against.
	Work int64
}

// Scope is the patterns that apply in one directory: its own ignore
// file's, linked to its parent directory's scope rather than copied from
// it. A deeper scope's patterns come after its parent's, so they decide
// first, as in git.
type Scope struct {
	parent *Scope
	tally  *Tally
	ps     []gitignore.Pattern
	// names indexes the patterns that are a plain name, by that name and
	// then by kind (negated, directory only): only the last of a kind
	// can decide, so one index per kind is kept (an index into ps, plus
	// one; 0 for none).
	names map[string]*[4]int32
	// generic are the indexes into ps of the other patterns, ascending.
	generic []int32
	// chainGeneric counts the generic patterns of this scope and those
	// above it.
	chainGeneric int
}

// NewRoot is an empty scope above the repository's root, the start of a
// walk, with its own Tally.
func NewRoot(lim Limits) *Scope {
	return &Scope{tally: &Tally{lim: lim}}
}

// Tally is the cost so far of the walk s belongs to.
func (s *Scope) Tally() *Tally { return s.tally }

// Child is the scope of a directory (domain: its path's parts; nil for
// the repository's root, whose files, like .git/info/exclude, are
// children of NewRoot and of each other) whose ignore file is size bytes
// long and read by read; size < 0 means there is none. It is s itself
// when the file adds no patterns, or is over the limits (counted in
// Tally.Skipped: reading none of a file, rather than part of it, keeps
// the patterns read as git orders them).
func (s *Scope) Child(domain []string, size int64, read func() ([]byte, error)) *Scope {
	t := s.tally
	if size < 0 {
		return s
	}
	if size > t.lim.FileBytes || t.bytes+size > t.lim.TotalBytes {
		t.Skipped++
		return s
	}
	data, err := read()
	if err != nil {
		return s
	}
	if n := int64(len(data)); n > t.lim.FileBytes || t.bytes+n > t.lim.TotalBytes {
		t.Skipped++ // it grew since its size was taken
		return s
	}
	t.bytes += int64(len(data))
	lines := Lines(data)
	if len(lines) == 0 {
		return s
	}
	if t.patterns+len(lines) > t.lim.Patterns {
		t.Skipped++
		return s
	}
	generic := 0
	for _, l := range lines {
		if _, _, ok := plainName(l); !ok {
			generic++
		}
	}
	if s.chainGeneric+generic > t.lim.Generic {
		t.Skipped++
		return s
	}
	t.patterns += len(lines)
	c := &Scope{parent: s, tally: t, ps: make([]gitignore.Pattern, len(lines)), chainGeneric: s.chainGeneric + generic}
	for i, l := range lines {
		c.ps[i] = gitignore.ParsePattern(l, domain)
		name, kind, ok := plainName(l)
		if !ok {
			c.generic = append(c.generic, int32(i))
			continue
		}
		if c.names == nil {
			c.names = map[string]*[4]int32{}
		}
		k := c.names[name]
		if k == nil {
			k = new([4]int32)
			c.names[name] = k
		}
		k[kind] = int32(i + 1)
	}
	return c
}

// plainName reports whether line is a pattern that only a path part
// equal to name can match, and its kind (1 if negated, +2 if for
// directories only). It reads line as gitignore.ParsePattern does.
func plainName(line string) (name string, kind int, ok bool) {
	p := line
	if strings.HasPrefix(p, "!") {
		kind |= 1
		p = p[1:]
	}
	if !strings.HasSuffix(p, "\\ ") {
		p = strings.TrimRight(p, " ")
	}
	if strings.HasSuffix(p, "/") {
		kind |= 2
		p = p[:len(p)-1]
	}
	if p == "" || strings.ContainsAny(p, "/*?[\\") {
		return "", 0, false
	}
	return p, kind, true
}

// Match is the verdict of the patterns in s and above it on path (its
// parts, from the repository's root): that of the last pattern that
// matches it, as gitignore.NewMatcher gives. A Scope is thus a
// gitignore.Pattern.
func (s *Scope) Match(path []string, isDir bool) gitignore.MatchResult {
	var cand []int32
	for sc := s; sc != nil; sc = sc.parent {
		if len(sc.ps) == 0 {
			continue
		}
		// The candidates: the plain names among path's parts, and the
		// generic patterns, from the last.
		cand = cand[:0]
		if sc.names != nil {
			for _, part := range path {
				if k := sc.names[part]; k != nil {
					for _, i := range k {
						if i > 0 {
							cand = append(cand, i-1)
						}
					}
				}
			}
			slices.Sort(cand)
			cand = slices.Compact(cand)
		}
		c, g := len(cand)-1, len(sc.generic)-1
		for c >= 0 || g >= 0 {
			var i int32
			if g < 0 || (c >= 0 && cand[c] > sc.generic[g]) {
				i = cand[c]
				c--
			} else {
				i = sc.generic[g]
				g--
			}
			sc.tally.Work++
			if r := sc.ps[i].Match(path, isDir); r != gitignore.NoMatch {
				return r
			}
		}
	}
	return gitignore.NoMatch
}

// Ignored reports whether the patterns in s and above it exclude path.
func (s *Scope) Ignored(path []string, isDir bool) bool {
	return s.Match(path, isDir) == gitignore.Exclude
}
