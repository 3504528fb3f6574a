package importrules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Package is one package of a module as the check sees it.
type Package struct {
	Name    string   // path relative to the module root; the root's is the module path's last element
	Docs    []Doc    // the package comment of each file that has one
	Stray   []string // "file:line" of each comment line beginning "Import rule" outside the package comment
	Imports []string // the packages of the module its non-test files import, by Name
}

// Doc is the package comment of one file.
type Doc struct {
	File string // the file's name
	Text string // as go/ast's CommentGroup.Text gives it
}

// Load lists the packages of the module whose root is dir with the go
// command (go list ./...), and reads the comments of their non-test files.
func Load(ctx context.Context, dir string) ([]Package, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-json=ImportPath,Dir,GoFiles,CgoFiles,Imports,Module", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %w: %s", dir, err, stderr.Bytes())
	}
	type listed struct {
		ImportPath string
		Dir        string
		GoFiles    []string
		CgoFiles   []string
		Imports    []string
		Module     *struct{ Path string }
	}
	var all []listed
	for d := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := d.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("read go list's output: %w", err)
		}
		if p.Module == nil {
			return nil, fmt.Errorf("go list in %s: %s is in no module", dir, p.ImportPath)
		}
		all = append(all, p)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("go list in %s listed no package", dir)
	}
	mod := all[0].Module.Path
	root := path.Base(mod)
	nameOf := func(importPath string) (string, bool) {
		if importPath == mod {
			return root, true
		}
		rel, ok := strings.CutPrefix(importPath, mod+"/")
		return rel, ok
	}
	var pkgs []Package
	for _, l := range all {
		if l.Module.Path != mod {
			return nil, fmt.Errorf("go list in %s: %s is in module %s, not %s", dir, l.ImportPath, l.Module.Path, mod)
		}
		n, _ := nameOf(l.ImportPath)
		if n == root && l.ImportPath != mod {
			return nil, fmt.Errorf("package %s has the name of the root package, %s: the rules could not tell them apart", l.ImportPath, root)
		}
		p := Package{Name: n}
		for _, imp := range l.Imports {
			if in, ok := nameOf(imp); ok {
				p.Imports = append(p.Imports, in)
			}
		}
		files := slices.Concat(l.GoFiles, l.CgoFiles)
		slices.Sort(files)
		for _, f := range files {
			if err := p.read(filepath.Join(l.Dir, f)); err != nil {
				return nil, err
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// read adds the package comment of the file at name to p, and any comment
// line that begins "Import rule" elsewhere in it to p.Stray.
func (p *Package) read(name string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	base := filepath.Base(name)
	if f.Doc != nil {
		p.Docs = append(p.Docs, Doc{File: base, Text: f.Doc.Text()})
	}
	for _, g := range f.Comments {
		if g == f.Doc {
			continue
		}
		for _, c := range g.List {
			if startsRule(c) {
				p.Stray = append(p.Stray, fmt.Sprintf("%s:%d", base, fset.Position(c.Pos()).Line))
			}
		}
	}
	return nil
}

func startsRule(c *ast.Comment) bool {
	t := strings.TrimPrefix(strings.TrimPrefix(c.Text, "//"), "/*")
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(t)), "import rule")
}

// Check checks every package's rule against what the package reaches, and
// returns one line per problem: a rule broken (with the chain of imports
// that breaks it), malformed, naming a package the module does not have,
// stated twice, or written where it is not read. No problem, no line.
func Check(pkgs []Package) []string {
	imports := map[string][]string{}
	for _, p := range pkgs {
		imports[p.Name] = p.Imports
	}
	var problems []string
	for _, p := range slices.SortedFunc(slices.Values(pkgs), func(a, b Package) int { return strings.Compare(a.Name, b.Name) }) {
		problem := func(format string, args ...any) {
			problems = append(problems, p.Name+": "+fmt.Sprintf(format, args...))
		}
		for _, s := range p.Stray {
			problem(`%s: a comment begins "Import rule" outside the package comment, where nothing reads it: move the rule into the package comment`, s)
		}
		var rule Rule
		var ruled string // the file whose comment states rule
		for _, d := range p.Docs {
			r, found, err := Parse(d.Text)
			switch {
			case err != nil:
				problem("%s: %v", d.File, err)
			case found && ruled != "":
				problem("%s: a second import rule (the first is in %s): a package states one", d.File, ruled)
			case found:
				rule, ruled = r, d.File
			}
		}
		if ruled == "" {
			continue
		}
		bad := false
		for _, n := range rule.Names {
			if _, ok := imports[n]; !ok {
				problem("%s: the import rule names %s, which is no package of this module", ruled, n)
				bad = true
			} else if n == p.Name {
				problem("%s: the import rule names %s itself", ruled, n)
				bad = true
			}
		}
		if bad {
			continue
		}
		via := reach(p.Name, imports)
		var broken []string
		for _, n := range slices.Sorted(maps.Keys(via)) {
			if !rule.Allows(n) {
				broken = append(broken, fmt.Sprintf("%s (%s)", n, chain(p.Name, n, via)))
			}
		}
		if len(broken) > 0 {
			problem("import rule %q is broken: it reaches %s", rule.Text, strings.Join(broken, ", "))
		}
	}
	return problems
}

// reach walks the imports from pkg breadth first and returns, for each
// package reached, the package it was first reached from: the last step of
// a shortest chain of imports.
func reach(pkg string, imports map[string][]string) map[string]string {
	via := map[string]string{}
	queue := []string{pkg}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		next := slices.Clone(imports[from])
		slices.Sort(next)
		for _, to := range next {
			if _, seen := via[to]; !seen && to != pkg {
				via[to] = from
				queue = append(queue, to)
			}
		}
	}
	return via
}

// chain is the chain of imports by which from reaches to: "a → b → c".
func chain(from, to string, via map[string]string) string {
	steps := []string{to}
	for n := to; n != from; {
		n = via[n]
		steps = append(steps, n)
	}
	slices.Reverse(steps)
	return strings.Join(steps, " → ")
}
