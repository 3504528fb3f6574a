package fakellm

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Transcript is one request and its answer in an endpoint's own wire
// format, as its documentation gives them (internal/fakellm/testdata).
//
// The file is text: lines starting with # are its header (where the
// exchange comes from), then
//
//	=== request METHOD PATH
//	JSON body
//	=== response STATUS
//	JSON body
type Transcript struct {
	Header       string // the # lines, without the #
	Method, Path string // as the endpoint's documentation sends it
	Request      []byte
	Status       int
	Response     []byte
}

// LoadTranscript reads a transcript file and checks that both bodies are
// JSON, failing the test otherwise.
func LoadTranscript(t testing.TB, path string) Transcript {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("fakellm: read transcript: %v", err)
	}
	var tr Transcript
	var header []string
	var section *[]byte
	var req, resp bytes.Buffer
	for line := range strings.Lines(string(data)) {
		switch {
		case section == nil && strings.HasPrefix(line, "#"):
			header = append(header, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		case strings.HasPrefix(line, "=== request "):
			f := strings.Fields(strings.TrimPrefix(line, "=== request "))
			if len(f) != 2 {
				t.Fatalf("fakellm: %s: want \"=== request METHOD PATH\", got %q", path, line)
			}
			tr.Method, tr.Path = f[0], f[1]
			section = &tr.Request
		case strings.HasPrefix(line, "=== response "):
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "=== response ")))
			if err != nil {
				t.Fatalf("fakellm: %s: want \"=== response STATUS\", got %q", path, line)
			}
			tr.Status = n
			section = &tr.Response
		case section == &tr.Request:
			req.WriteString(line)
		case section == &tr.Response:
			resp.WriteString(line)
		case strings.TrimSpace(line) != "":
			t.Fatalf("fakellm: %s: text outside a section: %q", path, line)
		}
	}
	tr.Header = strings.Join(header, "\n")
	tr.Request, tr.Response = bytes.TrimSpace(req.Bytes()), bytes.TrimSpace(resp.Bytes())
	if !json.Valid(tr.Request) || !json.Valid(tr.Response) || tr.Status == 0 {
		t.Fatalf("fakellm: %s: a request and a response, both JSON, are required", path)
	}
	return tr
}

// Step is the transcript's answer, to script a server with.
func (tr Transcript) Step() Step {
	return Step{RawBody: string(tr.Response), Status: tr.Status}
}
