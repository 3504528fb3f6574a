package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/untrusted"
)

// The search tools: glob lists files by path, grep searches their lines.

func runGlob(env toolEnv, raw json.RawMessage) (toolResult, error) {
	var a struct {
		Pattern string `json:"pattern"`
	}
	if err := toolsByName[ToolGlob].decodeArgs(raw, &a); err != nil {
		return toolResult{}, err
	}
	m, err := compileGlob(a.Pattern, false)
	if err != nil {
		return toolResult{}, err
	}
	var b strings.Builder
	n := 0
	truncated, err := env.ws.walk(env.ctx, func(rel string, _ fs.DirEntry) error {
		if !m.match(rel) {
			return nil
		}
		n++
		if n <= maxGlobResults {
			b.WriteString(rel)
			b.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		return toolResult{}, errorf("glob %q: %s", a.Pattern, describe(err))
	}
	if n == 0 {
		b.WriteString("no files match " + strconv.Quote(a.Pattern))
		if !strings.Contains(a.Pattern, "/") && !strings.Contains(a.Pattern, "**") {
			b.WriteString(" at the top level; use **/" + a.Pattern + " to search every directory")
		}
		b.WriteByte('\n')
	}
	if n > maxGlobResults {
		fmt.Fprintf(&b, "[… %d more files not shown; narrow the pattern]\n", n-maxGlobResults)
	}
	if truncated {
		fmt.Fprintf(&b, "[the search stopped after %d entries; narrow the pattern]\n", maxWalkEntries)
	}
	return toolResult{text: b.String(), step: fmt.Sprintf("glob `%s` (%d %s)", a.Pattern, n, words.Plural(n, "file", "files"))}, nil
}

func runGrep(env toolEnv, raw json.RawMessage) (toolResult, error) {
	var a struct {
		Pattern  string `json:"pattern"`
		PathGlob string `json:"path_glob"`
	}
	if err := toolsByName[ToolGrep].decodeArgs(raw, &a); err != nil {
		return toolResult{}, err
	}
	if a.Pattern == "" {
		return toolResult{}, errorf("pattern is empty")
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return toolResult{}, errorf("pattern is not a valid RE2 regular expression: %v", err)
	}
	var m *globMatcher
	if a.PathGlob != "" {
		if m, err = compileGlob(a.PathGlob, true); err != nil {
			return toolResult{}, err
		}
	}
	var b strings.Builder
	n, files := 0, 0
	stoppedAtLimit := false
	truncated, err := env.ws.walk(env.ctx, func(rel string, _ fs.DirEntry) error {
		if m != nil && !m.match(rel) {
			return nil
		}
		data, ok := env.ws.grepContent(rel)
		if !ok {
			return nil
		}
		files++
		line := 0
		for len(data) > 0 {
			line++
			var l []byte
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				l, data = data[:i], data[i+1:]
			} else {
				l, data = data, nil
			}
			l = bytes.TrimSuffix(l, []byte("\r"))
			if !re.Match(l) {
				continue
			}
			if n == maxGrepMatches {
				stoppedAtLimit = true
				return errStopWalk
			}
			n++
			fmt.Fprintf(&b, "%s:%d: %s\n", rel, line, untrusted.Cut(string(l), maxGrepLineBytes))
		}
		return nil
	})
	if err != nil {
		return toolResult{}, errorf("grep: %s", describe(err))
	}
	if n == 0 {
		fmt.Fprintf(&b, "no matches for %s in %d %s\n", strconv.Quote(a.Pattern), files, words.Plural(files, "file", "files"))
	}
	if stoppedAtLimit {
		fmt.Fprintf(&b, "[stopped at %d matches; narrow the pattern or use path_glob]\n", maxGrepMatches)
	}
	if truncated {
		fmt.Fprintf(&b, "[the search stopped after %d entries; use path_glob]\n", maxWalkEntries)
	}
	count := strconv.Itoa(n)
	if stoppedAtLimit {
		count += "+"
	}
	return toolResult{
		text:  b.String(),
		block: "untrusted-search-results",
		step:  fmt.Sprintf("grep `%s` (%s %s)", a.Pattern, count, words.Plural(n, "match", "matches")),
	}, nil
}

// grepContent returns the content of a searchable file: regular (through
// symlinks inside the workspace), not too large, not binary.
func (w *workspace) grepContent(rel string) ([]byte, bool) {
	rp, err := w.resolve(rel)
	if err != nil {
		return nil, false
	}
	f, err := w.root.Open(rp)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxGrepFileBytes {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGrepFileBytes+1))
	if err != nil || len(data) > maxGrepFileBytes || isBinary(data) {
		return nil, false
	}
	return data, true
}
