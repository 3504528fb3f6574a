package agent

import (
	"path"
	"strings"
)

const maxBraceExpansions = 64

// globMatcher matches slash-separated relative paths against a pattern with
// path.Match syntax per segment, "**" for any number of segments, and
// {a,b} alternatives.
type globMatcher struct {
	alts     [][]string // each alternative split into segments
	basename bool       // match the last path element only (pattern without '/')
}

// compileGlob validates a pattern. With anyDepth, a pattern without '/' is
// matched against the file name at any depth (ripgrep's --glob rule).
func compileGlob(pattern string, anyDepth bool) (*globMatcher, error) {
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
	alts, err := expandBraces(p)
	if err != nil {
		return nil, errorf("pattern %q: %v", pattern, err)
	}
	m := &globMatcher{basename: anyDepth && !strings.Contains(p, "/")}
	for _, a := range alts {
		segs := strings.Split(a, "/")
		for _, s := range segs {
			if s == ".." {
				return nil, errorf("pattern %q may not contain '..'", pattern)
			}
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, errorf("pattern %q is malformed: %v", pattern, err)
			}
		}
		m.alts = append(m.alts, segs)
	}
	return m, nil
}

func (m *globMatcher) match(rel string) bool {
	if m.basename {
		rel = path.Base(rel)
	}
	names := strings.Split(rel, "/")
	for _, a := range m.alts {
		if matchSegments(a, names) {
			return true
		}
	}
	return false
}

func matchSegments(pat, names []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range len(names) + 1 {
				if matchSegments(pat, names[i:]) {
					return true
				}
			}
			return false
		}
		if len(names) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], names[0]); !ok {
			return false
		}
		pat, names = pat[1:], names[1:]
	}
	return len(names) == 0
}

// expandBraces expands {a,b} alternatives, nested ones included.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				return nil, errorf("unbalanced '}'")
			}
			depth--
			if depth == 0 {
				var out []string
				for _, alt := range splitTopLevel(p[open+1 : i]) {
					rest, err := expandBraces(alt + p[i+1:])
					if err != nil {
						return nil, err
					}
					for _, r := range rest {
						out = append(out, p[:open]+r)
					}
					if len(out) > maxBraceExpansions {
						return nil, errorf("too many {…} alternatives (more than %d)", maxBraceExpansions)
					}
				}
				return out, nil
			}
		}
	}
	if depth != 0 {
		return nil, errorf("unbalanced '{'")
	}
	return []string{p}, nil
}

// splitTopLevel splits s at commas that are not inside nested braces.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
