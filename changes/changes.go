// Package changes tells what a change to a repository is, for the modes
// a fix can be asked in (tdd, debug, refactor): which changed files are
// tests or how tests run, whether any change is to the code, and what a
// change does to a Go module's exported API. It reads paths and file
// contents only; fetching them is its caller's.
//
// Import rule: no package of this module.
package changes

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// testPath matches the paths of test files in the common layouts: Go's
// _test.go, Python's test_*.py and *_test.py, JavaScript's *.test.* and
// *.spec.*, Ruby's *_spec.rb, Java's *Test.java, snapshots, and anything
// under a directory of tests, test data, fixtures, snapshots or mocks.
var testPath = regexp.MustCompile(`(^|/)(tests?|spec|__tests__|testdata|fixtures|__fixtures__|__snapshots__|__mocks__)/|_test\.go$|(^|/)test_[^/]*\.py$|_test\.py$|\.(test|spec)\.[cm]?[jt]sx?$|_spec\.rb$|Test\.java$|Tests?\.cs$|\.snap$`)

// testConfigPath matches files that only configure how tests run: which
// are collected, what they skip, what a pass is. They decide what a
// passing run means as much as the tests do, so they count as tests.
var testConfigPath = regexp.MustCompile(`(^|/)(conftest\.py|pytest\.ini|noxfile\.py|\.coveragerc|\.rspec|phpunit(\.dist)?\.xml(\.dist)?|\.mocharc(\.[a-z]+)?|\.nycrc(\.[a-z]+)?|(jest|vitest|karma|cypress|playwright|wdio|ava)\.(config|conf|setup|workspace)(\.[^/]*)?|setupTests\.[cm]?[jt]sx?)$`)

// mixedPath matches files that hold the tests' configuration among other
// things (a project's metadata, its dependencies, its code): what such a
// change is depends on the part of the file it changes (changeOf).
var mixedPath = regexp.MustCompile(`(^|/)(pyproject\.toml|setup\.cfg|tox\.ini|package\.json|vite\.config\.[^/]*)$|\.go$`)

// docPath matches documentation, which is neither a test nor the code a
// fix changes: a README edit is no fix.
var docPath = regexp.MustCompile(`(?i)\.(md|markdown|rst|txt|adoc)$|(^|/)(license|licence|changelog|authors|notice)(\.[a-z]+)?$`)

// NeedsContent reports whether what a change to p is depends on the change.
func NeedsContent(p string) bool {
	return !testPath.MatchString(p) && !testConfigPath.MatchString(p) && mixedPath.MatchString(p)
}

// Versions are a changed file's contents at the task's base and at the
// commit, nil where the file is absent.
type Versions struct{ Before, After []byte }

// Kinds sorts a commit's changed paths: the test files among them
// (tests, their configuration and fixtures), and whether any change is to
// the code (a file that is neither a test nor documentation). read holds
// both Versions of the files that NeedsContent; one missing from it could
// not be read and counts as a test, as does a change that cannot be told
// apart from one.
func Kinds(paths []string, read map[string]Versions) (tests []string, code bool) {
	for _, p := range paths {
		kind := kindCode
		switch {
		case testPath.MatchString(p) || testConfigPath.MatchString(p):
			kind = kindTests
		case docPath.MatchString(p):
			kind = kindNone
		case NeedsContent(p):
			kind = kindTests
			if v, ok := read[p]; ok {
				kind = changeOf(p, v)
			}
		}
		switch kind {
		case kindTests:
			tests = append(tests, p)
		case kindCode:
			code = true
		}
	}
	return tests, code
}

// What a change to one file is to a mode's check.
type changeKind int

const (
	kindNone  changeKind = iota // documentation, comments, layout
	kindTests                   // tests, or how they run
	kindCode
)

// changeOf is what the change to a file that holds both the tests'
// configuration and other things is: tests when any part it changes
// configures the tests, code when every part it changes is something
// else. It reads the change's text, not what it does, so it is
// conservative: a file it cannot read counts as tests.
func changeOf(p string, v Versions) changeKind {
	var parts []string
	var ok bool
	switch name := path.Base(p); {
	case strings.HasSuffix(name, ".go"):
		return goChange(v)
	case name == "package.json":
		parts, ok = jsonChanges(v)
	case name == "pyproject.toml":
		parts, ok = sectionChanges(v, tomlSections)
	case name == "setup.cfg" || name == "tox.ini":
		parts, ok = sectionChanges(v, iniSections)
	default:
		// A build tool's file that may hold a test runner's options
		// (vite.config.*'s test key): tests whenever it speaks of them.
		if testWord.Match(v.Before) || testWord.Match(v.After) {
			return kindTests
		}
		return kindCode
	}
	if !ok {
		return kindTests
	}
	if len(parts) == 0 {
		return kindNone
	}
	for _, s := range parts {
		if testWord.MatchString(s) {
			return kindTests
		}
	}
	return kindCode
}

// testWord matches text that speaks of tests or of a test runner and its
// options. It is meant to catch too much: a part of a mixed file it
// matches counts as test configuration.
var testWord = regexp.MustCompile(`(?i)(\b|_)(pre|post)?(tests?|testing|specs?|pytest|addopts|testpaths|python_(files|classes|functions)|norecursedirs|conftest|doctest\w*|tox|testenv|nox|coverage|jest|mocha|vitest|karma|jasmine|ava|nyc|c8|tap|fixtures?|snapshots?)(\b|_)`)

// sectionLine is one line of a sectioned file (INI, TOML) with the header
// of its section.
type sectionLine struct{ section, line string }

// sectionChanges lists the lines that differ between a sectioned file's
// two Versions (blank lines and comments left out), each with its
// section's header, so that a changed line in [tool.pytest.ini_options]
// speaks of pytest. ok is false when a version does not split.
func sectionChanges(v Versions, split func(string) ([]sectionLine, bool)) (parts []string, ok bool) {
	count := map[sectionLine]int{}
	for i, text := range [][]byte{v.Before, v.After} {
		lines, ok := split(string(text))
		if !ok {
			return nil, false
		}
		for _, l := range lines {
			count[l] += 1 - 2*i
		}
	}
	for l, n := range count {
		if n != 0 {
			parts = append(parts, l.section+"\n"+l.line)
		}
	}
	slices.Sort(parts)
	return parts, true
}

// iniSections splits an INI file as pytest's reader (iniconfig) does: a
// header is a line that starts with "[" and ends with "]" once its
// comment is cut, and a line of its own section; a line that starts with
// blanks continues the value before it; "#" and ";" start comments.
func iniSections(text string) ([]sectionLine, bool) {
	var out []sectionLine
	section := ""
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		if line[0] == '[' {
			h, _, _ := strings.Cut(line, "#")
			h, _, _ = strings.Cut(h, ";")
			if h = strings.TrimSpace(h); strings.HasSuffix(h, "]") {
				section = h
			}
		}
		out = append(out, sectionLine{section, t})
	}
	return out, true
}

// tomlSections splits a TOML document by its table headers: a line that
// starts with "[" outside any string, array or inline table. It scans
// strings (basic, literal, multi-line) and brackets so that no text in a
// value passes for a header; ok is false when one is left open, which no
// tool would read either.
func tomlSections(text string) ([]sectionLine, bool) {
	var out []sectionLine
	section, quote, depth := "", "", 0
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if quote == "" && depth == 0 {
			if t == "" || t[0] == '#' {
				continue
			}
			if t[0] == '[' {
				// A header is a line of its section: a table added
				// empty is a change too (an empty pytest table makes
				// pyproject.toml pytest's configuration).
				section = t
				out = append(out, sectionLine{section, t})
				continue
			}
		}
		out = append(out, sectionLine{section, t})
		for i := 0; i < len(line); {
			switch {
			case quote == "":
				switch c := line[i]; {
				case strings.HasPrefix(line[i:], `"""`) || strings.HasPrefix(line[i:], "'''"):
					quote = line[i : i+3]
					i += 2
				case c == '"' || c == '\'':
					quote = string(c)
				case c == '#':
					i = len(line)
				case c == '[' || c == '{':
					depth++
				case c == ']' || c == '}':
					if depth--; depth < 0 {
						return nil, false
					}
				}
				i++
			case line[i] == '\\' && quote[0] == '"':
				i += 2
			case strings.HasPrefix(line[i:], quote):
				i += len(quote)
				quote = ""
			default:
				i++
			}
		}
		if quote == `"` || quote == "'" {
			return nil, false // a one-line string left open
		}
	}
	return out, quote == "" && depth == 0
}

// jsonChanges lists the keys of a package.json that differ between its
// two Versions, each with its values: a top-level key, or one key down
// ("scripts.test", "devDependencies.jest") where both values are objects.
// ok is false when a version is not a JSON object.
func jsonChanges(v Versions) (parts []string, ok bool) {
	var a, b map[string]json.RawMessage
	for _, x := range []struct {
		text []byte
		m    *map[string]json.RawMessage
	}{{v.Before, &a}, {v.After, &b}} {
		if x.text == nil {
			continue
		}
		if err := json.Unmarshal(x.text, x.m); err != nil || *x.m == nil {
			return nil, false
		}
	}
	var walk func(prefix string, a, b map[string]json.RawMessage, deeper bool)
	walk = func(prefix string, a, b map[string]json.RawMessage, deeper bool) {
		for _, k := range slices.Sorted(maps.Keys(joinKeys(a, b))) {
			x, y := compact(a[k]), compact(b[k])
			if x == y {
				continue
			}
			var ox, oy map[string]json.RawMessage
			if deeper && json.Unmarshal([]byte(x), &ox) == nil && json.Unmarshal([]byte(y), &oy) == nil && ox != nil && oy != nil {
				walk(prefix+k+".", ox, oy, false)
				continue
			}
			parts = append(parts, prefix+k+" "+x+" "+y)
		}
	}
	walk("", a, b, true)
	return parts, true
}

func joinKeys(a, b map[string]json.RawMessage) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

// compact is a JSON value without its layout, "" for none.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// testFlag matches a string that names one of the testing package's
// flags ("test.run", "-test.skip=…").
var testFlag = regexp.MustCompile(`^-{0,2}test\.`)

// goChange is what a change to a Go file that is not a test file is. Such
// a file is in the test binary too, and can narrow what runs before any
// test does: an init that sets "test.run", a flag looked up and set, an
// os.Args rewritten. The change counts as tests when the file imports a
// testing package (a test helper), hides what it calls (a dot import, a
// go:linkname), or when a declaration it changes is an init or reaches
// the flags; as code when it changes other declarations; as nothing when
// it changes only comments or layout. It reads what the change says, not
// what it does: code can narrow the tests in ways no reading catches, but
// not in these plain ones.
func goChange(v Versions) changeKind {
	fset := token.NewFileSet()
	count := map[string]int{} // a declaration's text → how many more before than after
	changed := map[string]ast.Decl{}
	var names []map[string]string
	for i, src := range [][]byte{v.Before, v.After} {
		imports := map[string]string{} // local name → path
		names = append(names, imports)
		if src == nil {
			continue
		}
		// Read twice: with comments for the directives, and without,
		// so that a declaration prints without its doc comment.
		withComments, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return kindTests
		}
		f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
		if err != nil {
			return kindTests
		}
		for _, s := range f.Imports {
			p, _ := strconv.Unquote(s.Path.Value)
			if p == "testing" || strings.HasPrefix(p, "testing/") {
				return kindTests
			}
			name := path.Base(p)
			if s.Name != nil {
				name = s.Name.Name
			}
			if name == "." {
				return kindTests
			}
			imports[name] = p
		}
		for _, c := range withComments.Comments {
			for _, l := range c.List {
				switch {
				case strings.HasPrefix(l.Text, "//go:linkname"):
					return kindTests
				case strings.HasPrefix(l.Text, "//go:") || strings.HasPrefix(l.Text, "// +build"):
					count[l.Text] += 1 - 2*i // a build constraint, an embed: code
				}
			}
		}
		count["package "+f.Name.Name] += 1 - 2*i
		for _, d := range f.Decls {
			s := show(fset, d)
			count[s] += 1 - 2*i
			changed[s] = d
		}
	}
	kind := kindNone
	for s, n := range count {
		if n == 0 {
			continue
		}
		kind = kindCode
		if d := changed[s]; d != nil && (reachesTests(d, names[0]) || reachesTests(d, names[1])) {
			return kindTests
		}
	}
	return kind
}

// reachesTests reports whether a declaration (of a file whose imports are
// named as in imports) is an init, names a testing flag, or touches the
// flags or os.Args the way only a change to how tests run needs to. A
// command's main function may read os.Args: it never runs in the test
// binary.
func reachesTests(d ast.Decl, imports map[string]string) bool {
	f, isFunc := d.(*ast.FuncDecl)
	if isFunc && f.Recv == nil && f.Name.Name == "init" {
		return true
	}
	inMain := isFunc && f.Recv == nil && f.Name.Name == "main"
	found := false
	ast.Inspect(d, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(n.Value)
			found = found || n.Kind == token.STRING && err == nil && testFlag.MatchString(s)
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				switch imports[x.Name] {
				case "flag":
					found = found || slices.Contains([]string{"Set", "Lookup", "CommandLine", "Visit", "VisitAll"}, n.Sel.Name)
				case "os":
					found = found || n.Sel.Name == "Args" && !inMain
				}
			}
		}
		return !found
	})
	return found
}

// goAPI is the exported API of the Go files among files (path → content),
// as "package-dir (package name): declaration" → its printed signature.
// Test files, main packages and internal packages are not API. Files of one
// package that declare a name differently (per operating system, behind
// build constraints) give that name each of their signatures, sorted, so
// the result does not depend on the order files are read in. A file that
// does not parse contributes nothing: the check compares what it can read.
func goAPI(files map[string][]byte) map[string]string {
	sigs := map[string][]string{}
	add := func(k, v string) {
		if !slices.Contains(sigs[k], v) {
			sigs[k] = append(sigs[k], v)
		}
	}
	fset := token.NewFileSet()
	for p, src := range files {
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || internal(p) {
			continue
		}
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil || f.Name.Name == "main" {
			continue
		}
		pkg := path.Dir(p) + " (" + f.Name.Name + ")"
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) > 0 {
					recv := receiverName(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					name = recv + "." + name
				}
				add(pkg+": func "+name, show(fset, d.Type))
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						sig := ""
						if s.TypeParams != nil {
							sig = "[" + show(fset, s.TypeParams) + "] "
						}
						if s.Assign.IsValid() {
							sig += "= "
						}
						add(pkg+": type "+s.Name.Name, sig+show(fset, exportedOnly(s.Type)))
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								var typ ast.Node
								if s.Type != nil {
									typ = s.Type
								}
								add(pkg+": "+d.Tok.String()+" "+n.Name, show(fset, typ))
							}
						}
					}
				}
			}
		}
	}
	api := make(map[string]string, len(sigs))
	for k, v := range sigs {
		slices.Sort(v)
		api[k] = strings.Join(v, " | ")
	}
	return api
}

// internal reports whether p is in an internal package, which no other
// module can import.
func internal(p string) bool {
	return strings.HasPrefix(p, "internal/") || strings.Contains(p, "/internal/")
}

// API lists the exported declarations added, removed or changed
// between two Versions of the same files.
func API(before, after map[string][]byte) []string {
	a, b := goAPI(before), goAPI(after)
	var out []string
	for k, v := range a {
		switch w, ok := b[k]; {
		case !ok:
			out = append(out, "removed "+k)
		case w != v:
			out = append(out, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "added "+k)
		}
	}
	slices.Sort(out)
	return out
}

func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	case *ast.ParenExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// exportedOnly drops a struct's unexported fields and an interface's
// unexported methods, which are not API.
func exportedOnly(e ast.Expr) ast.Expr {
	keep := func(fl *ast.FieldList) *ast.FieldList {
		if fl == nil {
			return nil
		}
		out := &ast.FieldList{}
		for _, f := range fl.List {
			if len(f.Names) == 0 {
				out.List = append(out.List, f) // embedded: part of the API
				continue
			}
			// One field per name: "X, Y int" and "X int; Y int" are
			// the same API.
			for _, n := range f.Names {
				if n.IsExported() {
					c := *f
					c.Names, c.Doc, c.Comment = []*ast.Ident{n}, nil, nil
					out.List = append(out.List, &c)
				}
			}
		}
		return out
	}
	switch t := e.(type) {
	case *ast.StructType:
		return &ast.StructType{Fields: keep(t.Fields)}
	case *ast.InterfaceType:
		return &ast.InterfaceType{Methods: keep(t.Methods)}
	}
	return e
}

func show(fset *token.FileSet, n ast.Node) string {
	if n == nil {
		return ""
	}
	var b bytes.Buffer
	_ = printer.Fprint(&b, fset, n) // a parsed node prints
	return strings.Join(strings.Fields(b.String()), " ")
}
