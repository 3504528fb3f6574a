package action

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// actionHost is the action's repository octo/bot as github.com serves it to
// a runner: git over smart HTTP at URL/octo/bot.git (git http-backend over
// a real bare repository), and each release asset at
// URL/octo/bot/releases/download/TAG/NAME, answered as github.com answers:
// a redirect to a storage host (a second server here) that serves the
// bytes, or 404. It records every asset asked for. Commits and tags are
// made in a work clone and pushed to the bare repository, as a maintainer,
// the release workflow or an attacker with a stolen token would push them.
type actionHost struct {
	t         *testing.T
	URL       string
	bare      string
	work      string
	gitEnv    []string
	installSh []byte

	mu     sync.Mutex
	assets map[string][]byte // by "TAG/NAME"
	asked  []string          // "TAG/NAME" of every release download asked for
}

func newActionHost(t *testing.T) *actionHost {
	t.Helper()
	for _, tool := range []string{"bash", "git", "curl", "sha256sum", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("install.sh and its test need %s: %v", tool, err)
		}
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	installSh, err := os.ReadFile("install.sh")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	home := t.TempDir()
	g := &actionHost{
		t:         t,
		bare:      filepath.Join(root, "repos", "octo", "bot.git"),
		work:      filepath.Join(root, "work"),
		installSh: installSh,
		assets:    map[string][]byte{},
		gitEnv: []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		},
	}

	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		data, ok := g.assets[strings.TrimPrefix(r.URL.Path, "/release-assets/")]
		g.mu.Unlock()
		if !ok || r.URL.Query().Get("sig") == "" {
			http.Error(w, "AccessDenied", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	}))
	t.Cleanup(storage.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /octo/bot/releases/download/{tag}/{name}", func(w http.ResponseWriter, r *http.Request) {
		key := r.PathValue("tag") + "/" + r.PathValue("name")
		g.mu.Lock()
		g.asked = append(g.asked, key)
		_, ok := g.assets[key]
		g.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, storage.URL+"/release-assets/"+key+"?sig=signed", http.StatusFound)
	})
	// Read-only, with no credentials: a public action repository.
	mux.Handle("/octo/bot.git/", &cgi.Handler{
		Path: backend,
		Root: "/",
		Dir:  root,
		Env: append(slices.Clone(g.gitEnv[:4]),
			"GIT_PROJECT_ROOT="+filepath.Join(root, "repos"), "GIT_HTTP_EXPORT_ALL=1"),
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	g.URL = srv.URL

	g.git(root, "init", "-q", "-b", "main", g.work)
	if err := os.MkdirAll(filepath.Join(g.work, "action"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.work, "action", "install.sh"), installSh, 0o755); err != nil {
		t.Fatal(err)
	}
	g.git(g.work, "add", "action/install.sh")
	g.git(g.work, "commit", "-q", "-m", "one")
	g.git(root, "init", "-q", "--bare", g.bare)
	g.push("main")
	return g
}

func (g *actionHost) git(dir string, args ...string) string {
	g.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = g.gitEnv
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// push pushes refs of the work clone to GitHub, forced: an attacker's push
// moves a tag as easily as it makes one.
func (g *actionHost) push(refs ...string) {
	g.t.Helper()
	g.git(g.work, append([]string{"push", "-q", "-f", g.bare}, refs...)...)
}

// commit adds a commit to main and pushes it.
func (g *actionHost) commit(msg string) string {
	g.t.Helper()
	g.git(g.work, "commit", "-q", "--allow-empty", "-m", msg)
	g.push("main")
	return g.git(g.work, "rev-parse", "HEAD")
}

// tag puts a lightweight tag on a commit and pushes it.
func (g *actionHost) tag(name, commit string) {
	g.t.Helper()
	g.git(g.work, "tag", "-f", name, commit)
	g.push("refs/tags/" + name)
}

// upload puts an asset on a release (and replaces one).
func (g *actionHost) upload(tag, name string, data []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.assets[tag+"/"+name] = data
}

// uploadWithSums uploads binaries with a SHA256SUMS of their own, as
// someone holding a stolen token and `gh release upload --clobber` would.
func (g *actionHost) uploadWithSums(tag string, bins map[string][]byte) {
	g.t.Helper()
	dir := g.t.TempDir()
	for name, data := range bins {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			g.t.Fatal(err)
		}
		g.upload(tag, name, data)
	}
	cmd := exec.Command("sh", "-c", "sha256sum -- bot-*")
	cmd.Dir = dir
	sums, err := cmd.Output()
	if err != nil {
		g.t.Fatalf("sha256sum: %v", err)
	}
	g.upload(tag, "SHA256SUMS", sums)
}

// release makes a release as .github/workflows/release.yml does, from
// main's head: the binaries in a directory, scripts/release-commit.sh to
// commit their checksums and tag that commit, the tag pushed, and every
// file of the directory uploaded except those named in skip. main is left
// where it was: a release's commit is reachable from its tag only.
func (g *actionHost) release(version string, bins map[string][]byte, skip ...string) string {
	g.t.Helper()
	dist := g.t.TempDir()
	for name, data := range bins {
		if err := os.WriteFile(filepath.Join(dist, name), data, 0o755); err != nil {
			g.t.Fatal(err)
		}
	}
	script, err := filepath.Abs("../scripts/release-commit.sh")
	if err != nil {
		g.t.Fatal(err)
	}
	g.git(g.work, "checkout", "-q", "--detach")
	cmd := exec.Command("bash", script, version, dist)
	cmd.Dir = g.work
	cmd.Env = g.gitEnv
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		errors.As(err, &ee)
		g.t.Fatalf("release-commit.sh %s: %v\n%s", version, err, ee.Stderr)
	}
	commit := strings.TrimSpace(string(out))
	g.git(g.work, "checkout", "-q", "main")
	g.push("refs/tags/" + version)
	entries, err := os.ReadDir(dist)
	if err != nil {
		g.t.Fatal(err)
	}
	for _, e := range entries {
		if slices.Contains(skip, e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dist, e.Name()))
		if err != nil {
			g.t.Fatal(err)
		}
		g.upload(version, e.Name(), data)
	}
	return commit
}

// checkout is the action's files at a commit, as the runner puts them
// under GITHUB_ACTION_PATH: the repository's archive, not a clone.
func (g *actionHost) checkout(commit string) string {
	g.t.Helper()
	dir := g.t.TempDir()
	cmd := exec.Command("git", "archive", "--format=tar", commit)
	cmd.Dir = g.work
	cmd.Env = g.gitEnv
	out, err := cmd.Output()
	if err != nil {
		g.t.Fatalf("git archive %s: %v", commit, err)
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			g.t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, data, fs.FileMode(h.Mode)&0o755)
			}
		}
		if err != nil {
			g.t.Fatal(err)
		}
	}
	return dir
}

// takeAsked returns the release downloads asked for since the last call.
func (g *actionHost) takeAsked() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.asked
	g.asked = nil
	return a
}

// fakeBot is a binary that writes a line to $RAN_LOG when it runs.
func fakeBot(label string) []byte {
	return []byte("#!/bin/sh\necho " + label + " \"$@\" >>\"$RAN_LOG\"\n")
}

// actionRun is what a job saw of the action's two steps.
type actionRun struct {
	installErr error
	stderr     string
	output     string // what the install step wrote to GITHUB_OUTPUT
	ran        string // what a binary wrote to RAN_LOG
	temp       string // RUNNER_TEMP
}

// run runs the action's steps from action.yml as a runner does: the
// install step's script with GITHUB_ACTION_PATH at the checkout, then, if
// it succeeded, the bot step with the binary it wrote to GITHUB_OUTPUT. env
// holds the install step's variables (action.yml names them) and the
// runner's.
func (g *actionHost) run(checkout string, env map[string]string) actionRun {
	g.t.Helper()
	a := readActionYML(g.t)
	install, bot := a.Runs.Steps[0], a.Runs.Steps[1]
	temp := g.t.TempDir()
	r := actionRun{temp: temp}
	out := filepath.Join(temp, "github_output")
	ranLog := filepath.Join(g.t.TempDir(), "ran")
	vars := map[string]string{
		"ACTION_REPOSITORY": "octo/bot", "SERVER_URL": g.URL,
		"RUNNER_OS": "Linux", "RUNNER_ARCH": "X64",
	}
	for k, v := range env {
		vars[k] = v
	}
	base := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + temp, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"RUNNER_TEMP=" + temp, "GITHUB_OUTPUT=" + out, "GITHUB_ACTION_PATH=" + checkout, "RAN_LOG=" + ranLog,
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", install.Run)
	cmd.Env = slices.Clone(base)
	for k, v := range vars {
		if _, ok := install.Env[k]; !ok && !strings.HasPrefix(k, "RUNNER_") {
			g.t.Fatalf("the install step of action.yml sets no %s", k)
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	r.installErr = cmd.Run()
	r.stderr = stderr.String()
	if b, err := os.ReadFile(out); err == nil {
		r.output = string(b)
	}
	if r.installErr == nil {
		path, ok := strings.CutPrefix(strings.TrimSpace(r.output), "bot=")
		if !ok {
			g.t.Fatalf("the install step wrote %q to GITHUB_OUTPUT, want bot=PATH", r.output)
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", bot.Run)
		cmd.Env = append(slices.Clone(base), "BOT="+path)
		if b, err := cmd.CombinedOutput(); err != nil {
			g.t.Fatalf("the bot step: %v\n%s", err, b)
		}
	}
	if b, err := os.ReadFile(ranLog); err == nil {
		r.ran = strings.TrimSpace(string(b))
	}
	return r
}

// TestInstallRunsThePinnedBytes runs the action's install and bot steps
// against a fake GitHub holding releases made by scripts/release-commit.sh,
// and releases someone else changed afterwards: a tag added to a release's
// commit, an asset replaced (with a SHA256SUMS to match), a tag on a
// commit between releases. Only the bytes whose checksums a commit of the
// action carries ever run, and no SHA256SUMS of a release is ever asked
// for.
func TestInstallRunsThePinnedBytes(t *testing.T) {
	g := newActionHost(t)
	all := func(v string) map[string][]byte {
		bins := map[string][]byte{}
		for _, p := range []string{"linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64"} {
			bins["bot-"+p] = fakeBot(v + "-" + p)
		}
		return bins
	}
	evil := map[string][]byte{"bot-linux-amd64": fakeBot("evil")}

	// A release tag pushed by hand, not by the release workflow: on a
	// commit of main, its SHA256SUMS only among its assets.
	first := g.git(g.work, "rev-parse", "HEAD")
	g.tag("v0.9.0", first)
	g.uploadWithSums("v0.9.0", map[string][]byte{"bot-linux-amd64": fakeBot("v0.9.0-linux-amd64")})

	// v1.0.0 has Linux binaries only.
	v100 := g.release("v1.0.0", map[string][]byte{
		"bot-linux-amd64": fakeBot("v1.0.0-linux-amd64"), "bot-linux-arm64": fakeBot("v1.0.0-linux-arm64"),
	})
	g.commit("two")
	// v1.1.0 lacks one upload; v1 moves to it.
	v110 := g.release("v1.1.0", all("v1.1.0"), "bot-darwin-amd64")
	g.tag("v1", v110)
	// Someone tags v1.2.0's commit v1.2.1 and publishes a release of theirs.
	v120 := g.release("v1.2.0", all("v1.2.0"))
	g.git(g.work, "tag", "-a", "-m", "v1.2.1", "v1.2.1", v120)
	g.push("refs/tags/v1.2.1")
	g.uploadWithSums("v1.2.1", evil)
	// Someone replaces v1.3.0's binary and SHA256SUMS.
	v130 := g.release("v1.3.0", all("v1.3.0"))
	g.uploadWithSums("v1.3.0", evil)
	// Someone moves v1.4.0's tag away and tags its commit v1.5.0.
	v140 := g.release("v1.4.0", all("v1.4.0"))
	g.git(g.bare, "tag", "-d", "v1.4.0")
	g.tag("v1.5.0", v140)
	g.uploadWithSums("v1.5.0", evil)
	// Someone tags main's head, a commit between releases.
	head := g.commit("three")
	g.tag("v9.0.0", head)
	g.uploadWithSums("v9.0.0", evil)

	tests := []struct {
		name    string
		at      string // the commit whose checkout runs
		env     map[string]string
		edit    func(checkout string) // changes the checkout first
		want    string                // the line the binary that ran writes
		wantErr string
		asked   []string // release downloads asked for
	}{
		{name: "a release tag", at: v100, env: map[string]string{"ACTION_REF": "v1.0.0"},
			want: "v1.0.0-linux-amd64 action", asked: []string{"v1.0.0/bot-linux-amd64"}},
		{name: "a release's commit", at: v100, env: map[string]string{"ACTION_REF": v100},
			want: "v1.0.0-linux-amd64 action", asked: []string{"v1.0.0/bot-linux-amd64"}},
		{name: "a moving tag", at: v110, env: map[string]string{"ACTION_REF": "v1"},
			want: "v1.1.0-linux-amd64 action", asked: []string{"v1.1.0/bot-linux-amd64"}},
		{name: "an ARM64 runner", at: v110, env: map[string]string{"ACTION_REF": "v1.1.0", "RUNNER_ARCH": "ARM64"},
			want: "v1.1.0-linux-arm64 action", asked: []string{"v1.1.0/bot-linux-arm64"}},
		{name: "a macOS runner", at: v110, env: map[string]string{"ACTION_REF": v110, "RUNNER_OS": "macOS", "RUNNER_ARCH": "ARM64"},
			want: "v1.1.0-darwin-arm64 action", asked: []string{"v1.1.0/bot-darwin-arm64"}},
		{name: "the version input names the checkout's release", at: v100, env: map[string]string{"ACTION_REF": "v1.0.0", "VERSION": "v1.0.0"},
			want: "v1.0.0-linux-amd64 action", asked: []string{"v1.0.0/bot-linux-amd64"}},
		{name: "no ref: the checkout names its release", at: v100, env: map[string]string{},
			want: "v1.0.0-linux-amd64 action", asked: []string{"v1.0.0/bot-linux-amd64"}},

		{name: "a second release tag on the commit, named by its tag", at: v120, env: map[string]string{"ACTION_REF": "v1.2.0"},
			wantErr: "carries more than one release tag: v1.2.0 v1.2.1"},
		{name: "a second release tag on the commit, named by the commit", at: v120, env: map[string]string{"ACTION_REF": v120},
			wantErr: "carries more than one release tag: v1.2.0 v1.2.1"},
		{name: "another release's tag on the commit", at: v140, env: map[string]string{"ACTION_REF": v140},
			wantErr: "is tagged v1.5.0, but the checksums committed on it are those of v1.4.0"},
		{name: "an asset replaced after the release", at: v130, env: map[string]string{"ACTION_REF": "v1.3.0"},
			wantErr: "the release's asset is not what was released, refusing to run it", asked: []string{"v1.3.0/bot-linux-amd64"}},
		{name: "a commit between releases that someone tagged", at: head, env: map[string]string{"ACTION_REF": head},
			wantErr: head + " of octo/bot is no release"},
		{name: "a branch", at: head, env: map[string]string{"ACTION_REF": "main"},
			wantErr: "main of octo/bot is no release"},
		{name: "a tag pushed by hand", at: first, env: map[string]string{"ACTION_REF": "v0.9.0"},
			wantErr: "v0.9.0 of octo/bot is no release"},
		{name: "no ref on a commit between releases", at: head, env: map[string]string{},
			wantErr: "this commit of octo/bot is no release"},
		{name: "a checkout with a version and no checksums", at: v100, env: map[string]string{"ACTION_REF": v100},
			edit:    func(c string) { os.Remove(filepath.Join(c, "action", "SHA256SUMS")) },
			wantErr: "has only one of action/VERSION and action/SHA256SUMS"},

		{name: "the version input on a commit between releases", at: head, env: map[string]string{"ACTION_REF": "main", "VERSION": "v1.0.0"},
			want: "v1.0.0-linux-amd64 action", asked: []string{"v1.0.0/bot-linux-amd64"}},
		{name: "the version input names a release with a second tag", at: head, env: map[string]string{"ACTION_REF": "main", "VERSION": "v1.2.0"},
			wantErr: "v1.2.0 (" + v120 + ") carries more than one release tag: v1.2.0 v1.2.1"},
		{name: "the version input names someone's tag on a commit between releases", at: head, env: map[string]string{"ACTION_REF": "main", "VERSION": "v9.0.0"},
			wantErr: "v9.0.0 of octo/bot has no checksums committed with it"},
		{name: "the version input names a tag pushed by hand", at: head, env: map[string]string{"ACTION_REF": "main", "VERSION": "v0.9.0"},
			wantErr: "v0.9.0 of octo/bot has no checksums committed with it"},
		{name: "the version input names another release than the checkout", at: v100, env: map[string]string{"ACTION_REF": "v1.0.0", "VERSION": "v1.1.0"},
			wantErr: "is release v1.0.0 and runs only that release's binary, but the version input asks for v1.1.0"},
		{name: "a version that is no tag", at: head, env: map[string]string{"ACTION_REF": "main", "VERSION": "latest"},
			wantErr: "version latest is not a release tag"},

		{name: "no such ref", at: v100, env: map[string]string{"ACTION_REF": "v7"},
			wantErr: "octo/bot has no tag or branch named v7"},
		{name: "no repository", at: v100, env: map[string]string{"ACTION_REPOSITORY": "", "ACTION_REF": "v1.0.0"},
			wantErr: "the action's repository is unknown"},
		{name: "a release with no binary for the runner", at: v100, env: map[string]string{"ACTION_REF": "v1.0.0", "RUNNER_OS": "macOS"},
			wantErr: "name no single bot-darwin-amd64"},
		{name: "an asset the release lacks", at: v110, env: map[string]string{"ACTION_REF": "v1.1.0", "RUNNER_OS": "macOS"},
			wantErr: "download bot-darwin-amd64 of octo/bot v1.1.0", asked: []string{"v1.1.0/bot-darwin-amd64"}},
		{name: "a runner with no binary", at: v100, env: map[string]string{"ACTION_REF": "v1.0.0", "RUNNER_OS": "Windows"},
			wantErr: "no released binary for Windows runners"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkout := g.checkout(tc.at)
			if tc.edit != nil {
				tc.edit(checkout)
			}
			g.takeAsked()
			r := g.run(checkout, tc.env)
			if asked := g.takeAsked(); !slices.Equal(asked, tc.asked) {
				t.Errorf("asked the releases for %q, want %q", asked, tc.asked)
			}
			if tc.wantErr == "" {
				if r.installErr != nil {
					t.Fatalf("install: %v\n%s", r.installErr, r.stderr)
				}
				if r.ran != tc.want {
					t.Errorf("the binary that ran wrote %q, want %q\n%s", r.ran, tc.want, r.stderr)
				}
				return
			}
			if r.installErr == nil {
				t.Fatalf("installed (%s; the binary wrote %q), want an error containing %q\n%s", r.output, r.ran, tc.wantErr, r.stderr)
			}
			if !strings.Contains(r.stderr, "::error title=Pullwright::") || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want an error annotation containing %q", r.stderr, tc.wantErr)
			}
			if r.ran != "" || r.output != "" {
				t.Errorf("a refused install ran %q and output %q", r.ran, r.output)
			}
			// Nothing a later step could run is left behind.
			filepath.WalkDir(r.temp, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				if data, _ := os.ReadFile(p); bytes.HasPrefix(data, []byte("#!/bin/sh\necho ")) {
					t.Errorf("a refused binary is left at %s", p)
				}
				return nil
			})
		})
	}
}

// TestReleaseCommitRefuses checks what scripts/release-commit.sh will not
// make a release of.
func TestReleaseCommitRefuses(t *testing.T) {
	tests := []struct {
		name    string
		version string
		prepare func(g *actionHost, dist string)
		wantErr string
	}{
		{name: "a version that is no tag", version: "1.0.0", wantErr: "is not a release tag"},
		{name: "a tag that exists", version: "v1.0.0",
			prepare: func(g *actionHost, dist string) { g.git(g.work, "tag", "v1.0.0") },
			wantErr: "the tag v1.0.0 exists already"},
		{name: "a release's commit merged into the branch", version: "v1.0.1",
			prepare: func(g *actionHost, dist string) {
				g.git(g.work, "merge", "-q", "--ff-only", g.release("v1.0.0", map[string][]byte{"bot-linux-amd64": fakeBot("v1.0.0")}))
			},
			wantErr: "HEAD already has action/VERSION"},
		{name: "changes not committed", version: "v1.0.0",
			prepare: func(g *actionHost, dist string) {
				os.WriteFile(filepath.Join(g.work, "action", "install.sh"), []byte("#!/bin/sh\n"), 0o755)
			},
			wantErr: "changes that are not committed"},
		{name: "a name SHA256SUMS cannot hold as one field", version: "v1.0.0",
			prepare: func(g *actionHost, dist string) { os.WriteFile(filepath.Join(dist, "bot linux"), nil, 0o644) },
			wantErr: "is not a plain file name"},
		{name: "nothing to release", version: "v1.0.0",
			prepare: func(g *actionHost, dist string) { os.Remove(filepath.Join(dist, "bot-linux-amd64")) },
			wantErr: "nothing to release"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newActionHost(t)
			dist := t.TempDir()
			if err := os.WriteFile(filepath.Join(dist, "bot-linux-amd64"), fakeBot("x"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.prepare != nil {
				tc.prepare(g, dist)
			}
			before := g.git(g.work, "rev-parse", "HEAD")
			script, err := filepath.Abs("../scripts/release-commit.sh")
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", script, tc.version, dist)
			cmd.Dir = g.work
			cmd.Env = g.gitEnv
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.wantErr) {
				t.Fatalf("release-commit.sh %s: %v\n%s\nwant an error containing %q", tc.version, err, out, tc.wantErr)
			}
			if after := g.git(g.work, "rev-parse", "HEAD"); after != before {
				t.Errorf("HEAD moved from %s to %s", before, after)
			}
		})
	}
}

// TestReleaseWorkflowCommitsWhatItUploads reads
// .github/workflows/release.yml: a release is made by running it, never by
// pushing a tag (a pushed tag would be on a commit without checksums), and
// its steps build every file, commit their checksums and tag that commit
// with scripts/release-commit.sh, push the tag, and only then upload dist's
// files: the tag's commit names exactly the bytes uploaded.
func TestReleaseWorkflowCommitsWhatItUploads(t *testing.T) {
	b, err := os.ReadFile("../.github/workflows/release.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			Steps []struct {
				Name string `yaml:"name"`
				Run  string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("parse release.yml: %v", err)
	}
	if _, ok := wf.On["push"]; ok || len(wf.On) != 1 || wf.On["workflow_dispatch"] == nil {
		t.Errorf("release.yml runs on %v, want workflow_dispatch only", slices.Sorted(maps.Keys(wf.On)))
	}
	steps := wf.Jobs["release"].Steps
	find := func(what string) []int {
		var at []int
		for i, s := range steps {
			if strings.Contains(s.Run, what) {
				at = append(at, i)
			}
		}
		return at
	}
	commit, push, upload := find("scripts/release-commit.sh"), find(`git push origin "refs/tags/$VERSION"`), find("gh release create")
	writes := append(find(`"dist/`), find("> dist/")...)
	if len(commit) != 1 || len(push) != 1 || len(upload) != 1 || len(writes) == 0 {
		t.Fatalf("steps that commit the checksums %v, push the tag %v, upload %v, write dist %v: want one of each but the writes", commit, push, upload, writes)
	}
	if slices.Max(writes) >= commit[0] || commit[0] > push[0] || push[0] >= upload[0] {
		t.Errorf("steps: write dist %v, commit the checksums %d, push the tag %d, upload %d: want that order", writes, commit[0], push[0], upload[0])
	}
	if !strings.Contains(steps[upload[0]].Run, "dist/*") || !strings.Contains(steps[upload[0]].Run, "--verify-tag") {
		t.Errorf("the upload %q must upload dist/* to the pushed tag (--verify-tag)", steps[upload[0]].Run)
	}
}
