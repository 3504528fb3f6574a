package policy

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// AlwaysProtected are paths no repository configuration can open up: the
// workflows run with the repository's secrets, and the configuration file
// decides what the agent may do.
var AlwaysProtected = []string{".github/workflows/**", Path}

// DefaultProtected is protected_paths when a repository sets none.
var DefaultProtected = AlwaysProtected

// ProtectedBy returns the first of globs that matches p, a path relative to
// the repository root. Matching ignores case, because a checkout on a
// case-insensitive file system (macOS, Windows) treats .GitHub/Workflows as
// .github/workflows; refusing a few odd names is the cheaper mistake. A
// directory glob protects what is under it: "docs" protects "docs/a.md".
func ProtectedBy(globs []string, p string) (string, bool) {
	c := strings.ToLower(path.Clean("/" + strings.ReplaceAll(p, `\`, "/")))[1:]
	if c == "" {
		return "", false
	}
	for _, g := range globs {
		pat := strings.ToLower(strings.TrimPrefix(strings.TrimSuffix(g, "/"), "/"))
		if pat == "" {
			continue
		}
		if ok, _ := doublestar.Match(pat, c); ok {
			return g, true
		}
		if ok, _ := doublestar.Match(pat+"/**", c); ok {
			return g, true
		}
	}
	return "", false
}

// ValidGlob reports whether g is a glob ProtectedBy understands.
func ValidGlob(g string) bool {
	return strings.TrimSpace(g) != "" && doublestar.ValidatePattern(strings.TrimPrefix(g, "/"))
}

// ForkGuarded are the paths where a fork's code must match this
// repository's before the bot pushes it here, on top of those s protects:
// everything under .github, since this repository's workflows, which run
// with its secrets, also run the local actions kept there
// (uses: ./.github/actions/…).
var ForkGuarded = []string{".github/**"}

// ProtectsFromForks reports the glob that keeps p of a fork's tree from
// differing from this repository's: one s protects, or ForkGuarded.
func (s Settings) ProtectsFromForks(p string) (string, bool) {
	if g, ok := s.Protects(p); ok {
		return g, true
	}
	return ProtectedBy(ForkGuarded, p)
}

// Protects reports the glob of s that protects p, if any.
func (s Settings) Protects(p string) (string, bool) {
	return ProtectedBy(s.Protected, p)
}
