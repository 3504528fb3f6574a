package task

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Modes a fix can be asked in ("/agent tdd …"). Each is a prompt for the
// agent (agent/prompt.go's modeRules) and a check of the task's record of
// runs, checkMode: the pull request says whether the work was verified as
// its mode, or which step is missing.
const (
	ModeTDD      = "tdd"
	ModeDebug    = "debug"
	ModeRefactor = "refactor"
)

// testPath matches the paths of test files in the common layouts: Go's
// _test.go, Python's test_*.py and *_test.py, JavaScript's *.test.* and
// *.spec.*, Ruby's *_spec.rb, Java's *Test.java, and anything under a
// test, tests, spec or __tests__ directory. A change to any other file is
// a change to the code.
var testPath = regexp.MustCompile(`(^|/)(tests?|spec|__tests__|testdata)/|_test\.go$|(^|/)test_[^/]*\.py$|_test\.py$|\.(test|spec)\.[cm]?[jt]sx?$|_spec\.rb$|Test\.java$|Tests?\.cs$`)

// docPath matches documentation, which is neither a test nor the code a
// fix changes: a README edit is no fix.
var docPath = regexp.MustCompile(`(?i)\.(md|markdown|rst|txt|adoc)$|(^|/)(license|licence|changelog|authors|notice)(\.[a-z]+)?$`)

// changeKinds says whether paths hold test files and code (files that are
// neither tests nor documentation).
func changeKinds(paths []string) (tests, code bool) {
	for _, p := range paths {
		switch {
		case testPath.MatchString(p):
			tests = true
		case !docPath.MatchString(p):
			code = true
		}
	}
	return tests, code
}

// testPaths are those of paths that are test files.
func testPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if testPath.MatchString(p) {
			out = append(out, p)
		}
	}
	return out
}

// ModeCheck is the verdict of a mode's check: OK, or the steps missing.
type ModeCheck struct {
	OK      bool
	Missing []string
}

// checkMode checks t's record of runs against its mode. Every step must
// be a run that was approved and ran, on the commit the step needs:
//
//   - tdd: a run that failed on a commit holding test changes and no other
//     change, then the same command passing on the final commit, which
//     holds the fix (a change beyond tests);
//   - debug: a run that failed before any change to the code (tests or a
//     reproduction script may be added), then the same command passing on
//     the final commit, which holds the fix;
//   - refactor: the tests passing on a commit with no change to the code
//     or the tests,
//     the same command passing on the final commit, and the exported API
//     unchanged (Work.APIChanges) unless the instructions speak of it.
func checkMode(t *Task) ModeCheck {
	final := t.HeadSHA
	ran := func(r RunRecord) bool {
		return r.Verdict == Approved && r.Outcome != OutcomeInterrupted && r.Outcome != OutcomeSetupFailed
	}
	// passedAfter is a passing run of cmd on the final commit after run i;
	// in tdd, with the tests as they were when run i failed, so that the
	// test that failed was not weakened to pass.
	passedAfter := func(i int, cmd string) bool {
		for _, r := range t.Runs[i+1:] {
			if r.Command == cmd && r.SHA == final && r.Outcome == OutcomePassed && r.Code &&
				(t.Mode != ModeTDD || r.TestsDigest == t.Runs[i].TestsDigest) {
				return true
			}
		}
		return false
	}
	var missing []string
	switch t.Mode {
	case ModeTDD, ModeDebug:
		before, after := false, false
		for i, r := range t.Runs {
			if !ran(r) || r.Outcome == OutcomePassed || r.Code || (t.Mode == ModeTDD && !r.Tests) {
				continue
			}
			before = true
			if passedAfter(i, r.Command) {
				after = true
				break
			}
		}
		switch {
		case !before && t.Mode == ModeTDD:
			missing = append(missing, "a run that shows a new or changed test failing before the fix (on a commit with the test change only)")
		case !before:
			missing = append(missing, "a run that reproduces the failure before the code is changed")
		}
		if !after && t.Mode == ModeTDD {
			missing = append(missing, "the same command passing on the final commit, with the fix and the tests unchanged since they failed")
		} else if !after {
			missing = append(missing, "the same command passing on the final commit, with the fix")
		}
	case ModeRefactor:
		before, after := false, false
		for i, r := range t.Runs {
			// Before the change means the code and its tests as they were:
			// tests deleted or weakened first would pass anything.
			if !ran(r) || r.Outcome != OutcomePassed || r.Code || r.Tests {
				continue
			}
			before = true
			if passedAfter(i, r.Command) {
				after = true
				break
			}
		}
		if !before {
			missing = append(missing, "the tests passing before the code was changed")
		}
		if !after {
			missing = append(missing, "the same tests passing on the final commit")
		}
		if len(t.APIChanges) > 0 && !asksAPIChange(t.Instructions) {
			var shown []string
			for _, c := range clipList(t.APIChanges, 5) {
				shown = append(shown, code(oneLine(c)))
			}
			missing = append(missing, fmt.Sprintf("an unchanged exported API (%s)", strings.Join(shown, "; ")))
		}
	default:
		return ModeCheck{OK: true}
	}
	return ModeCheck{OK: len(missing) == 0, Missing: missing}
}

// apiAsked matches a sentence of the instructions that asks for a change
// of the exported API ("rename Open to Dial in the API", "change the
// exported signature of …"); apiKept one that says to keep it, which wins
// ("keep the public API unchanged"). Only an explicit ask lets a refactor
// change the API.
var (
	apiAsked = regexp.MustCompile(`(?i)\b(change|rename|remove|delete|add|break|modify|replace)\w*\b.*\b(api|exported|signatures?|public interface)\b|\b(api|exported|signatures?)\b.*\b(change|rename|remove|break|modify)\w*\b`)
	apiKept  = regexp.MustCompile(`(?i)\b(keep|unchanged|without|preserv\w*|not|never|same)\b|n't\b`)
)

// asksAPIChange reports whether the instructions ask for the exported API
// to change: some sentence asks it, and that sentence does not say to keep
// it.
func asksAPIChange(instructions string) bool {
	for _, s := range regexp.MustCompile(`[.;!?\n]+`).Split(instructions, -1) {
		if apiAsked.MatchString(s) && !apiKept.MatchString(s) {
			return true
		}
	}
	return false
}

func clipList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}

// renderMode is the Verification section's line about the task's mode.
func renderMode(t *Task) string {
	if t.Mode == "" {
		return ""
	}
	c := checkMode(t)
	if c.OK {
		return fmt.Sprintf("**Verified as %s**: the record shows every step the mode asks for.\n\n", t.Mode)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Not verified as %s**. Missing:\n", t.Mode)
	for _, m := range c.Missing {
		b.WriteString("- " + m + "\n")
	}
	b.WriteString("\n")
	return b.String()
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

// apiChanges lists the exported declarations added, removed or changed
// between two versions of the same files.
func apiChanges(before, after map[string][]byte) []string {
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
