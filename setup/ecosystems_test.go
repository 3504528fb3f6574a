package setup_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/setup"
)

// write puts files in a new directory.
func write(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ecosystemCase is a project of one ecosystem, its registry stand-in
// configured in the image as an operator would configure a mirror, and
// what its tests print when they pass.
type ecosystemCase struct {
	image    string // the Node and Python image, pointed at the registry
	files    map[string]string
	host     string // the registry's name:port
	requests *fencetest.Requests
	fetched  string // a path the registry must have served
	test     string // the project's test command
	passed   string // what the test prints when it passes
}

// npmProject is a Node project in dir ("" for the root) that needs one
// package from a registry the test stands up, which the image names.
func npmProject(t testing.TB, base, dir string) ecosystemCase {
	reg := fencetest.ServeNPM(t, fencetest.Package{Name: "leftpad", Version: "1.2.0", Files: map[string]string{
		"index.js": "module.exports = (s, n) => String(s).padStart(n, '0');\n",
	}})
	in := func(name string) string { return path.Join(dir, name) }
	test := "npm test"
	if dir != "" {
		test = "cd " + dir + " && npm test"
	}
	return ecosystemCase{
		image: sandboxtest.Commit(t, base, "ENV npm_config_registry="+reg.URL()),
		files: map[string]string{
			"README.md": "a project\n",
			in("package.json"): `{"name":"app","version":"1.0.0","scripts":{"test":"node test.js"},` +
				`"dependencies":{"leftpad":"^1.2.0"}}` + "\n",
			in("package-lock.json"): reg.Lockfile("app", "leftpad"),
			in("test.js"): "const pad = require('leftpad');\n" +
				"if (pad(7, 3) !== '007') { console.error('leftpad is wrong'); process.exit(1); }\n" +
				"console.log('node tests passed');\n",
		},
		host: reg.Host, requests: reg.Requests, fetched: "/leftpad/-/leftpad-1.2.0.tgz",
		test: test, passed: "node tests passed",
	}
}

// pipProject is a Python project with a requirements file that needs one
// package from an index the test stands up, which the image names.
func pipProject(t testing.TB, base string) (ecosystemCase, *fencetest.PythonIndex) {
	ix := fencetest.ServePython(t, fencetest.Package{Name: "greeting", Version: "1.0", Files: map[string]string{
		"greeting/__init__.py": "def hello(name):\n    return 'hello, ' + name\n",
	}})
	host, _, _ := strings.Cut(ix.Host, ":")
	return ecosystemCase{
		image: sandboxtest.Commit(t, base, "ENV PIP_INDEX_URL="+ix.URL(), "ENV PIP_TRUSTED_HOST="+host),
		files: map[string]string{
			"requirements.txt": "greeting==1.0\n",
			"test_app.py": "import unittest\nimport greeting\n\n" +
				"class Test(unittest.TestCase):\n    def test_hello(self):\n" +
				"        self.assertEqual(greeting.hello('you'), 'hello, you')\n",
		},
		host: ix.Host, requests: ix.Requests, fetched: "/files/greeting-1.0-py3-none-any.whl",
		test: "python -m unittest -v 2>&1", passed: "test_hello (test_app.Test.test_hello) ... ok",
	}, ix
}

// The real npm and pip clients install a dependency through the fence
// from a registry the test stands up, with no host of the operator's:
// the image's own configuration names the registry. The project's tests
// then pass in a sandbox with no network, on the read-only cache, and
// the registry hears nothing more; a second task finds the cache ready.
func TestNodeAndPythonProjectsPassOnTheCache(t *testing.T) {
	base := sandboxtest.NodeAndPython(t)
	cases := map[string]func(t *testing.T) ecosystemCase{
		"npm": func(t *testing.T) ecosystemCase { return npmProject(t, base, "") },
		// A monorepo's front end: its own lockfile in web/, installed
		// there, and its node_modules linked there in the run.
		"npm in a subdirectory": func(t *testing.T) ecosystemCase { return npmProject(t, base, "web") },
		// An npm workspace: node_modules/greet is a link to
		// ../packages/greet, whose dependency is hoisted to the root.
		"npm workspaces": func(t *testing.T) ecosystemCase {
			reg := fencetest.ServeNPM(t, fencetest.Package{Name: "leftpad", Version: "1.2.0", Files: map[string]string{
				"index.js": "module.exports = (s, n) => String(s).padStart(n, '0');\n",
			}})
			tarball, integrity := reg.Dist("leftpad")
			lock, _ := json.MarshalIndent(map[string]any{
				"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
				"packages": map[string]any{
					"":                     map[string]any{"name": "app", "version": "1.0.0", "workspaces": []string{"packages/*"}},
					"node_modules/greet":   map[string]any{"resolved": "packages/greet", "link": true},
					"node_modules/leftpad": map[string]any{"version": "1.2.0", "resolved": tarball, "integrity": integrity},
					"packages/greet":       map[string]any{"version": "1.0.0", "dependencies": map[string]string{"leftpad": "^1.2.0"}},
				},
			}, "", "  ")
			return ecosystemCase{
				image: sandboxtest.Commit(t, base, "ENV npm_config_registry="+reg.URL()),
				files: map[string]string{
					"package.json":                `{"name":"app","version":"1.0.0","workspaces":["packages/*"],"scripts":{"test":"node test.js"}}` + "\n",
					"package-lock.json":           string(lock) + "\n",
					"packages/greet/package.json": `{"name":"greet","version":"1.0.0","main":"index.js","dependencies":{"leftpad":"^1.2.0"}}` + "\n",
					"packages/greet/index.js":     "const pad = require('leftpad');\nmodule.exports = n => 'no. ' + pad(n, 3);\n",
					"test.js": "const greet = require('greet');\n" +
						"if (greet(7) !== 'no. 007') { console.error('greet is wrong: ' + greet(7)); process.exit(1); }\n" +
						"console.log('workspace tests passed');\n",
				},
				host: reg.Host, requests: reg.Requests, fetched: "/leftpad/-/leftpad-1.2.0.tgz",
				test: "npm test", passed: "workspace tests passed",
			}
		},
		"pip": func(t *testing.T) ecosystemCase { c, _ := pipProject(t, base); return c },
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			c := mk(t)
			repo := fmt.Sprintf("test/setup-%s-%d", strings.ReplaceAll(name, " ", "-"), os.Getpid())
			d := newDocker(t, repo, "")
			s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver()}
			dir := write(t, c.files)
			req := pullwright.SetupRequest{
				Repo: repo, Dir: dir, Base: dir, Image: c.image, Timeout: 5 * time.Minute, ToolchainHosts: true,
				Nets: []netip.Prefix{fencetest.Loopback},
			}
			p, err := s.Prepare(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if p.Record == nil || p.Record.Failed {
				out := ""
				if p.Record != nil {
					out = p.Record.Output
				}
				t.Fatalf("setup = %+v\n%s", p, out)
			}
			if !slices.Contains(c.requests.Paths(), c.fetched) {
				t.Errorf("the registry served %q, not %s", c.requests.Paths(), c.fetched)
			}
			name, _, _ := strings.Cut(c.host, ":")
			if len(p.Record.Blocked) > 0 {
				t.Errorf("the fence refused %s", p.Record.Blocked)
			}
			for _, h := range p.Record.Reached {
				if got, _, _ := strings.Cut(h, ":"); got != name {
					t.Errorf("the fence let through %s", h)
				}
			}
			before := len(c.requests.Paths())
			res, err := d.Run(t.Context(), pullwright.RunSpec{
				Dir: dir, Image: c.image, Command: c.test, Caches: p.Caches, Env: p.Env, Links: p.Links, Prepare: p.Prepare,
				Timeout: 2 * time.Minute,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || !strings.Contains(res.Output, c.passed) || len(c.requests.Paths()) != before {
				t.Fatalf("%s on the cache: exit %d, %d more requests\n%s", c.test, res.ExitCode, len(c.requests.Paths())-before, res.Output)
			}
			again, err := s.Prepare(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if again.Record != nil || len(again.Caches) != 1 || again.Caches[0].Volume != p.Caches[0].Volume {
				t.Errorf("second prepare = %+v, want the ready cache", again)
			}
		})
	}
}
