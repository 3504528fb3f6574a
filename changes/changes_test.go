package changes

import (
	"reflect"
	"strings"
	"testing"
)

func TestChangeKinds(t *testing.T) {
	for _, c := range []struct {
		paths []string
		tests []string
		code  bool
	}{
		{[]string{"pkg/x_test.go"}, []string{"pkg/x_test.go"}, false},
		{[]string{"tests/test_api.py", "src/app.py"}, []string{"tests/test_api.py"}, true},
		{[]string{"test_util.py", "web/app.spec.ts", "lib/a_spec.rb", "src/test/java/FooTest.java", "ui/__tests__/b.js", "x.test.mjs"},
			[]string{"test_util.py", "web/app.spec.ts", "lib/a_spec.rb", "src/test/java/FooTest.java", "ui/__tests__/b.js", "x.test.mjs"}, false},
		{[]string{"Makefile", "README.md"}, nil, true},
		{[]string{"latest/notes.md", "docs/guide.rst", "LICENSE"}, nil, false},
		{nil, nil, false},
	} {
		if tests, code := Kinds(c.paths, nil); !reflect.DeepEqual(tests, c.tests) || code != c.code {
			t.Errorf("Kinds(%q) = %q, %v; want %q, %v", c.paths, tests, code, c.tests, c.code)
		}
	}
}

// TestChangeOfOneFile: what a change to one file is to a mode's check.
// Test configuration and fixtures are tests; a file that holds both is
// decided from the parts its change touches, and counts as tests when
// that cannot be read.
func TestChangeOfOneFile(t *testing.T) {
	const absent = "\x00absent"
	const mainGo = "package main\n\nfunc main() {}\n"
	const pyproject = "[project]\nname = \"widget\"\ndependencies = [\"requests>=2.31\"]\n\n[tool.pytest.ini_options]\nminversion = \"7\"\n"
	const setupCfg = "[metadata]\nname = widget\nversion = 1.0\n\n[tool:pytest]\ntestpaths = tests\n\n[flake8]\nmax-line-length = 100\n"
	const packageJSON = `{"name": "widget", "description": "the latest widget", "scripts": {"build": "tsc", "test": "jest"}, "dependencies": {"left-pad": "1.0.0"}, "devDependencies": {"jest": "29.0.0"}}`
	cases := []struct {
		name          string
		path          string
		before, after string
		unread        bool // the file's versions could not be read
		want          changeKind
	}{
		// By name: tests, their configuration, fixtures; documentation.
		{name: "a Go test", path: "pkg/x_test.go", want: kindTests},
		{name: "conftest.py", path: "conftest.py", want: kindTests},
		{name: "a nested conftest.py", path: "src/app/conftest.py", want: kindTests},
		{name: "pytest.ini", path: "pytest.ini", want: kindTests},
		{name: "jest's config", path: "web/jest.config.ts", want: kindTests},
		{name: "jest's setup", path: "jest.setup.js", want: kindTests},
		{name: "vitest's config", path: "vitest.config.mts", want: kindTests},
		{name: "karma's config", path: "karma.conf.js", want: kindTests},
		{name: "mocha's config", path: ".mocharc.yml", want: kindTests},
		{name: "phpunit's config", path: "phpunit.xml.dist", want: kindTests},
		{name: "setupTests", path: "src/setupTests.ts", want: kindTests},
		{name: "a fixture", path: "spec/fixtures/user.json", want: kindTests},
		{name: "a fixture of jest's", path: "src/__fixtures__/a.json", want: kindTests},
		{name: "a snapshot", path: "src/__snapshots__/App.test.js.snap", want: kindTests},
		{name: "a mock", path: "src/__mocks__/fs.js", want: kindTests},
		{name: "Go test data", path: "pkg/testdata/golden.txt", want: kindTests},
		{name: "documentation", path: "docs/guide.rst", want: kindNone},
		{name: "other code", path: "src/app.py", want: kindCode},
		{name: "a Makefile", path: "Makefile", want: kindCode},

		// pyproject.toml, by the table a changed line is in.
		{name: "pyproject: a dependency", path: "pyproject.toml", before: pyproject,
			after: strings.Replace(pyproject, "2.31", "2.32", 1), want: kindCode},
		{name: "pyproject: pytest's options", path: "pyproject.toml", before: pyproject,
			after: pyproject + "addopts = \"-k 'not empty'\"\n", want: kindTests},
		{name: "pyproject: pytest's options and a dependency", path: "pyproject.toml", before: pyproject,
			after: strings.Replace(pyproject, "2.31", "2.32", 1) + "addopts = \"-k 'not empty'\"\n", want: kindTests},
		{name: "pyproject: a new pytest table, empty", path: "pyproject.toml", before: "[project]\nname = \"widget\"\n",
			after: "[project]\nname = \"widget\"\n[tool.pytest.ini_options]\n", want: kindTests},
		{name: "pyproject: addopts where pytest would not read it", path: "pyproject.toml", before: pyproject,
			after: strings.Replace(pyproject, "[project]\n", "[project]\naddopts = 1\n", 1), want: kindTests},
		{name: "pyproject: a test extra", path: "pyproject.toml", before: pyproject,
			after: strings.Replace(pyproject, "\n\n[tool", "\n[project.optional-dependencies]\ntest = [\"pytest\"]\n\n[tool", 1), want: kindTests},
		{name: "pyproject: created with pytest's options", path: "pyproject.toml", before: absent, after: pyproject, want: kindTests},
		{name: "pyproject: a comment", path: "pyproject.toml", before: pyproject, after: "# the widget\n" + pyproject, want: kindNone},
		{name: "pyproject: a line of an array that looks like a header", path: "pyproject.toml",
			before: "[tool.pytest.ini_options]\nmarkers = [\n[\"not a table\"],\n\"slow\",\n]\n",
			after:  "[tool.pytest.ini_options]\nmarkers = [\n[\"not a table\"],\n\"slow\",\n\"fast\",\n]\n", want: kindTests},
		{name: "pyproject: a header inside a multi-line string", path: "pyproject.toml",
			before: "[tool.pytest.ini_options]\nx = \"\"\"\n[project]\n\"\"\"\nminversion = \"7\"\n",
			after:  "[tool.pytest.ini_options]\nx = \"\"\"\n[project]\n\"\"\"\nminversion = \"8\"\n", want: kindTests},
		{name: "pyproject: triple quotes inside a literal string", path: "pyproject.toml",
			before: "[project]\nx = '\"\"\"'\n[tool.pytest.ini_options]\nminversion = \"7\"\n",
			after:  "[project]\nx = '\"\"\"'\n[tool.pytest.ini_options]\nminversion = \"8\"\n", want: kindTests},
		{name: "pyproject: a string left open", path: "pyproject.toml", before: pyproject,
			after: strings.Replace(pyproject, `"widget"`, `"widget`, 1), want: kindTests},
		{name: "pyproject: unread", path: "pyproject.toml", unread: true, want: kindTests},

		// setup.cfg and tox.ini, by section.
		{name: "setup.cfg: the version", path: "setup.cfg", before: setupCfg, after: strings.Replace(setupCfg, "1.0", "1.1", 1), want: kindCode},
		{name: "setup.cfg: pytest's section", path: "setup.cfg", before: setupCfg,
			after: strings.Replace(setupCfg, "testpaths = tests", "testpaths = tests/unit", 1), want: kindTests},
		{name: "setup.cfg: pytest's section renamed away", path: "setup.cfg", before: setupCfg,
			after: strings.Replace(setupCfg, "[tool:pytest]", "[disabled]", 1), want: kindTests},
		{name: "setup.cfg: a header in a continuation", path: "setup.cfg", before: setupCfg,
			after: strings.Replace(setupCfg, "version = 1.0\n", "version = 1.0\n  [tool:pytest]\n", 1), want: kindTests},
		{name: "setup.cfg: flake8's section", path: "setup.cfg", before: setupCfg,
			after: strings.Replace(setupCfg, "100", "120", 1), want: kindCode},
		{name: "tox.ini: a test environment", path: "tox.ini", before: "[tox]\nenvlist = py312\n\n[testenv]\ncommands = pytest\n",
			after: "[tox]\nenvlist = py312\n\n[testenv]\ncommands = pytest -k fast\n", want: kindTests},

		// package.json, by key.
		{name: "package.json: a dependency", path: "package.json", before: packageJSON,
			after: strings.Replace(packageJSON, "1.0.0", "1.3.0", 1), want: kindCode},
		{name: "package.json: the test script", path: "package.json", before: packageJSON,
			after: strings.Replace(packageJSON, `"test": "jest"`, `"test": "jest -t nothing"`, 1), want: kindTests},
		{name: "package.json: a script that runs the tests", path: "package.json", before: packageJSON,
			after: strings.Replace(packageJSON, `"build": "tsc"`, `"build": "tsc && jest --passWithNoTests"`, 1), want: kindTests},
		{name: "package.json: jest's key", path: "package.json", before: packageJSON,
			after: strings.Replace(packageJSON, `{"name"`, `{"jest": {"testPathIgnorePatterns": ["src"]}, "name"`, 1), want: kindTests},
		{name: "package.json: jest's version", path: "package.json", before: packageJSON,
			after: strings.Replace(packageJSON, "29.0.0", "29.7.0", 1), want: kindTests},
		{name: "package.json: layout only", path: "package.json", before: packageJSON,
			after: strings.ReplaceAll(packageJSON, ", ", ",\n  "), want: kindNone},
		{name: "package.json: not JSON", path: "package.json", before: packageJSON, after: packageJSON[1:], want: kindTests},
		{name: "vite.config: a test key", path: "vite.config.ts", before: "export default {}\n",
			after: "export default { test: { exclude: ['src'] } }\n", want: kindTests},
		{name: "vite.config: a plugin", path: "vite.config.ts", before: "export default {}\n",
			after: "export default { plugins: [react()] }\n", want: kindCode},

		// Go files that are not tests: they are in the test binary too.
		{name: "go: a fix", path: "main.go", before: mainGo, after: "package main\n\nfunc main() { println(1) }\n", want: kindCode},
		{name: "go: a new file", path: "pkg/page.go", before: absent, after: "package pkg\n\nfunc Page() int { return 404 }\n", want: kindCode},
		{name: "go: init narrows the tests", path: "main.go", before: mainGo,
			after: "package main\n\nimport \"flag\"\n\nfunc init() { flag.Set(\"test.run\", \"^$\") }\n\nfunc main() {}\n", want: kindTests},
		{name: "go: any init", path: "main.go", before: mainGo, after: "package main\n\nfunc init() { setup() }\n\nfunc main() {}\n", want: kindTests},
		{name: "go: a variable's initialiser narrows the tests", path: "pkg/a.go", before: "package pkg\n",
			after: "package pkg\n\nimport f \"flag\"\n\nvar _ = f.Lookup(\"te\" + \"st.skip\").Value.Set(\".\")\n", want: kindTests},
		{name: "go: a test flag named", path: "pkg/a.go", before: "package pkg\n",
			after: "package pkg\n\nvar args = []string{\"-test.run=^$\"}\n", want: kindTests},
		{name: "go: os.Args rewritten", path: "pkg/a.go", before: "package pkg\n\nimport \"os\"\n\nfunc F() {}\n",
			after: "package pkg\n\nimport \"os\"\n\nfunc F() { os.Args = os.Args[:1] }\n", want: kindTests},
		{name: "go: os.Args in main", path: "main.go", before: mainGo,
			after: "package main\n\nimport \"os\"\n\nfunc main() { println(len(os.Args)) }\n", want: kindCode},
		{name: "go: a test helper", path: "internal/testutil/util.go", before: "package testutil\n\nimport \"testing\"\n\nfunc Skip(t *testing.T) {}\n",
			after: "package testutil\n\nimport \"testing\"\n\nfunc Skip(t *testing.T) { t.Skip() }\n", want: kindTests},
		{name: "go: a dot import", path: "pkg/a.go", before: "package pkg\n",
			after: "package pkg\n\nimport . \"flag\"\n\nvar _ = Parsed()\n", want: kindTests},
		{name: "go: a linkname", path: "pkg/a.go", before: "package pkg\n",
			after: "package pkg\n\nimport _ \"unsafe\"\n\n//go:linkname x testing.x\nvar x int\n", want: kindTests},
		{name: "go: main sets a test flag", path: "main.go", before: mainGo,
			after: "package main\n\nimport \"flag\"\n\nfunc main() { flag.Set(\"test.run\", \"^$\") }\n", want: kindTests},
		{name: "go: a function's doc comment", path: "pkg/a.go", before: "package pkg\n\nfunc F() {}\n",
			after: "package pkg\n\n// F does nothing.\nfunc F() {}\n", want: kindNone},
		{name: "go: a comment", path: "main.go", before: mainGo, after: "// Command widget serves widgets.\npackage main\n\nfunc main() {}\n", want: kindNone},
		{name: "go: a build constraint", path: "main.go", before: mainGo, after: "//go:build linux\n\n" + mainGo, want: kindCode},
		{name: "go: does not parse", path: "main.go", before: mainGo, after: "package main\nfunc {", want: kindTests},
		{name: "go: deleted, and it narrowed the tests", path: "pkg/a.go",
			before: "package pkg\n\nimport \"flag\"\n\nfunc init() { flag.Set(\"test.count\", \"1\") }\n", after: absent, want: kindTests},
		{name: "go: unread", path: "main.go", unread: true, want: kindTests},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			version := func(s string) []byte {
				if s == absent {
					return nil
				}
				return []byte(s)
			}
			read := map[string]Versions{}
			if !c.unread {
				read[c.path] = Versions{Before: version(c.before), After: version(c.after)}
			}
			tests, code := Kinds([]string{c.path}, read)
			got := kindNone
			switch {
			case len(tests) > 0 && code:
				t.Fatalf("one file counted as tests and code")
			case len(tests) > 0:
				got = kindTests
			case code:
				got = kindCode
			}
			if got != c.want {
				t.Errorf("%s is %s, want %s", c.path, kindNames[got], kindNames[c.want])
			}
		})
	}
}

var kindNames = map[changeKind]string{kindNone: "neither tests nor code", kindTests: "tests", kindCode: "code"}

func TestAPIChanges(t *testing.T) {
	before := map[string][]byte{
		"pkg/a.go": []byte(`package pkg

type Config struct {
	Name string
	secret int
}

type Store interface {
	Get(id int) (string, error)
	lock()
}

func New(c Config) *Thing { return nil }
func (t *Thing) Run(n int) error { return nil }
func helper() {}

const Limit = 10
var Default = Config{}
`),
		"pkg/a_test.go": []byte("package pkg\n\nfunc TestX() {}\n"),
		"cmd/main.go":   []byte("package main\n\nfunc Exported() {}\n"),
		"broken.go":     []byte("package broken\nfunc {"),
	}
	same := map[string][]byte{
		// Unexported fields and methods, bodies, comments and layout are not API.
		"pkg/a.go": []byte(`package pkg

// Config configures.
type Config struct {
	Name   string
	hidden bool
}

type Store interface {
	Get(id int) (string, error)
	unlock()
}

func New(c Config) *Thing { return &Thing{} }
func (t *Thing) Run(n int) error {
	return helper2()
}
func helper2() error { return nil }

const Limit = 10
var Default = Config{Name: "x"}
`),
		"pkg/a_test.go": []byte("package pkg\n\nfunc TestY() {}\n"),
		"cmd/main.go":   []byte("package main\n\nfunc Other() {}\n"),
	}
	if got := API(before, same); len(got) != 0 {
		t.Errorf("changes that are not API: %q", got)
	}
	changed := map[string][]byte{
		"pkg/a.go": []byte(`package pkg

type Config struct {
	Name string
	Port int
}

type Store interface {
	Get(id int) (string, error)
}

func New(c *Config) *Thing { return nil }
func (t *Thing) Run(n int) error { return nil }
func (t *Thing) Stop() {}

var Default = Config{}
`),
	}
	want := []string{
		"added pkg (pkg): func Thing.Stop",
		"changed pkg (pkg): func New",
		"changed pkg (pkg): type Config",
		"removed pkg (pkg): const Limit",
	}
	if got := API(before, changed); !reflect.DeepEqual(got, want) {
		t.Errorf("apiChanges =\n %q\nwant\n %q", got, want)
	}
}

func TestAPIChangesMore(t *testing.T) {
	cases := []struct {
		name          string
		before, after map[string][]byte
		want          []string
	}{
		{name: "a name declared per system, read in any order",
			before: map[string][]byte{"p/fd_unix.go": []byte("package p\nfunc Open(n int) {}\n"), "p/fd_windows.go": []byte("package p\nfunc Open(h uintptr) {}\n")},
			after:  map[string][]byte{"p/fd_unix.go": []byte("package p\nfunc Open(n int) {}\n"), "p/fd_windows.go": []byte("package p\nfunc Open(h uintptr) {}\n")}},
		{name: "a type parameter added",
			before: map[string][]byte{"p/a.go": []byte("package p\ntype Box struct{ V any }\n")},
			after:  map[string][]byte{"p/a.go": []byte("package p\ntype Box[T any] struct{ V any }\n")},
			want:   []string{"changed p (p): type Box"}},
		{name: "an alias made a defined type",
			before: map[string][]byte{"p/a.go": []byte("package p\ntype ID = int\n")},
			after:  map[string][]byte{"p/a.go": []byte("package p\ntype ID int\n")},
			want:   []string{"changed p (p): type ID"}},
		{name: "the package renamed",
			before: map[string][]byte{"p/a.go": []byte("package p\nfunc F() {}\n")},
			after:  map[string][]byte{"p/a.go": []byte("package q\nfunc F() {}\n")},
			want:   []string{"added p (q): func F", "removed p (p): func F"}},
		{name: "fields grouped or not",
			before: map[string][]byte{"p/a.go": []byte("package p\ntype P struct{ X, Y int }\n")},
			after:  map[string][]byte{"p/a.go": []byte("package p\ntype P struct {\n\tX int\n\tY int\n}\n")}},
		{name: "a method on a parenthesised receiver",
			before: map[string][]byte{"p/a.go": []byte("package p\ntype T struct{}\nfunc ((T)) M() {}\n")},
			after:  map[string][]byte{"p/a.go": []byte("package p\ntype T struct{}\n")},
			want:   []string{"removed p (p): func T.M"}},
		{name: "internal packages are not API",
			before: map[string][]byte{"internal/x/a.go": []byte("package x\nfunc F() {}\n"), "p/internal/y/b.go": []byte("package y\nfunc G() {}\n")},
			after:  map[string][]byte{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 20 { // map order varies between runs
				if got := API(c.before, c.after); !reflect.DeepEqual(got, c.want) {
					t.Fatalf("apiChanges = %q, want %q", got, c.want)
				}
			}
		})
	}
}
