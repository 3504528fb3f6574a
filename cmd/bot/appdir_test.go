package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/appmanifest"
)

// write makes the file name under dir, with its parents.
func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitRun runs the real git in dir, with home as the only configuration
// besides the repository's.
func gitRun(t *testing.T, dir, home string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
}

// How serve was started is read from the environment and the files a
// container runtime leaves.
func TestHostStarted(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		files map[string]string
		goRun bool
		want  appmanifest.Start
	}{
		{name: "a shell", want: appmanifest.StartLocal},
		{name: "go run in a development container", files: map[string]string{".dockerenv": ""}, goRun: true, want: appmanifest.StartLocal},
		{name: "cgroup v2 on the host", files: map[string]string{"proc/1/cgroup": "0::/init.scope\n"}, want: appmanifest.StartLocal},
		{name: "systemd", env: map[string]string{"INVOCATION_ID": "0f1e2d"}, want: appmanifest.StartSystemd},
		{name: "docker", files: map[string]string{".dockerenv": ""}, want: appmanifest.StartContainer},
		{name: "podman", files: map[string]string{"run/.containerenv": ""}, want: appmanifest.StartContainer},
		{name: "cgroup v1 of docker", files: map[string]string{"proc/1/cgroup": "12:pids:/docker/3f2a9c1d7e4b\n"}, want: appmanifest.StartContainer},
		{name: "docker under systemd", env: map[string]string{"INVOCATION_ID": "0f1e2d"}, files: map[string]string{".dockerenv": ""}, want: appmanifest.StartContainer},
		{name: "kubernetes", env: map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, files: map[string]string{".dockerenv": ""}, want: appmanifest.StartKubernetes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range tt.files {
				write(t, root, name, content)
			}
			if got := (host{getenv: env(tt.env), root: root, goRun: tt.goRun}).started(); got != tt.want {
				t.Errorf("started() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBuiltByGoRun(t *testing.T) {
	for exe, want := range map[string]bool{
		"/tmp/go-build3177/b001/exe/bot":      true,
		"/home/li/.cache/go-build/ab/exe/bot": true,
		"/usr/local/bin/bot":                  false,
		"/home/li/go-builds/pullwright/bot":   false,
		"/tmp/go-build3177/b001/bot.test":     false,
	} {
		if got := builtByGoRun(exe); got != want {
			t.Errorf("builtByGoRun(%q) = %v, want %v", exe, got, want)
		}
	}
}

// An unset BOT_APP_DIR is a directory of the user's configuration, or
// systemd's state directory; in a container, or with no home, none.
func TestDefaultAppDir(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the paths below are Linux's")
	}
	tests := []struct {
		name  string
		env   map[string]string
		start appmanifest.Start
		want  string // "" for none
		warns bool   // a directory with a warning: a container's
	}{
		{name: "home", env: map[string]string{"HOME": "/home/li"}, want: "/home/li/.config/pullwright/app"},
		{name: "XDG_CONFIG_HOME", env: map[string]string{"HOME": "/home/li", "XDG_CONFIG_HOME": "/home/li/.cfg"}, want: "/home/li/.cfg/pullwright/app"},
		{name: "relative XDG_CONFIG_HOME is ignored, as os.UserConfigDir does", env: map[string]string{"HOME": "/home/li", "XDG_CONFIG_HOME": "cfg"}, want: "/home/li/.config/pullwright/app"},
		{name: "systemd's state directory", env: map[string]string{"HOME": "/home/pullwright", "STATE_DIRECTORY": "/var/lib/pullwright"}, start: appmanifest.StartSystemd, want: "/var/lib/pullwright/app"},
		{name: "no home", env: map[string]string{}},
		{name: "docker", env: map[string]string{"HOME": "/home/nonroot"}, start: appmanifest.StartContainer, want: "/home/nonroot/.config/pullwright/app", warns: true},
		{name: "kubernetes", env: map[string]string{"HOME": "/home/nonroot"}, start: appmanifest.StartKubernetes, want: "/home/nonroot/.config/pullwright/app", warns: true},
		{name: "docker without a home", env: map[string]string{}, start: appmanifest.StartContainer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := host{getenv: env(tt.env), root: t.TempDir()}.defaultAppDir(tt.start)
			if got != tt.want {
				t.Errorf("defaultAppDir() = %q, want %q", got, tt.want)
			}
			if (got == "" || tt.warns) != (why != "") {
				t.Errorf("defaultAppDir() = %q, %q: want a reason exactly when there is no default, or it is a container's", got, why)
			}
			if tt.warns && !strings.Contains(why, "volume") {
				t.Errorf("a container's default does not say to put it on a volume: %q", why)
			}
		})
	}
}

// A first `serve` with no BOT_APP_DIR, started in a clone as the
// README's quick start does, writes the setup token in the user's
// configuration directory: nothing in the clone, nothing for git to add.
func TestFirstRunDirectoryIsOutsideTheClone(t *testing.T) {
	needGit(t)
	home, root, clone := t.TempDir(), t.TempDir(), t.TempDir()
	if out, err := gitRun(t, clone, home, "init", "-q"); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	write(t, clone, "go.mod", "module example.com/x\n")
	t.Chdir(clone)
	vars := env(map[string]string{
		"HOME": home, "BOT_PUBLIC_URL": "http://127.0.0.1:8080", "BOT_ADDR": "127.0.0.1:0",
		"GITHUB_API_URL": "https://api.github.com",
	})
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := withAppDir(ctx, vars, host{getenv: vars, root: root}, log)
		done <- err
	}()
	want := filepath.Join(home, ".config", "pullwright", "app", "setup-token")
	for {
		if _, err := os.Stat(want); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("withAppDir ended before writing %s: %v\n%s", want, err, &logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("withAppDir after the cancel: %v", err)
	}
	if rel, err := filepath.Rel(clone, want); err == nil && !strings.HasPrefix(rel, "..") {
		t.Errorf("the setup token %s is inside the clone %s", want, clone)
	}
	out, err := gitRun(t, clone, home, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	if strings.TrimSpace(out) != "?? go.mod" {
		t.Errorf("git status in the clone after the first run:\n%s", out)
	}
	if !strings.Contains(logs.String(), "read_it_with=\"cat "+want+"\"") {
		t.Errorf("the log does not say how to read the token:\n%s", &logs)
	}
	if strings.Contains(logs.String(), "level=WARN msg=\"the GitHub App's directory") {
		t.Errorf("the default directory is warned of:\n%s", &logs)
	}
}

// Whether git would add what the bot saves in BOT_APP_DIR is what the
// real `git check-ignore` says, for each way git has of ignoring it.
func TestUnignoredIn(t *testing.T) {
	needGit(t)
	tests := []struct {
		name    string
		files   map[string]string // under the work tree; "HOME/…" under the home directory
		dir     string            // BOT_APP_DIR, under the work tree
		exposed bool
	}{
		{name: "nothing ignores it", dir: "pullwright-app", exposed: true},
		{name: "the repository's .gitignore", files: map[string]string{".gitignore": "/bin/\npullwright-app/\n"}, dir: "pullwright-app"},
		{name: "anchored", files: map[string]string{".gitignore": "/pullwright-app\n"}, dir: "pullwright-app"},
		{name: "a glob", files: map[string]string{".gitignore": "pullwright-*\n"}, dir: "pullwright-app"},
		{name: "another name", files: map[string]string{".gitignore": "pullwright.db*\n"}, dir: "pullwright-app", exposed: true},
		{name: "anchored elsewhere", files: map[string]string{".gitignore": "/pullwright-app/\n"}, dir: "deploy/pullwright-app", exposed: true},
		{name: "an ignored parent", files: map[string]string{".gitignore": "secrets/\n"}, dir: "secrets/app"},
		{name: "an ignored parent wins over a deeper negation", files: map[string]string{".gitignore": "secrets/\n", "secrets/.gitignore": "!app/\n"}, dir: "secrets/app"},
		{name: "negated", files: map[string]string{".gitignore": "pullwright-*/\n!pullwright-app/\n"}, dir: "pullwright-app", exposed: true},
		{name: "a deeper .gitignore", files: map[string]string{"deploy/.gitignore": "app/\n"}, dir: "deploy/app"},
		{name: "a deeper .gitignore of another directory", files: map[string]string{"docs/.gitignore": "app/\n"}, dir: "deploy/app", exposed: true},
		{name: "info/exclude", files: map[string]string{".git/info/exclude": "pullwright-app\n"}, dir: "pullwright-app"},
		{name: "git's default global file", files: map[string]string{"HOME/.config/git/ignore": "pullwright-app/\n"}, dir: "pullwright-app"},
		{name: "core.excludesFile", files: map[string]string{"HOME/.gitconfig": "[core]\n\texcludesFile = ~/.ignore\n", "HOME/.ignore": "pullwright-app\n"}, dir: "pullwright-app"},
		{name: "inside .git", dir: ".git/pullwright-app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, wt := t.TempDir(), t.TempDir()
			if out, err := gitRun(t, wt, home, "init", "-q"); err != nil {
				t.Fatalf("git init: %v\n%s", err, out)
			}
			for name, content := range tt.files {
				if rest, ok := strings.CutPrefix(name, "HOME/"); ok {
					write(t, home, rest, content)
				} else {
					write(t, wt, name, content)
				}
			}
			dir := filepath.Join(wt, tt.dir)
			write(t, dir, "private-key.pem", "key")
			h := host{getenv: env(map[string]string{"HOME": home}), root: t.TempDir()}
			got, err := h.unignoredIn(dir)
			if err != nil {
				t.Fatal(err)
			}
			if (got != "") != tt.exposed || (got != "" && got != wt) {
				t.Errorf("unignoredIn(%s) = %q, want exposed %v", tt.dir, got, tt.exposed)
			}
			if strings.HasPrefix(tt.dir, ".git/") {
				return
			}
			// What git itself says of the key saved there.
			out, err := gitRun(t, wt, home, "check-ignore", "-q", "--", filepath.Join(tt.dir, "private-key.pem"))
			var exit *exec.ExitError
			switch {
			case err == nil:
				if tt.exposed {
					t.Errorf("git ignores %s; the test says it does not", tt.dir)
				}
			case errors.As(err, &exit) && exit.ExitCode() == 1:
				if !tt.exposed {
					t.Errorf("git does not ignore %s; the test says it does", tt.dir)
				}
			default:
				t.Fatalf("git check-ignore: %v\n%s", err, out)
			}
		})
	}
	t.Run("no work tree", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "app")
		got, err := host{getenv: env(nil), root: t.TempDir()}.unignoredIn(dir)
		if got != "" || err != nil {
			t.Errorf("unignoredIn(%s) = %q, %v", dir, got, err)
		}
	})
	t.Run("a linked worktree's exclude is the main repository's", func(t *testing.T) {
		home, main := t.TempDir(), t.TempDir()
		linked := filepath.Join(t.TempDir(), "linked")
		for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "x"}, {"worktree", "add", "-q", linked}} {
			if out, err := gitRun(t, main, home, args...); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		write(t, main, ".git/info/exclude", "pullwright-app/\n")
		dir := filepath.Join(linked, "pullwright-app")
		write(t, dir, "private-key.pem", "key")
		if got, err := (host{getenv: env(map[string]string{"HOME": home}), root: t.TempDir()}).unignoredIn(dir); got != "" || err != nil {
			t.Errorf("unignoredIn(%s) = %q, %v; want ignored", dir, got, err)
		}
		if out, err := gitRun(t, linked, home, "check-ignore", "-q", "--", "pullwright-app/private-key.pem"); err != nil {
			t.Errorf("git does not ignore it either: %v\n%s", err, out)
		}
	})
}

// A BOT_APP_DIR inside a clone that git does not ignore is warned of at
// every start, naming the directory and both ways out; an ignored one
// is not.
func TestServeWarnsOfAnAppDirGitWouldCommit(t *testing.T) {
	needGit(t)
	pemKey := "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"
	for _, ignored := range []bool{false, true} {
		home, clone := t.TempDir(), t.TempDir()
		if out, err := gitRun(t, clone, home, "init", "-q"); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		if ignored {
			write(t, clone, ".gitignore", "/pullwright-app/\n")
		}
		t.Chdir(clone)
		if err := appmanifest.Save("pullwright-app", appmanifest.Credentials{
			AppID: 7, Slug: "bot", WebhookSecret: "w", ClientID: "c", ClientSecret: "s", SessionKey: "k", PrivateKey: []byte(pemKey),
		}); err != nil {
			t.Fatal(err)
		}
		vars := env(map[string]string{"HOME": home, "BOT_APP_DIR": "pullwright-app"})
		var logs bytes.Buffer
		get, err := withAppDir(context.Background(), vars, host{getenv: vars, root: t.TempDir()}, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if get("GITHUB_APP_ID") != "7" {
			t.Errorf("the saved app is not read: GITHUB_APP_ID=%q", get("GITHUB_APP_ID"))
		}
		dir := filepath.Join(clone, "pullwright-app")
		warned := strings.Contains(logs.String(), "level=WARN")
		if ignored {
			if warned {
				t.Errorf("an ignored directory is warned of:\n%s", &logs)
			}
			continue
		}
		for _, want := range []string{
			"the GitHub App's directory " + dir + " is inside the git work tree " + clone,
			"git add -A",
			"leave it unset for the default, " + filepath.Join(home, ".config", "pullwright", "app"),
			"add /pullwright-app/ to " + filepath.Join(clone, ".gitignore"),
		} {
			if !warned || !strings.Contains(logs.String(), want) {
				t.Errorf("the warning does not say %q:\n%s", want, &logs)
			}
		}
	}
}

// With no default directory (no home), serve asks for what is missing:
// the directory when the address is given, else both.
func TestServeAsksForWhatIsMissing(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		container bool
		want      []string
		wantNot   string
	}{
		{name: "a container with an address and no home", env: map[string]string{"BOT_PUBLIC_URL": "https://bot.example.com"}, container: true,
			want: []string{"BOT_APP_DIR is not set", "in a container", "a volume", "outside any git clone"}, wantNot: "set BOT_PUBLIC_URL"},
		{name: "a container without either", env: map[string]string{}, container: true,
			want: []string{"set BOT_PUBLIC_URL", "in a container", "BOT_APP_DIR", "first-run mode"}},
		{name: "no home", env: map[string]string{"BOT_PUBLIC_URL": "https://bot.example.com"},
			want: []string{"BOT_APP_DIR is not set", "neither XDG_CONFIG_HOME nor HOME"}},
		{name: "a home without an address", env: map[string]string{"HOME": "HOME"},
			want: []string{"set BOT_PUBLIC_URL", "by default HOME/.config/pullwright/app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if runtime.GOOS != "linux" {
				t.Skip("the paths are Linux's")
			}
			root, home := t.TempDir(), t.TempDir()
			if tt.container {
				write(t, root, ".dockerenv", "")
			}
			if tt.env["HOME"] == "HOME" {
				tt.env["HOME"] = home
			}
			vars := env(tt.env)
			_, err := withAppDir(context.Background(), vars, host{getenv: vars, root: root}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil {
				t.Fatal("serve started")
			}
			msg := strings.ReplaceAll(err.Error(), home, "HOME")
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the error does not say %q:\n%s", w, msg)
				}
			}
			if tt.wantNot != "" && strings.Contains(msg, tt.wantNot) {
				t.Errorf("the error says %q:\n%s", tt.wantNot, msg)
			}
		})
	}
}

// In a container with a home (a development container, where the README's
// quick start is run), the default directory is used, with a warning
// that it goes with the container unless it is on a volume.
func TestServeInAContainerUsesTheDefaultAndWarns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the paths are Linux's")
	}
	root, home := t.TempDir(), t.TempDir()
	write(t, root, ".dockerenv", "")
	vars := env(map[string]string{"HOME": home})
	var logs strings.Builder
	_, err := withAppDir(context.Background(), vars, host{getenv: vars, root: root}, slog.New(slog.NewTextHandler(&logs, nil)))
	// No address: serve stops and says to set one, after naming the
	// directory it would use.
	if err == nil || !strings.Contains(err.Error(), "BOT_PUBLIC_URL") {
		t.Fatalf("withAppDir: %v, want it to ask for BOT_PUBLIC_URL", err)
	}
	want := filepath.Join(home, ".config", "pullwright", "app")
	if !strings.Contains(err.Error(), want) || !strings.Contains(logs.String(), "on a volume") {
		t.Errorf("the default %s is not used with a warning:\nerror: %v\nlogs: %s", want, err, logs.String())
	}
}
