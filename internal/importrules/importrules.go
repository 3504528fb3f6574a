// Package importrules checks the import rules that packages state in their
// doc comments against what they really import. Its test
// (TestEveryPackageKeepsItsImportRule) runs it over the whole module, so a
// boundary a package comment states is one the build keeps.
//
// A package states its rule in its package comment, as a paragraph of its
// own in one of three forms:
//
//	Import rule: no package of this module.
//	Import rule: only A, B and C.
//	Import rule: none of A, B or C.
//
// A name is a package's path relative to the module root (task/sqlite,
// internal/words); the root package is named by the last element of the
// module path (pullwright). The first form is for a package that must stay
// a leaf, the second bounds a package to a few others, the third keeps it
// away from a few.
//
// A rule is about what a package reaches, not only its own import lines:
// every package of the module that its non-test files import directly or
// through other packages (the transitive closure, as `go list -deps` has
// it, for the platform the test runs on). "task: none of runner" is broken
// as much by task importing something that imports runner as by task
// importing runner. Tests are left out: a test may import what its package
// may not.
//
// The check is strict, so that a rule cannot silently stop being checked:
// a paragraph that begins "Import rule" in any other form fails it, as
// does a rule naming a package the module does not have, a second rule in
// one package, a line beginning "Import rule" in a comment that is not the
// package comment, and a package comment that forbids an import in prose
// rather than in a rule, where nothing would check it.
//
// Import rule: no package of this module.
package importrules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Kind is which of the three forms a rule has.
type Kind int

const (
	// Leaf is "no package of this module": the package reaches none.
	Leaf Kind = iota
	// Only is "only A, B and C": every package reached is one of those.
	Only
	// NoneOf is "none of A, B or C": no package reached is one of those.
	NoneOf
)

// Rule is one package's import rule.
type Rule struct {
	Kind  Kind
	Names []string // Only and NoneOf: the packages named, as written
	Text  string   // the rule as written, after "Import rule: " and before the period
}

// Forms is how each form is written, for messages.
const Forms = `"Import rule: no package of this module.", "Import rule: only A, B and C." or "Import rule: none of A, B or C."`

const leafText = "no package of this module"

var (
	ruleLine = regexp.MustCompile(`^Import rule: (.*)\.$`)
	name     = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	prose    = regexp.MustCompile(`(?i)\b(must|may|should|shall) (not|never) import\b`)
)

// Parse reads the import rule from the text of a package comment (as
// go/ast's CommentGroup.Text gives it). found is false when the comment
// states none. A paragraph that begins "Import rule" but is not one of the
// forms, a second rule, or prose that forbids an import is an error.
// Indented lines (code blocks) are not read.
func Parse(doc string) (r Rule, found bool, err error) {
	for _, p := range paragraphs(doc) {
		if !strings.HasPrefix(strings.ToLower(p), "import rule") {
			if m := prose.FindString(p); m != "" {
				return Rule{}, false, fmt.Errorf("the package comment says %q in prose, where nothing checks it: state the rule as a paragraph of its own, %s", m, Forms)
			}
			continue
		}
		if found {
			return Rule{}, false, fmt.Errorf("a second import rule %q: a package states one", p)
		}
		r, err = parseRule(p)
		if err != nil {
			return Rule{}, false, fmt.Errorf("malformed import rule %q: %w; the forms are %s", p, err, Forms)
		}
		found = true
	}
	return r, found, nil
}

// paragraphs splits a comment's text into paragraphs, each one line of
// words, leaving out indented (code) lines.
func paragraphs(doc string) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	for line := range strings.Lines(doc) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" || line[0] == ' ' || line[0] == '\t' {
			flush()
			continue
		}
		cur = append(cur, strings.TrimSpace(line))
	}
	flush()
	return out
}

func parseRule(p string) (Rule, error) {
	m := ruleLine.FindStringSubmatch(p)
	if m == nil {
		return Rule{}, fmt.Errorf(`it must begin "Import rule: " and end with a period`)
	}
	body := m[1]
	switch {
	case body == leafText:
		return Rule{Kind: Leaf, Text: body}, nil
	case strings.HasPrefix(body, "only "):
		names, err := list(strings.TrimPrefix(body, "only "), "and")
		return Rule{Kind: Only, Names: names, Text: body}, err
	case strings.HasPrefix(body, "none of "):
		names, err := list(strings.TrimPrefix(body, "none of "), "or")
		return Rule{Kind: NoneOf, Names: names, Text: body}, err
	}
	return Rule{}, fmt.Errorf(`after "Import rule: " comes %q, "only" or "none of"`, leafText)
}

// list reads "A", "A <conj> B" or "A, B <conj> C" (a comma before conj
// allowed), and refuses anything else: another conjunction, a missing one,
// a word that is not a package path, a name given twice.
func list(s, conj string) ([]string, error) {
	items := strings.Split(s, ", ")
	last := items[len(items)-1]
	if before, after, ok := strings.Cut(last, " "+conj+" "); ok {
		items = append(items[:len(items)-1], before, after)
	} else if strings.HasPrefix(last, conj+" ") && len(items) > 2 {
		items[len(items)-1] = strings.TrimPrefix(last, conj+" ") // "A, B, and C"
	} else if len(items) > 1 {
		return nil, fmt.Errorf("the last two names are joined by %q", conj)
	}
	for i, n := range items {
		if !name.MatchString(n) {
			return nil, fmt.Errorf("%q is not a package path (this list is joined by commas and a last %q)", n, conj)
		}
		if slices.Contains(items[:i], n) {
			return nil, fmt.Errorf("%s is named twice", n)
		}
	}
	return items, nil
}

// Allows reports whether the rule lets its package reach the named package.
func (r Rule) Allows(pkg string) bool {
	switch r.Kind {
	case Only:
		return slices.Contains(r.Names, pkg)
	case NoneOf:
		return !slices.Contains(r.Names, pkg)
	}
	return false
}
