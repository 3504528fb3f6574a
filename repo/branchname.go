package repo

import (
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// DefaultBranchPrefix is BranchName's prefix when none is given.
const DefaultBranchPrefix = "agent/"

// maxSlug is the longest title slug BranchName produces.
const maxSlug = 40

// BranchName names the work branch for an issue: prefix + "<issue>-<slug>",
// e.g. "agent/12-fix-off-by-one-in-pagination". The slug is the title in
// lower-case ASCII letters and digits separated by single dashes, cut at a
// word boundary to at most 40 characters. It is never empty: without a usable
// character in the title the name is prefix + "<issue>" (or prefix + "task"
// when issue <= 0). A prefix not ending in '/', '-', '_' or '.' gets a '/'
// ("bot" → "bot/"); an empty prefix, or one git would not accept before
// this name ("0." before "lock"), becomes DefaultBranchPrefix. The result always passes
// `git check-ref-format --branch`.
func BranchName(prefix string, issue int, title string) string {
	if prefix != "" && !strings.ContainsAny(prefix[len(prefix)-1:], "/-_.") {
		prefix += "/"
	}
	slug := slugify(title)
	var name string
	switch {
	case issue > 0 && slug != "":
		name = strconv.Itoa(issue) + "-" + slug
	case issue > 0:
		name = strconv.Itoa(issue)
	case slug != "":
		name = slug
	default:
		name = "task"
	}
	// The prefix is checked with the name it gets, not alone: "0." is a
	// fine start, but not before "lock".
	if prefix == "" || strings.HasPrefix(prefix, "-") || plumbing.NewBranchReferenceName(prefix+name).Validate() != nil {
		prefix = DefaultBranchPrefix
	}
	return prefix + name
}

func slugify(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		var s string
		switch {
		case r == '\'' || r == '’':
			continue // "don't" → "dont"
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			s = string(r)
		default:
			s = fold[r]
		}
		if s == "" {
			dash = b.Len() > 0
			continue
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteString(s)
	}
	slug := b.String()
	if len(slug) <= maxSlug {
		return slug
	}
	cut := slug[:maxSlug+1] // one more, to see whether a word ends exactly at the limit
	if i := strings.LastIndexByte(cut, '-'); i > 0 {
		return cut[:i]
	}
	return strings.TrimRight(slug[:maxSlug], "-") // one long word: hard cut
}

// fold spells common accented Latin letters (already lower-cased) in ASCII;
// other characters separate words.
var fold = map[rune]string{
	'à': "a", 'á': "a", 'â': "a", 'ã': "a", 'ä': "a", 'å': "a", 'ā': "a", 'ă': "a", 'ą': "a",
	'æ': "ae", 'ç': "c", 'ć': "c", 'č': "c", 'ď': "d", 'đ': "d", 'ð': "d",
	'è': "e", 'é': "e", 'ê': "e", 'ë': "e", 'ē': "e", 'ė': "e", 'ę': "e", 'ě': "e",
	'ì': "i", 'í': "i", 'î': "i", 'ï': "i", 'ī': "i", 'į': "i", 'ı': "i",
	'ł': "l", 'ñ': "n", 'ń': "n", 'ň': "n",
	'ò': "o", 'ó': "o", 'ô': "o", 'õ': "o", 'ö': "o", 'ø': "o", 'ō': "o", 'ő': "o", 'œ': "oe",
	'ř': "r", 'ś': "s", 'š': "s", 'ş': "s", 'ș': "s", 'ß': "ss", 'ť': "t", 'ț': "t", 'þ': "th",
	'ù': "u", 'ú': "u", 'û': "u", 'ü': "u", 'ū': "u", 'ů': "u", 'ű': "u", 'ų': "u",
	'ý': "y", 'ÿ': "y", 'ź': "z", 'ż': "z", 'ž': "z",
}
