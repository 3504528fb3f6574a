package localrun

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/words"
)

// IsTerminal reports whether f is an *os.File on a character device other
// than the null device: a terminal, in practice.
func IsTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok || file == nil {
		return false
	}
	info, err := file.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(info, null) {
		return false
	}
	return true
}

// defaultWidth is the terminal's width when it cannot be told.
const defaultWidth = 80

// tickEvery is how often a status line on a terminal is drawn again, for
// its time.
const tickEvery = time.Second

// display is the terminal output of a run: permanent lines, and on a
// terminal one status line at the bottom that is rewritten in place. Its
// Write (for the logger) and printf clear the status line first and draw
// it again after. Elsewhere a status is printed as a plain line when it
// changes.
//
// On a terminal the status line says for how long it has said what it
// says (from a second on), so that a long wait shows it is one, and it is
// cut to the terminal's width, which it never reaches: a wrapped line
// cannot be rewritten in place.
type display struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	line   string    // current status
	since  time.Time // when it was set
	drawn  string    // what is on screen of it
	shown  bool      // the status line is on screen (tty)
	lastNL bool      // the last permanent output ended a line

	now   func() time.Time
	width func() int // the terminal's columns; 0 when unknown
}

func newDisplay(w io.Writer, tty bool) *display {
	return &display{w: w, tty: tty, lastNL: true, now: time.Now, width: func() int { return terminalWidth(w) }}
}

// keepTime draws the status line again every tickEvery, so that its time
// goes on, until stop is called; nothing where output is no terminal.
func (d *display) keepTime() (stop func()) {
	if !d.tty {
		return func() {}
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(tickEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				d.redraw()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// redraw draws the status line again when what it would show changed.
func (d *display) redraw() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.shown && d.render() != d.drawn {
		d.hide()
		d.show()
	}
}

// Write prints p as permanent output.
func (d *display) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hide()
	n, err := d.w.Write(p)
	if len(p) > 0 {
		d.lastNL = p[len(p)-1] == '\n'
	}
	d.show()
	return n, err
}

func (d *display) printf(format string, args ...any) {
	fmt.Fprintf(d, format, args...)
}

// status replaces the status line.
func (d *display) status(s string) {
	s = oneLine(s)
	d.mu.Lock()
	defer d.mu.Unlock()
	if s == d.line {
		return
	}
	d.line, d.since = s, d.now()
	if d.tty {
		d.hide()
		d.show()
		return
	}
	fmt.Fprintf(d.w, "… %s\n", s)
}

// render is the status line as it is drawn now.
func (d *display) render() string {
	return statusLine(d.line, d.now().Sub(d.since), d.width())
}

// statusLine is status on a terminal of width columns (0: unknown) after
// it has been shown for elapsed: cut to fit, so that the time stays.
func statusLine(status string, elapsed time.Duration, width int) string {
	if width <= 0 {
		width = defaultWidth
	}
	// Two columns short of the width: a line as wide as the terminal
	// wraps on some.
	room := max(width-2, 10)
	if elapsed < time.Second {
		return words.Clip(status, room)
	}
	took := " · " + formatElapsed(elapsed)
	n := utf8.RuneCountInString(took)
	if room <= n+1 {
		return words.Clip(status, room)
	}
	return words.Clip(status, room-n) + took
}

// formatElapsed is d as a wait is told: 7s, 3m05s, 1h02m.
func formatElapsed(d time.Duration) string {
	s := int(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
}

// prompt prints a question without a status line after it, so that the
// answer is typed right after the question.
func (d *display) prompt(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hide()
	io.WriteString(d.w, s)
	d.lastNL = strings.HasSuffix(s, "\n")
}

// answered is called after a prompt's answer was read: the status line may
// be drawn again.
func (d *display) answered(echo string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.lastNL && !d.tty {
		// Output that is not a terminal did not get the echo of the
		// answer: write it, for whoever reads the log.
		io.WriteString(d.w, echo+"\n")
	}
	d.lastNL = true
	d.show()
}

// done clears the status line for good.
func (d *display) done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hide()
	d.line = ""
}

func (d *display) hide() {
	if d.tty && d.shown {
		io.WriteString(d.w, "\r\033[K")
		d.shown = false
	}
}

func (d *display) show() {
	if d.tty && !d.shown && d.line != "" && d.lastNL {
		d.drawn = d.render()
		io.WriteString(d.w, d.drawn)
		d.shown = true
	}
}

// safe makes text from the model or a command safe to print on a terminal:
// control characters (escape sequences could rewrite what was shown before
// the user approves it) and bidirectional overrides are written as Go
// escapes. Newlines and tabs stay.
func safe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r),
			r == '\u2028', r == '\u2029':
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// oneLine is safe(s) on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(safe(s)), " ") }

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// diffStat renders stats as git diff --stat does: one line per file with
// its count of changed lines and a bar of +/-, and a summary line.
func diffStat(stats []pullwright.FileStat) string {
	if len(stats) == 0 {
		return "no changes\n"
	}
	const barWidth = 40
	nameW, countW, most := 0, 1, 0
	adds, dels := 0, 0
	for _, s := range stats {
		nameW = max(nameW, utf8.RuneCountInString(safe(s.Path)))
		countW = max(countW, len(strconv.Itoa(s.Added+s.Deleted)))
		most = max(most, s.Added+s.Deleted)
		adds += s.Added
		dels += s.Deleted
	}
	var b strings.Builder
	for _, s := range stats {
		name := safe(s.Path)
		pad := strings.Repeat(" ", nameW-utf8.RuneCountInString(name))
		if s.Added+s.Deleted == 0 {
			fmt.Fprintf(&b, " %s%s | %*s\n", name, pad, countW, "Bin")
			continue
		}
		plus, minus := s.Added, s.Deleted
		if most > barWidth {
			plus = scale(s.Added, most, barWidth)
			minus = scale(s.Deleted, most, barWidth)
		}
		fmt.Fprintf(&b, " %s%s | %*d %s%s\n", name, pad, countW, s.Added+s.Deleted,
			strings.Repeat("+", plus), strings.Repeat("-", minus))
	}
	fmt.Fprintf(&b, " %d %s changed", len(stats), words.Plural(len(stats), "file", "files"))
	if adds > 0 || dels == 0 {
		fmt.Fprintf(&b, ", %d %s(+)", adds, words.Plural(adds, "insertion", "insertions"))
	}
	if dels > 0 {
		fmt.Fprintf(&b, ", %d %s(-)", dels, words.Plural(dels, "deletion", "deletions"))
	}
	b.WriteString("\n")
	return b.String()
}

// scale is n of most in width columns, at least one column for a non-zero n.
func scale(n, most, width int) int {
	if n == 0 {
		return 0
	}
	return max(1, n*width/most)
}
