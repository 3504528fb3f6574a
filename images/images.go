// Package images finds the pictures a GitHub issue or comment shows, and
// tells a picture from other bytes. It is pure: it fetches nothing and
// knows no host; ghapp decides which hosts are GitHub's and fetches from
// them alone, and task decides how many reach the model.
//
// It reads text that has already been through untrusted.Visible, so that
// an image in markup a person does not see (an HTML comment, a hidden
// element) is not found: the model is shown no picture a maintainer could
// not have seen.
//
// Import rule: no package of this module.
package images

import (
	"bytes"
	"image"
	_ "image/gif" // the decoders Kind reads headers with
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"net/url"
	"strings"

	_ "golang.org/x/image/webp"
)

// Ref is one image the text shows, in the order it appears.
type Ref struct {
	URL string
}

// attachmentPath is where GitHub keeps files dropped into an issue or a
// comment (https://github.com/user-attachments/assets/<id>, and the same
// path on a GitHub Enterprise Server's host). GitHub shows such a link
// alone on a line as the picture (or video) itself.
const attachmentPath = "/user-attachments/assets/"

// Find returns the images text shows, each once, in order: Markdown
// images (![…](url)), HTML <img src="url">, and GitHub's attachment links
// written bare. Code blocks and code spans are skipped: what is there is
// shown as text. Only absolute http(s) URLs are returned.
func Find(text string) []Ref {
	var out []Ref
	seen := map[string]bool{}
	add := func(raw string) {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || seen[u.String()] {
			return
		}
		seen[u.String()] = true
		out = append(out, Ref{URL: u.String()})
	}
	for _, seg := range prose(text) {
		for i := 0; i < len(seg); {
			switch {
			case strings.HasPrefix(seg[i:], "!["):
				if u, n := markdownImage(seg[i:]); n > 0 {
					add(u)
					i += n
					continue
				}
			case seg[i] == '<' && len(seg) > i+4 && strings.EqualFold(seg[i+1:i+4], "img") && isSpace(seg[i+4]):
				if u, n := imgTag(seg[i:]); n > 0 {
					add(u)
					i += n
					continue
				}
			case strings.HasPrefix(seg[i:], "http://") || strings.HasPrefix(seg[i:], "https://"):
				u := bareURL(seg[i:])
				if isAttachment(u) && (i == 0 || !strings.ContainsRune("(\"'=<[", rune(seg[i-1]))) {
					add(u)
				}
				i += max(len(u), 1)
				continue
			}
			i++
		}
	}
	return out
}

// prose splits text into the parts outside fenced code blocks and code
// spans, where Markdown is rendered.
func prose(text string) []string {
	var out []string
	var b strings.Builder
	fence := ""
	for line := range strings.Lines(text) {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(strings.TrimSpace(trimmed), fence) && strings.Trim(strings.TrimSpace(trimmed), fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if len(line)-len(trimmed) < 4 {
			if f := fenceOf(trimmed); f != "" {
				fence = f
				continue
			}
		}
		b.WriteString(line)
	}
	// Code spans: a run of backticks up to the same run closes it.
	s := b.String()
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			out = append(out, s)
			return out
		}
		n := 1
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		out = append(out, s[:i])
		rest := s[i+n:]
		end := strings.Index(rest, strings.Repeat("`", n))
		if end < 0 {
			// An unclosed run is literal backticks: go on after it.
			s = rest
			continue
		}
		s = rest[end+n:]
	}
}

// fenceOf is the fence a line opens (``` or ~~~, three or more), or "".
func fenceOf(line string) string {
	for _, c := range []string{"`", "~"} {
		n := 0
		for n < len(line) && line[n] == c[0] {
			n++
		}
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// window bounds how far one piece of markup is read: an image's markup is
// short, and text full of "![" or "<img " that never ends one must not
// take time growing with the square of its length.
const window = 2 << 10

// markdownImage reads ![alt](url "title") at the start of s: the URL and
// how many bytes it took, 0 when s does not start with one.
func markdownImage(s string) (string, int) {
	s = s[:min(len(s), window)]
	// The alt text may hold brackets in pairs.
	depth, i := 0, 1
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
			continue
		case '[':
			depth++
		case ']':
			depth--
		case '\n':
			if i+1 < len(s) && s[i+1] == '\n' {
				return "", 0 // a paragraph ends it
			}
		}
		if depth == 0 {
			break
		}
	}
	if i+1 >= len(s) || s[i] != ']' || s[i+1] != '(' {
		return "", 0
	}
	rest := strings.TrimLeft(s[i+2:], " \t\n")
	start := len(s) - len(rest)
	if strings.HasPrefix(rest, "<") {
		end := strings.IndexAny(rest, ">\n")
		if end < 0 || rest[end] != '>' {
			return "", 0
		}
		close := strings.IndexByte(rest[end:], ')')
		if close < 0 {
			return "", 0
		}
		return rest[1:end], start + end + close + 1
	}
	end := strings.IndexAny(rest, " \t\n)")
	if end < 0 {
		return "", 0
	}
	u := rest[:end]
	close := strings.IndexByte(rest[end:], ')')
	if close < 0 {
		return "", 0
	}
	return u, start + end + close + 1
}

// imgTag reads <img … src=…> at the start of s: the src and how many bytes
// the tag took, 0 when it has no src or no end.
func imgTag(s string) (string, int) {
	s = s[:min(len(s), window)]
	end := strings.IndexByte(s, '>')
	if end < 0 {
		return "", 0
	}
	tag := s[4:end]
	for i := 0; i < len(tag); i++ {
		if !isSpace(tag[i]) {
			continue
		}
		rest := strings.TrimLeft(tag[i:], " \t\n\r\f")
		if len(rest) < 3 || !strings.EqualFold(rest[:3], "src") {
			continue
		}
		rest = strings.TrimLeft(rest[3:], " \t\n\r\f")
		if !strings.HasPrefix(rest, "=") {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t\n\r\f")
		if rest == "" {
			return "", 0
		}
		if q := rest[0]; q == '"' || q == '\'' {
			close := strings.IndexByte(rest[1:], q)
			if close < 0 {
				return "", 0
			}
			return unescape(rest[1 : close+1]), end + 1
		}
		stop := strings.IndexAny(rest, " \t\n\r\f")
		if stop < 0 {
			stop = len(rest)
		}
		return unescape(strings.TrimSuffix(rest[:stop], "/")), end + 1
	}
	return "", 0
}

// unescape undoes the one entity an src commonly carries.
func unescape(s string) string { return strings.ReplaceAll(s, "&amp;", "&") }

// bareURL is the URL at the start of s, up to a space, a quote or a
// closing bracket, without the punctuation that ends a sentence.
func bareURL(s string) string {
	s = s[:min(len(s), window)]
	end := strings.IndexAny(s, " \t\r\n\"'<>()[]")
	if end < 0 {
		end = len(s)
	}
	return strings.TrimRight(s[:end], ".,;:!?")
}

// isAttachment reports whether u is one of GitHub's attachment links.
func isAttachment(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	id, ok := strings.CutPrefix(p.Path, attachmentPath)
	return ok && id != "" && !strings.Contains(id, "/")
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// Kind is the type of picture b holds, read from its first bytes as the
// browser would (http.DetectContentType): image/png, image/jpeg,
// image/gif or image/webp, the kinds the vision endpoints take. Anything
// else, whatever a server's Content-Type says (a page, a video, an SVG,
// which is a script as much as a picture), is not one: ok is false.
//
// Its header must also read as that kind, with a size of at least
// minSide pixels each way: a picture whose header is broken would make
// the model endpoint refuse the whole request, and a one-pixel image is
// a tracking beacon, not something a person showed.
func Kind(b []byte) (kind string, ok bool) {
	switch t := http.DetectContentType(b); t {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		c, _, err := image.DecodeConfig(bytes.NewReader(b))
		if err != nil || c.Width < minSide || c.Height < minSide {
			return "", false
		}
		return t, true
	}
	return "", false
}

// minSide is the smallest width and height a picture may have.
const minSide = 2
