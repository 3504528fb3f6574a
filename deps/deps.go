// Package deps plans how a repository's dependencies are fetched before
// its approved commands run: which ecosystems the repository's root holds,
// the setup steps (the repository's own setup, or a default per
// ecosystem), the manifest files those steps read, and a cache key over
// them. It reads only the tree it is handed and runs nothing: no network,
// no container engine. Running a Plan, behind the dependency fence, is the
// runner's.
//
// The root is looked at for every ecosystem; below it, down to SubDepth
// directories, Go modules (a go.mod) and Node projects (a lockfile) get
// default steps of their own, run in their directory: a monorepo's
// services and web front end. Python and Cargo below the root get none
// (one virtualenv, and Cargo's workspaces live at the root); a setup of
// the repository's own can fetch them.
//
// Steps read more than the manifests (a Python build backend runs
// setup.py, Yarn runs the release its configuration names), so a plan must
// run on the files it was made from, the approved commit's, never on a
// tree with changes nobody approved. The files a step is known to run or
// load, and those that configure it, are manifests all the same, so that
// a change to one is shown and makes a key of its own.
//
// Import rule: none of runner, setup or fence.
package deps

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

// Ecosystem is a package manager whose dependencies setup fetches.
type Ecosystem string

// The ecosystems with default steps, in the order their steps run.
const (
	Go     Ecosystem = "go"
	NPM    Ecosystem = "npm"
	PNPM   Ecosystem = "pnpm"
	Yarn   Ecosystem = "yarn"
	Python Ecosystem = "python"
	Cargo  Ecosystem = "cargo"
)

// DirVar names the variable holding the directory setup fills, as the
// sandbox sees it: steps write there ("$PULLWRIGHT_DEPS/venv"), and
// approved runs find it there.
const DirVar = "PULLWRIGHT_DEPS"

// venv is the default Python steps' virtualenv, under DirVar's directory.
const venv = "venv"

// Plan is what setup does for one tree.
type Plan struct {
	// Ecosystems found, at the root or in Projects, in the order of their
	// default steps; at the root, at most one of NPM, PNPM and Yarn.
	Ecosystems []Ecosystem `json:"ecosystems,omitempty"`
	// Projects are the Go modules and Node projects below the root, in
	// path order.
	Projects []Project `json:"projects,omitempty"`
	// Steps are shell commands, run in order: the repository's setup if
	// it names one (Configured), else the defaults of Ecosystems.
	Steps      []string `json:"steps,omitempty"`
	Configured bool     `json:"configured,omitempty"`
	// Manifests are the files that decide what setup fetches (lockfiles,
	// and the tools' configuration in the tree) or that it runs, the
	// root's and the Projects', sorted.
	Manifests []string `json:"manifests,omitempty"`
	// ManifestPaths are paths the tree's own configuration names as code
	// a step loads or configuration it reads: pyproject.toml's
	// build-system backend-path (the directories pip imports the build
	// backend from), the Yarn release and plugins .yarnrc.yml or .yarnrc
	// names, the requirements files the root's include with -r and -c.
	// Every file at or below one is a manifest, whether it exists now or
	// is added later.
	ManifestPaths []string `json:"manifest_paths,omitempty"`
	// Key is a hex SHA-256 over the image, the steps and the manifests'
	// paths and contents: equal keys fetch the same dependencies. Empty
	// when there are no steps, and so nothing to fetch or keep.
	Key string `json:"key,omitempty"`
}

// Project is a Go module or Node project in a directory below the root.
type Project struct {
	Dir       string    `json:"dir"`
	Ecosystem Ecosystem `json:"ecosystem"`
}

// SubDepth is how many directories below the root projects are looked
// for.
const SubDepth = 3

// MaxProjects is how many projects below the root get default steps: the
// steps are one script, passed as one argument, which has a size limit.
const MaxProjects = 64

// configPath is where a repository names its setup (policy.Path; not
// imported, deps depends on nothing of the bot's).
const configPath = ".github/pullwright.yml"

// projectManifests are the manifests of a project below the root: its
// ecosystem's files at the root's names.
var projectManifests = []string{
	"go.mod", "go.sum",
	"package.json", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock",
	".npmrc", ".yarnrc", ".yarnrc.yml", "pnpm-workspace.yaml", ".pnpmfile.cjs", ".env.yarn",
	// The go command looks for a go.work from the module's directory up.
	"go.work", "go.work.sum",
}

// skippedDirs hold no project of the repository's own: installed or
// vendored dependencies, and test fixtures.
var skippedDirs = []string{"node_modules", "vendor", "third_party", "testdata"}

// dirNameRE is a directory name a project may be in: its path goes into
// a shell command, and a hidden directory (.git, .cache) holds none.
var dirNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// projectDir reports whether dir (slash-separated, below the root) is
// one projects are looked for in.
func projectDir(dir string) bool {
	parts := strings.Split(dir, "/")
	if len(parts) > SubDepth {
		return false
	}
	for _, p := range parts {
		if !dirNameRE.MatchString(p) || slices.Contains(skippedDirs, p) {
			return false
		}
	}
	return true
}

// manifestNames are the files at the root (and the Cargo configuration
// below .cargo/) that decide what setup fetches: a change to any of them,
// including adding or deleting it, means setup runs again. Besides the
// lockfiles, the tools' in-tree configuration is here because it can
// change the registry or what is installed (pnpm's hooks file rewrites
// the packages it installs).
var manifestNames = []string{
	"go.mod", "go.sum", "go.work", "go.work.sum",
	"package.json", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock",
	".npmrc", ".yarnrc", ".yarnrc.yml", "pnpm-workspace.yaml", ".pnpmfile.cjs",
	"pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock",
	"Cargo.toml", "Cargo.lock", ".cargo/config.toml", ".cargo/config",
	// rustup runs the toolchain these name for cargo, installing it
	// first.
	"rust-toolchain.toml", "rust-toolchain",
	// Yarn 4 reads environment variables from this file (its
	// injectEnvironmentFiles default), its own settings among them.
	".env.yarn",
	// pip reads its configuration from the working directory's pip.conf
	// (PIP_CONFIG_FILE aside): an index, a trusted host.
	"pip.conf", "pip.ini",
}

// requirementsRE is the requirements files the default Python steps
// install. The name is put in a shell command unquoted, so a file with
// anything else in its name is not one.
var requirementsRE = regexp.MustCompile(`^requirements[A-Za-z0-9._-]*\.txt$`)

// executedDirs hold files a setup runs or loads as code, whatever the
// lockfiles say: the Yarn release a .yarnrc.yml's yarnPath names, Yarn's
// plugins and patches. Every file below them counts as a manifest: a
// change to one is shown in the request and makes a key of its own.
var executedDirs = []string{".yarn/releases/", ".yarn/plugins/", ".yarn/patches/"}

// maxExecutedFiles bounds the files below executedDirs a plan reads: a
// tree with more is refused rather than half covered by its key.
const maxExecutedFiles = 200

func isManifest(p string) bool {
	return slices.Contains(manifestNames, p) || requirementsRE.MatchString(p) ||
		slices.ContainsFunc(executedDirs, func(d string) bool { return strings.HasPrefix(p, d) && len(p) > len(d) })
}

// Detect plans setup for the tree fsys, a checkout of the approved
// commit. setup is the repository's configured steps: nil for the
// defaults of the ecosystems found, empty for no setup. image is the
// sandbox image the steps run in; it is part of the key, since the same
// lockfile fetches differently with another toolchain.
//
// Only regular files count: a manifest that is a symbolic link or a
// directory is not read, so a tree cannot make Detect read outside it.
func Detect(fsys fs.FS, image string, setup []string) (Plan, error) {
	files, paths, err := manifests(fsys)
	if err != nil {
		return Plan{}, err
	}
	has := func(name string) bool { return slices.Contains(files, name) }
	var root []Ecosystem // the root's, in the order of their steps
	if has("go.mod") {
		root = append(root, Go)
	}
	node, err := nodeManager(fsys, ".", has)
	if err != nil {
		return Plan{}, err
	}
	if node != "" {
		root = append(root, node)
	}
	var reqs []string
	for _, f := range files {
		if requirementsRE.MatchString(f) {
			reqs = append(reqs, f)
		}
	}
	if len(reqs) > 0 || has("pyproject.toml") {
		root = append(root, Python)
	}
	if has("Cargo.toml") || has("Cargo.lock") {
		root = append(root, Cargo)
	}
	sub, subFiles, subPaths, err := projects(fsys)
	if err != nil {
		return Plan{}, err
	}
	if setup == nil && len(sub) > MaxProjects {
		return Plan{}, fmt.Errorf("%d Go modules and Node projects below the root, more than the %d the default setup handles; name the setup commands in %s", len(sub), MaxProjects, configPath)
	}
	paths = append(paths, subPaths...)
	slices.Sort(paths)
	p := Plan{Ecosystems: slices.Clone(root), Projects: sub, ManifestPaths: slices.Compact(paths)}
	for _, pr := range sub {
		if !slices.Contains(p.Ecosystems, pr.Ecosystem) {
			p.Ecosystems = append(p.Ecosystems, pr.Ecosystem)
		}
	}
	slices.SortStableFunc(p.Ecosystems, func(a, b Ecosystem) int {
		return cmp.Compare(slices.Index(ecosystemOrder, a), slices.Index(ecosystemOrder, b))
	})

	if setup != nil {
		p.Steps, p.Configured = slices.Clone(setup), true
	} else {
		for _, e := range root {
			steps, err := defaultSteps(fsys, ".", e, reqs)
			if err != nil {
				return Plan{}, err
			}
			p.Steps = append(p.Steps, steps...)
		}
		for _, pr := range sub {
			steps, err := defaultSteps(fsys, pr.Dir, pr.Ecosystem, nil)
			if err != nil {
				return Plan{}, err
			}
			for _, st := range steps {
				// A subshell, so that the next step starts at the root.
				p.Steps = append(p.Steps, "(cd "+pr.Dir+" && "+st+")")
			}
		}
	}
	p.Manifests = append(files, subFiles...)
	slices.Sort(p.Manifests)
	p.Manifests = slices.Compact(p.Manifests)
	if len(p.Steps) > 0 {
		if p.Key, err = key(fsys, image, p.Steps, p.Manifests); err != nil {
			return Plan{}, err
		}
	}
	return p, nil
}

// ManifestsOf is the plan of fsys as far as ManifestsChanged needs it,
// for a caller that runs nothing: its ecosystems, projects, manifests
// and ManifestPaths, with no steps and no key. It fails as Detect does
// on a manifest it cannot read: the caller then cannot tell which of its
// changes are manifests, and takes them all as changed.
func ManifestsOf(fsys fs.FS) (Plan, error) {
	p, err := Detect(fsys, "", []string{})
	p.Steps, p.Configured = nil, false
	return p, err
}

// ecosystemOrder is the order of the ecosystems' default steps.
var ecosystemOrder = []Ecosystem{Go, NPM, PNPM, Yarn, Python, Cargo}

// projects finds the Go modules and Node projects below the root, down to
// SubDepth directories, their manifests, and the ManifestPaths their
// configuration names. A directory that is a
// symbolic link is not entered, and only regular files count.
func projects(fsys fs.FS) ([]Project, []string, []string, error) {
	var out []Project
	var files, paths []string
	err := fs.WalkDir(fsys, ".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		if dir == "." {
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if !projectDir(dir) {
			return fs.SkipDir
		}
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		var here []string
		for _, e := range entries {
			if e.Type().IsRegular() && slices.Contains(projectManifests, e.Name()) {
				here = append(here, e.Name())
			}
		}
		has := func(name string) bool { return slices.Contains(here, name) }
		found := false
		if has("go.mod") {
			out = append(out, Project{Dir: dir, Ecosystem: Go})
			found = true
		}
		node, err := nodeManager(fsys, dir, has)
		if err != nil {
			return err
		}
		if node != "" {
			out = append(out, Project{Dir: dir, Ecosystem: node})
			found = true
		}
		if found {
			for _, f := range here {
				files = append(files, dir+"/"+f)
			}
			run, named, err := yarnFiles(fsys, dir, has)
			if err != nil {
				return err
			}
			files, paths = append(files, run...), append(paths, named...)
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return out, files, paths, nil
}

// manifests lists the manifests present in fsys, sorted, and the
// ManifestPaths the tree's configuration names.
func manifests(fsys fs.FS) ([]string, []string, error) {
	root, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, nil, fmt.Errorf("list the repository's root: %w", err)
	}
	var out, paths []string
	for _, e := range root {
		switch {
		case e.Type().IsRegular() && isManifest(e.Name()):
			out = append(out, e.Name())
		case e.IsDir() && e.Name() == ".yarn":
			n := 0
			for _, d := range executedDirs {
				files, err := executedFiles(fsys, strings.TrimSuffix(d, "/"), &n)
				if err != nil {
					return nil, nil, fmt.Errorf("list %s: %w", d, err)
				}
				out = append(out, files...)
			}
		case e.IsDir() && e.Name() == ".cargo":
			sub, err := fs.ReadDir(fsys, ".cargo")
			if err != nil {
				return nil, nil, fmt.Errorf("list .cargo: %w", err)
			}
			for _, s := range sub {
				if p := ".cargo/" + s.Name(); s.Type().IsRegular() && isManifest(p) {
					out = append(out, p)
				}
			}
		}
	}
	var reqs []string
	for _, f := range out {
		if requirementsRE.MatchString(f) {
			reqs = append(reqs, f)
		}
	}
	if len(reqs) > 0 {
		files, named, err := requirementIncludes(fsys, reqs)
		if err != nil {
			return nil, nil, err
		}
		out, paths = append(out, files...), append(paths, named...)
	}
	if slices.Contains(out, "pyproject.toml") {
		backend, err := backendPath(fsys)
		if err != nil {
			return nil, nil, err
		}
		paths = append(paths, backend...)
		n := 0
		for _, p := range backend {
			files, err := executedFiles(fsys, p, &n)
			if err != nil {
				return nil, nil, fmt.Errorf("list pyproject.toml's backend-path %s: %w", p, err)
			}
			out = append(out, files...)
		}
	}
	has := func(name string) bool { return slices.Contains(out, name) }
	run, named, err := yarnFiles(fsys, ".", has)
	if err != nil {
		return nil, nil, err
	}
	out, paths = append(out, run...), append(paths, named...)
	for _, name := range []string{"rust-toolchain.toml", "rust-toolchain"} {
		if has(name) {
			if err := checkRustToolchain(fsys, name); err != nil {
				return nil, nil, err
			}
		}
	}
	slices.Sort(out)
	slices.Sort(paths)
	return slices.Compact(out), slices.Compact(paths), nil
}

// maxToolConfig bounds a tool's configuration file read for the files it
// names: a real one is a few lines.
const maxToolConfig = 64 << 10

// readConfig reads name whole, or fails when it is longer than
// maxToolConfig.
func readConfig(fsys fs.FS, name string) ([]byte, error) {
	data, err := readHead(fsys, name, maxToolConfig+1)
	if err != nil {
		return nil, err
	}
	if len(data) > maxToolConfig {
		return nil, fmt.Errorf("read %s: more than %d bytes", name, maxToolConfig)
	}
	return data, nil
}

// yarnFiles are the files Yarn runs as its configuration in dir (from
// the root) names them: the release of .yarnrc.yml's yarnPath (Yarn 2
// and later) or .yarnrc's yarn-path (Yarn 1), and .yarnrc.yml's plugins
// by path. has reports a manifest in dir. It returns the files found and
// every path named; like executedFiles, it fails closed on a path that
// cannot be read, is absolute or leaves the tree.
func yarnFiles(fsys fs.FS, dir string, has func(string) bool) (files, named []string, err error) {
	var refs []string // as written, from dir
	if has(".yarnrc.yml") {
		name := path.Join(dir, ".yarnrc.yml")
		data, err := readConfig(fsys, name)
		if err != nil {
			return nil, nil, err
		}
		var rc struct {
			YarnPath any   `yaml:"yarnPath"`
			Plugins  []any `yaml:"plugins"`
		}
		if err := decodeYAML(data, &rc); err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", name, err)
		}
		switch v := rc.YarnPath.(type) {
		case nil:
		case string:
			refs = append(refs, v)
		default:
			return nil, nil, fmt.Errorf("read %s: yarnPath is not a path", name)
		}
		for _, pl := range rc.Plugins {
			switch v := pl.(type) {
			case string:
				refs = append(refs, v)
			case map[string]any:
				if p, ok := v["path"]; ok {
					s, ok := p.(string)
					if !ok {
						return nil, nil, fmt.Errorf("read %s: a plugin's path is not a path", name)
					}
					refs = append(refs, s)
				}
			default:
				return nil, nil, fmt.Errorf("read %s: a plugin is neither a path nor a path and spec", name)
			}
		}
	}
	if has(".yarnrc") {
		name := path.Join(dir, ".yarnrc")
		data, err := readConfig(fsys, name)
		if err != nil {
			return nil, nil, err
		}
		for i, l := range strings.Split(string(data), "\n") {
			if t := strings.TrimSpace(l); !strings.Contains(t, "yarn-path") || strings.HasPrefix(t, "#") {
				continue
			}
			m := yarnPathRE.FindStringSubmatch(l)
			if m == nil {
				return nil, nil, fmt.Errorf("read %s, line %d: a yarn-path this does not read", name, i+1)
			}
			refs = append(refs, cmp.Or(m[1], m[2]))
		}
	}
	n := 0
	for _, r := range refs {
		// Yarn expands ${NAME} and ${NAME:-fallback} in its settings:
		// what such a path names is not known here.
		if strings.Contains(r, "$") {
			return nil, nil, fmt.Errorf("read %s: Yarn runs %s, which names a variable Yarn expands", path.Join(dir, ".yarnrc*"), r)
		}
		p, ok := inTree(dir, r)
		if !ok {
			return nil, nil, fmt.Errorf("read %s: Yarn runs %s, which is outside the repository", path.Join(dir, ".yarnrc*"), r)
		}
		run, err := executedFiles(fsys, p, &n)
		if err != nil {
			return nil, nil, fmt.Errorf("list %s, which Yarn runs: %w", p, err)
		}
		files, named = append(files, run...), append(named, p)
	}
	return files, named, nil
}

// yarnPathRE is a .yarnrc line setting yarn-path: the value quoted
// (without quotes or escapes inside) or bare.
var yarnPathRE = regexp.MustCompile(`^\s*"?yarn-path"?\s+(?:"([^"\\]*)"|([^\s"'#]+))\s*$`)

// decodeYAML decodes data into v, a panic of the parser being an error.
func decodeYAML(data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	return yaml.Unmarshal(data, v)
}

// checkRustToolchain refuses a rustup toolchain file that names a
// toolchain by its directory (toolchain.path): cargo would run the
// programs there, which may be the tree's, and which no key covers.
// A channel name is fine: rustup installs it from its own server. The
// legacy rust-toolchain file may be a channel name alone rather than
// TOML.
func checkRustToolchain(fsys fs.FS, name string) error {
	data, err := readConfig(fsys, name)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := decodeTOML(string(data), &doc); err != nil {
		if name == "rust-toolchain" && !bytes.ContainsAny(data, "=[") {
			return nil // a channel name
		}
		return fmt.Errorf("read %s: %w", name, err)
	}
	if t, ok := doc["toolchain"].(map[string]any); ok {
		if _, ok := t["path"]; ok {
			return fmt.Errorf("read %s%s: toolchain.path names a toolchain by its directory, which setup does not run; name a channel", name, lineOf(data, "path"))
		}
	} else if _, ok := doc["toolchain"]; ok {
		return fmt.Errorf("read %s: toolchain is not a table", name)
	}
	return nil
}

// executedFiles lists the files at or below p, a path of code a step
// runs or loads, counting them in n: nothing when p does not exist, p
// itself when it is a file. It fails closed: on more than
// maxExecutedFiles in all, and on a symbolic link (or anything but a
// directory or regular file) at or below p or on the way to it, whose
// target the tool would load but the key would not cover. Directories
// named .git are git's own, never part of a commit's tree.
func executedFiles(fsys fs.FS, p string, n *int) ([]string, error) {
	typ, err := lookup(fsys, p)
	switch {
	case err != nil:
		return nil, err
	case typ == notThere:
		return nil, nil
	case typ.IsRegular():
		// A file: Python imports from a zip archive named on its path.
		if *n++; *n > maxExecutedFiles {
			return nil, fmt.Errorf("more than %d files", maxExecutedFiles)
		}
		return []string{p}, nil
	}
	var out []string
	err = fs.WalkDir(fsys, p, func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".git" && name != p:
			return fs.SkipDir
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is a symbolic link or special file, which is not followed", name)
		}
		if *n++; *n > maxExecutedFiles {
			return fmt.Errorf("more than %d files", maxExecutedFiles)
		}
		out = append(out, name)
		return nil
	})
	return out, err
}

// notThere is lookup's answer for a path with nothing at it.
const notThere fs.FileMode = 1<<32 - 1

// lookup is the type of what is at p (a clean path from the root):
// notThere when nothing is (or a file is on the way), else a directory
// or a regular file. It reads each directory on the way rather than
// fs.Stat, which would follow a link: a symbolic link (or special file)
// at or on the way to p is an error, since a tool would follow it to
// content the key does not cover.
func lookup(fsys fs.FS, p string) (fs.FileMode, error) {
	if p == "." {
		return fs.ModeDir, nil
	}
	parts := strings.Split(p, "/")
	for i, part := range parts {
		parent := path.Join(parts[:i]...)
		if parent == "" {
			parent = "."
		}
		entries, err := fs.ReadDir(fsys, parent)
		if err != nil {
			return 0, err
		}
		j := slices.IndexFunc(entries, func(e fs.DirEntry) bool { return e.Name() == part })
		switch {
		case j < 0:
			return notThere, nil
		case entries[j].IsDir() && i < len(parts)-1:
			continue
		case entries[j].IsDir():
			return fs.ModeDir, nil
		case entries[j].Type().IsRegular() && i == len(parts)-1:
			return 0, nil
		case entries[j].Type().IsRegular():
			return notThere, nil
		default:
			return 0, fmt.Errorf("%s is a symbolic link or special file, which is not followed", path.Join(parts[:i+1]...))
		}
	}
	return notThere, nil
}

// inTree cleans p, a path relative to the directory dir (from the root),
// into one from the root; ok is false when it is absolute or leaves the
// tree.
func inTree(dir, p string) (string, bool) {
	if strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return "", false
	}
	c := path.Join(dir, p)
	return c, c != ".." && !strings.HasPrefix(c, "../")
}

// Bounds of the requirements files a plan reads: the root's, and those
// they include.
const (
	maxRequirementFiles = 50
	maxRequirementBytes = 1 << 20
)

// requirementIncludes follows the -r and -c options (--requirement,
// --constraint) of the root's requirements files, as pip does, from
// each file's directory: the files they name decide what the default
// Python setup installs. It returns the files found and every path
// named, so that a file named but not there yet counts once added. It
// fails closed: on a path that is absolute, leaves the tree, is a
// symbolic link, or holds a variable pip would expand, on an option it
// cannot read, and on more than maxRequirementFiles files. A URL is
// fetched, not read from the tree, and is left alone.
func requirementIncludes(fsys fs.FS, roots []string) (files, named []string, err error) {
	seen := map[string]bool{}
	for _, r := range roots {
		seen[r] = true
	}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		data, err := readHead(fsys, name, maxRequirementBytes+1)
		if err != nil {
			return nil, nil, err
		}
		if len(data) > maxRequirementBytes {
			return nil, nil, fmt.Errorf("read %s: more than %d bytes", name, maxRequirementBytes)
		}
		includes, err := requirementOptions(string(data))
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", name, err)
		}
		for _, inc := range includes {
			if strings.Contains(inc.path, "://") {
				continue
			}
			p, ok := inTree(path.Dir(name), inc.path)
			switch {
			case strings.HasPrefix(inc.path, "file:"):
				return nil, nil, fmt.Errorf("read %s, line %d: %s names a file: URL, which this does not read", name, inc.line, inc.path)
			case strings.Contains(inc.path, "${"):
				return nil, nil, fmt.Errorf("read %s, line %d: %s holds a variable, which this does not read", name, inc.line, inc.path)
			case !ok:
				return nil, nil, fmt.Errorf("read %s, line %d: %s is outside the repository", name, inc.line, inc.path)
			case seen[p]:
				continue
			}
			seen[p] = true
			if len(seen) > maxRequirementFiles {
				return nil, nil, fmt.Errorf("more than %d requirements files, the root's and those they include", maxRequirementFiles)
			}
			named = append(named, p)
			typ, err := lookup(fsys, p)
			if err != nil {
				return nil, nil, fmt.Errorf("read %s, line %d: %w", name, inc.line, err)
			}
			if typ == 0 { // a regular file
				files = append(files, p)
				queue = append(queue, p)
			}
		}
	}
	return files, named, nil
}

type requirementInclude struct {
	line int
	path string
}

// requirementOptions reads the -r and -c options of a requirements
// file's text as pip does: lines ending in a backslash joined, comments
// (a # at the start or after a space) dropped, options from the first
// word starting with "-", a value attached (-rfile, --requirement=file)
// or in the next word, and long options abbreviated as far as pip's
// parser allows.
func requirementOptions(text string) ([]requirementInclude, error) {
	var out []requirementInclude
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := lines[i]
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + lines[i]
		}
		l = commentRE.ReplaceAllString(l, "")
		words := strings.Fields(l)
		first := slices.IndexFunc(words, func(w string) bool { return strings.HasPrefix(w, "-") })
		if first < 0 {
			continue
		}
		words = words[first:]
		for j := 0; j < len(words); j++ {
			value, attached, ok := includeOption(words[j])
			if !ok {
				continue
			}
			if !attached {
				if j+1 == len(words) {
					return nil, fmt.Errorf("line %d: %s names no file", start, words[j])
				}
				j++
				value = words[j]
			}
			if strings.ContainsAny(l, "'\"\\") {
				// pip splits the options as a shell would: quotes and
				// escapes this does not read.
				return nil, fmt.Errorf("line %d: quotes or backslashes in an option naming a file, which this does not read", start)
			}
			out = append(out, requirementInclude{line: start, path: value})
		}
	}
	return out, nil
}

// commentRE is a comment in a requirements file, as pip strips it.
var commentRE = regexp.MustCompile(`(^|\s+)#.*$`)

// includeOption reads w as an option naming a file to include: -r, -c,
// --requirement, --constraint, or an abbreviation of the long ones, with
// its value if attached.
func includeOption(w string) (value string, attached, ok bool) {
	if strings.HasPrefix(w, "--") {
		name, v, eq := strings.Cut(w, "=")
		if len(name) < 3 || !(strings.HasPrefix("--requirement", name) || strings.HasPrefix("--constraint", name)) {
			return "", false, false
		}
		return v, eq, true
	}
	if len(w) >= 2 && (w[1] == 'r' || w[1] == 'c') {
		return w[2:], len(w) > 2, true
	}
	return "", false, false
}

// maxPyproject bounds the pyproject.toml read for its backend-path: a
// real one is a few kilobytes.
const maxPyproject = 1 << 20

// backendPath reads pyproject.toml's build-system backend-path: the
// directories, from the root, that pip puts first on the import path of
// the build backend it runs to install the project (pip install -e .),
// cleaned and sorted. It fails closed: a file that does not parse, a
// value that is not a list of relative paths within the tree, or a
// file too long to read whole is an error, as an unreadable manifest is,
// rather than a plan that leaves out code setup may run.
func backendPath(fsys fs.FS) (out []string, err error) {
	data, err := readHead(fsys, "pyproject.toml", maxPyproject+1)
	if err != nil {
		return nil, err
	}
	if len(data) > maxPyproject {
		return nil, fmt.Errorf("read pyproject.toml: more than %d bytes", maxPyproject)
	}
	var doc map[string]any
	if err := decodeTOML(string(data), &doc); err != nil {
		return nil, fmt.Errorf("read pyproject.toml: %w", err)
	}
	bs, ok := doc["build-system"]
	if !ok {
		return nil, nil
	}
	table, ok := bs.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("read pyproject.toml%s: build-system is not a table", lineOf(data, "build-system"))
	}
	v, ok := table["backend-path"]
	if !ok {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("read pyproject.toml%s: build-system.backend-path: %s", lineOf(data, "backend-path"), fmt.Sprintf(format, args...))
	}
	list, ok := v.([]any)
	if !ok {
		// pip would iterate over a string's characters.
		return nil, bad("is not a list of paths")
	}
	for _, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, bad("%v is not a path", item)
		}
		switch c := path.Clean(s); {
		case strings.HasPrefix(s, "/"):
			return nil, bad("%q is absolute; it must be a directory of the repository", s)
		case c == ".." || strings.HasPrefix(c, "../"):
			return nil, bad("%q is outside the repository", s)
		case strings.ContainsAny(s, "\\\x00"):
			return nil, bad("%q has a backslash or NUL, which this does not read", s)
		default:
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// decodeTOML decodes data into v. The parser is third-party code fed
// with text anyone with push access writes: a panic in it is an error,
// not the end of the process.
func decodeTOML(data string, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the TOML parser failed: %v", r)
		}
	}()
	_, err = toml.Decode(data, v)
	return err
}

// lineOf is ", line N" for the first line that sets key (as a bare,
// quoted or dotted key), or "" when none clearly does: for an error's
// message only.
func lineOf(data []byte, key string) string {
	re := regexp.MustCompile(`^\s*(?:[A-Za-z0-9_.-]*\.)?["']?` + regexp.QuoteMeta(key) + `["']?\s*=`)
	for i, l := range strings.Split(string(data), "\n") {
		if re.MatchString(l) {
			return fmt.Sprintf(", line %d", i+1)
		}
	}
	return ""
}

type nodeLockfile struct {
	eco   Ecosystem
	files []string
}

// nodeLockfiles maps each Node package manager to the lockfiles that
// select it, in the order a tie is broken when package.json does not name
// its manager: npm ships with Node, the others need installing.
var nodeLockfiles = []nodeLockfile{
	{NPM, []string{"package-lock.json", "npm-shrinkwrap.json"}},
	{PNPM, []string{"pnpm-lock.yaml"}},
	{Yarn, []string{"yarn.lock"}},
}

// nodeManager picks the one Node package manager whose lockfile is at the
// root: two installing into one node_modules would undo each other. With
// several lockfiles, package.json's packageManager field decides.
func nodeManager(fsys fs.FS, dir string, has func(string) bool) (Ecosystem, error) {
	var found []Ecosystem
	for _, n := range nodeLockfiles {
		if slices.ContainsFunc(n.files, has) {
			found = append(found, n.eco)
		}
	}
	if len(found) <= 1 || !has("package.json") {
		if len(found) == 0 {
			return "", nil
		}
		return found[0], nil
	}
	head, err := readHead(fsys, path.Join(dir, "package.json"), 1<<20)
	if err != nil {
		return "", err
	}
	var pkg struct {
		PackageManager string `json:"packageManager"`
	}
	// A package.json that does not parse is npm's to report, in setup's
	// output; here it only fails to break the tie.
	_ = json.Unmarshal(head, &pkg)
	name, _, _ := strings.Cut(pkg.PackageManager, "@")
	if i := slices.Index(found, Ecosystem(name)); i >= 0 {
		return found[i], nil
	}
	return found[0], nil
}

// defaultSteps are the steps of one ecosystem. Lifecycle scripts are off:
// setup has network, and a dependency's install script is code nobody in
// the repository chose to run.
func defaultSteps(fsys fs.FS, dir string, e Ecosystem, reqs []string) ([]string, error) {
	switch e {
	case Go:
		return []string{"go mod download"}, nil
	case NPM:
		return []string{"npm ci --ignore-scripts"}, nil
	case PNPM:
		return []string{"pnpm install --frozen-lockfile --ignore-scripts"}, nil
	case Yarn:
		berry, err := yarnBerry(fsys, dir)
		if err != nil {
			return nil, err
		}
		if berry {
			// Yarn 2 and later refuse --ignore-scripts and spell
			// --frozen-lockfile differently.
			return []string{"yarn install --immutable --mode=skip-build"}, nil
		}
		return []string{"yarn install --frozen-lockfile --ignore-scripts"}, nil
	case Python:
		py := `"$` + DirVar + `/` + venv + `/bin/python" -m pip install`
		steps := []string{`python3 -m venv "$` + DirVar + `/` + venv + `"`}
		if len(reqs) > 0 {
			// One pip run for all the files: one resolution, so they
			// cannot install conflicting versions one after the other.
			return append(steps, py+" -r "+strings.Join(reqs, " -r ")), nil
		}
		// Editable, so that tests import the working tree, with the
		// agent's changes, not a copy of the package as it was when the
		// cached virtualenv was made.
		return append(steps, py+" -e ."), nil
	case Cargo:
		return []string{"cargo fetch"}, nil
	}
	return nil, fmt.Errorf("no default steps for %s", e)
}

// yarnBerry reports a Yarn 2+ lockfile, which, unlike Yarn 1's, has a
// __metadata entry near its top.
func yarnBerry(fsys fs.FS, dir string) (bool, error) {
	head, err := readHead(fsys, path.Join(dir, "yarn.lock"), 4<<10)
	if err != nil {
		return false, err
	}
	return bytes.HasPrefix(head, []byte("__metadata:")) || bytes.Contains(head, []byte("\n__metadata:")), nil
}

// readHead reads at most n bytes of name.
func readHead(fsys fs.FS, name string, n int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

// keyVersion starts every key, so that a change to what a key covers
// changes every key rather than matching one made the old way.
const keyVersion = "pullwright deps 1"

// key hashes the image, the steps and each manifest's path and content.
// Every variable-length field is length-prefixed, so no two different
// inputs write the same bytes.
func key(fsys fs.FS, image string, steps, files []string) (string, error) {
	h := sha256.New()
	field := func(s string) { io.WriteString(h, strconv.Itoa(len(s))+":"+s) }
	field(keyVersion)
	field(image)
	field(strconv.Itoa(len(steps)))
	for _, s := range steps {
		field(s)
	}
	field(strconv.Itoa(len(files)))
	for _, name := range files {
		field(name)
		if err := hashFile(h, fsys, name); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile writes the SHA-256 of name's content to h: a fixed-length
// digest, so lockfiles of any size are streamed rather than held.
func hashFile(h hash.Hash, fsys fs.FS, name string) error {
	f, err := fsys.Open(name)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	defer f.Close()
	fh := sha256.New()
	if _, err := io.Copy(fh, f); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	h.Write(fh.Sum(nil))
	return nil
}

// ManifestsChanged reports whether changing the files at changedPaths
// (paths from the repository's root, as git names them; added, modified
// or deleted) calls for setup to run again: one is a manifest of the
// plan, is at or below one of its ManifestPaths, or would be a manifest
// of a plan made after the change (a new lockfile, a new ecosystem at
// the root, a new project below it). Beyond the plan's own, it depends
// on the path alone, erring towards yes: a package.json below the root
// counts whether or not its directory is a project. The zero Plan
// knows no ManifestPaths: a caller with the files at hand asks the plan
// of the changed tree (ManifestsOf), which names those its
// configuration adds.
func (p Plan) ManifestsChanged(changedPaths []string) bool {
	return slices.ContainsFunc(changedPaths, func(c string) bool {
		c = strings.TrimPrefix(path.Clean("/"+c), "/")
		if isManifest(c) || slices.Contains(p.Manifests, c) {
			return true
		}
		if slices.ContainsFunc(p.ManifestPaths, func(m string) bool { return m == "." || c == m || strings.HasPrefix(c, m+"/") }) {
			return true
		}
		dir, name := path.Split(c)
		return dir != "" && slices.Contains(projectManifests, name) && projectDir(strings.TrimSuffix(dir, "/"))
	})
}

// Env is the environment setup steps and approved runs share: DirVar set
// to dir, the directory setup fills as the sandbox sees it, and for
// Python the default steps' virtualenv activated (VIRTUAL_ENV, and its
// bin put first on imagePath, the image's PATH), so that the test
// commands find pytest and the packages installed there. A setup of the
// repository's own is found the same way if it makes its virtualenv at
// "$PULLWRIGHT_DEPS/venv". An empty imagePath is Docker's default PATH,
// which is what a container of an image that sets none gets.
func (p Plan) Env(dir, imagePath string) []string {
	env := []string{DirVar + "=" + dir}
	if slices.Contains(p.Ecosystems, Python) {
		v := path.Join(dir, venv)
		env = append(env, "VIRTUAL_ENV="+v, "PATH="+path.Join(v, "bin")+":"+cmp.Or(imagePath, dockerPath))
	}
	return env
}

// WorkspaceDirs are the directories the plan's tools install into the
// working directory rather than a cache of their own (a node_modules):
// setup moves each into WorkspaceKept, under DirVar's directory, and runs
// find it there through a link of the same name in their working
// directory.
func (p Plan) WorkspaceDirs() []string {
	var out []string
	if slices.ContainsFunc(p.Manifests, isNodeLockfile) {
		out = append(out, "node_modules")
	}
	for _, pr := range p.Projects {
		if pr.Ecosystem == NPM || pr.Ecosystem == PNPM || pr.Ecosystem == Yarn {
			out = append(out, pr.Dir+"/node_modules")
		}
	}
	return out
}

// isNodeLockfile reports a Node lockfile at the root.
func isNodeLockfile(name string) bool {
	return slices.ContainsFunc(nodeLockfiles, func(n nodeLockfile) bool { return slices.Contains(n.files, name) })
}

// WorkspaceKept is where, under DirVar's directory, setup keeps the
// WorkspaceDirs.
const WorkspaceKept = "workspace"

// dockerPath is the PATH Docker gives a container whose image sets none.
const dockerPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
