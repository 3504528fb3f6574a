package importrules

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		want  Rule
		found bool
		err   string // a part of the error; "" for none
	}{
		{name: "no rule", doc: "Package a does things.\n"},
		{
			name:  "leaf",
			doc:   "Package a does things.\n\nImport rule: no package of this module.\n",
			want:  Rule{Kind: Leaf, Text: "no package of this module"},
			found: true,
		},
		{
			name:  "only one",
			doc:   "Import rule: only pullwright.\n",
			want:  Rule{Kind: Only, Names: []string{"pullwright"}, Text: "only pullwright"},
			found: true,
		},
		{
			name:  "only two",
			doc:   "Import rule: only pullwright and internal/words.\n",
			want:  Rule{Kind: Only, Names: []string{"pullwright", "internal/words"}, Text: "only pullwright and internal/words"},
			found: true,
		},
		{
			name:  "none of, wrapped over two lines",
			doc:   "Package task owns tasks.\n\nImport rule: none of ghapp, agent,\nrepo or runner.\n",
			want:  Rule{Kind: NoneOf, Names: []string{"ghapp", "agent", "repo", "runner"}, Text: "none of ghapp, agent, repo or runner"},
			found: true,
		},
		{
			name:  "a comma before the last name",
			doc:   "Import rule: none of ghapp, agent, or repo.\n",
			want:  Rule{Kind: NoneOf, Names: []string{"ghapp", "agent", "repo"}, Text: "none of ghapp, agent, or repo"},
			found: true,
		},
		{
			name: "a rule in a code block is an example, not a rule",
			doc:  "The forms:\n\n\tImport rule: only A and B.\n\tImport rule: whatever.\n",
		},
		{name: "none of joined by and", doc: "Import rule: none of ghapp and agent.\n", err: `"ghapp and agent" is not a package path`},
		{name: "only joined by or", doc: "Import rule: only a, b or c.\n", err: `the last two names are joined by "and"`},
		{name: "no conjunction", doc: "Import rule: none of a, b, c.\n", err: `the last two names are joined by "or"`},
		{name: "no period", doc: "Import rule: none of a or b\n", err: "end with a period"},
		{name: "plural", doc: "Import rules: none of a or b.\n", err: `must begin "Import rule: "`},
		{name: "lower case", doc: "import rule: none of a or b.\n", err: `must begin "Import rule: "`},
		{name: "another verb", doc: "Import rule: not ghapp.\n", err: `after "Import rule: " comes`},
		{name: "a sentence after it", doc: "Import rule: none of a or b. Those are slow.\n", err: `"b. Those are slow" is not a package path`},
		{name: "empty list", doc: "Import rule: only .\n", err: `"" is not a package path`},
		{name: "named twice", doc: "Import rule: none of a, b or a.\n", err: "a is named twice"},
		{name: "two rules", doc: "Import rule: only a.\n\nImport rule: none of b.\n", err: "a second import rule"},
		{name: "prose", doc: "Package task owns tasks. It must not import ghapp,\nagent or repo.\n", err: `says "must not import" in prose`},
		{name: "prose, another modal", doc: "Package a may not import b.\n", err: `says "may not import" in prose`},
		{name: "prose, never", doc: "Package a must never import b.\n", err: `says "must never import" in prose`},
		{name: "prose that forbids nothing", doc: "Package a imports b, and a test that imports a may import c.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := Parse(tt.doc)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse: error %v, want one saying %q", err, tt.err)
				}
				if !strings.Contains(err.Error(), Forms) && !strings.Contains(tt.err, "second") {
					t.Errorf("the error %q does not show the forms", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if found != tt.found || got.Kind != tt.want.Kind || got.Text != tt.want.Text || !slices.Equal(got.Names, tt.want.Names) {
				t.Errorf("Parse = %+v, %v; want %+v, %v", got, found, tt.want, tt.found)
			}
		})
	}
}

// TestCheck runs the check on packages written by hand: each rule that
// holds gives no line, each one broken or malformed gives its own.
func TestCheck(t *testing.T) {
	rule := func(r string) []Doc { return []Doc{{File: "doc.go", Text: "Package x.\n\n" + r + "\n"}} }
	tests := []struct {
		name string
		pkgs []Package
		want []string
	}{
		{
			name: "rules that hold",
			pkgs: []Package{
				{Name: "root", Docs: rule("Import rule: no package of this module.")},
				{Name: "task", Docs: rule("Import rule: none of runner or repo."), Imports: []string{"root", "policy"}},
				{Name: "policy", Docs: rule("Import rule: only root."), Imports: []string{"root"}},
				{Name: "runner", Imports: []string{"root"}},
				{Name: "repo"},
				{Name: "app", Imports: []string{"task", "runner", "repo"}},
			},
		},
		{
			name: "none of, broken directly",
			pkgs: []Package{
				{Name: "task", Docs: rule("Import rule: none of runner."), Imports: []string{"runner"}},
				{Name: "runner"},
			},
			want: []string{`task: import rule "none of runner" is broken: it reaches runner (task → runner)`},
		},
		{
			name: "none of, broken through another package",
			pkgs: []Package{
				{Name: "task", Docs: rule("Import rule: none of runner."), Imports: []string{"policy"}},
				{Name: "policy", Imports: []string{"setup"}},
				{Name: "setup", Imports: []string{"runner"}},
				{Name: "runner"},
			},
			want: []string{`task: import rule "none of runner" is broken: it reaches runner (task → policy → setup → runner)`},
		},
		{
			name: "the shortest chain is shown",
			pkgs: []Package{
				{Name: "task", Docs: rule("Import rule: none of runner."), Imports: []string{"a", "b"}},
				{Name: "a", Imports: []string{"c"}},
				{Name: "b", Imports: []string{"runner"}},
				{Name: "c", Imports: []string{"runner"}},
				{Name: "runner"},
			},
			want: []string{`task: import rule "none of runner" is broken: it reaches runner (task → b → runner)`},
		},
		{
			name: "only, broken through an allowed package",
			pkgs: []Package{
				{Name: "approval", Docs: rule("Import rule: only policy."), Imports: []string{"policy"}},
				{Name: "policy", Imports: []string{"untrusted"}},
				{Name: "untrusted"},
			},
			want: []string{`approval: import rule "only policy" is broken: it reaches untrusted (approval → policy → untrusted)`},
		},
		{
			name: "leaf, broken: every package reached is named",
			pkgs: []Package{
				{Name: "root", Docs: rule("Import rule: no package of this module."), Imports: []string{"words"}},
				{Name: "words", Imports: []string{"clip"}},
				{Name: "clip"},
			},
			want: []string{`root: import rule "no package of this module" is broken: it reaches clip (root → words → clip), words (root → words)`},
		},
		{
			name: "a cycle does not loop",
			pkgs: []Package{
				{Name: "a", Docs: rule("Import rule: none of c."), Imports: []string{"b"}},
				{Name: "b", Imports: []string{"a", "c"}},
				{Name: "c", Imports: []string{"b"}},
			},
			want: []string{`a: import rule "none of c" is broken: it reaches c (a → b → c)`},
		},
		{
			name: "a name the module does not have",
			pkgs: []Package{
				{Name: "task", Docs: rule("Import rule: none of runner or runer."), Imports: []string{"runner"}},
				{Name: "runner"},
			},
			want: []string{"task: doc.go: the import rule names runer, which is no package of this module"},
		},
		{
			name: "its own name",
			pkgs: []Package{{Name: "task", Docs: rule("Import rule: only task.")}},
			want: []string{"task: doc.go: the import rule names task itself"},
		},
		{
			name: "malformed",
			pkgs: []Package{{Name: "task", Docs: rule("Import rule: not runner.")}},
			want: []string{`task: doc.go: malformed import rule "Import rule: not runner.": after "Import rule: " comes "no package of this module", "only" or "none of"; the forms are ` + Forms},
		},
		{
			name: "a rule in two files",
			pkgs: []Package{{Name: "task", Docs: []Doc{
				{File: "a.go", Text: "Import rule: only x.\n"},
				{File: "b.go", Text: "Import rule: only y.\n"},
			}}, {Name: "x"}, {Name: "y"}},
			want: []string{"task: b.go: a second import rule (the first is in a.go): a package states one"},
		},
		{
			name: "a rule outside the package comment",
			pkgs: []Package{{Name: "task", Stray: []string{"flow.go:12"}}},
			want: []string{`task: flow.go:12: a comment begins "Import rule" outside the package comment, where nothing reads it: move the rule into the package comment`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.pkgs)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
