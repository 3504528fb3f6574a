package buildcache_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/buildcache"
	"github.com/pullwright/pullwright/internal/fencetest"
)

// run runs a shell script in dir with the go command's environment kept
// to what the test gives it.
func run(t *testing.T, dir, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(),
		"GOCACHE=" + t.TempDir(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY=off"}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, s := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		m[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// layerBytes is the size of the files a run's build cache directory
// holds of its own (its links and copied action entries left out): what
// the run's go command wrote.
func layerBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() || strings.HasSuffix(p, "-a") || filepath.Base(p) == "trim.txt" {
			return err
		}
		n += fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// compiled lists the packages a go command run with -x compiled.
func compiled(out string) []string {
	var pkgs []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "/compile "); i >= 0 {
			if j := strings.Index(l, " -p "); j >= 0 {
				pkgs = append(pkgs, strings.Fields(l[j+4:])[0])
			}
		}
	}
	return pkgs
}

// The setup's warm script compiles a module's packages and tests into the
// shared layer; a run reading it compiles nothing of them again, only
// what its own files change, into a layer no other run reads; the shared
// layer is the same after runs as before.
func TestWarmedRunsCompileOnlyWhatChanged(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cache, mod := t.TempDir(), t.TempDir()
	write(t, mod, map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.24\n",
		"a/a.go":      "package a\n\nfunc A() int { return 1 }\n",
		"b/b.go":      "package b\n\nimport \"example.com/m/a\"\n\nfunc B() int { return a.A() + 1 }\n",
		"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {\n\tif B() != 2 {\n\t\tt.Fatal(B())\n\t}\n}\n",
		// A test that would say so if the warm step ran tests.
		"a/a_test.go": "package a\n\nimport (\"os\"; \"testing\")\n\nfunc TestMain(m *testing.M) { os.WriteFile(os.Getenv(\"RAN\"), nil, 0o644); os.Exit(m.Run()) }\n",
	})
	ran := filepath.Join(t.TempDir(), "ran")
	// The bot's binary, as the runner puts it in the setup's sandbox.
	bot := fencetest.Forwarder(t)
	prog := buildcache.Program{Files: []string{bot}, Start: func(bin, _ string) []string { return []string{bin} }}
	if out := run(t, mod, buildcache.Warm(cache, []string{"."}, prog), "RAN="+ran); !strings.Contains(out, "the Go build cache is warm") {
		t.Fatalf("warm script said:\n%s", out)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the warm script ran a test")
	}
	shared := tree(t, filepath.Join(cache, buildcache.Store))
	if len(shared) == 0 {
		t.Fatal("the warm script left the shared layer empty")
	}
	// A run: the link step makes its build cache directory, then the
	// command runs on it.
	linked := func(own, script string) string {
		return filepath.Join(cache, buildcache.Tool) + " -shared " + filepath.Join(cache, buildcache.Store) + " " + own + " && " + script
	}
	env := func(own string) string { return "GOCACHE=" + own }

	own1 := t.TempDir()
	if got := compiled(run(t, mod, linked(own1, "go build -x ./... && go vet ./... && go test -x ./... 2>&1"), env(own1), "RAN="+ran)); len(got) != 0 {
		t.Errorf("a run on the warmed files compiled %v", got)
	}
	// The run changes a: a and what imports it compile (into its own
	// layer), nothing of the standard library's.
	write(t, mod, map[string]string{"a/a.go": "package a\n\nfunc A() int { return 2 - 1 }\n"})
	want := "example.com/m/a example.com/m/b"
	if got := compiled(run(t, mod, "go build -x ./... 2>&1", env(own1))); strings.Join(got, " ") != want {
		t.Errorf("a run that changed a compiled %v, want %s", got, want)
	}
	if got := compiled(run(t, mod, "go build -x ./... 2>&1", env(own1))); len(got) != 0 {
		t.Errorf("the same run's next command compiled %v again", got)
	}
	// Another run with the same change reads nothing of the first's.
	own2 := t.TempDir()
	if got := compiled(run(t, mod, linked(own2, "go build -x ./... 2>&1"), env(own2))); strings.Join(got, " ") != want {
		t.Errorf("another run compiled %v, want %s again", got, want)
	}
	if after := tree(t, filepath.Join(cache, buildcache.Store)); len(after) != len(shared) {
		t.Errorf("runs changed the shared layer: %d files, %d before", len(after), len(shared))
	} else {
		for p, s := range shared {
			if after[p] != s {
				t.Errorf("runs changed %s", p)
			}
		}
	}
	// A run that asks for a tool the toolchain does not ship prebuilt
	// (a test running go tool nm, go test -cover's covdata) finds it
	// built: nothing compiled lands in its layer.
	for _, tool := range buildcache.Tools() {
		own := t.TempDir()
		run(t, mod, linked(own, "go tool -n "+tool), env(own))
		if n := layerBytes(t, own); n > 0 {
			t.Errorf("go tool -n %s in a run wrote %d bytes to its own layer: the warm script did not build it", tool, n)
		}
	}
	if v := buildcache.Prepare("/deps/files"); v != "/deps/files/go/bin/pullwright-gocache -shared /deps/files/go/build "+buildcache.RunLayer {
		t.Errorf("Prepare = %q", v)
	}
}

// The cache's program is the bot's own binary, copied, never compiled:
// the warm script builds nothing but the repository's packages, and the
// program it leaves starts the copy (through its loader, for a dynamic
// build).
func TestWarmCopiesTheBotAndCompilesNoProgram(t *testing.T) {
	for _, tc := range []struct {
		name string
		prog buildcache.Program
		want string
	}{
		{"static", buildcache.Program{Files: []string{"/.pullwright/bot"}, Start: func(bin, _ string) []string { return []string{bin} }},
			`exec /deps/files/go/bin/bot gocache "$@"`},
		{"dynamic", buildcache.Program{Files: []string{"/.pullwright/bot", "/.pullwright/lib/ld.so", "/.pullwright/lib/libc.so.6"},
			Start: func(bin, lib string) []string { return []string{lib + "/ld.so", "--library-path", lib, bin} }},
			`exec /deps/files/go/bin/lib/ld.so --library-path /deps/files/go/bin/lib /deps/files/go/bin/bot gocache "$@"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := buildcache.Warm("/deps/files", []string{".", "tools"}, tc.prog)
			for line := range strings.Lines(script) {
				// Each go command of the script builds the module's
				// packages, and nothing else.
				for _, f := range []string{"go build", "go install", "go run"} {
					if i := strings.Index(line, f); i >= 0 && !strings.HasPrefix(line[i:], f+" ./...") {
						t.Errorf("the warm script compiles something else than the repository's packages: %s", line)
					}
				}
			}
			if !strings.Contains(script, "cp /.pullwright/bot /deps/files/go/bin/bot") {
				t.Errorf("the warm script does not copy the bot:\n%s", script)
			}
			if !strings.Contains(script, tc.want) {
				t.Errorf("the program does not start the bot with %s:\n%s", tc.want, script)
			}
		})
	}
}
