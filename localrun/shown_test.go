package localrun

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/deps"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/setup"
	"github.com/pullwright/pullwright/task"
)

// The value bot run asks with is the value the shared builder gives for
// the same facts (task.Shown), to the digest: the terminal cannot drift
// from what serve's comment, check run, console and API show.
func TestRunAsksWithTheSharedValue(t *testing.T) {
	const (
		bidi = "go test ./... \u202e#\x1b[2K"
		diff = "+require evil.test/m v1.0.0\n"
	)
	boxed := approval.Where{Local: true, Sandbox: true, Image: "img", Network: true}
	tests := []struct {
		name    string
		command string
		start   map[string]string // committed, besides the usual files
		edit    map[string]string
		where   string // the sandbox's, "" for Docker's
		head    string // HEAD as bot run knows it, if not the commit
		warning string // a warning the question gives
		// facts are what the test knows of the request, besides its
		// id, command, reason, tree and Detailed; fill adds what only
		// the workspace can say (a diff, an error's words).
		facts task.Shown
		fill  func(t *testing.T, r *run, tree *repo.Tree, s *task.Shown)
	}{
		{name: "bidi and control characters in the command", command: bidi, warning: approval.KindNetwork,
			edit:  map[string]string{"main.go": "package main // x\n"},
			facts: task.Shown{Where: boxed, SetupBase: "HEAD", Files: []pullwright.FileStat{{Path: "main.go", Added: 1, Deleted: 1}}}},
		{name: "changed manifests with their diff", command: "go test ./...", warning: approval.KindSetup,
			edit: map[string]string{"go.mod": "module x\n\nrequire evil.test/m v1.0.0\n"},
			facts: task.Shown{Where: boxed, SetupBase: "HEAD", Files: []pullwright.FileStat{{Path: "go.mod", Added: 2}},
				Manifests: task.ManifestChanges{Files: []pullwright.FileStat{{Path: "go.mod", Added: 2}}}},
			fill: func(t *testing.T, r *run, tree *repo.Tree, s *task.Shown) {
				d, err := r.ws.DiffOfTree(r.src.head, tree, "go.mod")
				if err != nil || !strings.Contains(d, "+require evil.test/m v1.0.0") {
					t.Fatalf("the manifest's diff: %q, %v", d, err)
				}
				s.Manifests.Diff = d
			}},
		{name: "a plan error", command: "pytest", warning: approval.KindSetupAnyway,
			start: map[string]string{"pyproject.toml": "[build-system]\nbackend-path = \"_build\"\n"},
			edit:  map[string]string{"main.go": "package main // x\n"},
			facts: task.Shown{Where: boxed, SetupBase: "HEAD", Files: []pullwright.FileStat{{Path: "main.go", Added: 1, Deleted: 1}}},
			fill: func(t *testing.T, r *run, _ *repo.Tree, s *task.Shown) {
				_, err := deps.ManifestsOf(os.DirFS(r.ws.Dir()))
				if err == nil {
					t.Fatal("the plan was read")
				}
				s.Manifests.Err = fmt.Errorf("the files' setup could not be planned: %w", err)
			}},
		{name: "no diff against HEAD", command: "go test ./...", head: strings.Repeat("0", 40), warning: approval.KindFilesAnyway,
			edit:  map[string]string{"main.go": "package main // x\n"},
			facts: task.Shown{Where: boxed, SetupBase: "HEAD"},
			fill: func(t *testing.T, r *run, tree *repo.Tree, s *task.Shown) {
				_, err := r.ws.DiffStatOf(r.src.head, tree)
				if err == nil {
					t.Fatal("the diff was made")
				}
				err = fmt.Errorf("the diff against HEAD failed: %w", err)
				s.FilesUnknown, s.Manifests.Err = err.Error(), err
			}},
		{name: "no sandbox", command: "go test ./...", where: whereLocal, warning: approval.KindNoSandbox,
			edit:  map[string]string{"go.mod": "module x\n\nrequire evil.test/m v1.0.0\n"},
			facts: task.Shown{Where: approval.Where{Local: true}, Files: []pullwright.FileStat{{Path: "go.mod", Added: 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := map[string]string{"go.mod": "module x\n", "main.go": "package main\n",
				"pyproject.toml": "[build-system]\nbuild-backend = \"backend\"\nbackend-path = [\"_build\"]\n"}
			maps.Copy(start, tt.start)
			ws, src, tree := edited(t, start, tt.edit)
			if tt.head != "" {
				src.head = tt.head
			}
			sb := &sandbox{where: "in the Docker sandbox", setup: &setup.Setup{}}
			if tt.where != "" {
				sb = &sandbox{where: tt.where}
			}
			settings := policy.Settings{}
			settings.Sandbox.Network = "bridge"
			r := &run{ws: ws, src: src, sb: sb, image: "img", settings: settings,
				runs: []task.RunRecord{{RequestID: "1"}}}
			got := r.show(agent.Request{Command: tt.command, Reason: "check\u202eit"}, tree)

			facts := tt.facts
			facts.ID, facts.Command, facts.Reason, facts.Commit, facts.Detailed = "2", tt.command, "check\u202eit", tree.Hash(), true
			if tt.fill != nil {
				tt.fill(t, r, tree, &facts)
			}
			if want := facts.Request(); !reflect.DeepEqual(got, want) {
				t.Errorf("bot run asks with\n%+v\nthe shared builder gives\n%+v", got, want)
			}
			if !got.Sealed() || got.Command != tt.command {
				t.Errorf("the value is not the request as asked, sealed: %+v", got)
			}
			warned := false
			for _, s := range got.Sentences() {
				warned = warned || s.Warning && s.Kind == tt.warning
			}
			if !warned {
				t.Errorf("the question gives no %s warning: %+v", tt.warning, got.Sentences())
			}
		})
	}
}
