package importrules

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryPackageKeepsItsImportRule is the check itself, over this
// module: every rule a package comment states holds for what the package
// reaches today.
func TestEveryPackageKeepsItsImportRule(t *testing.T) {
	gomod, err := exec.CommandContext(t.Context(), "go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	pkgs, err := Load(t.Context(), filepath.Dir(strings.TrimSpace(string(gomod))))
	if err != nil {
		t.Fatal(err)
	}
	rules := 0
	for _, p := range pkgs {
		for _, d := range p.Docs {
			if _, found, _ := Parse(d.Text); found {
				rules++
			}
		}
	}
	for _, p := range Check(pkgs) {
		t.Error(p)
	}
	if rules == 0 {
		t.Error("no package of the module states an import rule: the check checks nothing")
	}
	t.Logf("%d packages, %d import rules", len(pkgs), rules)
}

// TestCheckAModule runs the check as TestEveryPackageKeepsItsImportRule
// does, through the go command, on a small module in testdata whose
// packages break their rules in each way there is.
func TestCheckAModule(t *testing.T) {
	pkgs, err := Load(t.Context(), filepath.Join("testdata", "module"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`a: import rule "none of c" is broken: it reaches c (a → b → c)`,
		`c: c.go:4: a comment begins "Import rule" outside the package comment, where nothing reads it: move the rule into the package comment`,
		`d: import rule "only b" is broken: it reaches c (d → b → c)`,
		`e: e.go: the import rule names x, which is no package of this module`,
		`f: f.go: the package comment says "must not import" in prose, where nothing checks it: state the rule as a paragraph of its own, ` + Forms,
		`m: import rule "no package of this module" is broken: it reaches c (m → c)`,
	}
	got := Check(pkgs)
	if !slices.Equal(got, want) {
		t.Errorf("Check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
