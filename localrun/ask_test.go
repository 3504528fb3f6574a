package localrun

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
)

// --yes-to-setup lets the list approve a listed command whose setup runs
// on changed manifests (or on manifests that could not be compared),
// with the request printed, since nobody reads it as it runs; it never
// widens the list to other commands, nor an earlier "a".
func TestYesToSetupLetsTheListApproveASetup(t *testing.T) {
	const cmd = "go test ./..."
	plain := approval.Request{ID: "1", Command: cmd, Reason: "test", Commit: "abc", Where: approval.Where{Sandbox: true, Local: true}}
	changed := plain
	changed.Setup = &approval.Setup{Base: "HEAD", Manifests: []pullwright.FileStat{{Path: "go.mod", Added: 1}}, Diff: "+require example.test/m v1.0.0\n"}
	unknown := plain
	unknown.Setup = &approval.Setup{Base: "HEAD", Unknown: "the diff failed"}
	other := changed
	other.Command = "go vet ./..."
	tests := []struct {
		name        string
		interactive bool
		setupToo    bool
		input       string
		r           approval.Request
		approved    bool
		by          string
		prompted    bool
		printed     bool // the request is in the output
	}{
		{"changed, no terminal, --yes-to-setup", false, true, "", changed, true, byListSetup, false, true},
		{"unknown, no terminal, --yes-to-setup", false, true, "", unknown, true, byListSetup, false, true},
		{"changed, terminal, --yes-to-setup", true, true, "", changed, true, byListSetup, false, true},
		{"changed, no terminal, without", false, false, "", changed, false, byList, false, false},
		{"changed, terminal, without", true, false, "y\n", changed, true, "", true, true},
		{"not listed, no terminal, --yes-to-setup", false, true, "", other, false, byList, false, false},
		{"unchanged, no terminal, --yes-to-setup", false, true, "", plain, true, byList, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			a := newAsker(strings.NewReader(tt.input), tt.interactive, []string{cmd}, newDisplay(&out, false))
			a.setupToo = tt.setupToo
			asked := false
			a.asking = func() { asked = true }
			defer a.close()
			v, err := a.decide(t.Context(), question{shown: approval.Seal(tt.r), where: "in the Docker sandbox"})
			if err != nil {
				t.Fatal(err)
			}
			if v.approved != tt.approved || v.by != tt.by {
				t.Errorf("verdict %+v, want approved=%v by=%q", v, tt.approved, tt.by)
			}
			if prompted := strings.Contains(out.String(), "Run it"); prompted != tt.prompted || asked != tt.prompted {
				t.Errorf("prompted %v (asking called %v), want %v:\n%s", prompted, asked, tt.prompted, out.String())
			}
			if printed := strings.Contains(out.String(), "$ "+tt.r.Command); printed != tt.printed {
				t.Errorf("request printed %v, want %v:\n%s", printed, tt.printed, out.String())
			}
			if !v.approved && !tt.interactive && tt.r.Setup != nil && tt.r.Command == cmd && !strings.Contains(v.how, "--yes-to-setup") {
				t.Errorf("the rejection %q does not name --yes-to-setup", v.how)
			}
		})
	}
}
