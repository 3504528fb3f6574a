package setup_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
)

// The Node and Python cases of BenchmarkWarmRealRepos are real projects
// whose Debian packages ship their test suites: apt downloads the package
// (not installing it) and the benchmark takes the project's files from
// it. Their dependencies are Debian's installed packages, which a
// registry stand-in serves to the setup's npm or pip. Prerequisites (the
// case is skipped without them):
//
//	apt-get update
//	apt-get install node-moment nodeunit python3-pytest

// momentTimezoneCase is moment-timezone 0.5.40 as Debian's
// node-moment-timezone ships it, its sources and its test suite, with the
// zone data Debian's libjs-moment-timezone builds from tzdata in data/
// (the latest, which is what the tests read). Its dependency (moment),
// its test runner (nodeunit, which Debian runs its tests with) and
// theirs (async, ejs, tap and tap's) come from the registry.
//
// package.json is the project's, but for its devDependencies: Grunt and
// its plugins drive upstream's tests, which here nodeunit runs itself, as
// Debian does; a lockfile is written as `npm install` would have.
//
// Only tests/moment-timezone runs: tests/zones and tests/countries check
// the data against the tz release the tests were generated for, and
// Debian's data is of a later one, on which some fail (Kwajalein's guess,
// a zone's countries).
func momentTimezoneCase(b *testing.B) realCase {
	pkgDir := filepath.Join(fencetest.DebianPackage(b, "node-moment-timezone"), "usr", "share", "nodejs", "moment-timezone")
	dataDir := filepath.Join(fencetest.DebianPackage(b, "libjs-moment-timezone"), "usr", "share", "javascript", "moment-timezone", "data")
	pkgs, tree := fencetest.DebianNode(b, "moment", "nodeunit")
	reg := fencetest.ServeNPM(b, pkgs...)

	// data is a link into libjs-moment-timezone's files.
	files := fencetest.ReadTree(b, pkgDir, "data")
	for _, kind := range []string{"meta", "packed", "unpacked"} {
		data, err := os.ReadFile(filepath.Join(dataDir, kind, "latest.json"))
		if err != nil {
			b.Fatal(err)
		}
		files["data/"+kind+"/latest.json"] = string(data)
	}
	var root map[string]any
	if err := json.Unmarshal([]byte(files["package.json"]), &root); err != nil {
		b.Fatal(err)
	}
	for _, m := range tree {
		if m.Path == "node_modules/nodeunit" {
			root["devDependencies"] = map[string]string{"nodeunit": "^" + m.Version}
		}
	}
	pj, _ := json.MarshalIndent(root, "", "\t")
	files["package.json"] = string(pj) + "\n"
	files["package-lock.json"] = reg.LockfileOf(root, tree)
	dir := write(b, files)

	image := sandboxtest.Commit(b, sandboxtest.NodeAndPython(b), "ENV npm_config_registry="+reg.URL())
	return realCase{image: image, dir: dir, test: "./node_modules/.bin/nodeunit tests/moment-timezone",
		plain: func(b *testing.B, _ pullwright.SetupResult, workspace string) []string {
			// Its own node_modules, installed once by npm ci from the
			// same registry, in its workspace.
			plainInstall(b, image, workspace, "npmreg.test", "npm_config_cache=/tmp/npm npm ci --ignore-scripts --no-audit --no-fund")
			return nil
		},
		host: func(b *testing.B, p pullwright.SetupResult) ([]string, string) {
			// The packages the setup installed, as npm ci would have
			// put them here.
			host := hostCopy(b, dir)
			hostRun(b, host, os.Environ(), "docker run --rm -v "+p.Caches[0].Volume+":/deps:ro "+image+
				" tar -C /deps/files/workspace -cf - node_modules | tar -xf -")
			return os.Environ(), host
		},
	}
}

// pyflakesCase is pyflakes 2.5.0 as Debian's python3-pyflakes ships it,
// the package and its test suite (pyflakes/test), with a requirements
// file naming its test runner, pytest, which the registry serves with
// the distributions it requires, from Debian's python3-pytest and its
// dependencies.
//
// Deselected: IntegrationTests, which run upstream's bin/pyflakes
// script, not in Debian's package; and test_misencodedFileUTF16, which
// fails on Python 3.11.4 and later (this machine's own Python, for the
// host's run), whose compile() reports a null byte with no line number
// (pyflakes 3 handles it).
func pyflakesCase(b *testing.B) realCase {
	src := filepath.Join(fencetest.DebianPackage(b, "python3-pyflakes"), "usr", "lib", "python3", "dist-packages", "pyflakes")
	dists := fencetest.DebianPython(b, "pytest", "attrs", "iniconfig", "packaging", "pluggy")
	ix := fencetest.ServePython(b, dists...)
	files := map[string]string{"requirements-test.txt": "pytest==" + dists[0].Version + "\n"}
	for name, content := range fencetest.ReadTree(b, src, "__pycache__") {
		files["pyflakes/"+name] = content
	}
	dir := write(b, files)
	host, _, _ := strings.Cut(ix.Host, ":")
	image := sandboxtest.Commit(b, sandboxtest.NodeAndPython(b), "ENV PIP_INDEX_URL="+ix.URL(), "ENV PIP_TRUSTED_HOST="+host)
	test := "python -m pytest -q -k 'not IntegrationTests and not test_misencodedFileUTF16' pyflakes"
	return realCase{image: image, dir: dir, test: test,
		plain: func(b *testing.B, _ pullwright.SetupResult, workspace string) []string {
			// Its own virtualenv, in a volume, installed once from the
			// same index; its workspace keeps its __pycache__.
			vol := fmt.Sprintf("pullwright-bench-venv-%d", os.Getpid())
			b.Cleanup(func() { _ = exec.Command("docker", "volume", "rm", "-f", vol).Run() })
			if out, err := exec.Command("docker", "run", "--rm", "-u", "0", "-v", vol+":/venv", image,
				"chown", runner.DefaultSandboxUser, "/venv").CombinedOutput(); err != nil {
				b.Fatalf("own virtualenv: %v\n%s", err, out)
			}
			plainInstall(b, image, workspace, "pyindex.test",
				"python3 -m venv /venv/venv && PIP_NO_CACHE_DIR=1 /venv/venv/bin/pip install -q -r requirements-test.txt", "-v", vol+":/venv")
			return []string{"-v", vol + ":/venv", "-e", "VIRTUAL_ENV=/venv/venv",
				"-e", "PATH=/venv/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		},
		host: func(b *testing.B, _ pullwright.SetupResult) ([]string, string) {
			hostDir := hostCopy(b, dir)
			venv := filepath.Join(b.TempDir(), "venv")
			_, port, _ := strings.Cut(ix.Host, ":")
			hostRun(b, hostDir, os.Environ(), "python3 -m venv "+venv+" && "+venv+"/bin/pip install -q --index-url http://127.0.0.1:"+port+"/simple/ -r requirements-test.txt")
			env := append(os.Environ(), "PATH="+venv+"/bin:"+os.Getenv("PATH"), "VIRTUAL_ENV="+venv)
			hostRun(b, hostDir, env, test) // warm it
			return env, hostDir
		},
	}
}

// plainInstall runs script once in a container of image as the sandbox's
// user on workspace, with the host's network and name the registry
// stand-in's name for loopback: the plain container's own install from
// the same registry.
func plainInstall(b *testing.B, image, workspace, registry, script string, args ...string) {
	b.Helper()
	all := append([]string{"run", "--rm", "--network", "host", "--add-host", registry + ":127.0.0.1", "-u", runner.DefaultSandboxUser,
		"-v", workspace + ":" + runner.SandboxWorkdir, "-w", runner.SandboxWorkdir, "--tmpfs", "/tmp:exec"}, args...)
	all = append(all, image, "sh", "-c", script)
	if out, err := exec.Command("docker", all...).CombinedOutput(); err != nil {
		b.Fatalf("docker %s: %v\n%s", strings.Join(all, " "), err, out)
	}
}

// hostCopy is a copy of dir for this machine's runs, so that what they
// write beside the sources is not in the sandbox's.
func hostCopy(b *testing.B, dir string) string {
	b.Helper()
	dst := filepath.Join(b.TempDir(), "host")
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		b.Fatal(err)
	}
	return dst
}
