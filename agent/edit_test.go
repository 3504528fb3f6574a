package agent

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// Each case is one edit a model gets slightly wrong, or a file with a
// style of its own: the edit lands where it was meant with the file's
// style kept, or is refused with the lines the model needs to try again.
func TestEditFileNearMisses(t *testing.T) {
	const goSrc = "package p\n\nfunc f() {\n\tif x {\n\t\treturn 1\n\t}\n\treturn 2\n}\n"
	cases := []struct {
		name     string
		file     string
		args     map[string]any
		wantFile string
		want     []string // substrings of the result
		wantErr  bool
	}{
		{name: "crlf across lines keeps crlf",
			file:     "a\r\nb\r\nc\r\n",
			args:     map[string]any{"old_text": "a\nb\n", "new_text": "a\nB\nB2\n"},
			wantFile: "a\r\nB\r\nB2\r\nc\r\n",
			want:     []string{"replaced 1 occurrence", "    2\tB\n", "    3\tB2\n"}},
		{name: "crlf old_text sent with crlf",
			file:     "a\r\nb\r\n",
			args:     map[string]any{"old_text": "a\r\nb", "new_text": "x\r\ny"},
			wantFile: "x\r\ny\r\n"},
		{name: "byte order mark kept",
			file:     bom + "first\nsecond\n",
			args:     map[string]any{"old_text": "first\n", "new_text": "1st\n"},
			wantFile: bom + "1st\nsecond\n"},
		{name: "trailing spaces dropped by the model",
			file:     "alpha  \nbeta\t\ngamma\n",
			args:     map[string]any{"old_text": "alpha\nbeta", "new_text": "ALPHA\nBETA"},
			wantFile: "ALPHA\nBETA\ngamma\n",
			want:     []string{"trailing white space"}},
		{name: "tabs written as spaces",
			file:     goSrc,
			args:     map[string]any{"old_text": "    if x {\n        return 1\n    }\n", "new_text": "    if x {\n        return 10\n    }\n    if y {\n        return 11\n    }\n"},
			wantFile: "package p\n\nfunc f() {\n\tif x {\n\t\treturn 10\n\t}\n\tif y {\n\t\treturn 11\n\t}\n\treturn 2\n}\n",
			want:     []string{"indentation", "re-indented", "lines 4-9"}},
		{name: "deeper new line than old_text's",
			file:     goSrc,
			args:     map[string]any{"old_text": "  if x {\n    return 1\n  }", "new_text": "  if x {\n    if z {\n      return 1\n    }\n  }"},
			wantFile: "package p\n\nfunc f() {\n\tif x {\n\t\tif z {\n\t\t\treturn 1\n\t\t}\n\t}\n\treturn 2\n}\n"},
		{name: "flattened indentation is refused",
			file:    goSrc,
			args:    map[string]any{"old_text": "if x {\nreturn 1\n}", "new_text": "if x {\nreturn 3\n}"},
			wantErr: true, want: []string{"lines 4-6 only when indentation is ignored", "exact indentation"}},
		{name: "line numbers copied from read_file",
			file:     goSrc,
			args:     map[string]any{"old_text": "    5\t\t\treturn 1\n    6\t\t}\n", "new_text": "    5\t\t\treturn 5\n    6\t\t}\n"},
			wantFile: strings.Replace(goSrc, "return 1", "return 5", 1),
			want:     []string{"line-number prefixes"}},
		{name: "ambiguous names each line",
			file:    "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n",
			args:    map[string]any{"old_text": "x = 1", "new_text": "x = 9"},
			wantErr: true, want: []string{"found 3 times in f.txt, expected 1: at lines 1, 3 and 5"}},
		{name: "ambiguous when whitespace is ignored",
			file:    "\tx = 1\n\tx = 1\n",
			args:    map[string]any{"old_text": "x = 1  \n", "new_text": "x = 2\n"},
			wantErr: true, want: []string{"found 2 times", "when indentation is ignored", "lines 1 and 2"}},
		{name: "a changed word gets the nearest lines",
			file:    goSrc,
			args:    map[string]any{"old_text": "\tif x {\n\t\treturn one\n\t}\n", "new_text": "\tif x {\n\t\treturn 3\n\t}\n"},
			wantErr: true,
			want:    []string{"found 0 times", "nearest text is at lines 4-6", "    5\t\t\treturn 1\n", `Line 2 of old_text, "return one", differs from line 5`}},
		{name: "nothing alike",
			file:    goSrc,
			args:    map[string]any{"old_text": "completely unrelated words", "new_text": "x"},
			wantErr: true, want: []string{"No lines of the file resemble it"}},
		{name: "mixed line ends keep the replaced lines' cr",
			file:     "a\r\nb\r\nc\n",
			args:     map[string]any{"old_text": "a\nb\n", "new_text": "A\nB\n"},
			wantFile: "A\r\nB\r\nc\n"},
		{name: "several occurrences show each",
			file:     "x = 1\ny\nx = 1\n",
			args:     map[string]any{"old_text": "x = 1", "new_text": "x = 2", "expected_matches": 2},
			wantFile: "x = 2\ny\nx = 2\n",
			want:     []string{"replaced 2 occurrences", "at line 1 and line 3", "    3\tx = 2\n</untrusted-file>"}},
		{name: "a deletion shows where",
			file:     "a\nb\nc\n",
			args:     map[string]any{"old_text": "b\n", "new_text": ""},
			wantFile: "a\nc\n",
			want:     []string{"    1\ta\n", "    2\tc\n"}},
	}
	a := newTestAgent(t, Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := workspaceDir(t, map[string]string{"f.txt": tc.file})
			tc.args["path"] = "f.txt"
			got, _ := callTool(t, a, dir, &State{}, ToolEditFile, args(t, tc.args))
			if isErr := strings.HasPrefix(got, "error: "); isErr != tc.wantErr {
				t.Fatalf("error = %v, want %v; result:\n%s", isErr, tc.wantErr, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %q; result:\n%s", w, got)
				}
			}
			want := tc.wantFile
			if tc.wantErr {
				want = tc.file
			}
			if disk := readDisk(t, dir, "f.txt"); disk != want {
				t.Errorf("file = %q, want %q; result:\n%s", disk, want, got)
			}
		})
	}
}

func TestWriteFileKeepsStyle(t *testing.T) {
	cases := []struct {
		name, old, content, want string
		kept                     string
	}{
		{"crlf", "a\r\nb\r\n", "x\ny\n", "x\r\ny\r\n", "CRLF line ends"},
		{"crlf content as crlf", "a\r\nb\r\n", "x\r\ny\r\n", "x\r\ny\r\n", ""},
		{"bom", bom + "a\n", "b\n", bom + "b\n", "a byte order mark"},
		{"final newline", "a\n", "b", "b\n", "a final newline"},
		{"no final newline", "a", "b\n", "b", "no final newline"},
		{"empty file takes any", "", "b", "b", ""},
		{"lf stays", "a\n", "b\n", "b\n", ""},
	}
	a := newTestAgent(t, Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := workspaceDir(t, map[string]string{"f.txt": tc.old})
			got, _ := callTool(t, a, dir, &State{}, ToolWriteFile, args(t, map[string]any{"path": "f.txt", "content": tc.content}))
			if disk := readDisk(t, dir, "f.txt"); disk != tc.want {
				t.Errorf("file = %q, want %q", disk, tc.want)
			}
			if tc.kept != "" && !strings.Contains(got, "keeps its "+tc.kept) {
				t.Errorf("result %q does not say it kept %s", got, tc.kept)
			}
			if tc.kept == "" && strings.Contains(got, "keeps") {
				t.Errorf("result %q says it kept something", got)
			}
		})
	}
}

// A default read of a file whose lines are long stops at what one result
// holds and still says where it stopped: before, the result was cut at
// the end and the footer was lost.
func TestReadFileFitsOneResult(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		b.WriteString(strings.Repeat("x", 90) + "\n")
	}
	dir := workspaceDir(t, map[string]string{"wide.go": b.String()})
	for _, cap := range []int{0, 4 << 10} {
		a := newTestAgent(t, Config{MaxToolOutput: cap})
		ws, err := openWorkspace(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := a.runTool(toolEnv{ctx: t.Context(), ws: ws, st: &State{}, maxOutput: a.cfg.MaxToolOutput},
			toolCallOf(ToolReadFile, `{"path":"wide.go"}`))
		ws.Close()
		if strings.Contains(got, "bytes cut") {
			t.Errorf("cap %d: the result was cut after the read:\n%s", cap, got[len(got)-300:])
		}
		if !strings.Contains(got, "of 1000, as much as one result holds; use start_line") {
			t.Errorf("cap %d: the result does not end with where it stopped:\n%s", cap, got[len(got)-300:])
		}
	}
}

func toolCallOf(name, args string) openai.ToolCall {
	return openai.ToolCall{ID: "call_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}

// A TSV file's own "number, tab" is not read_file's prefix: the rest of
// such an old_text never matches inside another line.
func TestEditFileNumberedDataIsNotAPrefix(t *testing.T) {
	dir := workspaceDir(t, map[string]string{"d.tsv": "1\tred apple\n2\tgreen\n"})
	a := newTestAgent(t, Config{})
	got, _ := callTool(t, a, dir, &State{}, ToolEditFile, `{"path":"d.tsv","old_text":"3\tapple","new_text":"3\tpear"}`)
	if !strings.HasPrefix(got, "error: ") {
		t.Errorf("result = %q", got)
	}
	if disk := readDisk(t, dir, "d.tsv"); disk != "1\tred apple\n2\tgreen\n" {
		t.Errorf("file = %q", disk)
	}
}

// A change that breaks a file's syntax is kept and reported with the
// lines around the error, and with whether the file parsed before.
func TestSyntaxCheckAfterAChange(t *testing.T) {
	const goSrc = "package p\n\nfunc f() int {\n\treturn 1\n}\n"
	cases := []struct {
		name, file, tool, args string
		want                   []string
		notWant                []string
	}{
		{name: "an edit that breaks Go", file: goSrc, tool: ToolEditFile,
			args: `{"path":"f.go","old_text":"\treturn 1\n}","new_text":"\treturn 1"}`,
			want: []string{"replaced 1 occurrence", "Syntax check: Go syntax error at line 4, column 11", "The file parsed before this change: fix the error next.", ">   4\t\treturn 1"}},
		{name: "an edit that keeps Go whole", file: goSrc, tool: ToolEditFile,
			args:    `{"path":"f.go","old_text":"return 1","new_text":"return 2"}`,
			notWant: []string{"Syntax check"}},
		{name: "an edit of a file that was broken", file: "package p\n\nfunc f( {\n", tool: ToolEditFile,
			args: `{"path":"f.go","old_text":"package p","new_text":"package q"}`,
			want: []string{"Syntax check: Go syntax error", "did not parse before this change either"}},
		{name: "a new broken JSON file", tool: ToolWriteFile,
			args: `{"path":"c.json","content":"{\"a\": 1,\n \"b\": }\n"}`,
			want: []string{"created c.json", "Syntax check: JSON syntax error at line 2", "Fix it next."}},
		{name: "a rewritten Go file", file: goSrc, tool: ToolWriteFile,
			args: `{"path":"f.go","content":"package p\nfunc {\n"}`,
			want: []string{"replaced the content of f.go", "Go syntax error at line 2"}},
		{name: "an unchecked language", tool: ToolWriteFile,
			args:    `{"path":"notes.txt","content":"{{{ not code"}`,
			notWant: []string{"Syntax check"}},
	}
	a := newTestAgent(t, Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.file != "" {
				files["f.go"] = tc.file
			}
			dir := workspaceDir(t, files)
			got, _ := callTool(t, a, dir, &State{}, tc.tool, tc.args)
			if strings.HasPrefix(got, "error: ") {
				t.Fatalf("the change was refused: %s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %q; result:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("result has %q; result:\n%s", w, got)
				}
			}
		})
	}
}
