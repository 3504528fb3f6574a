package task

import (
	"reflect"
	"strings"
	"testing"
)

func TestCheckMode(t *testing.T) {
	const base, testOnly, fixed, final = "base", "tests", "fixed", "final"
	run := func(cmd, sha, outcome string, tests, code bool) RunRecord {
		return RunRecord{Command: cmd, SHA: sha, Verdict: Approved, Outcome: outcome, Tests: tests, Code: code}
	}
	cases := []struct {
		name         string
		mode         string
		instructions string
		api          []string
		runs         []RunRecord
		want         []string // missing steps; nil when verified
	}{
		{name: "tdd: test fails alone, then passes with the fix", mode: ModeTDD, runs: []RunRecord{
			run("go test ./...", testOnly, OutcomeFailed, true, false),
			run("go test ./...", final, OutcomePassed, true, true),
		}},
		{name: "tdd: the failing run already held code changes", mode: ModeTDD, runs: []RunRecord{
			run("go test ./...", fixed, OutcomeFailed, true, true),
			run("go test ./...", final, OutcomePassed, true, true),
		}, want: []string{"a run that shows a new or changed test failing before the fix (on a commit with the test change only)", "the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: failing on the base, with no test change", mode: ModeTDD, runs: []RunRecord{
			run("go test ./...", base, OutcomeFailed, false, false),
			run("go test ./...", final, OutcomePassed, true, true),
		}, want: []string{"a run that shows a new or changed test failing before the fix (on a commit with the test change only)", "the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: passing only on an earlier commit", mode: ModeTDD, runs: []RunRecord{
			run("go test ./...", testOnly, OutcomeFailed, true, false),
			run("go test ./...", fixed, OutcomePassed, true, true),
		}, want: []string{"the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: the test was changed after it failed", mode: ModeTDD, runs: []RunRecord{
			{Command: "go test ./...", SHA: testOnly, Verdict: Approved, Outcome: OutcomeFailed, Tests: true, TestsDigest: "strict"},
			{Command: "go test ./...", SHA: final, Verdict: Approved, Outcome: OutcomePassed, Tests: true, Code: true, TestsDigest: "weakened"},
		}, want: []string{"the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: another command passed", mode: ModeTDD, runs: []RunRecord{
			run("go test ./pkg", testOnly, OutcomeFailed, true, false),
			run("go vet ./...", final, OutcomePassed, true, true),
		}, want: []string{"the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "tdd: a rejected run is no step", mode: ModeTDD, runs: []RunRecord{
			{Command: "go test ./...", SHA: testOnly, Verdict: Rejected, Outcome: OutcomeRejected, Tests: true},
			run("go test ./...", final, OutcomePassed, true, true),
		}, want: []string{"a run that shows a new or changed test failing before the fix (on a commit with the test change only)", "the same command passing on the final commit, with the fix and the tests unchanged since they failed"}},
		{name: "debug: reproduced on the base, gone after the fix", mode: ModeDebug, runs: []RunRecord{
			run("./repro.sh", base, OutcomeFailed, false, false),
			run("./repro.sh", final, OutcomePassed, false, true),
		}},
		{name: "debug: never reproduced", mode: ModeDebug, runs: []RunRecord{
			run("./repro.sh", final, OutcomePassed, false, true),
		}, want: []string{"a run that reproduces the failure before the code is changed", "the same command passing on the final commit, with the fix"}},
		{name: "debug: a timeout is not a reproduction that passes later", mode: ModeDebug, runs: []RunRecord{
			run("./repro.sh", base, OutcomeTimedOut, false, false),
			run("./repro.sh", final, OutcomeFailed, false, true),
		}, want: []string{"the same command passing on the final commit, with the fix"}},
		{name: "refactor: passing before and after", mode: ModeRefactor, runs: []RunRecord{
			run("go test ./...", base, OutcomePassed, false, false),
			run("go test ./...", final, OutcomePassed, false, true),
		}},
		{name: "refactor: never run before the change", mode: ModeRefactor, runs: []RunRecord{
			run("go test ./...", final, OutcomePassed, false, true),
		}, want: []string{"the tests passing before the code was changed", "the same tests passing on the final commit"}},
		{name: "refactor: the API changed", mode: ModeRefactor, api: []string{"removed pkg: func Old"}, runs: []RunRecord{
			run("go test ./...", base, OutcomePassed, false, false),
			run("go test ./...", final, OutcomePassed, false, true),
		}, want: []string{"an unchanged exported API (`removed pkg: func Old`)"}},
		{name: "refactor: told to keep the API, and it changed", mode: ModeRefactor, instructions: "split store.go by table; keep the public API unchanged",
			api: []string{"removed pkg: func Old"}, runs: []RunRecord{
				run("go test ./...", base, OutcomePassed, false, false),
				run("go test ./...", final, OutcomePassed, false, true),
			}, want: []string{"an unchanged exported API (`removed pkg: func Old`)"}},
		{name: "refactor: the passing run before had changed the tests", mode: ModeRefactor, runs: []RunRecord{
			run("go test ./...", testOnly, OutcomePassed, true, false),
			run("go test ./...", final, OutcomePassed, true, true),
		}, want: []string{"the tests passing before the code was changed", "the same tests passing on the final commit"}},
		{name: "refactor: the API changed as asked", mode: ModeRefactor, instructions: "rename Old to New in the API", api: []string{"removed pkg: func Old"}, runs: []RunRecord{
			run("go test ./...", base, OutcomePassed, false, false),
			run("go test ./...", final, OutcomePassed, false, true),
		}},
		{name: "no mode", runs: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := &Task{Mode: c.mode, Instructions: c.instructions, Work: Work{HeadSHA: final, BaseSHA: base, Runs: c.runs, APIChanges: c.api}}
			got := checkMode(task)
			if got.OK != (c.want == nil) || !reflect.DeepEqual(got.Missing, c.want) {
				t.Errorf("checkMode = %+v, want missing %q", got, c.want)
			}
			text := renderMode(task)
			switch {
			case c.mode == "" && text != "":
				t.Errorf("a task without a mode renders %q", text)
			case c.mode != "" && c.want == nil && !strings.HasPrefix(text, "**Verified as "+c.mode+"**"):
				t.Errorf("rendered %q", text)
			case c.want != nil && !strings.HasPrefix(text, "**Not verified as "+c.mode+"**. Missing:\n- "):
				t.Errorf("rendered %q", text)
			}
		})
	}
}

func TestChangeKinds(t *testing.T) {
	for _, c := range []struct {
		paths       []string
		tests, code bool
	}{
		{[]string{"pkg/x_test.go"}, true, false},
		{[]string{"tests/test_api.py", "src/app.py"}, true, true},
		{[]string{"test_util.py", "web/app.spec.ts", "lib/a_spec.rb", "src/test/java/FooTest.java", "ui/__tests__/b.js", "x.test.mjs"}, true, false},
		{[]string{"main.go", "README.md"}, false, true},
		{[]string{"latest/notes.md", "docs/guide.rst", "LICENSE"}, false, false},
		{[]string{"docs/gen.go"}, false, true},
		{[]string{"latest/notes.go"}, false, true},
		{nil, false, false},
	} {
		if tests, code := changeKinds(c.paths); tests != c.tests || code != c.code {
			t.Errorf("changeKinds(%q) = %v, %v; want %v, %v", c.paths, tests, code, c.tests, c.code)
		}
	}
}

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
	if got := apiChanges(before, same); len(got) != 0 {
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
	if got := apiChanges(before, changed); !reflect.DeepEqual(got, want) {
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
				if got := apiChanges(c.before, c.after); !reflect.DeepEqual(got, c.want) {
					t.Fatalf("apiChanges = %q, want %q", got, c.want)
				}
			}
		})
	}
}

func TestAsksAPIChange(t *testing.T) {
	for _, c := range []struct {
		instructions string
		want         bool
	}{
		{"rename Open to Dial in the API", true},
		{"split store.go; change the exported signature of New to take a context", true},
		{"split store.go by table; keep the public API unchanged", false},
		{"tidy the API docs without changing the API", false},
		{"don't rename anything exported", false},
		{"split store.go by table", false},
	} {
		if got := asksAPIChange(c.instructions); got != c.want {
			t.Errorf("asksAPIChange(%q) = %v, want %v", c.instructions, got, c.want)
		}
	}
}
