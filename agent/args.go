package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Repairs parseArguments may make, as the step line and the log name them.
const (
	repairFence         = "code fence removed"
	repairTrailingComma = "trailing comma removed"
)

// parseArguments is where every tool call's arguments are read, before the
// tool decodes them into its own type. Empty arguments are an empty object
// (some servers send "" for a call without arguments). Text that is not
// valid JSON gets two light repairs of what models commonly send, and only
// those: the JSON wrapped in a Markdown code fence (``` or ```json), and
// commas before a closing } or ]. Valid JSON is never changed, so a
// repair cannot change what a well-formed call means. What still fails is
// an error that says where (line, column, byte) and what was wrong, for the
// model to fix.
func parseArguments(raw string) (clean []byte, repairs []string, err error) {
	b := bytes.TrimSpace([]byte(raw))
	if len(b) == 0 {
		return []byte("{}"), nil, nil
	}
	if json.Valid(b) {
		return b, nil, nil
	}
	if inner, ok := unfence(b); ok {
		b = inner
		repairs = append(repairs, repairFence)
		if json.Valid(b) {
			return b, repairs, nil
		}
	}
	if fixed, n := dropTrailingCommas(b); n > 0 && json.Valid(fixed) {
		return fixed, append(repairs, repairTrailingComma), nil
	}
	return nil, nil, syntaxError(b, len(repairs) > 0)
}

// storedArguments is how a call's arguments are kept in the conversation:
// as sent when they are valid JSON, repaired when a repair made them so,
// and otherwise (or when they are not an object) wrapped as the string
// value of unparsed_arguments, so that
// the model still sees what it sent and the endpoint can decode them.
func storedArguments(raw string) string {
	clean, repairs, err := parseArguments(raw)
	switch {
	case err != nil || clean[0] != '{':
		// Ollama decodes arguments into an object: an array or a number,
		// valid JSON as it is, is wrapped too.
		b, _ := json.Marshal(map[string]string{"unparsed_arguments": raw}) // a string map cannot fail
		return string(b)
	case len(repairs) > 0 || strings.TrimSpace(raw) == "":
		return string(clean)
	}
	return raw
}

// unfence returns the text inside a Markdown code fence that is the whole
// of b: an opening ``` (optionally followed by json), a line break, and a
// closing ``` at the end.
func unfence(b []byte) ([]byte, bool) {
	const fence = "```"
	if !bytes.HasPrefix(b, []byte(fence)) || !bytes.HasSuffix(b, []byte(fence)) || len(b) < 2*len(fence) {
		return nil, false
	}
	body := b[len(fence) : len(b)-len(fence)]
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		return nil, false
	}
	if lang := strings.TrimSpace(string(body[:nl])); lang != "" && !strings.EqualFold(lang, "json") {
		return nil, false
	}
	return bytes.TrimSpace(body[nl+1:]), true
}

// dropTrailingCommas removes each comma that only whitespace separates from
// a closing } or ], outside strings, and says how many it removed.
func dropTrailingCommas(b []byte) ([]byte, int) {
	out := make([]byte, 0, len(b))
	n := 0
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			out = append(out, c)
			continue
		}
		if c == '"' {
			inString = true
		}
		if c == ',' {
			j := i + 1
			for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
				j++
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				n++
				continue
			}
		}
		out = append(out, c)
	}
	return out, n
}

// argsError is a syntax error in a tool call's arguments.
type argsError struct {
	Line, Column, Offset int    // where it broke; Offset counts bytes from 0
	Problem              string // what was wrong, as encoding/json says it
	Near                 string // the text around the break
	InFence              bool   // the position is inside the removed code fence
}

func (e *argsError) Error() string {
	where := fmt.Sprintf("line %d, column %d (byte %d)", e.Line, e.Column, e.Offset)
	if e.InFence {
		where += " of the JSON inside the code fence"
	}
	return fmt.Sprintf("not a valid JSON object: it breaks at %s: %s; near %q", where, e.Problem, e.Near)
}

// syntaxError locates what is wrong with b, which is not valid JSON.
func syntaxError(b []byte, inFence bool) error {
	var v any
	err := json.Unmarshal(b, &v)
	off, problem := len(b), "unexpected end of the arguments: a string, object or array is not closed"
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// encoding/json's Offset is the number of bytes read when the error
		// was found, so the bad byte is the one before it.
		if se.Error() != "unexpected end of JSON input" {
			off, problem = max(int(se.Offset)-1, 0), se.Error()
		}
	} else if err != nil {
		problem = err.Error()
	}
	line, col := 1, 1
	for _, c := range string(b[:min(off, len(b))]) {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &argsError{Line: line, Column: col, Offset: off, Problem: problem, Near: near(b, off), InFence: inFence}
}

// near is up to 20 bytes either side of off, on rune boundaries.
func near(b []byte, off int) string {
	lo, hi := max(off-20, 0), min(off+20, len(b))
	for lo > 0 && !utf8.RuneStart(b[lo]) {
		lo--
	}
	for hi < len(b) && !utf8.RuneStart(b[hi]) {
		hi++
	}
	return string(b[lo:hi])
}
