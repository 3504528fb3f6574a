// Package words holds the few helpers every surface that writes to
// people needs alike: a noun that agrees with its count, a commit as
// people read it, a line cut to fit. One copy each, so that a comment,
// the terminal and an error say them the same way.
package words

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Plural is one when n is 1, else many: the noun alone.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n and the noun that agrees with it: "1 file", "3 files".
func Count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, Plural(n, one, many))
}

// Short is a commit's id as people compare it: its first 12 characters.
func Short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// Clip shortens s to at most n runes (n ≥ 1), marking the cut with "…".
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// LastLines are the last n lines of output, without its trailing line
// breaks, and how many lines before them were left out: the end of a
// command's output, where its failure usually is.
func LastLines(output string, n int) (lines []string, cut int) {
	lines = strings.Split(strings.TrimRight(output, "\n"), "\n")
	if len(lines) > n {
		cut, lines = len(lines)-n, lines[len(lines)-n:]
	}
	return lines, cut
}

// Join lists items as people write a list: "a", "a and b", "a, b and c".
func Join(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// Distance is the Levenshtein distance between a and b, byte by byte: how
// many insertions, deletions and substitutions make one the other. It
// suggests the command word a person meant, and finds the lines a model
// meant; callers bound the lengths, as it takes len(a)·len(b) steps.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
