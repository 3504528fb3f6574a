package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/pullwright/pullwright/appmanifest"
	"github.com/pullwright/pullwright/internal/ignorefile"
)

// host is what serve knows of the machine it started on: its environment
// (all of it, not only the bot's settings) and the root of its file
// system, which tests replace with a directory of their own.
type host struct {
	getenv   func(string) string
	root     string
	hostname string
	// goRun is set when the binary is one go run built: whoever started
	// it has a shell where it runs, container or not.
	goRun bool
}

// thisHost is the machine the process runs on.
func thisHost(getenv func(string) string) host {
	name, _ := os.Hostname()
	exe, _ := os.Executable()
	return host{getenv: getenv, root: "/", hostname: name, goRun: builtByGoRun(exe)}
}

// builtByGoRun tells a binary go run built: it lives in a go-build
// directory of the temporary directory ($TMPDIR/go-build…/b001/exe/bot)
// or, once cached, of the build cache ($GOCACHE/8f/8f87…-d/bot).
func builtByGoRun(exe string) bool {
	exe = filepath.ToSlash(exe)
	dir := path.Dir(exe)
	return strings.Contains(exe, "/go-build") && (path.Base(dir) == "exe" || strings.HasSuffix(dir, "-d"))
}

// started says how the bot was started, for the setup page's way of
// reading the token file: Kubernetes sets KUBERNETES_SERVICE_HOST in
// every pod; Docker and Podman leave a file at the root, and cgroup v1
// names the runtime in /proc/1/cgroup; systemd gives each service an
// INVOCATION_ID.
func (h host) started() appmanifest.Start {
	switch {
	case h.goRun:
		// The README's quick start, on a laptop or in a development
		// container: a shell is at hand where the bot runs.
		return appmanifest.StartLocal
	case h.getenv("KUBERNETES_SERVICE_HOST") != "":
		return appmanifest.StartKubernetes
	case h.exists(".dockerenv") || h.exists("run/.containerenv") || h.cgroupIsContainer():
		return appmanifest.StartContainer
	case h.getenv("INVOCATION_ID") != "":
		return appmanifest.StartSystemd
	}
	return appmanifest.StartLocal
}

func (h host) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(h.root, name))
	return err == nil
}

func (h host) cgroupIsContainer() bool {
	b, err := os.ReadFile(filepath.Join(h.root, "proc/1/cgroup"))
	if err != nil {
		return false
	}
	for _, rt := range []string{"docker", "containerd", "kubepods", "libpod", "lxc"} {
		if bytes.Contains(b, []byte(rt)) {
			return true
		}
	}
	return false
}

// defaultAppDir is BOT_APP_DIR when it is unset: outside any clone, in a
// place the user's later starts find again (systemd's StateDirectory,
// else the user's configuration directory, as os.UserConfigDir names
// it). With no directory, why says so. In a container the directory is
// the same, and why warns: a home goes with the container unless it is on
// a volume, and a lost app is one to delete on GitHub. It is still a
// default, so that the README's quick start works in a development
// container too.
func (h host) defaultAppDir(start appmanifest.Start) (dir, why string) {
	dir, why = h.userAppDir()
	switch start {
	case appmanifest.StartContainer, appmanifest.StartKubernetes:
		if dir == "" {
			return "", "in a container, " + why
		}
		return dir, "in a container, " + dir + " goes with the container unless it is on a volume: set BOT_APP_DIR to a directory on a volume"
	}
	return dir, why
}

// userAppDir is the default directory outside a container.
func (h host) userAppDir() (dir, why string) {
	if s, _, _ := strings.Cut(h.getenv("STATE_DIRECTORY"), ":"); filepath.IsAbs(s) {
		return filepath.Join(s, "app"), ""
	}
	base := ""
	switch runtime.GOOS {
	case "windows":
		base = h.getenv("AppData")
	case "darwin", "ios":
		if home := h.getenv("HOME"); filepath.IsAbs(home) {
			base = filepath.Join(home, "Library", "Application Support")
		}
	default:
		base = h.getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(base) {
			base = ""
			if home := h.getenv("HOME"); filepath.IsAbs(home) {
				base = filepath.Join(home, ".config")
			}
		}
	}
	if base == "" {
		return "", "there is no default directory, since neither XDG_CONFIG_HOME nor HOME is set"
	}
	return filepath.Join(base, "pullwright", "app"), ""
}

// unignoredIn returns the git work tree dir is in when that work tree's
// git does not ignore it, so that `git add -A` there would commit the
// app's private key; "" when dir is in no work tree, or ignored. Like the
// rest of the bot it reads git's files (go-git's rules), never running a
// git executable: the ignore files on dir's path, the repository's
// info/exclude and the user's and system's core.excludesFile.
func (h host) unignoredIn(dir string) (string, error) {
	dir = filepath.Clean(dir)
	root := ""
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			root = d
			break
		}
		up := filepath.Dir(d)
		if up == d {
			return "", nil
		}
		d = up
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return "", fmt.Errorf("check whether git ignores %s: %w", dir, err)
	}
	if rel == "." {
		// The directory is the work tree itself: nothing ignores it.
		return root, nil
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if parts[0] == ".git" {
		// Inside the repository's own files, which git never adds.
		return "", nil
	}
	// In git's order of precedence, lowest first.
	ps, err := h.globalExcludes()
	if err != nil {
		return "", err
	}
	gitDir, err := gitDirOf(root)
	if err != nil {
		return "", err
	}
	more, err := readIgnoreFile(filepath.Join(gitDir, "info", "exclude"), nil)
	if err != nil {
		return "", err
	}
	ps = append(ps, more...)
	for i := range parts {
		more, err := readIgnoreFile(filepath.Join(root, filepath.Join(parts[:i]...), ".gitignore"), parts[:i])
		if err != nil {
			return "", err
		}
		ps = append(ps, more...)
		// Git does not look inside an ignored directory, so an ignored
		// parent ignores dir whatever a deeper file says.
		if gitignore.NewMatcher(ps).Match(parts[:i+1], true) {
			return "", nil
		}
	}
	return root, nil
}

// gitDirOf is the repository of work tree root: .git itself, or where a
// .git file points (a linked worktree or a submodule), and for a linked
// worktree the common directory that holds info/exclude.
func gitDirOf(root string) (string, error) {
	dot := filepath.Join(root, ".git")
	fi, err := os.Stat(dot)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", dot, err)
	}
	if fi.IsDir() {
		return dot, nil
	}
	b, err := os.ReadFile(dot)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", dot, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gd, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", fmt.Errorf("read %s: not a gitdir: line", dot)
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(root, gd)
	}
	if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gd, common)
		}
		return filepath.Clean(common), nil
	}
	return gd, nil
}

// globalExcludes are the patterns of core.excludesFile, set in the
// system's or the user's git configuration, or git's default file
// ($XDG_CONFIG_HOME/git/ignore) when no configuration sets one.
func (h host) globalExcludes() ([]gitignore.Pattern, error) {
	home := h.getenv("HOME")
	xdg := h.getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(xdg) && filepath.IsAbs(home) {
		xdg = filepath.Join(home, ".config")
	}
	file := ""
	if filepath.IsAbs(xdg) {
		file = filepath.Join(xdg, "git", "ignore")
	}
	configs := []string{filepath.Join(h.root, "etc", "gitconfig")}
	if filepath.IsAbs(xdg) {
		configs = append(configs, filepath.Join(xdg, "git", "config"))
	}
	if filepath.IsAbs(home) {
		configs = append(configs, filepath.Join(home, ".gitconfig"))
	}
	// The last one that sets it wins, as in git.
	for _, c := range configs {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		raw := gitconfig.New()
		if err := gitconfig.NewDecoder(bytes.NewReader(b)).Decode(raw); err != nil {
			continue
		}
		if v := raw.Section("core").Options.Get("excludesfile"); v != "" {
			if rest, ok := strings.CutPrefix(v, "~/"); ok && filepath.IsAbs(home) {
				v = filepath.Join(home, rest)
			}
			file = v
		}
	}
	if file == "" {
		return nil, nil
	}
	return readIgnoreFile(file, nil)
}

// readIgnoreFile reads the patterns of an ignore file in the directory
// domain of the work tree; a missing file has none.
func readIgnoreFile(name string, domain []string) ([]gitignore.Pattern, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return ignorefile.Parse(b, domain), nil
}

// exposedWarning is what the log and the setup page say of an app's
// directory inside work tree root that git does not ignore.
func exposedWarning(dir, root, def string) string {
	rel, _ := filepath.Rel(root, dir)
	fix := "set BOT_APP_DIR to a directory outside it"
	if def != "" && def != dir {
		fix = "set BOT_APP_DIR to a directory outside it, or leave it unset for the default, " + def
	}
	if rel != "." {
		fix += fmt.Sprintf(" (move what is saved there with it), or add /%s/ to %s", filepath.ToSlash(rel), filepath.Join(root, ".gitignore"))
	}
	return fmt.Sprintf("the GitHub App's directory %s is inside the git work tree %s, and git does not ignore it: "+
		"the app's private key and secrets saved there would go into the next `git add -A` and commit. Stop the bot and %s",
		dir, root, fix)
}
