package runner

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pullwright/pullwright"
)

func TestBoundedOutput(t *testing.T) {
	tests := []struct {
		name          string
		limit         int
		writes        []string
		want          string
		wantTruncated bool
	}{
		{"nothing", 10, nil, "", false},
		{"empty write", 10, []string{""}, "", false},
		{"under the limit", 10, []string{"abc", "def"}, "abcdef", false},
		{"exactly the limit", 10, []string{"0123456789"}, "0123456789", false},
		{"one over", 10, []string{"0123456789X"}, "01234" + cutMarker(1) + "6789X", true},
		{"many small writes", 4, []string{"a", "b", "c", "d", "e", "f", "g"}, "ab" + cutMarker(3) + "fg", true},
		{"one huge write", 4, []string{strings.Repeat("x", 100) + "yz"}, "xx" + cutMarker(98) + "yz", true},
		{"tail wraps around", 6, []string{"abc", "defg", "hij", "kl"}, "abc" + cutMarker(6) + "jkl", true},
		{"odd limit keeps more tail", 5, []string{"0123456789"}, "01" + cutMarker(5) + "789", true},
		{"limit 1", 1, []string{"abc"}, cutMarker(2) + "c", true},
		{"limit 0 behaves as 1", 0, []string{"abc"}, cutMarker(2) + "c", true},
		// "é" is 2 bytes, "€" 3: the cut is widened rather than split them.
		{"utf-8 not split at head", 6, []string{"éé€", "0123456789", "xyz"}, "é" + cutMarker(15) + "xyz", true},
		{"utf-8 not split at tail", 6, []string{"abc", "0123456789", "€x"}, "abc" + cutMarker(13) + "x", true},
		{"utf-8 whole at both ends", 6, []string{"aé", "0123456789", "€"}, "aé" + cutMarker(10) + "€", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBoundedOutput(tt.limit)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			got, truncated := b.String()
			if got != tt.want || truncated != tt.wantTruncated {
				t.Errorf("String() = %q, %v, want %q, %v", got, truncated, tt.want, tt.wantTruncated)
			}
		})
	}
}

// TestBoundedOutputChunking checks that how the output is split into writes
// does not matter: the result is always the first and last halves of it.
func TestBoundedOutputChunking(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		limit := 1 + r.IntN(40)
		data := make([]byte, r.IntN(120))
		for j := range data {
			data[j] = 'a' + byte(r.IntN(26))
		}
		b := newBoundedOutput(limit)
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+r.IntN(limit+5))
			b.Write(rest[:n])
			rest = rest[n:]
		}
		want := string(data)
		if len(data) > limit {
			h := limit / 2
			want = string(data[:h]) + cutMarker(int64(len(data)-limit)) + string(data[len(data)-(limit-h):])
		}
		if got, _ := b.String(); got != want {
			t.Fatalf("case %d (limit %d, %d bytes): String() = %q, want %q", i, limit, len(data), got, want)
		}
	}
}

// TestLocalEscapedProcess checks that a process that left the process group
// and keeps the output pipe open does not make Run hang.
func TestLocalEscapedProcess(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	l := &Local{TempDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), waitDelay: 100 * time.Millisecond}
	res, err := l.Run(t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Command: `setsid sh -c 'touch ready; exec sleep 3' &
		while [ ! -e ready ]; do sleep 0.01; done
		echo left`})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 0 || res.Output != "left\n" {
		t.Errorf("Result = %d %q, want 0 %q", res.ExitCode, res.Output, "left\n")
	}
}

func TestPhraseSpotter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   bool
	}{
		{"as strerror says it", []string{"dd: error writing 'big': No space left on device\n"}, true},
		{"upper case", []string{"NO SPACE LEFT ON DEVICE"}, true},
		{"split across writes", []string{"write: No spa", "ce left on", " device"}, true},
		{"one byte at a time", strings.Split("xNo space left on devicex", ""), true},
		{"after much else", []string{strings.Repeat("a", 100000), "no space left on device"}, true},
		{"false start", []string{"no space no space left on d", "evice"}, true},
		{"twice", []string{"no space left on device\n", "no space left on device\n"}, true},
		{"absent", []string{"No space left", "\n", "on device"}, false},
		{"nothing", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPhraseSpotter(noSpaceMessage)
			for _, w := range tt.writes {
				if n, err := p.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if p.seen != tt.want {
				t.Errorf("seen = %v, want %v", p.seen, tt.want)
			}
			// It carries less than the phrase, whatever was written.
			if len(p.buf) >= len(p.phrase) {
				t.Errorf("carries %d bytes, want fewer than %d", len(p.buf), len(p.phrase))
			}
		})
	}
}

// A setup's script, which carries the build cache program's source, is
// cut in the log; an approved command is logged whole.
func TestLoggedCommand(t *testing.T) {
	short := strings.Repeat("x", maxLoggedCommand)
	if got := loggedCommand(short); got != short {
		t.Errorf("a command of %d bytes was cut: %q", len(short), got)
	}
	long := strings.Repeat("é", maxLoggedCommand) // 2 bytes each
	got := loggedCommand(long)
	if !strings.HasSuffix(got, fmt.Sprintf("… [%d bytes more]", len(long)-maxLoggedCommand)) || !utf8.ValidString(got) || len(got) > maxLoggedCommand+30 {
		t.Errorf("loggedCommand of %d bytes = %q", len(long), got)
	}
}
