package runner

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// boundedOutput is an io.Writer that keeps the first half of its limit and a
// ring buffer of the last half, counting everything written, so a command can
// print gigabytes while the runner holds at most limit bytes. It is not safe
// for concurrent use; the runner writes from one goroutine.
type boundedOutput struct {
	headMax int
	head    []byte
	tail    []byte // ring of capacity tailMax, allocated on first use
	tailMax int
	pos     int  // next write position in tail once it is full
	full    bool // tail has wrapped at least once
	total   int64
	last    byte // last byte written, for ensureNewline
}

func newBoundedOutput(limit int) *boundedOutput {
	limit = max(limit, 1)
	return &boundedOutput{headMax: limit / 2, tailMax: limit - limit/2}
}

// Write keeps what fits in the head and the rest in the tail ring. It never
// fails, so a command is not killed by SIGPIPE for printing too much.
func (b *boundedOutput) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	b.total += int64(n)
	b.last = p[n-1]
	if room := b.headMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if b.tail == nil {
		b.tail = make([]byte, 0, b.tailMax)
	}
	if !b.full {
		k := min(b.tailMax-len(b.tail), len(p))
		b.tail = append(b.tail, p[:k]...)
		p = p[k:]
		if len(b.tail) < b.tailMax {
			return n, nil
		}
		b.full = true
	}
	if len(p) >= b.tailMax {
		copy(b.tail, p[len(p)-b.tailMax:])
		b.pos = 0
		return n, nil
	}
	k := copy(b.tail[b.pos:], p)
	copy(b.tail, p[k:])
	b.pos = (b.pos + len(p)) % b.tailMax
	return n, nil
}

// ensureNewline writes "\n" unless the output is empty or already ends in one,
// so a note appended afterwards starts on its own line.
func (b *boundedOutput) ensureNewline() {
	if b.total > 0 && b.last != '\n' {
		b.Write([]byte{'\n'})
	}
}

// String returns the kept output: everything if it fit, otherwise head, the
// cut marker and tail. The cut is widened to whole UTF-8 characters so the
// marker never splits one. truncated reports whether anything was cut.
func (b *boundedOutput) String() (out string, truncated bool) {
	tail := b.tail
	if b.full && b.pos > 0 {
		tail = make([]byte, 0, b.tailMax)
		tail = append(tail, b.tail[b.pos:]...)
		tail = append(tail, b.tail[:b.pos]...)
	}
	kept := int64(len(b.head) + len(tail))
	if kept == b.total {
		return string(b.head) + string(tail), false
	}
	head := trimPartialRuneEnd(b.head)
	tail = trimPartialRuneStart(tail)
	cut := b.total - int64(len(head)) - int64(len(tail))
	return string(head) + cutMarker(cut) + string(tail), true
}

// cutMarker is what replaces n bytes cut from the middle of the output.
func cutMarker(n int64) string {
	return fmt.Sprintf("\n[… %d bytes cut …]\n", n)
}

// trimPartialRuneEnd drops an incomplete UTF-8 sequence at the end of p.
func trimPartialRuneEnd(p []byte) []byte {
	// A rune is at most utf8.UTFMax bytes: look back for its start byte.
	for i := 1; i <= utf8.UTFMax && i <= len(p); i++ {
		c := p[len(p)-i]
		if utf8.RuneStart(c) {
			if !utf8.FullRune(p[len(p)-i:]) {
				return p[:len(p)-i]
			}
			return p
		}
	}
	return p
}

// trimPartialRuneStart drops UTF-8 continuation bytes at the start of p.
func trimPartialRuneStart(p []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(p); i++ {
		if utf8.RuneStart(p[i]) {
			return p[i:]
		}
	}
	return p
}

// noSpaceMessage is how strerror(ENOSPC) reads, in lower case: what a
// program prints when a write finds its file system full.
const noSpaceMessage = "no space left on device"

// phraseSpotter is an io.Writer that records whether an ASCII phrase was
// written, in any letter case and also when split across writes. It keeps
// only the last len(phrase)-1 bytes between writes. Like boundedOutput it
// never fails and is not safe for concurrent use.
type phraseSpotter struct {
	phrase []byte // lower case
	buf    []byte // the carried bytes, then the current write, lowered
	seen   bool
}

func newPhraseSpotter(phrase string) *phraseSpotter {
	return &phraseSpotter{phrase: []byte(strings.ToLower(phrase))}
}

func (p *phraseSpotter) Write(b []byte) (int, error) {
	if p.seen || len(b) == 0 {
		return len(b), nil
	}
	start := len(p.buf)
	p.buf = append(p.buf, b...)
	for i, c := range p.buf[start:] {
		if 'A' <= c && c <= 'Z' {
			p.buf[start+i] = c + ('a' - 'A')
		}
	}
	if bytes.Contains(p.buf, p.phrase) {
		p.seen = true
		p.buf = nil
		return len(b), nil
	}
	keep := min(len(p.buf), len(p.phrase)-1)
	p.buf = append(p.buf[:0], p.buf[len(p.buf)-keep:]...)
	return len(b), nil
}
