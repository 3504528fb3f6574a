package webhook

import (
	"strings"
	"testing"
)

// FuzzParse checks properties of Parse that hold for any comment body.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "LGTM", "/agent", "/agent fix the bug", "/agent stauts", "/agent status\n/agent cancel",
		"/approve req-1", "/reject no\nnot that", "> /agent fix", "```\n/agent fix\n```\n/agent help",
		"~~~~\n```\n~~~~\n/agent fix x", "   /agent cancel", "    /agent fix", "\t/approve",
		"hi\r\n/agent fix\r\nit", "```x```\n/agent fix", "/agentfoo", "> ```\n/reject",
		"/agent review", "/agent review the parser\nand its tests", "/agent reveiw",
	} {
		f.Add(s)
	}
	const word = DefaultCommand
	f.Fuzz(func(t *testing.T, body string) {
		got := Parse(word, body)

		// A result is a command, a reply, or nothing, never two of them.
		if got.Command != nil && got.Reply != "" {
			t.Fatalf("both command and reply: %s", show(got))
		}
		// Deterministic.
		if again := Parse(word, body); !equalResult(got, again) {
			t.Fatalf("not deterministic: %s then %s", show(got), show(again))
		}
		norm := normalizeNewlines(body)
		if c := got.Command; c != nil {
			switch c.Verb {
			case Fix, Reject, Review:
			case Approve:
				if strings.ContainsAny(c.Args, " \t\n") {
					t.Fatalf("approve id with whitespace: %q", c.Args)
				}
			case Cancel, Status, Help:
				if c.Args != "" {
					t.Fatalf("%s with args %q", c.Verb, c.Args)
				}
			default:
				t.Fatalf("unknown verb %q", c.Verb)
			}
			if c.Args != strings.TrimSpace(c.Args) {
				t.Fatalf("args not trimmed: %q", c.Args)
			}
			// Args are always a piece of the comment, never invented.
			if !strings.Contains(norm, c.Args) {
				t.Fatalf("args %q are not part of the body", c.Args)
			}
		}
		if got.Reply != "" && !strings.HasSuffix(got.Reply, Usage(word)) {
			t.Fatalf("reply without usage: %q", got.Reply)
		}

		// No line that could start a command means nothing to do.
		if !got.Ignored() && !hasCandidateLine(norm, word) {
			t.Fatalf("%s from a body with no command line", show(got))
		}
		lines := strings.Split(norm, "\n")

		// Quoting every line silences the comment.
		quoted := "> " + strings.Join(lines, "\n> ")
		if r := Parse(word, quoted); !r.Ignored() {
			t.Fatalf("quoted body gave %s", show(r))
		}
		// So does wrapping it in a fence longer than any it holds.
		for _, c := range []string{"`", "~"} {
			fence := strings.Repeat(c, max(3, longestRun(norm, c[0])+1))
			if r := Parse(word, fence+"\n"+norm+"\n"+fence); !r.Ignored() {
				t.Fatalf("fenced body (%s) gave %s", fence, show(r))
			}
		}
		// A command on the first line wins over anything after it.
		if r := Parse(word, word+" status\n"+body); r.Command == nil || r.Command.Verb != Status {
			t.Fatalf("leading status line gave %s", show(r))
		}
		// Indenting every line by four spaces makes it code.
		if r := Parse(word, "    "+strings.Join(lines, "\n    ")); !r.Ignored() {
			t.Fatalf("indented body gave %s", show(r))
		}
	})
}

// hasCandidateLine is a deliberately naive check: does any line, after its
// leading whitespace, start with a command word?
func hasCandidateLine(body, word string) bool {
	for _, line := range strings.Split(body, "\n") {
		s := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(s, word) || strings.HasPrefix(s, approveWord) || strings.HasPrefix(s, rejectWord) {
			return true
		}
	}
	return false
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
