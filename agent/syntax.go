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
// depth limit) is reported as no error, and a file that could not be checked
// is said to be unchecked.

// maxSyntaxCheckBytes bounds the file a check parses; a larger file is not
// checked. Measured on flat files of many small values at 8 MiB: YAML took
// 6.2 s and 761 MB, TOML 5.2 s and 526 MB, JavaScript 387 MB; at 1 MiB each
// is an eighth of that, and Python's own bound (pysyntax.MaxSource) is the same.
const maxSyntaxCheckBytes = 1 << 20

// maxScriptCheckBytes bounds a JavaScript or TypeScript file more tightly:
// esbuild's parser recurses, at up to 6.7 KiB of stack for each level (a
// bracket, a unary operator, one link of a chain), and Go ends the whole
// process, with no recover, when a goroutine's stack passes 1 GB. tooDeep
// scans for nesting first, but a file crafted to fool its scan (a regular
// expression where it sees a division) could still nest deep. At 64 KiB
// even one level per byte stays under 450 MB of stack.
const maxScriptCheckBytes = 64 << 10

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
// file name) and returns its first syntax error, or nil when it parses or
// when the language is not one we check. When the language is checked but
// this file could not be (too large, nested too deep for the parser), skipped
// says why and se is nil. It never panics and never executes anything.
func checkSyntax(p string, data []byte) (se *fileSyntaxError, skipped string) {
	lang := checkedLanguage(p)
	if lang == "" {
		return nil, ""
	}
	if len(data) > maxSyntaxCheckBytes {
		return nil, fmt.Sprintf("the file is over %d MiB", maxSyntaxCheckBytes>>20)
	}
	if (lang == langJavaScript || lang == langTypeScript) && len(data) > maxScriptCheckBytes {
		return nil, fmt.Sprintf("a JavaScript or TypeScript file over %d KiB is not checked", maxScriptCheckBytes>>10)
	}
	if why := tooDeep(lang, data); why != "" {
		return nil, why
	}
	defer func() {
		// A parser's bug must not take the edit down with it: the check is
		// advice, so a panic means "no error known".
		if recover() != nil {
			se, skipped = nil, "the "+lang+" parser failed"
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
		return checkTOML(data), ""
	case langJavaScript, langTypeScript:
		return checkJS(p, data), ""
	case langPython:
		return checkPython(data)
	}
	return nil, ""
}

// parserDepthLimit is what the answer says of a file that reached a
// parser's own nesting limit (Go's, encoding/json's, yaml's).
const parserDepthLimit = "the file nests deeper than the parser allows"

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

func checkGo(p string, data []byte) (*fileSyntaxError, string) {
	// SkipObjectResolution: only the syntax matters, and resolution costs
	// time; without AllErrors the parser stops after ten errors.
	_, err := parser.ParseFile(token.NewFileSet(), p, data, parser.SkipObjectResolution)
	var list scanner.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return nil, ""
	}
	list.Sort()
	for _, e := range list {
		if e.Msg == "exceeded max nesting depth" {
			// go/parser's own limit (100,000 levels), not the file's fault.
			return nil, parserDepthLimit
		}
	}
	first := list[0]
	return &fileSyntaxError{Line: first.Pos.Line, Column: first.Pos.Column, Message: first.Msg}, ""
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func checkJSON(data []byte, jsonc bool) (*fileSyntaxError, string) {
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
		return nil, ""
	}
	if strings.Contains(se.Error(), "exceeded max depth") {
		// encoding/json's own nesting limit (10,000), not the file's fault.
		return nil, parserDepthLimit
	}
	off := int(se.Offset)
	if off > 0 && se.Error() != "unexpected end of JSON input" {
		// Offset counts the bytes read, the offending one included.
		off--
	}
	line, col := lineColumn(data, off)
	return &fileSyntaxError{Line: line, Column: col, Message: strings.TrimPrefix(se.Error(), "json: ")}, ""
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

func checkYAML(p string, data []byte) (*fileSyntaxError, string) {
	if isTemplatedYAML(p, data) {
		return nil, ""
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
			return nil, ""
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if strings.Contains(msg, "exceeded max depth") {
			// yaml's own nesting limit (10,000), not the file's fault.
			return nil, parserDepthLimit
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
		return &fileSyntaxError{Line: line, Message: msg}, ""
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
// is reported as unchecked.
func checkPython(data []byte) (*fileSyntaxError, string) {
	e, err := pysyntax.Check(context.Background(), data)
	if err != nil {
		return nil, "the Python checker could not tell"
	}
	if e == nil {
		return nil, ""
	}
	return &fileSyntaxError{Line: e.Line, Column: e.Column, Message: e.Message}, ""
}

// esbuild and BurntSushi/toml parse nested brackets, and esbuild chains of
// operators, by recursion, and a goroutine over Go's stack limit (1 GB) is a
// fatal error no recover catches: 500,000 parentheses in a 1 MB .js file
// killed the process. tree-sitter's Python module, run as WebAssembly,
// overruns its own stack from about 450 levels and then fails. So a file is
// first scanned, in linear time, for how deep it could make the parser go,
// and not checked past these bounds. Measured (go test -v -run
// TestSyntaxDeepStack ./agent/): at 1,000 levels esbuild uses 4 MiB of stack
// and BurntSushi/toml 512 KiB; a chain of 10,000 (5,000 assignments) 32 MiB.
// No JavaScript, TypeScript, Python or TOML file of Go's module cache and
// Python's standard library (2,639 files) came near a bound. Also, esbuild's nested blocks and BurntSushi/toml's nested
// inline tables and dotted keys take time quadratic in their depth.
const (
	maxNesting       = 1000  // brackets open at once (JavaScript, TypeScript, TOML)
	maxPythonNesting = 200   // CPython's own limit on nested brackets
	maxChain         = 10000 // brackets open plus operators pending (JavaScript, TypeScript)
	maxTOMLDots      = 100   // dots in one TOML key or table header
)

// tooDeep says why a file of lang nests too deep for its parser, or "".
func tooDeep(lang string, data []byte) string {
	switch lang {
	case langJavaScript, langTypeScript:
		depth, chain := scanNesting(data, '/', true)
		if depth > maxNesting {
			return fmt.Sprintf("the file nests brackets over %d levels deep", maxNesting)
		}
		if chain > maxChain {
			return fmt.Sprintf("the file chains over %d operators in one expression", maxChain)
		}
	case langTOML:
		depth, _ := scanNesting(data, '#', false)
		if depth > maxNesting {
			return fmt.Sprintf("the file nests brackets over %d levels deep", maxNesting)
		}
		if tomlDots(data) > maxTOMLDots {
			return fmt.Sprintf("a key of the file has over %d dots", maxTOMLDots)
		}
	case langPython:
		if depth, _ := scanNesting(data, '#', false); depth > maxPythonNesting {
			return fmt.Sprintf("the file nests brackets over %d levels deep", maxPythonNesting)
		}
	}
	return ""
}

// jsChainWords are JavaScript's words that make its parser recurse, as an
// operator does.
var jsChainWords = map[string]bool{
	"if": true, "else": true, "for": true, "while": true, "do": true, "with": true,
	"new": true, "typeof": true, "void": true, "delete": true, "await": true,
	"yield": true, "return": true, "throw": true, "case": true, "in": true,
	"of": true, "instanceof": true, "extends": true, "async": true, "keyof": true,
	"as": true, "satisfies": true, "is": true, "infer": true, "readonly": true,
}

// scanNesting returns the most brackets a file holds open at once and, when
// ops, the most brackets open plus operators (and words that act as ones)
// since the last comma or semicolon of each open bracket: an estimate of
// how deep a recursive parser goes, meant to err high. It skips quoted
// strings and comments (comment starts "//" and "/*" when comment is '/', "#"
// when it is '#'); a closing bracket counts only when it matches the last
// open one. For JavaScript a template's ${...} counts as a bracket, and a
// slash where an operand is expected starts a regular expression, skipped.
func scanNesting(data []byte, comment byte, ops bool) (maxDepth, maxChain int) {
	type frame struct {
		open byte // '(', '[', '{', or '`' for a template's ${
		ops  int
	}
	stack := []frame{{}}
	chain := 0      // len(stack)-1 plus the ops of every frame
	operand := true // for a slash: an operand is expected, so it starts a regular expression
	bump := func() {
		top := &stack[len(stack)-1]
		top.ops++
		chain++
		maxChain = max(maxChain, chain)
	}
	closeTop := func() {
		top := stack[len(stack)-1]
		chain -= top.ops + 1
		stack = stack[:len(stack)-1]
	}
	// skipString skips a string from its opening quote at i; it returns the
	// index of its last byte. A template stops at ${, pushing a frame.
	skipString := func(i int) (int, bool) {
		q := data[i]
		long := comment == '#' && i+2 < len(data) && data[i+1] == q && data[i+2] == q
		if long {
			i += 2
		}
		for i++; i < len(data); i++ {
			switch c := data[i]; {
			case c == '\\':
				i++
			case long:
				if c == q && i+2 < len(data) && data[i+1] == q && data[i+2] == q {
					return i + 2, false
				}
			case c == q:
				return i, false
			case q == '`' && c == '$' && i+1 < len(data) && data[i+1] == '{':
				return i + 1, true
			case c == '\n' && q != '`':
				return i, false
			}
		}
		return len(data), false
	}
	resumeTemplate := func(i int) int {
		// data[i] is the } closing a ${: the template goes on.
		j, sub := skipStringFrom(data, i)
		if sub {
			stack = append(stack, frame{open: '`'})
			chain++
			maxDepth = max(maxDepth, len(stack)-1)
			maxChain = max(maxChain, chain)
		}
		return j
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			continue
		case comment == '#' && c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			continue
		case comment == '/' && c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			continue
		case comment == '/' && c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				return maxDepth, maxChain
			}
			i += 2 + end + 1
			continue
		case c == '"' || c == '\'' || (comment == '/' && c == '`'):
			j, sub := skipString(i)
			i = j
			if sub {
				stack = append(stack, frame{open: '`'})
				chain++
				maxDepth = max(maxDepth, len(stack)-1)
				maxChain = max(maxChain, chain)
			}
			operand = false
			continue
		case comment == '/' && c == '/' && operand:
			// A regular expression: to its closing slash, outside a class.
			class := false
			for i++; i < len(data) && data[i] != '\n'; i++ {
				if d := data[i]; d == '\\' {
					i++
				} else if d == '[' {
					class = true
				} else if d == ']' {
					class = false
				} else if d == '/' && !class {
					break
				}
			}
			operand = false
			continue
		case c == '\\':
			i++ // an escape in an identifier
			operand = false
			continue
		case c == '(' || c == '[' || c == '{':
			if ops {
				bump()
			}
			stack = append(stack, frame{open: c})
			chain++
			maxDepth = max(maxDepth, len(stack)-1)
			maxChain = max(maxChain, chain)
			operand = true
			continue
		case c == ')' || c == ']' || c == '}':
			if len(stack) > 1 {
				top := stack[len(stack)-1].open
				if top == c-1 || top == c-2 { // ( ) and [ ], { } in ASCII
					closeTop()
				} else if c == '}' && top == '`' {
					closeTop()
					i = resumeTemplate(i)
				}
			}
			operand = false
			continue
		case c == ',' || c == ';':
			top := &stack[len(stack)-1]
			chain -= top.ops
			top.ops = 0
			operand = true
			continue
		case c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= 0x80:
			j := i
			for j < len(data) && (data[j] == '_' || data[j] == '$' || data[j] >= '0' && data[j] <= '9' || data[j] >= 'A' && data[j] <= 'Z' || data[j] >= 'a' && data[j] <= 'z' || data[j] >= 0x80) {
				j++
			}
			word := string(data[i:j])
			i = j - 1
			operand = false
			if ops && jsChainWords[word] {
				bump()
				operand = true
			}
			continue
		}
		// Any other byte is an operator or punctuation.
		if ops {
			bump()
		}
		operand = true
	}
	return maxDepth, maxChain
}

// skipStringFrom goes on with a template after the } of a ${ at i: it
// returns the index of the template's closing backquote, or of the { of its
// next ${ (and true).
func skipStringFrom(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '`':
			return i, false
		case '$':
			if i+1 < len(data) && data[i+1] == '{' {
				return i + 1, true
			}
		}
	}
	return len(data), false
}

// tomlDots is the most dots in one line of a TOML file outside strings and
// comments, more than in any of its keys.
func tomlDots(data []byte) int {
	most, n := 0, 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			n = 0
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			n = 0
		case '"', '\'':
			for i++; i < len(data) && data[i] != c && data[i] != '\n'; i++ {
				if c == '"' && data[i] == '\\' {
					i++
				}
			}
		case '.':
			n++
			most = max(most, n)
		}
	}
	return most
}
