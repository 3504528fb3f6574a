package agent

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deepFiles are files that nest or chain past the bounds of tooDeep, one per
// language and way; before those bounds, the JavaScript, TypeScript and TOML
// ones overran Go's 1 GB goroutine stack (a fatal error, the process died)
// and the Python one made tree-sitter's module fail after hundreds of MB.
func deepFiles() []struct{ path, src string } {
	r := strings.Repeat
	return []struct{ path, src string }{
		{"vendor/a.js", "// teh\nx = " + r("(", 500000) + "1" + r(")", 500000) + ";\n"},
		{"src/a.ts", "// teh\nlet x = " + r("[", 250000) + r("]", 250000) + ";\n"},
		{"a.toml", "# teh\na = " + r("[", 500000) + r("]", 500000) + "\n"},
		{"a.py", "# teh\nx = " + r("[", 300000) + "1 +" + r("]", 300000) + "\n"},
		{"chain.js", "// teh\nx = " + r("a.", 500000) + "a;\n"},
		{"unary.js", "// teh\nx = " + r("!", 1000000-20) + "1;\n"},
		{"template.js", "// teh\nx = " + r("`${", 300000) + r("}`", 300000) + ";\n"},
		{"dots.toml", "# teh\na" + r(".a", 10000) + " = 1\n"},
	}
}

// TestSyntaxCheckDeepFile: an edit and a write of a deeply nested file
// answer normally, the change made and the check said to be skipped.
func TestSyntaxCheckDeepFile(t *testing.T) {
	for _, f := range deepFiles() {
		t.Run(f.path, func(t *testing.T) {
			dir := workspaceDir(t, map[string]string{f.path: f.src})
			a := newTestAgent(t, Config{})
			got, _ := callTool(t, a, dir, &State{}, ToolEditFile, `{"path":"`+f.path+`","old_text":"teh","new_text":"the"}`)
			if !strings.Contains(got, "Syntax check: not done, ") {
				t.Errorf("edit_file answered %.300q, want the check said to be skipped", got)
			}
			got, _ = callTool(t, a, dir, &State{}, ToolWriteFile, `{"path":"copy/`+f.path+`","content":`+strconv.Quote(f.src)+`}`)
			if !strings.Contains(got, "Syntax check: not done, ") {
				t.Errorf("write_file answered %.300q, want the check said to be skipped", got)
			}
		})
	}
}

// BenchmarkSyntaxCheckDeepFile measures an edit of each deep file, which
// the check's bounds keep to a fraction of a second here (0.5 ms to 0.3 s
// on this project's 2-core machine). TestSyntaxCheckDeepFile bounded it
// with a wall clock, which failed on a busy machine; the figure is
// measured here instead: go test -run '^$' -bench SyntaxCheckDeepFile ./agent/
func BenchmarkSyntaxCheckDeepFile(b *testing.B) {
	for _, f := range deepFiles() {
		b.Run(f.path, func(b *testing.B) {
			a := newTestAgent(b, Config{})
			for b.Loop() {
				b.StopTimer()
				dir := workspaceDir(b, map[string]string{f.path: f.src})
				b.StartTimer()
				callTool(b, a, dir, &State{}, ToolEditFile, `{"path":"`+f.path+`","old_text":"teh","new_text":"the"}`)
			}
		})
	}
}

// TestSyntaxDeepStack measures the stack a parser takes at the bounds of
// tooDeep, which must stay small: GC is off and the stack in use sampled.
func TestSyntaxDeepStack(t *testing.T) {
	if testing.Short() {
		t.Skip("measures")
	}
	r := strings.Repeat
	cases := []struct {
		path, src string
		maxMiB    uint64
	}{
		{"a.js", "x = " + r("(", maxNesting) + "1" + r(")", maxNesting) + ";\n", 16},
		{"a.ts", "let x = " + r("[", maxNesting) + r("]", maxNesting) + ";\n", 16},
		{"a.js", "x = " + r("{a:", maxNesting) + "1" + r("}", maxNesting) + ";\n", 16},
		{"a.js", "x = " + r("a=", maxChain/2-10) + "1;\n", 128},
		{"a.toml", "a = " + r("[", maxNesting) + r("]", maxNesting) + "\n", 16},
		{"a.toml", "a = " + r("{a=", maxNesting) + "1" + r("}", maxNesting) + "\n", 16},
	}
	for _, c := range cases {
		data := []byte(c.src)
		if why := tooDeep(checkedLanguage(c.path), data); why != "" {
			t.Fatalf("%s %.30s: skipped at the bound: %s", c.path, c.src, why)
		}
		start := time.Now()
		used := peakStack(func() { checkSyntax(c.path, data) })
		t.Logf("%s %.20s… (%d bytes): %v, stack %d KiB", c.path, c.src, len(data), time.Since(start).Round(time.Millisecond), used>>10)
		if used>>20 > c.maxMiB {
			t.Errorf("%s: %d MiB of stack, want at most %d", c.path, used>>20, c.maxMiB)
		}
	}
}

// peakStack runs f and returns the most stack memory in use meanwhile over
// what was in use before.
func peakStack(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop, res := make(chan struct{}), make(chan uint64)
	go func() {
		peak := base.StackInuse
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.StackInuse)
			select {
			case <-stop:
				res <- peak - base.StackInuse
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	f()
	close(stop)
	return <-res
}
