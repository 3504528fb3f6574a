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

// changeKinds says whether paths hold test files and other files.
func changeKinds(paths []string) (tests, code bool) {
	for _, p := range paths {
		if testPath.MatchString(p) {
			tests = true
		} else {
			code = true
		}
	}
	return tests, code
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
//   - refactor: the tests passing on a commit with no change to the code,
//     the same command passing on the final commit, and the exported API
//     unchanged (Work.APIChanges) unless the instructions speak of it.
func checkMode(t *Task) ModeCheck {
	final := t.HeadSHA
	ran := func(r RunRecord) bool {
		return r.Verdict == Approved && r.Outcome != OutcomeInterrupted && r.Outcome != OutcomeSetupFailed
	}
	// passedAfter is a passing run of cmd on the final commit after run i.
	passedAfter := func(i int, cmd string) bool {
		for _, r := range t.Runs[i+1:] {
			if r.Command == cmd && r.SHA == final && r.Outcome == OutcomePassed && r.Code {
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
		if !after {
			missing = append(missing, "the same command passing on the final commit, with the fix")
		}
	case ModeRefactor:
		before, after := false, false
		for i, r := range t.Runs {
			if !ran(r) || r.Outcome != OutcomePassed || r.Code {
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
		if len(t.APIChanges) > 0 && !apiAsked.MatchString(t.Instructions) {
			missing = append(missing, fmt.Sprintf("an unchanged exported API (%s)", strings.Join(clipList(t.APIChanges, 5), "; ")))
		}
	default:
		return ModeCheck{OK: true}
	}
	return ModeCheck{OK: len(missing) == 0, Missing: missing}
}

// apiAsked matches instructions that speak of the exported API: then a
// refactor may change it.
var apiAsked = regexp.MustCompile(`(?i)\b(api|exported|export|signature|rename|public interface)\b`)

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
		b.WriteString("- " + defang(m) + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// goAPI is the exported API of the Go files among files (path → content),
// as "package-dir: declaration" → its printed signature. Test files are not
// API. A file that does not parse contributes nothing: the API check
// compares what it can read.
func goAPI(files map[string][]byte) map[string]string {
	api := map[string]string{}
	fset := token.NewFileSet()
	for p, src := range files {
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil || f.Name.Name == "main" {
			continue
		}
		dir := path.Dir(p)
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
				api[dir+": func "+name] = show(fset, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							api[dir+": type "+s.Name.Name] = show(fset, exportedOnly(s.Type))
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								var typ ast.Node
								if s.Type != nil {
									typ = s.Type
								}
								api[dir+": "+d.Tok.String()+" "+n.Name] = show(fset, typ)
							}
						}
					}
				}
			}
		}
	}
	return api
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
			var names []*ast.Ident
			for _, n := range f.Names {
				if n.IsExported() {
					names = append(names, n)
				}
			}
			if len(names) > 0 {
				c := *f
				c.Names, c.Doc, c.Comment = names, nil, nil
				out.List = append(out.List, &c)
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
