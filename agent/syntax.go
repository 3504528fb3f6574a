package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/evanw/esbuild/pkg/api"
	"go.yaml.in/yaml/v3"

	"github.com/pullwright/pullwright/internal/pysyntax"
)

// The syntax check after an edit: a file the agent wrote is parsed as the
// language its name says, and the first error is shown to the model. Each
// language uses a maintained parser (go/parser, encoding/json, yaml/v3,
// BurntSushi/toml, esbuild, tree-sitter's Python grammar run as WebAssembly), never a tool that
// runs the file. A false "syntax error" makes a model break good code, so
// every doubtful case (templated YAML, JSON with comments, a parser's own
// depth limit) is reported as no error.

// maxSyntaxCheckBytes bounds the file a check parses; a larger file is not
// checked, so one call stays within tens of milliseconds and a few times the
// file's size in memory.
const maxSyntaxCheckBytes = 8 << 20

// maxSyntaxMessage bounds the message the model reads: parsers quote the
// offending text, which may be a very long line.
const maxSyntaxMessage = 200

// fileSyntaxError is the first syntax error of a file, as the model reads it.
// (Not "syntaxError": args.go has a function of that name.)
type fileSyntaxError struct {
	Line, Column int // 1-based; Column 0 when the parser does not say
	Message      string
	Language     string
}

// String renders the error for a tool result, e.g.
// "Go syntax error at line 12, column 5: expected ';', found 'EOF'".
func (e *fileSyntaxError) String() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s syntax error at line %d, column %d: %s", e.Language, e.Line, e.Column, e.Message)
	}
	return fmt.Sprintf("%s syntax error at line %d: %s", e.Language, e.Line, e.Message)
}

const (
	langGo         = "Go"
	langJSON       = "JSON"
	langJSONC      = "JSON with comments"
	langYAML       = "YAML"
	langTOML       = "TOML"
	langJavaScript = "JavaScript"
	langTypeScript = "TypeScript"
	langPython     = "Python"
)

// checkedLanguage names the language checkSyntax checks a file at path (a
// slash-separated path relative to the repository) as, or "" when it does
// not check it.
func checkedLanguage(p string) string {
	base := path.Base(p)
	ext := strings.ToLower(path.Ext(base))
	switch ext {
	case ".go":
		return langGo
	case ".json":
		if isJSONC(p) {
			return langJSONC
		}
		return langJSON
	case ".jsonc":
		return langJSONC
	case ".yaml", ".yml":
		return langYAML
	case ".toml":
		return langTOML
	case ".js", ".mjs", ".cjs", ".jsx":
		return langJavaScript
	case ".ts", ".tsx", ".mts", ".cts":
		return langTypeScript
	case ".py", ".pyi":
		return langPython
	}
	return ""
}

// jsoncNames are JSON files whose own tools read comments and trailing
// commas (TypeScript, VS Code, Dev Containers, ESLint, Babel, Deno, Biome,
// Turborepo, Renovate, Mocha, cspell, Nx, Angular, Wrangler, markdownlint).
// When in doubt a name is here: missing a comment that breaks a strict
// reader costs less than a false error.
var jsoncNames = map[string]bool{
	"devcontainer.json":           true,
	".devcontainer.json":          true,
	".eslintrc.json":              true,
	".babelrc.json":               true,
	"babel.config.json":           true,
	"deno.json":                   true,
	"biome.json":                  true,
	"turbo.json":                  true,
	"renovate.json":               true,
	".renovaterc.json":            true,
	"api-extractor.json":          true,
	"tslint.json":                 true,
	"launch.json":                 true,
	"tasks.json":                  true,
	"settings.json":               true,
	"extensions.json":             true,
	"keybindings.json":            true,
	"language-configuration.json": true,
	".mocharc.json":               true,
	"cspell.json":                 true,
	".cspell.json":                true,
	"nx.json":                     true,
	"project.json":                true,
	"angular.json":                true,
	".oxlintrc.json":              true,
	"wrangler.json":               true,
	".markdownlint.json":          true,
	".prettierrc.json":            true,
}

// isJSONC reports whether a .json file is one whose readers allow comments
// and trailing commas, so it must be checked as JSONC.
func isJSONC(p string) bool {
	base := strings.ToLower(path.Base(p))
	if jsoncNames[base] {
		return true
	}
	// tsconfig.json, tsconfig.base.json, tsconfig.app.json, jsconfig.json...
	if strings.HasPrefix(base, "tsconfig") || strings.HasPrefix(base, "jsconfig") {
		return true
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		if dir == ".vscode" || dir == ".devcontainer" || dir == ".zed" {
			return true
		}
	}
	return false
}

// checkSyntax parses data as the language its path names (by extension or
// file name) and returns its first syntax error, or nil when it parses, when
// the language is not one we check, or when the file is over
// maxSyntaxCheckBytes. It never panics and never executes anything.
func checkSyntax(p string, data []byte) (se *fileSyntaxError) {
	lang := checkedLanguage(p)
	if lang == "" || len(data) > maxSyntaxCheckBytes {
		return nil
	}
	defer func() {
		// A parser's bug must not take the edit down with it: the check is
		// advice, so a panic means "no error known".
		if recover() != nil {
			se = nil
		}
		if se != nil {
			se.Language = lang
			se.Message = clipMessage(se.Message)
		}
	}()
	switch lang {
	case langGo:
		return checkGo(p, data)
	case langJSON:
		return checkJSON(data, false)
	case langJSONC:
		return checkJSON(data, true)
	case langYAML:
		return checkYAML(p, data)
	case langTOML:
		return checkTOML(data)
	case langJavaScript, langTypeScript:
		return checkJS(p, data)
	case langPython:
		return checkPython(data)
	}
	return nil
}

func clipMessage(m string) string {
	m = strings.TrimSpace(m)
	if len(m) <= maxSyntaxMessage {
		return m
	}
	cut := maxSyntaxMessage
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + "…"
}

func checkGo(p string, data []byte) *fileSyntaxError {
	// SkipObjectResolution: only the syntax matters, and resolution costs
	// time; without AllErrors the parser stops after ten errors.
	_, err := parser.ParseFile(token.NewFileSet(), p, data, parser.SkipObjectResolution)
	var list scanner.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return nil
	}
	list.Sort()
	first := list[0]
	return &fileSyntaxError{Line: first.Pos.Line, Column: first.Pos.Column, Message: first.Msg}
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func checkJSON(data []byte, jsonc bool) *fileSyntaxError {
	// A byte-order mark is read by npm, VS Code and most tools, and
	// encoding/json refuses it: blank it (offsets stay the same).
	src := data
	if bytes.HasPrefix(src, utf8BOM) || jsonc {
		src = bytes.Clone(src)
		if bytes.HasPrefix(src, utf8BOM) {
			copy(src, "   ")
		}
	}
	if jsonc {
		src = blankJSONC(src)
	}
	// Unmarshalling into a RawMessage only scans: no tree is built.
	err := json.Unmarshal(src, new(json.RawMessage))
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return nil
	}
	if strings.Contains(se.Error(), "exceeded max depth") {
		// encoding/json's own nesting limit, not the file's fault.
		return nil
	}
	off := int(se.Offset)
	if off > 0 && se.Error() != "unexpected end of JSON input" {
		// Offset counts the bytes read, the offending one included.
		off--
	}
	line, col := lineColumn(data, off)
	return &fileSyntaxError{Line: line, Column: col, Message: strings.TrimPrefix(se.Error(), "json: ")}
}

// blankJSONC turns JSONC into JSON of the same length, in place: comments
// become spaces (newlines kept) and a comma before a closing bracket becomes a
// space, so the offsets of an error are those of the file.
func blankJSONC(b []byte) []byte {
	lastComma := -1 // index of a comma followed so far only by blanks and comments
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			lastComma = -1
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			stop := len(b)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			for ; i < stop; i++ {
				if b[i] != '\n' && b[i] != '\r' {
					b[i] = ' '
				}
			}
			i--
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				b[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	return b
}

// lineColumn turns a byte offset into a 1-based line and a 1-based column
// counted in characters.
func lineColumn(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlParserProblems are the messages of yaml/v3's parser (as opposed to its
// scanner): for these it prints a 0-based line, so one is added.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

func checkYAML(p string, data []byte) *fileSyntaxError {
	if isTemplatedYAML(p, data) {
		return nil
	}
	// Decoding into a Node checks the syntax of every document without
	// expanding aliases (no "billion laughs") or judging duplicate keys,
	// which some readers allow.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if strings.Contains(msg, "exceeded max depth") {
			return nil
		}
		line := 0
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		if slices.Contains(yamlParserProblems, msg) {
			line++
		}
		if line == 0 {
			// No line: an error of the first line, or of the reader
			// (bad UTF-8, a control character), found here.
			line, _ = lineColumn(data, badYAMLByte(data))
		}
		return &fileSyntaxError{Line: line, Message: msg}
	}
}

// badYAMLByte is the offset of the first byte YAML's reader refuses (invalid
// UTF-8 or a control character other than tab and line breaks), or 0.
func badYAMLByte(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7F {
			return i
		}
		i += n
	}
	return 0
}

// isTemplatedYAML reports files that are templates producing YAML rather
// than YAML: Helm charts' templates/ and any path that is itself templated
// (cookiecutter).
func isTemplatedYAML(p string, data []byte) bool {
	if strings.Contains(p, "{{") {
		return true
	}
	if !bytes.Contains(data, []byte("{{")) {
		return false
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		if dir == "templates" {
			return true
		}
	}
	return false
}

func checkTOML(data []byte) *fileSyntaxError {
	var v map[string]any
	_, err := toml.Decode(string(data), &v)
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return nil
	}
	return &fileSyntaxError{Line: pe.Position.Line, Column: pe.Position.Col, Message: pe.Message}
}

func checkJS(p string, data []byte) *fileSyntaxError {
	ext := strings.ToLower(path.Ext(p))
	if (ext == ".js" || ext == ".jsx") && isFlow(data) {
		// Flow's type annotations are not JavaScript, and esbuild does
		// not read them.
		return nil
	}
	var loaders []api.Loader
	switch ext {
	case ".js", ".mjs", ".cjs":
		// Many React projects keep JSX in .js files; JSX only adds
		// meaning to a "<" where plain JavaScript allows none, so a file
		// is in error only if neither reading accepts it.
		loaders = []api.Loader{api.LoaderJS, api.LoaderJSX}
	case ".jsx":
		loaders = []api.Loader{api.LoaderJSX}
	case ".ts", ".mts", ".cts":
		loaders = []api.Loader{api.LoaderTS}
	case ".tsx":
		loaders = []api.Loader{api.LoaderTSX}
	}
	var first *fileSyntaxError
	for _, l := range loaders {
		res := api.Transform(string(data), api.TransformOptions{
			Loader:     l,
			Sourcefile: p,
			LogLevel:   api.LogLevelSilent,
			// esnext: nothing is lowered, so no "not supported" errors;
			// only what cannot be parsed is reported.
			Target: api.ESNext,
		})
		if len(res.Errors) == 0 {
			return nil
		}
		if first == nil {
			m := res.Errors[0]
			first = &fileSyntaxError{Message: m.Text}
			if m.Location != nil {
				first.Line = m.Location.Line
				// esbuild counts bytes from 0; the model counts characters from 1.
				text := m.Location.LineText
				col := min(max(m.Location.Column, 0), len(text))
				first.Column = utf8.RuneCountInString(text[:col]) + 1
			}
		}
	}
	return first
}

// isFlow reports a file that asks for Flow's type checker with an @flow
// pragma in its leading comments.
func isFlow(data []byte) bool {
	head := data[:min(len(data), 4096)]
	return bytes.Contains(head, []byte("@flow"))
}

// checkPython asks tree-sitter's Python grammar, which reads current Python
// (match, the walrus, PEP 695 type parameters, PEP 701 f-strings) and is
// lenient rather than strict: it misses some errors CPython reports but was
// measured to report none on valid code. A file it could not check in time
// is reported as no error.
func checkPython(data []byte) *fileSyntaxError {
	e, err := pysyntax.Check(context.Background(), data)
	if err != nil || e == nil {
		return nil
	}
	return &fileSyntaxError{Line: e.Line, Column: e.Column, Message: e.Message}
}
