package agent

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// maxBraceExpansions bounds the paths a pattern's {…} alternatives may
// spell out: doublestar tries them one after another, so they multiply
// the work of matching every file.
const maxBraceExpansions = 64

// globMatcher matches slash-separated relative paths with doublestar:
// '*', '?' and [classes] ([!a] or [^a] negated) within a path element,
// "**" for any number of elements, and {a,b} alternatives. A backslash is
// read as '/', not as an escape.
type globMatcher struct {
	pattern  string // valid for doublestar
	basename bool   // match the last path element only (pattern without '/')
}

// globRule is how every tool's description says what a glob means.
const globRule = "A pattern without '/' matches file names at any depth (\"*.go\" is every Go file); " +
	"with '/' it matches the path from the repository root (\"cmd/*.go\" only directly in cmd, " +
	"\"internal/**/*.go\" at any depth under internal). '*' and '?' match within one path element, " +
	"'**' any number of directories, {a,b} either alternative."

// compileGlob validates a pattern. A pattern without '/' is matched against
// the file name at any depth, as ripgrep's --glob, .gitignore, git's
// pathspecs and find -name read "*.go": the meaning models have seen most,
// and the one that, taken the other way, returns more paths rather than
// none. Every tool that takes a glob (glob's pattern, grep's path_glob)
// means it that way (globRule, in both descriptions).
func compileGlob(pattern string) (*globMatcher, error) {
	p := strings.TrimSpace(pattern)
	if p == "" {
		return nil, errorf("pattern is empty; e.g. **/*.go")
	}
	p = strings.ReplaceAll(p, `\`, "/")
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	if strings.HasPrefix(p, "/") {
		return nil, errorf("pattern %q is absolute; patterns are relative to the repository root, e.g. src/**/*.go", pattern)
	}
	if !doublestar.ValidatePattern(p) {
		return nil, errorf("pattern %q is malformed: %v", pattern, doublestar.ErrBadPattern)
	}
	if dotDot(p) {
		return nil, errorf("pattern %q may not contain '..'", pattern)
	}
	if n, _ := expansions(p, false); n > maxBraceExpansions {
		return nil, errorf("pattern %q: too many {…} alternatives (more than %d)", pattern, maxBraceExpansions)
	}
	q, ok := classesWithoutSlash(p)
	if !ok {
		return nil, errorf("pattern %q is malformed: a [class] may not hold '/'", pattern)
	}
	return &globMatcher{pattern: q, basename: !strings.Contains(p, "/")}, nil
}

func (m *globMatcher) match(rel string) bool {
	if m.basename {
		rel = path.Base(rel)
	}
	return doublestar.MatchUnvalidated(m.pattern, rel)
}

// expansions counts the patterns that expanding p's {…} alternatives
// would give, up to one more than maxBraceExpansions. p is valid for
// doublestar and has no backslash. In a group (inGroup), it counts one
// alternative and returns the rest of p from the ',' or '}' that ends it.
func expansions(p string, inGroup bool) (n int, rest string) {
	n = 1
	for len(p) > 0 {
		switch p[0] {
		case '[': // a class, never empty: its braces and commas are characters
			p = p[2+strings.IndexByte(p[2:], ']')+1:]
		case '{':
			sum := 0
			for p[0] != '}' {
				var a int
				a, p = expansions(p[1:], true)
				sum = min(sum+a, maxBraceExpansions+1)
			}
			p = p[1:]
			n = min(n*sum, maxBraceExpansions+1)
		case ',', '}':
			if inGroup {
				return n, p
			}
			p = p[1:]
		default:
			p = p[1:]
		}
	}
	return n, p
}

// dotDot reports whether a segment of p, or of one of its {…}
// alternatives as far as they can be told apart without expanding them,
// is "..": segments end at '/', '{' and '}', and at ',' inside braces.
func dotDot(p string) bool {
	depth, start := 0, 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) {
			switch c := p[i]; {
			case c == '{':
				depth++
			case c == '}':
				depth--
			case c == '/', c == ',' && depth > 0:
			default:
				continue
			}
		}
		if p[start:i] == ".." {
			return true
		}
		start = i + 1
	}
	return false
}

// classesWithoutSlash adds '/' to p's negated classes, and reports false
// if a class holds one, written or inside a range: doublestar lets a class
// match the separator, but a class matches within one path element.
func classesWithoutSlash(p string) (string, bool) {
	var b strings.Builder
	for len(p) > 0 {
		if p[0] != '[' {
			b.WriteByte(p[0])
			p = p[1:]
			continue
		}
		end := 2 + strings.IndexByte(p[2:], ']') + 1 // a class is never empty
		class := p[:end]
		if strings.Contains(class, "/") {
			return "", false
		}
		if class[1] == '^' || class[1] == '!' {
			class = class[:2] + "/" + class[2:]
		} else if rangeHoldsSlash(class[1 : len(class)-1]) {
			// [.-0] would match '/' between its ends.
			return "", false
		}
		b.WriteString(class)
		p = p[end:]
	}
	return b.String(), true
}

// rangeHoldsSlash reports whether a class body has a range lo-hi with
// lo <= '/' <= hi.
func rangeHoldsSlash(body string) bool {
	for i := 0; i+2 < len(body); i++ {
		if body[i+1] == '-' && body[i] <= '/' && '/' <= body[i+2] {
			return true
		}
	}
	return false
}

// jsonString is s as a JSON string, for a tool's schema.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always encodes
	}
	return string(b)
}
