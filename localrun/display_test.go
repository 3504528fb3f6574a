package localrun

import (
	"bytes"
	"context"
	"errors"
	"html"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/task"
)

func TestDiffStat(t *testing.T) {
	tests := []struct {
		name  string
		stats []pullwright.FileStat
		want  string
	}{
		{"none", nil, "no changes\n"},
		{"one", []pullwright.FileStat{{Path: "README.md", Added: 1, Deleted: 1}},
			" README.md | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"},
		{"aligned, binary, deletions only", []pullwright.FileStat{
			{Path: "a.go", Added: 10}, {Path: "img/logo.png"}, {Path: "old.txt", Deleted: 3},
		}, "" +
			" a.go         | 10 ++++++++++\n" +
			" img/logo.png | Bin\n" +
			" old.txt      |  3 ---\n" +
			" 3 files changed, 10 insertions(+), 3 deletions(-)\n"},
		{"scaled", []pullwright.FileStat{{Path: "big", Added: 400, Deleted: 1}, {Path: "small", Added: 1}}, "" +
			" big   | 401 " + strings.Repeat("+", 39) + "-\n" +
			" small |   1 +\n" +
			" 2 files changed, 401 insertions(+), 1 deletion(-)\n"},
		{"escaped name", []pullwright.FileStat{{Path: "a\x1b[2Jb", Added: 1}}, " a\\x1b[2Jb | 1 +\n 1 file changed, 1 insertion(+)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := diffStat(tt.stats); got != tt.want {
				t.Errorf("diffStat:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestSafe(t *testing.T) {
	tests := []struct{ in, want string }{
		{"go test ./...", "go test ./..."},
		{"a\nb\tc", "a\nb\tc"},
		{"rm -rf / \x1b[1A\x1b[2K\recho hi", `rm -rf / \x1b[1A\x1b[2K\recho hi`},
		{"ls \u202egnp.exe", `ls \u202egnp.exe`},
		{"bad \xff byte", `bad \ufffd byte`},
		{"été", "été"},
	}
	for _, tt := range tests {
		if got := safe(tt.in); got != tt.want {
			t.Errorf("safe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 400000: "400,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := pullwright.Thousands(n); got != want {
			t.Errorf("pullwright.Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDisplayRewritesTheStatusLineOnATerminal(t *testing.T) {
	var b bytes.Buffer
	d := newDisplay(&b, true)
	d.status("one")
	d.status("two")
	d.printf("a line\n")
	d.done()
	want := "one\r\033[Ktwo\r\033[Ka line\ntwo\r\033[K"
	if got := b.String(); got != want {
		t.Errorf("terminal output %q, want %q", got, want)
	}

	b.Reset()
	d = newDisplay(&b, false)
	d.status("one")
	d.status("one")
	d.printf("a line\n")
	d.prompt("Run it? ")
	d.answered("y")
	if got, want := b.String(), "… one\na line\nRun it? y\n"; got != want {
		t.Errorf("plain output %q, want %q", got, want)
	}
}

func TestLineReader(t *testing.T) {
	l := newLineReader(strings.NewReader("y\r\nlast"))
	defer l.close()
	ctx := context.Background()
	for _, want := range []string{"y", "last"} {
		if got, err := l.next(ctx); got != want || err != nil {
			t.Fatalf("next = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := l.next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("next at the end: %v, want EOF", err)
	}

	// A question abandoned when ctx ends.
	r, w := io.Pipe()
	defer w.Close()
	l = newLineReader(r)
	defer l.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("next with a cancelled context: %v", err)
	}
}

func TestAskerShowsTheRequestSafely(t *testing.T) {
	var b bytes.Buffer
	a := newAsker(strings.NewReader("y\n"), true, nil, newDisplay(&b, false))
	defer a.close()
	v, err := a.decide(context.Background(), question{
		shown: approval.Seal(approval.Request{ID: "1", Command: "echo ok\x1b[2K\rrm -rf ~", Reason: "line one\nline two", Commit: "abc",
			Where: approval.Where{Sandbox: true, Local: true}}),
		where: "in the Docker sandbox",
	})
	if err != nil || !v.approved {
		t.Fatalf("decide = %+v, %v", v, err)
	}
	for _, want := range []string{`$ echo ok<U+001B>[2K<U+000D>rm -rf ~`, "Why: line one line two\n", "Run it in the Docker sandbox?"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("question does not contain %q:\n%s", want, b.String())
		}
	}
}

// The terminal shows a request as the request comment of serve does: the
// same value, every sentence of it, and what does not show as itself
// written as its code point, the same way.
func TestTheTerminalShowsARequestAsTheCommentDoes(t *testing.T) {
	const rlo = "\u202e"
	shown := approval.Seal(approval.Request{ID: "2", Command: "go test ./...", Reason: "check " + rlo + "it", Commit: "0123456789abcdef",
		Files: []pullwright.FileStat{{Path: "go.mod", Added: 1}, {Path: "x" + rlo + "gol.sh", Added: 2}},
		Where: approval.Where{Sandbox: true, Local: true, Image: "img", Network: true},
		Setup: &approval.Setup{Base: "HEAD", Manifests: []pullwright.FileStat{{Path: "go.mod", Added: 1}}, Diff: "+require evil.test/m v1.0.0 // " + rlo + "\n"}})
	var out bytes.Buffer
	a := newAsker(strings.NewReader("y\n"), true, nil, newDisplay(&out, false))
	defer a.close()
	if _, err := a.decide(t.Context(), question{shown: shown, where: "in the Docker sandbox"}); err != nil {
		t.Fatal(err)
	}
	// GitHub shows the comment's entities as the characters they stand
	// for, and its code spans without their backquotes.
	terminal, comment := out.String(), strings.ReplaceAll(html.UnescapeString(task.RenderRequest(shown)), "`", "")
	if strings.Contains(terminal, rlo) || strings.Contains(comment, rlo) {
		t.Fatalf("U+202E shown as is:\n%s\n%s", terminal, comment)
	}
	for _, both := range []string{"x<U+202E>gol.sh (+2 −0)", "+require evil.test/m v1.0.0 // <U+202E>", "check <U+202E>it", shown.ShortDigest()} {
		if !strings.Contains(terminal, both) || !strings.Contains(comment, both) {
			t.Errorf("%q is not on both surfaces:\n%s\n%s", both, terminal, comment)
		}
	}
	strip := strings.NewReplacer("`", "", "*", "")
	for _, s := range shown.Sentences() {
		words := strip.Replace(approval.PlainText(s))
		if !strings.Contains(strip.Replace(terminal), words) || !strings.Contains(strip.Replace(comment), words) {
			t.Errorf("the sentence %q is not on both surfaces:\n%s\n%s", words, terminal, comment)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, v := range []any{f, null, strings.NewReader(""), nil, (*os.File)(nil)} {
		if IsTerminal(v) {
			t.Errorf("IsTerminal(%T %v) = true", v, v)
		}
	}
}

// A changed dependency manifest takes a command off the --yes-to list and
// out of an earlier "a": the setup would run with the agent's manifests,
// which somebody must read. Without a terminal nobody can, so it is
// rejected, with the reason.
func TestChangedManifestsAreAlwaysAsked(t *testing.T) {
	const cmd = "go test ./..."
	plain := approval.Request{ID: "1", Command: cmd, Reason: "test", Commit: "abc", Where: approval.Where{Sandbox: true, Local: true}}
	changed := plain
	changed.Setup = &approval.Setup{Base: "HEAD", Manifests: []pullwright.FileStat{{Path: "go.mod", Added: 1}}, Diff: "+require evil.test/m v1.0.0\n"}
	unknown := plain
	unknown.Setup = &approval.Setup{Base: "HEAD", Unknown: "the diff failed"}
	tests := []struct {
		name        string
		interactive bool
		input       string
		q           question
		approved    bool
		how         string
		asked       bool
	}{
		{"listed, unchanged", false, "", question{shown: approval.Seal(plain)}, true, "approved by --yes-to", false},
		{"listed, changed, no terminal", false, "", question{shown: approval.Seal(changed)}, false, reasonManifests, false},
		{"listed, changed, asked", true, "y\n", question{shown: approval.Seal(changed)}, true, "approved", true},
		{"listed, changed, refused", true, "n not that module\n", question{shown: approval.Seal(changed)}, false, "not that module", true},
		{"listed, not known whether changed, no terminal", false, "", question{shown: approval.Seal(unknown)}, false, reasonManifests, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			a := newAsker(strings.NewReader(tt.input), tt.interactive, []string{cmd}, newDisplay(&out, false))
			defer a.close()
			v, err := a.decide(t.Context(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if v.approved != tt.approved || v.how != tt.how {
				t.Errorf("verdict %+v, want approved=%v how=%q", v, tt.approved, tt.how)
			}
			shown := strings.Contains(out.String(), "setup runs first, with these manifests. The files to run change `go.mod`") && strings.Contains(out.String(), "    +require evil.test/m v1.0.0")
			if shown != tt.asked {
				t.Errorf("question shown with the change: %v, want %v:\n%s", shown, tt.asked, out.String())
			}
		})
	}
}

// The status line on a terminal says for how long it has said what it
// says, and uses the terminal's width: the time stays when the text is
// cut.
func TestStatusLine(t *testing.T) {
	long := "3/40 turns · setting up the repository's dependencies · 12,345 tokens · $0.0123 at the model's price"
	const took = " · 3s"
	cut := func(cols int) string { return words.Clip(long, cols-utf8.RuneCountInString(took)) + took }
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		width   int
		want    string
	}{
		{"at once", 0, 150, "waiting for the model"},
		{"under a second", 999 * time.Millisecond, 150, "waiting for the model"},
		{"seconds", 7 * time.Second, 150, "waiting for the model · 7s"},
		{"minutes", 185 * time.Second, 150, "waiting for the model · 3m05s"},
		{"hours", 62*time.Minute + 5*time.Second, 150, "waiting for the model · 1h02m"},
		{"a wide terminal shows it all", 3 * time.Second, 150, long + " · 3s"},
		{"an unknown width is 80", 3 * time.Second, 0, cut(78)},
		{"a narrow terminal keeps the time", 3 * time.Second, 30, cut(28)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := long
			if !strings.HasPrefix(tc.want, "3/40") {
				status = "waiting for the model"
			}
			got := statusLine(status, tc.elapsed, tc.width)
			if got != tc.want {
				t.Errorf("statusLine(%v, %d) = %q, want %q", tc.elapsed, tc.width, got, tc.want)
			}
			width := tc.width
			if width == 0 {
				width = 80
			}
			if n := utf8.RuneCountInString(got); n > width-2 {
				t.Errorf("%d columns on a terminal of %d", n, width)
			}
		})
	}
}

// The line is drawn again as its time goes on, and only then.
func TestDisplayKeepsTime(t *testing.T) {
	var b bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := newDisplay(&b, true)
	d.now = func() time.Time { return clock }
	d.width = func() int { return 150 }
	d.status("running go test ./...")
	d.redraw()
	clock = clock.Add(500 * time.Millisecond)
	d.redraw()
	clock = clock.Add(2 * time.Second)
	d.redraw()
	d.redraw()
	d.status("waiting for the model")
	d.done()
	want := "running go test ./...\r\033[Krunning go test ./... · 2s\r\033[Kwaiting for the model\r\033[K"
	if got := b.String(); got != want {
		t.Errorf("terminal output %q, want %q", got, want)
	}
}
