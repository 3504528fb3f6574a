package localrun

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/setup"
)

// The question bot run asks shows, as a changed manifest, a file the
// working tree's own configuration makes one: the build backend pip
// imports from pyproject.toml's backend-path. A backend-path that cannot
// be read leaves the manifests unknown, which nothing answers unasked.
func TestShowManifestsOfTheTreesPlan(t *testing.T) {
	const pyproject = "[build-system]\nbuild-backend = \"backend\"\nbackend-path = [\"_build\"]\n"
	tests := []struct {
		name        string
		start       string // pyproject.toml, if not pyproject
		edit        map[string]string
		manifests   []string
		unknownWith string
	}{
		{"the build backend", "", map[string]string{"_build/backend.py": "import os\n"}, []string{"_build/backend.py"}, ""},
		{"a file the backend may import, added", "", map[string]string{"_build/helper.py": "import os\n"}, []string{"_build/helper.py"}, ""},
		{"another file", "", map[string]string{"src/app.py": "x = 2\n"}, nil, ""},
		{"a backend-path made unreadable", "", map[string]string{"pyproject.toml": "[build-system]\nbackend-path = \"_build\"\n"}, []string{"pyproject.toml"}, ""},
		{"a backend-path that cannot be read", "[build-system]\nbackend-path = \"_build\"\n", map[string]string{"_build/backend.py": "import os\n"}, nil, "backend-path: is not a list of paths"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, src, tree := edited(t, map[string]string{"pyproject.toml": cmp.Or(tt.start, pyproject), "_build/backend.py": "def build_wheel(*a): pass\n", "src/app.py": "x = 1\n"}, tt.edit)
			r := &run{ws: ws, src: src, sb: &sandbox{where: "in the Docker sandbox", setup: &setup.Setup{}}, image: "img"}
			v := r.show(agent.Request{Command: "pytest", Reason: "test"}, tree)
			var got []string
			if v.Setup != nil {
				for _, m := range v.Setup.Manifests {
					got = append(got, m.Path)
				}
			}
			if !slices.Equal(got, tt.manifests) {
				t.Errorf("manifests shown %q, want %q", got, tt.manifests)
			}
			if tt.unknownWith != "" && (v.Setup == nil || !strings.Contains(v.Setup.Unknown, tt.unknownWith)) {
				t.Errorf("setup %+v, want the manifests unknown with %q", v.Setup, tt.unknownWith)
			}
		})
	}
}

// edited is a checkout whose one commit holds start, with edit written
// over it and not committed: the workspace, the checkout as bot run opens
// it, and the workspace's current tree.
func edited(t *testing.T, start, edit map[string]string) (*repo.Workspace, *checkout, *repo.Tree) {
	t.Helper()
	dir := t.TempDir()
	write := func(files map[string]string) {
		for name, content := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=a", "-c", "user.email=a@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	write(start)
	git("add", ".")
	git("commit", "-q", "-m", "start")
	write(edit)
	ws, err := repo.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := openCheckout(dir)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := ws.Current()
	if err != nil {
		t.Fatal(err)
	}
	return ws, src, tree
}
