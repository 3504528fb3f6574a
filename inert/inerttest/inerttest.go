// Package inerttest reads what the bot posts as GitHub would, for tests:
// which blocks a reader sees at the top level of a body, and what in it
// would act (raw HTML, an image or a link elsewhere, a mention).
package inerttest

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

// TopLevel is the text of each block at the top of body, in order: a
// section the bot appends is visible when its text is one of them, not
// folded into a code block, an HTML block or someone's list.
func TopLevel(body string) []string {
	src := []byte(body)
	doc := md.Parser().Parse(text.NewReader(src))
	var out []string
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		out = append(out, kindOf(n)+": "+strings.TrimSpace(plain(n, src)))
	}
	return out
}

func kindOf(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Heading:
		return fmt.Sprintf("h%d", n.Level)
	case *ast.Paragraph:
		return "p"
	}
	return n.Kind().String()
}

// plain is the text n shows, a code span as `code`.
func plain(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.CodeSpan:
			// GitHub neither pings nor closes from code.
			b.WriteString("`code`")
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteString(" ")
			}
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

var (
	pings   = regexp.MustCompile(`(^|[^A-Za-z0-9_` + "`" + `])@[A-Za-z0-9]`)
	closing = regexp.MustCompile(`(?i)\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+((?:[\w.-]+/[\w.-]+)?#\d|https?://|\[)`)
)

// Acts lists what in body would do more than show text on GitHub: raw
// HTML, a link whose destination links refuses, an image whose source
// images refuses, a mention that pings, a closing keyword (other than
// those in except, the bot's own "Fixes #N").
func Acts(body string, links, images func(dest string) bool, except ...string) []string {
	src := []byte(body)
	doc := md.Parser().Parse(text.NewReader(src))
	var out []string
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock:
			out = append(out, fmt.Sprintf("HTML block %q", n.Lines().Value(src)))
		case *ast.RawHTML:
			out = append(out, fmt.Sprintf("raw HTML %q", n.Segments.Value(src)))
		case *ast.Image:
			if !images(string(n.Destination)) {
				out = append(out, fmt.Sprintf("image %q", n.Destination))
			}
		case *ast.Link:
			if !links(string(n.Destination)) {
				out = append(out, fmt.Sprintf("link %q", n.Destination))
			}
		case *ast.AutoLink:
			if n.AutoLinkType == ast.AutoLinkURL && !links(string(n.URL(src))) {
				out = append(out, fmt.Sprintf("autolink %q", n.URL(src)))
			}
		case *ast.CodeSpan, *ast.FencedCodeBlock, *ast.CodeBlock:
			return ast.WalkSkipChildren, nil
		case *ast.Paragraph, *ast.Heading, *ast.TextBlock:
			t := plain(n, src)
			if pings.MatchString(t) {
				out = append(out, fmt.Sprintf("mention in %q", t))
			}
			for _, m := range closing.FindAllString(t, -1) {
				if !contains(except, m) {
					out = append(out, fmt.Sprintf("closing keyword %q", m))
				}
			}
		}
		return ast.WalkContinue, nil
	})
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
