// Package inert makes what a model wrote safe to post on GitHub under the
// repository's name. The agent reads issues, diffs and files that anyone
// may have written, so its words may be steered: the pull requests,
// reviews and comments it writes must not ping people, hide what the bot
// appends (its Verification section, "Fixes #N", the footer), or send data
// anywhere by being looked at (GitHub's image proxy fetches an image when
// anyone opens the page, so a query string is a way out).
//
// Markdown parses the text with a CommonMark/GFM parser (goldmark) and
// writes it again from the tree, so that what is kept is what the parser
// saw, never a guess about fences made line by line: every block it writes
// is closed, raw HTML is shown as text, images and links go only to the
// repository's own GitHub hosts (others are shown as inline code, which
// nothing fetches or links), and mentions and closing keywords are broken
// with a zero-width joiner. Code blocks keep their content byte for byte,
// so a review's suggestion means what the agent wrote.
//
// It is pure: no I/O.
//
// Import rule: only pullwright, policy, untrusted and internal/words.
package inert

import (
	"bufio"
	"bytes"
	stdhtml "html"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"

	"github.com/pullwright/pullwright/policy"
)

// Hosts are where an image or a link in what the bot posts may point: the
// repository's GitHub web host (its pages and its attachment links) and
// the hosts GitHub serves uploaded pictures from. The zero Hosts allows
// only links relative to the page.
type Hosts struct {
	scheme string
	web    string
	// storage are the hosts GitHub serves uploaded pictures from.
	storage map[string]bool
}

// GitHub is the Hosts of the GitHub that serves repoURL (a repository's
// clone or web address): github.com with its githubusercontent.com image
// hosts, a GitHub Enterprise Server's host with its media host. An address
// that does not read allows only relative links.
func GitHub(repoURL string) Hosts {
	u, err := url.Parse(repoURL)
	if err != nil || u.Host == "" || u.User != nil {
		return Hosts{}
	}
	host := strings.ToLower(u.Host)
	h := Hosts{scheme: u.Scheme, web: host, storage: map[string]bool{}}
	if host == "github.com" {
		h.storage["user-images.githubusercontent.com"] = true
		h.storage["private-user-images.githubusercontent.com"] = true
	} else {
		h.storage["media."+host] = true
	}
	return h
}

// Allows tells whether dest, a link's destination as written, points where
// h allows: one of its hosts by its scheme (https, or the repository's own
// scheme), or a path on the page's own host. Anything that does not parse
// plainly (a backslash a browser reads as a slash, a scheme-relative
// "//host", a control character) is refused.
func (h Hosts) Allows(dest string) bool {
	u, ok := h.parse(dest)
	if !ok {
		return false
	}
	if u == nil {
		return true
	}
	host := strings.ToLower(u.Host)
	return host == h.web || h.storage[host]
}

// AllowsImage tells whether dest may be shown as a picture: a browser
// fetches it whenever anyone opens the page, following redirects, so only
// where GitHub keeps uploaded pictures: its storage hosts, and attachment
// links on its web host. Not any page of the web host, whose redirects
// the bot does not know, nor a relative path.
func (h Hosts) AllowsImage(dest string) bool {
	u, ok := h.parse(dest)
	if !ok || u == nil {
		return false
	}
	host := strings.ToLower(u.Host)
	if h.storage[host] {
		return true
	}
	rest, ok := strings.CutPrefix(u.Path, "/user-attachments/assets/")
	return host == h.web && ok && rest != "" && rest != "." && rest != ".." && !strings.Contains(rest, "/")
}

// parse reads dest plainly: nil and true for a link on the page's own
// host (a path, "/owner/repo/blob/…", or "#anchor"); false for anything
// that does not parse plainly (a backslash a browser reads as a slash, a
// scheme-relative "//host", a control character, user info), or a scheme
// other than https or the repository's own.
func (h Hosts) parse(dest string) (*url.URL, bool) {
	if dest == "" || strings.ContainsAny(dest, "\\\x00\t\n\r ") {
		return nil, false
	}
	if strings.HasPrefix(dest, "#") {
		return nil, true
	}
	u, err := url.Parse(dest)
	if err != nil || u.User != nil || u.Opaque != "" {
		return nil, false
	}
	if u.Scheme == "" && u.Host == "" {
		return nil, strings.HasPrefix(dest, "/") && !strings.HasPrefix(dest, "//")
	}
	if u.Scheme != "https" && u.Scheme != h.scheme {
		return nil, false
	}
	if u.Host == "" {
		// "https:/host" and "https:///host": a browser finds a host in
		// the path, and the zero Hosts' web host is "" too.
		return nil, false
	}
	return u, true
}

// md is the parser: GitHub's flavour (tables, strikethrough, task lists,
// bare links), as GitHub reads what the bot posts. noTables is the same
// without tables, for a text whose tables would be too large: the parser
// pads every row to the header's width, so a wide header over many short
// lines costs time and memory in the product of the two.
var (
	md       = goldmark.New(goldmark.WithExtensions(extension.GFM))
	noTables = goldmark.New(goldmark.WithExtensions(extension.Strikethrough, extension.Linkify, extension.TaskList))
)

// maxCells bounds the cells the tables of one text may have.
const maxCells = 1 << 16

// tableCells is at least the number of cells the tables in s would have:
// for each line that could be a table's delimiter row, its columns times
// the lines that follow it up to a blank one.
func tableCells(s string) int {
	lines := strings.Split(s, "\n")
	cells := 0
	for i, l := range lines {
		if !strings.Contains(l, "|") || !strings.Contains(l, "-") || strings.Trim(l, "|:-> \t") != "" {
			continue
		}
		rows := 0
		for _, r := range lines[i+1:] {
			if strings.Trim(r, "> \t") == "" {
				break
			}
			rows++
		}
		cells += (strings.Count(l, "|") + 1) * (rows + 1)
		if cells > maxCells {
			break
		}
	}
	return cells
}

// Markdown is s, a model's Markdown, made safe to post where h's GitHub
// shows it. Whatever follows it after a blank line starts a block of its
// own that nothing in it can hide or restyle.
func Markdown(s string, h Hosts) string {
	w := newWriter(within(s, MaxMarkdown), h)
	return strings.TrimRight(w.blocks(w.doc, "\n\n"), "\n")
}

// Line is s as one line of inline Markdown, made safe the same way: for a
// title repeated in a comment. No image is shown; code blocks become code
// spans.
func Line(s string, h Hosts) string {
	w := newWriter(within(s, MaxLine), h)
	w.oneLine = true
	var parts []string
	for n := w.doc.FirstChild(); n != nil; n = n.NextSibling() {
		if p := strings.TrimSpace(w.flat(n)); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}

// Bounds of what Markdown and Line read, in bytes: the parser takes time
// that grows faster than the length on some texts (a thousand nested
// quotes), and GitHub takes at most 65536 characters in a body. What is
// longer is cut, with a note.
const (
	MaxMarkdown = 32 << 10
	MaxLine     = 4 << 10
)

// within is s cut to n bytes at a character's start, with a note of what
// was left out.
func within(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + "\n\n(cut: " + strconv.Itoa(len(s)-k) + " more bytes are left out.)"
}

type writer struct {
	src     []byte
	doc     ast.Node
	hosts   Hosts
	oneLine bool
	// lineStart is set where the next inline text begins a line of a
	// paragraph, where "-", "+", "=" or "1." would start a block.
	lineStart bool
	// inTable is set in a table's cell, where "|" ends the cell even in
	// a code span.
	inTable bool
	// depth is how many quotes and lists hold the block being written.
	depth int
	// inHeading is set in a heading's text.
	inHeading bool
}

// maxDepth bounds the quotes and lists written inside one another: each
// level prefixes every line inside it, so a text of nothing but ">" would
// take time in the square of its length. Deeper blocks are written
// without their markers, as the text they hold.
const maxDepth = 16

func newWriter(s string, h Hosts) *writer {
	// A lone carriage return ends a line in CommonMark: make every line
	// end the same so that the parser and GitHub agree.
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	src := []byte(s)
	p := md.Parser()
	if tableCells(s) > maxCells {
		p = noTables.Parser()
	}
	return &writer{src: src, doc: p.Parse(text.NewReader(src), parser.WithContext(parser.NewContext())), hosts: h}
}

// blocks writes n's children as blocks, sep apart.
func (w *writer) blocks(n ast.Node, sep string) string {
	var out []string
	prevList := byte(0)
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		var s string
		if l, ok := c.(*ast.List); ok {
			// Two lists in a row are two lists in the source: a different
			// marker keeps them apart.
			m := byte('-')
			if l.IsOrdered() {
				m = '.'
				if prevList == '.' {
					m = ')'
				}
			} else if prevList == '-' {
				m = '*'
			}
			s, prevList = w.list(l, m), m
		} else {
			s, prevList = w.block(c), 0
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}

func (w *writer) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return w.paragraph(n)
	case *ast.Heading:
		// In a heading every "#" is escaped: trailing ones would close it.
		w.lineStart, w.inHeading = false, true
		defer func() { w.inHeading = false }()
		return strings.Repeat("#", n.Level) + " " + oneLine(w.inlines(n))
	case *ast.ThematicBreak:
		// "***", never "---", which under a paragraph's line would make
		// it a heading.
		return "***"
	case *ast.FencedCodeBlock:
		info := ""
		if n.Info != nil {
			info = string(n.Info.Segment.Value(w.src))
		}
		return codeBlock(w.lines(n), info)
	case *ast.CodeBlock:
		return codeBlock(w.lines(n), "")
	case *ast.Blockquote:
		if w.depth >= maxDepth {
			return w.blocks(n, "\n\n")
		}
		w.depth++
		defer func() { w.depth-- }()
		return prefixLines(w.blocks(n, "\n\n"), "> ", "> ")
	case *ast.HTMLBlock:
		// Shown as the text it is: a <details> or an unclosed <!-- would
		// hide what follows.
		var paras []string
		var lines []string
		raw := w.lines(n)
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(w.src))
		}
		for _, l := range strings.Split(strings.TrimRight(raw, "\n"), "\n") {
			if strings.TrimSpace(l) == "" {
				if len(lines) > 0 {
					paras = append(paras, strings.Join(lines, "\n"))
				}
				lines = nil
				continue
			}
			lines = append(lines, w.textLine(l))
		}
		if len(lines) > 0 {
			paras = append(paras, strings.Join(lines, "\n"))
		}
		return strings.Join(paras, "\n\n")
	case *east.Table:
		return w.table(n)
	case *ast.List:
		return w.list(n, '-')
	}
	// A block this writer does not know is shown as its text.
	return w.paragraph(n)
}

// paragraph writes n's inlines, each line of it starting with nothing
// that would begin another block.
func (w *writer) paragraph(n ast.Node) string {
	w.lineStart = true
	s := w.inlines(n)
	w.lineStart = false
	return strings.TrimRight(s, " \n")
}

// lines is a leaf block's lines as written, tabs' padding included.
func (w *writer) lines(n ast.Node) string {
	var b strings.Builder
	ls := n.Lines()
	for i := 0; i < ls.Len(); i++ {
		seg := ls.At(i)
		b.WriteString(strings.Repeat(" ", seg.Padding))
		b.Write(seg.Value(w.src))
	}
	return b.String()
}

// codeBlock fences content with a fence no line of it can close: one
// longer than any run of the fence's character a line starts with, of
// tildes where the info string holds a backtick.
func codeBlock(content, info string) string {
	info = strings.TrimSpace(strings.ReplaceAll(info, "\n", " "))
	ch := "`"
	if strings.Contains(info, "`") {
		ch = "~"
	}
	n := 3
	for _, l := range strings.Split(content, "\n") {
		l = strings.TrimLeft(l, " \t")
		n = max(n, len(l)-len(strings.TrimLeft(l, ch))+1)
	}
	fence := strings.Repeat(ch, n)
	if strings.HasPrefix(info, ch) {
		// "~~~~" and an info string "~~~ x" would read as one longer fence.
		info = " " + info
	}
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return fence + info + "\n" + content + fence
}

// list writes a list with marker m: '-' or '*' for a bullet list, '.' or
// ')' after an ordered list's numbers.
func (w *writer) list(l *ast.List, m byte) string {
	sep := "\n\n"
	if l.IsTight {
		sep = "\n"
	}
	if w.depth >= maxDepth {
		// Deeper than anyone reads: the items' blocks, one after another,
		// each a block of its own (not the items' text run together, which
		// would join "@" and a name, or a keyword and a reference).
		var parts []string
		for c := l.FirstChild(); c != nil; c = c.NextSibling() {
			if s := w.blocks(c, "\n\n"); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n\n")
	}
	w.depth++
	defer func() { w.depth-- }()
	var items []string
	// Only the first number counts (CommonMark), and a marker has at most
	// nine digits: every item is written with the start, so that no
	// renumbering reaches "1000000000.", which GitHub reads as text.
	start := min(max(l.Start, 0), 999999999)
	for c := l.FirstChild(); c != nil; c = c.NextSibling() {
		marker := string(m)
		if l.IsOrdered() {
			marker = strconv.Itoa(start) + string(m)
		}
		body := w.blocks(c, sep)
		if body == "" {
			items = append(items, marker)
			continue
		}
		items = append(items, prefixLines(body, marker+" ", strings.Repeat(" ", len(marker)+1)))
	}
	return strings.Join(items, sep)
}

// prefixLines puts first before s's first line and rest before the
// others; a blank line gets rest without its trailing spaces.
func prefixLines(s, first, rest string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		p := rest
		if i == 0 {
			p = first
		}
		if l == "" {
			p = strings.TrimRight(p, " ")
		}
		lines[i] = p + l
	}
	return strings.Join(lines, "\n")
}

func (w *writer) table(t *east.Table) string {
	var rows []string
	w.inTable = true
	defer func() { w.inTable = false }()
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var cells []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, " "+oneLine(w.inlines(c))+" ")
		}
		rows = append(rows, "|"+strings.Join(cells, "|")+"|")
		if _, ok := r.(*east.TableHeader); ok {
			var delims []string
			for _, a := range t.Alignments {
				switch a {
				case east.AlignLeft:
					delims = append(delims, ":---")
				case east.AlignRight:
					delims = append(delims, "---:")
				case east.AlignCenter:
					delims = append(delims, ":---:")
				default:
					delims = append(delims, "---")
				}
			}
			rows = append(rows, "|"+strings.Join(delims, "|")+"|")
		}
	}
	return strings.Join(rows, "\n")
}

// flat writes a block and all it holds as one line, for Line.
func (w *writer) flat(n ast.Node) string {
	switch n := n.(type) {
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return codeSpan(oneLine(w.lines(n)), false)
	case *ast.HTMLBlock:
		return w.textLine(oneLine(w.lines(n)))
	case *ast.Paragraph, *ast.TextBlock, *ast.Heading, *east.TableCell:
		w.lineStart = true
		return oneLine(w.inlines(n))
	}
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if p := strings.TrimSpace(w.flat(c)); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}

// oneLine joins s's lines with spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\\\n", " ")), " ")
}

func (w *writer) inlines(n ast.Node) string {
	var b strings.Builder
	// The parser splits text where a construct might start; a mention,
	// a closing keyword or a bare link is found in the whole run.
	var run strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		t, ok := c.(*ast.Text)
		if !ok || t.IsRaw() {
			// Before code, a keyword is only a word: nothing in code is a
			// reference.
			_, code := c.(*ast.CodeSpan)
			b.WriteString(w.textBefore(run.String(), !code))
			run.Reset()
			w.inline(&b, c)
			continue
		}
		run.WriteString(decode(t.Segment.Value(w.src)))
		if !t.SoftLineBreak() && !t.HardLineBreak() {
			continue
		}
		b.WriteString(w.text(run.String()))
		run.Reset()
		w.lineBreak(&b, t)
	}
	b.WriteString(w.text(run.String()))
	return b.String()
}

// lineBreak ends a line of a paragraph where t does.
func (w *writer) lineBreak(b *strings.Builder, t *ast.Text) {
	switch {
	case w.oneLine:
		b.WriteString(" ")
	case t.HardLineBreak():
		b.WriteString("\\\n")
		w.lineStart = true
	default:
		b.WriteString("\n")
		w.lineStart = true
	}
}

func (w *writer) inline(b *strings.Builder, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		b.WriteString(w.text(decode(n.Segment.Value(w.src))))
		if n.SoftLineBreak() || n.HardLineBreak() {
			w.lineBreak(b, n)
		}
		return
	case *ast.String:
		b.WriteString(w.text(string(n.Value)))
		return
	case *ast.CodeSpan:
		var c strings.Builder
		for t := n.FirstChild(); t != nil; t = t.NextSibling() {
			if t, ok := t.(*ast.Text); ok {
				v := string(t.Segment.Value(w.src))
				c.WriteString(strings.ReplaceAll(v, "\n", " "))
			}
		}
		b.WriteString(codeSpan(c.String(), w.inTable))
	case *ast.Emphasis:
		d := strings.Repeat("*", n.Level)
		inner := w.inlines(n)
		if strings.TrimSpace(inner) == "" {
			b.WriteString(inner)
		} else {
			b.WriteString(d + inner + d)
		}
	case *east.Strikethrough:
		inner := w.inlines(n)
		if strings.TrimSpace(inner) == "" || nestedStrike(n) {
			b.WriteString(inner)
		} else {
			b.WriteString("~~" + inner + "~~")
		}
	case *ast.Link:
		dest := decode(n.Destination)
		inner := w.inlines(n)
		b.WriteString(w.link(inner, dest))
	case *ast.Image:
		dest := decode(n.Destination)
		alt := w.text(oneLine(plainText(n, w.src)))
		if !w.oneLine && w.hosts.AllowsImage(dest) {
			b.WriteString("![" + alt + "](" + escapeDest(dest) + ")")
		} else {
			if alt != "" {
				alt += " "
			}
			b.WriteString(alt + "(image not shown: " + codeSpan(dest, w.inTable) + ")")
		}
	case *ast.AutoLink:
		u := string(n.URL(w.src))
		label := string(n.Label(w.src))
		if n.AutoLinkType == ast.AutoLinkEmail {
			b.WriteString(w.text(label))
		} else {
			b.WriteString(w.link(w.text(label), u))
		}
	case *ast.RawHTML:
		var raw strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			raw.Write(seg.Value(w.src))
		}
		b.WriteString(w.text(strings.ReplaceAll(raw.String(), "\n", " ")))
	case *east.TaskCheckBox:
		if n.IsChecked {
			b.WriteString("[x] ")
		} else {
			b.WriteString("[ ] ")
		}
	default:
		// An inline this writer does not know is shown by its parts.
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			w.inline(b, c)
		}
		return
	}
	w.lineStart = false
}

func nestedStrike(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if _, ok := p.(*east.Strikethrough); ok {
			return true
		}
	}
	return false
}

// link writes a link to dest with inner as its text where the hosts allow
// it, else the text and the address as inline code.
func (w *writer) link(inner, dest string) string {
	if w.hosts.Allows(dest) {
		if strings.TrimSpace(inner) == "" {
			inner = w.text(dest)
		}
		return "[" + inner + "](" + escapeDest(dest) + ")"
	}
	shown := codeSpan(dest, w.inTable)
	if strings.TrimSpace(inner) == "" || inner == w.text(dest) {
		return shown
	}
	return inner + " (" + shown + ")"
}

// escapeDest writes a destination Allows took (no space, no backslash, no
// control character) so that it ends where it should: no parenthesis or
// angle bracket of its own.
func escapeDest(s string) string {
	// '&' too: GitHub resolves character references in a destination, so
	// "/&#47;host" (checked as written) would become "//host".
	return strings.NewReplacer("&", "&amp;", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E", "|", "%7C").Replace(s)
}

// plainText is the text an image's description holds.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.WriteString(decode(c.Segment.Value(src)))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteString(" ")
			}
		case *ast.String:
			b.WriteString(string(c.Value))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// decode is raw text as the reader sees it: its backslash escapes and
// character references resolved, as goldmark's own writer resolves them.
func decode(raw []byte) string {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	html.DefaultWriter.Write(bw, raw)
	_ = bw.Flush()
	return stdhtml.UnescapeString(buf.String())
}

// codeSpan shows s as inline code: the delimiter is one backtick longer
// than the longest run in s, and spaces keep a backtick at either end (or
// a space at both) from being taken off. Its mentions are broken too.
func codeSpan(s string, inTable bool) string {
	// GitHub makes no mention in code, but the copy of a comment in an
	// e-mail or a notification is text: the joiner costs nothing there.
	s = defang(policy.Escaped(strings.ReplaceAll(s, "\n", " ")))
	if inTable {
		s = strings.ReplaceAll(s, "|", "\\|")
	}
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	d := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") && strings.TrimSpace(s) != "") {
		return d + " " + s + " " + d
	}
	return d + s + d
}

// textLine is a line of text shown as it reads, for raw HTML.
func (w *writer) textLine(s string) string {
	w.lineStart = true
	out := w.text(s)
	w.lineStart = false
	return out
}

// bareLink is what GitHub links without any markup: it does so after
// parsing, in text, so an escaped character does not stop it.
// No \b before the scheme: cmark-gfm links "1https://host", it looks only
// at the letters before the ':'.
var bareLink = regexp.MustCompile(`(?i)(?:https?://|ftp://|\bwww\.)[^\s<>"]+`)

// text is literal text as Markdown that reads as that text and does no
// more: no mention, no closing keyword, no markup, no bare link to a host
// the hosts do not allow, no character that does not show as itself.
func (w *writer) text(s string) string { return w.textBefore(s, true) }

// textBefore is text for s, which something other than code follows
// when more is set. A closing keyword at its end is broken then: a link
// ("fixes [#12](…)"), an image's text, emphasis ("fixes *#12*"), the
// next line or the next run of text all read as "fixes #12" once rendered.
func (w *writer) textBefore(s string, more bool) string {
	s = defang(policy.Escaped(s))
	if strings.HasSuffix(s, "@") {
		// What follows may be a name written as text: a refused link's
		// or image's text, a flattened strikethrough.
		s += "\u200d"
	}
	if more {
		s = closingEnd.ReplaceAllString(s, "$1\u200d$2")
	}
	var b strings.Builder
	last := 0
	for _, m := range bareLink.FindAllStringIndex(s, -1) {
		u := strings.TrimRight(s[m[0]:m[1]], ".,:;!?*_~'\")")
		if w.hosts.Allows(u) {
			continue
		}
		b.WriteString(w.escape(s[last:m[0]]))
		b.WriteString(codeSpan(u, w.inTable))
		w.lineStart = false
		last = m[0] + len(u)
	}
	b.WriteString(w.escape(s[last:]))
	return b.String()
}

// escape backslash-escapes the characters that could make s more than
// text, and at a line's start what would begin a block.
func (w *writer) escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if w.lineStart {
			if c == ' ' || c == '\t' {
				continue
			}
			w.lineStart = false
			switch {
			case c == '-' || c == '+' || c == '=' || c == '>' || (c == '#' && !w.inHeading):
				b.WriteByte('\\')
			case c >= '0' && c <= '9':
				// "1." or "1)" would start an ordered list.
				j := i
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				if j < len(s) && (s[j] == '.' || s[j] == ')') {
					b.WriteString(s[i:j])
					b.WriteByte('\\')
					i = j
					c = s[j]
				}
			}
		}
		switch c {
		case '\\', '`', '*', '_', '[', ']', '<', '&', '|', '~', '$':
			b.WriteByte('\\')
		case '#':
			if w.inHeading {
				b.WriteByte('\\')
			}
		case '\n':
			w.lineStart = true
		}
		b.WriteByte(c)
	}
	return b.String()
}

var (
	mention = regexp.MustCompile(`@([A-Za-z0-9])`)
	// closing matches GitHub's issue-closing keywords before a
	// reference: #12, owner/repo#12, or an issue's address.
	closing = regexp.MustCompile(`(?i)\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*:?\s+(?:(?:[\w.-]+/[\w.-]+)?#\d|https?://))`)
	// closingEnd is a closing keyword at the end of a text something
	// else follows: "fixes [#12](…)" closes #12 too.
	closingEnd = regexp.MustCompile(`(?i)\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*:?\s*)$`)
)

// defang keeps text from acting on GitHub: an @mention would notify people
// and teams, and "fixes #12" in a pull request would close an issue nobody
// asked about. A zero-width joiner breaks both and reads the same.
func defang(s string) string {
	s = mention.ReplaceAllString(s, "@\u200d$1")
	return closing.ReplaceAllString(s, "$1\u200d$2")
}

// Defang is s with its mentions and closing keywords broken, nothing
// else: for plain text GitHub does not render, such as a commit message
// or a title.
func Defang(s string) string { return defang(s) }
