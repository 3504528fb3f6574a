package fencetest

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Real projects for the benchmarks come from Debian's packages: this
// machine reaches Debian's archive through apt and no other registry of
// Node or Python packages. A project whose Debian package ships its own
// test suite is taken from that package, downloaded by apt (its
// configured mirror, named nowhere here) and unpacked, not installed;
// the packages the project's tests need are Debian's installed ones,
// served by a registry stand-in as the ecosystem's registry would serve
// them.

// skipOrFail skips a benchmark whose prerequisites are missing, except
// in CI, where a missing one is a broken machine.
func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// DebianPackage is the binary package name of this machine's Debian
// release, at apt's candidate version, unpacked (dpkg-deb -x) into a
// directory kept under the user's cache (~/.cache/pullwright/debian) for
// the next run; it is not installed. The caller must not write to it.
func DebianPackage(t testing.TB, name string) string {
	t.Helper()
	out, err := exec.Command("apt-cache", "show", "--no-all-versions", name).Output()
	if err != nil {
		skipOrFail(t, "apt-cache show %s: %v (run apt-get update)", name, err)
	}
	version := field(string(out), "Version")
	if version == "" {
		skipOrFail(t, "apt knows no version of %s (run apt-get update)", name)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "pullwright", "debian", name+"_"+strings.ReplaceAll(version, ":", "%3a"))
	if _, err := os.Stat(filepath.Join(dir, ".unpacked")); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "unpack-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dl := exec.Command("apt-get", "download", "-q", name+"="+version)
	dl.Dir = tmp
	if out, err := dl.CombinedOutput(); err != nil {
		skipOrFail(t, "apt-get download %s=%s: %v\n%s", name, version, err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		t.Fatalf("apt-get download %s left %q", name, debs)
	}
	root := filepath.Join(tmp, "root")
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x %s: %v\n%s", debs[0], err, out)
	}
	if err := os.WriteFile(filepath.Join(root, ".unpacked"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dir) // a half-made one, left by a run that died
	if err := os.Rename(root, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// field is the value of the first name: line of a Debian control stanza.
func field(stanza, name string) string {
	for line := range strings.Lines(stanza) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// ReadTree is the regular files below dir, by slash-separated path, with
// symbolic links followed (Debian's packages link files into others), and
// none named in skip (at any depth).
func ReadTree(t testing.TB, dir string, skip ...string) map[string]string {
	t.Helper()
	files := map[string]string{}
	var walk func(real, rel string)
	walk = func(real, rel string) {
		entries, err := os.ReadDir(real)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if slices.Contains(skip, e.Name()) {
				continue
			}
			p, r := filepath.Join(real, e.Name()), path.Join(rel, e.Name())
			info, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			switch {
			case info.IsDir():
				walk(p, r)
			case info.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				files[r] = string(b)
			}
		}
	}
	walk(dir, "")
	return files
}

// NodeModule is a package at its place in a node_modules tree, as a
// package-lock.json (version 3) records it.
type NodeModule struct {
	Path         string // "node_modules/a" or "node_modules/a/node_modules/b"
	Name         string
	Version      string
	Dependencies map[string]string
	Bin          any // package.json's bin, as npm records it
}

// nodeDirs are where Debian's node-* packages put the modules Node finds
// without a node_modules.
var nodeDirs = []string{"/usr/share/nodejs", "/usr/lib/nodejs", "/usr/lib/x86_64-linux-gnu/nodejs", "/usr/lib/aarch64-linux-gnu/nodejs"}

// DebianNode is the npm packages named, and every package they depend on,
// as this machine's Debian packages installed them (install the node-*
// packages first), for ServeNPM: each with its own files and
// package.json; and the node_modules tree npm would make of them, each
// hoisted to the top unless another version holds its name there. A
// dependency Debian does not have is left out, as Debian's own packages
// run without it.
func DebianNode(t testing.TB, names ...string) ([]Package, []NodeModule) {
	t.Helper()
	// find resolves name from the package in dir as Node does: its own
	// node_modules and those above it, then Debian's directories.
	find := func(name, dir string) string {
		for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
			p := filepath.Join(d, "node_modules", name)
			if _, err := os.Stat(filepath.Join(p, "package.json")); err == nil {
				r, _ := filepath.EvalSymlinks(p)
				return r
			}
		}
		for _, root := range nodeDirs {
			p := filepath.Join(root, name)
			if _, err := os.Stat(filepath.Join(p, "package.json")); err == nil {
				r, _ := filepath.EvalSymlinks(p)
				return r
			}
		}
		return ""
	}
	type pkgJSON struct {
		Name         string            `json:"name"`
		Version      string            `json:"version"`
		Dependencies map[string]string `json:"dependencies"`
		Bin          any               `json:"bin"`
	}
	var pkgs []Package
	var tree []NodeModule
	served := map[string]bool{} // name@version
	top := map[string]string{}  // name -> the real directory hoisted
	placed := map[string]bool{} // paths in the tree
	var place func(name, from, parent string)
	place = func(name, from, parent string) {
		real := find(name, from)
		if real == "" {
			return
		}
		at := "node_modules/" + name
		if held, ok := top[name]; !ok {
			top[name] = real
		} else if held == real || parent == "" {
			return // the package at the top serves it
		} else {
			at = parent + "/node_modules/" + name
		}
		if placed[at] {
			return
		}
		placed[at] = true
		b, err := os.ReadFile(filepath.Join(real, "package.json"))
		if err != nil {
			t.Fatal(err)
		}
		var pj pkgJSON
		if err := json.Unmarshal(b, &pj); err != nil {
			t.Fatalf("%s/package.json: %v", real, err)
		}
		pj.Version = cmp.Or(pj.Version, "0.0.0")
		// Each dependency at the version Debian has, which is what runs
		// (Debian's node-* packages do not hold to the ranges upstream
		// wrote): npm would otherwise fetch the range's own.
		deps := map[string]string{}
		for d := range pj.Dependencies {
			if dir := find(d, real); dir != "" {
				deps[d] = versionOf(t, dir)
			}
		}
		tree = append(tree, NodeModule{Path: at, Name: name, Version: pj.Version, Dependencies: deps, Bin: pj.Bin})
		if !served[name+"@"+pj.Version] {
			served[name+"@"+pj.Version] = true
			files := ReadTree(t, real, "node_modules")
			// The package.json npm reads is Debian's, with the
			// dependencies this tree has.
			var all map[string]any
			_ = json.Unmarshal(b, &all)
			all["dependencies"], all["version"] = deps, pj.Version
			// Nothing npm would go looking for in the registry.
			for _, k := range []string{"peerDependencies", "peerDependenciesMeta", "optionalDependencies"} {
				delete(all, k)
			}
			fixed, _ := json.MarshalIndent(all, "", "  ")
			files["package.json"] = string(fixed) + "\n"
			pkgs = append(pkgs, Package{Name: name, Version: pj.Version, Files: files, Dependencies: deps})
		}
		for _, d := range sortedKeys(deps) {
			place(d, real, at)
		}
	}
	for _, n := range names {
		if find(n, "/") == "" {
			skipOrFail(t, "no Node package %s in Debian's directories on this machine (apt-get install its Debian package)", n)
		}
		place(n, "/", "")
	}
	slices.SortFunc(tree, func(a, b NodeModule) int { return strings.Compare(a.Path, b.Path) })
	return pkgs, tree
}

// versionOf is the version in the package.json of the package in dir.
func versionOf(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pj struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pj); err != nil {
		t.Fatalf("%s/package.json: %v", dir, err)
	}
	return cmp.Or(pj.Version, "0.0.0")
}

// DebianPython is the Python distributions named, as this machine's
// Debian packages installed them in /usr/lib/python3/dist-packages
// (install the python3-* packages first), for ServePython: each with its
// modules, its Requires-Dist and its entry points. Name every
// distribution the others require: pip fails on one the index lacks.
func DebianPython(t testing.TB, names ...string) []Package {
	t.Helper()
	const site = "/usr/lib/python3/dist-packages"
	var pkgs []Package
	for _, name := range names {
		dist := strings.ReplaceAll(name, "-", "_")
		infos, _ := filepath.Glob(filepath.Join(site, dist+"-*.dist-info"))
		eggs, _ := filepath.Glob(filepath.Join(site, dist+"-*.egg-info"))
		var p Package
		var files []string
		switch {
		case len(infos) == 1:
			meta, err := os.ReadFile(filepath.Join(infos[0], "METADATA"))
			if err != nil {
				t.Fatal(err)
			}
			p = metadata(string(meta))
			record, err := os.ReadFile(filepath.Join(infos[0], "RECORD"))
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.Lines(string(record)) {
				f, _, _ := strings.Cut(line, ",")
				if f != "" && !strings.HasPrefix(f, "../") && !strings.Contains(f, ".dist-info/") && !strings.Contains(f, "__pycache__") {
					files = append(files, f)
				}
			}
			p.Files = map[string]string{}
			if b, err := os.ReadFile(filepath.Join(infos[0], "entry_points.txt")); err == nil {
				p.Files["entry_points.txt"] = string(b)
			}
		case len(eggs) == 1:
			info, err := os.ReadFile(filepath.Join(eggs[0], "PKG-INFO"))
			if err != nil {
				t.Fatal(err)
			}
			p = metadata(string(info))
			if b, err := os.ReadFile(filepath.Join(eggs[0], "requires.txt")); err == nil {
				p.Requires = requiresTxt(string(b))
			}
			top, err := os.ReadFile(filepath.Join(eggs[0], "top_level.txt"))
			if err != nil {
				t.Fatal(err)
			}
			p.Files = map[string]string{}
			if b, err := os.ReadFile(filepath.Join(eggs[0], "entry_points.txt")); err == nil {
				p.Files["entry_points.txt"] = string(b)
			}
			for _, mod := range strings.Fields(string(top)) {
				if _, err := os.Stat(filepath.Join(site, mod+".py")); err == nil {
					files = append(files, mod+".py")
				}
				if _, err := os.Stat(filepath.Join(site, mod)); err == nil {
					for f := range ReadTree(t, filepath.Join(site, mod), "__pycache__") {
						files = append(files, mod+"/"+f)
					}
				}
			}
		default:
			skipOrFail(t, "no Python distribution %s in %s (apt-get install python3-%s)", name, site, name)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(f)))
			if os.IsNotExist(err) {
				continue // listed, and left out by Debian
			} else if err != nil {
				t.Fatal(err)
			}
			p.Files[f] = string(b)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// metadata reads Name, Version and Requires-Dist from a METADATA or
// PKG-INFO file's headers.
func metadata(text string) Package {
	var p Package
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // the body, the description, follows
		}
		k, v, _ := strings.Cut(line, ":")
		switch v = strings.TrimSpace(v); k {
		case "Name":
			p.Name = v
		case "Version":
			p.Version = v
		case "Requires-Dist":
			p.Requires = append(p.Requires, v)
		}
	}
	return p
}

// requiresTxt turns an egg-info's requires.txt into Requires-Dist lines:
// its sections are extras ("[name]") or markers ("[:marker]").
func requiresTxt(text string) []string {
	var out []string
	extra, marker := "", ""
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "["):
			extra, marker, _ = strings.Cut(strings.Trim(line, "[]"), ":")
		default:
			var conds []string
			if extra != "" {
				conds = append(conds, fmt.Sprintf("extra == %q", extra))
			}
			if marker != "" {
				conds = append(conds, "("+marker+")")
			}
			if len(conds) > 0 {
				line += "; " + strings.Join(conds, " and ")
			}
			out = append(out, line)
		}
	}
	return out
}
