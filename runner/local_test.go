package runner_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/syncbuf"
	"github.com/pullwright/pullwright/runner"
)

// newLocal returns a Local whose runs live under a directory of the test, and
// that directory.
func newLocal(t *testing.T) (*runner.Local, string) {
	t.Helper()
	runs := t.TempDir()
	return &runner.Local{TempDir: runs, Logger: slog.New(slog.DiscardHandler)}, runs
}

// run runs s and checks that the run left nothing behind in runs.
func run(t *testing.T, l *runner.Local, runs string, s pullwright.RunSpec) (pullwright.RunResult, error) {
	t.Helper()
	res, err := l.Run(t.Context(), s)
	assertEmpty(t, runs)
	return res, err
}

// assertEmpty fails the test if the directory holds anything.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Errorf("run directory %s not removed: %v", dir, entries)
	}
}

// writeTree creates files (path → contents) under dir; a path ending in "/" is
// a directory.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot describes every entry under dir: type, permissions, contents or
// link target, and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		desc := fmt.Sprintf("%v %v", info.Mode(), info.ModTime().UnixNano())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		}
		snap[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestLocalRun(t *testing.T) {
	tests := []struct {
		name     string
		command  string
		wantCode int
		want     string // exact output, unless empty
		contains []string
	}{
		{name: "exit 0", command: "echo hello", wantCode: 0, want: "hello\n"},
		{name: "exit 3", command: "echo oops; exit 3", wantCode: 3, want: "oops\n"},
		{name: "command not found", command: "no-such-command-pullwright", wantCode: 127, contains: []string{"not found"}},
		{name: "stderr captured", command: "echo bad >&2; exit 1", wantCode: 1, want: "bad\n"},
		{name: "stdout and stderr interleaved", command: "echo one; echo two >&2; echo three", wantCode: 0, want: "one\ntwo\nthree\n"},
		{name: "runs in the copy", command: "cat a.txt", wantCode: 0, want: "from workspace\n"},
		{name: "modes preserved", command: "./script.sh", wantCode: 0, want: "script ran\n"},
		{name: "stdin is empty", command: "cat; echo done", wantCode: 0, want: "done\n"},
		{name: "killed by a signal", command: "echo before; kill -9 $$", wantCode: -1, want: "before\n[killed by signal 9 (SIGKILL)]\n"},
		{name: "note on its own line", command: "printf partial; kill -TERM $$", wantCode: -1, want: "partial\n[killed by signal 15 (SIGTERM)]\n"},
	}
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"a.txt": "from workspace\n", "script.sh": "#!/bin/sh\necho script ran\n"})
	if err := os.Chmod(filepath.Join(ws, "script.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, runs := newLocal(t)
			res, err := run(t, l, runs, pullwright.RunSpec{Dir: ws, Command: tt.command})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != tt.wantCode {
				t.Errorf("ExitCode = %d, want %d (output %q)", res.ExitCode, tt.wantCode, res.Output)
			}
			if tt.want != "" && res.Output != tt.want {
				t.Errorf("Output = %q, want %q", res.Output, tt.want)
			}
			for _, s := range tt.contains {
				if !strings.Contains(res.Output, s) {
					t.Errorf("Output = %q, want it to contain %q", res.Output, s)
				}
			}
			if res.TimedOut || res.Truncated || res.OOMKilled {
				t.Errorf("TimedOut, Truncated, OOMKilled = %v, %v, %v, want all false", res.TimedOut, res.Truncated, res.OOMKilled)
			}
			if res.Duration <= 0 {
				t.Errorf("Duration = %v, want > 0", res.Duration)
			}
		})
	}
}

func TestLocalLeavesWorkspaceUnchanged(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{
		"keep.txt":       "original\n",
		"delete.txt":     "delete me\n",
		"chmod.sh":       "#!/bin/sh\n",
		"sub/nested.txt": "nested\n",
		"readonly/f.txt": "in a read-only directory\n",
		".git/HEAD":      "ref: refs/heads/main\n",
	})
	if err := os.Symlink("keep.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(ws, "readonly"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(ws, "readonly"), 0o755) })
	before := snapshot(t, ws)

	l, runs := newLocal(t)
	res, err := run(t, l, runs, pullwright.RunSpec{Dir: ws, Command: `set -e
		test -f readonly/f.txt
		echo changed > keep.txt
		echo through the link >> link
		rm delete.txt
		chmod 000 chmod.sh
		rm -rf sub .git
		mkdir new && echo new > new/file
		ln -sf /etc/passwd link
		chmod -R a-w . 
		chmod 000 readonly
		echo done`})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 0 || res.Output != "done\n" {
		t.Fatalf("Result = %d %q, want 0 %q", res.ExitCode, res.Output, "done\n")
	}
	after := snapshot(t, ws)
	if !equalMaps(before, after) {
		t.Errorf("workspace changed:\nbefore %v\nafter  %v", before, after)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}

func TestLocalEnvironment(t *testing.T) {
	t.Setenv("PULLWRIGHT_SECRET_TEST", "hunter2")
	t.Setenv("GITHUB_TOKEN", "ghs_notarealtoken")
	t.Setenv("OPENAI_API_KEY", "sk-notarealkey")
	ws := t.TempDir()
	l, runs := newLocal(t)
	res, err := run(t, l, runs, pullwright.RunSpec{Dir: ws, Command: `env; touch "$HOME/h" "$TMPDIR/t" && echo writable`})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, secret := range []string{"hunter2", "PULLWRIGHT_SECRET_TEST", "GITHUB_TOKEN", "ghs_", "OPENAI_API_KEY", "sk-"} {
		if strings.Contains(res.Output, secret) {
			t.Errorf("command saw %q in its environment:\n%s", secret, res.Output)
		}
	}
	allowed := []string{"PATH", "HOME", "TMPDIR", "LANG", "CI", "GOCACHE", "GOPATH",
		"PWD", "OLDPWD", "SHLVL", "_"} // the last four are set by the shell itself
	env := map[string]string{}
	for line := range strings.Lines(res.Output) {
		line = strings.TrimSuffix(line, "\n")
		if line == "writable" {
			continue
		}
		name, value, _ := strings.Cut(line, "=")
		if !slices.Contains(allowed, name) {
			t.Errorf("unexpected variable %q", line)
		}
		env[name] = value
	}
	want := map[string]string{"PATH": runner.DefaultPath, "LANG": "C.UTF-8", "CI": "true"}
	for name, value := range want {
		if env[name] != value {
			t.Errorf("%s = %q, want %q", name, env[name], value)
		}
	}
	for _, name := range []string{"HOME", "TMPDIR", "GOCACHE", "GOPATH"} {
		if !strings.HasPrefix(env[name], runs+string(filepath.Separator)) {
			t.Errorf("%s = %q, want a directory under %s", name, env[name], runs)
		}
	}
	if !strings.HasSuffix(res.Output, "writable\n") {
		t.Errorf("HOME and TMPDIR not writable: %q", res.Output)
	}
}

// TestLocalKillsProcessGroup checks that processes the command started in the
// background die with it: after Run returns and the background process would
// have woken up, the marker file it was to write (outside the copy, which is
// gone by then) does not exist.
func TestLocalKillsProcessGroup(t *testing.T) {
	tests := []struct {
		name         string
		command      string // %[1]s is the marker path
		timeout      time.Duration
		wantTimedOut bool
		wantCode     int
	}{
		{
			name:         "timeout kills background grandchild",
			command:      `echo before; (sleep 1; touch %[1]s) & wait`,
			timeout:      200 * time.Millisecond,
			wantTimedOut: true,
			wantCode:     -1,
		},
		{
			name:         "timeout kills nested shells",
			command:      `echo before; sh -c 'sh -c "sleep 1; touch %[1]s" & wait' & wait`,
			timeout:      200 * time.Millisecond,
			wantTimedOut: true,
			wantCode:     -1,
		},
		{
			name:     "exit kills what was left running",
			command:  `echo before; (sleep 1; touch %[1]s) & exit 0`,
			timeout:  time.Minute,
			wantCode: 0,
		},
		{
			name:     "exit kills a leftover holding the output pipe",
			command:  `echo before; sleep 1000 & exit 4 # %[1]s is not used`,
			timeout:  time.Minute,
			wantCode: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "marker")
			l, runs := newLocal(t)
			res, err := run(t, l, runs, pullwright.RunSpec{
				Dir:     t.TempDir(),
				Command: fmt.Sprintf(tt.command, marker),
				Timeout: tt.timeout,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.TimedOut != tt.wantTimedOut || res.ExitCode != tt.wantCode {
				t.Errorf("TimedOut, ExitCode = %v, %d, want %v, %d", res.TimedOut, res.ExitCode, tt.wantTimedOut, tt.wantCode)
			}
			if !strings.HasPrefix(res.Output, "before\n") {
				t.Errorf("Output = %q, want the output so far", res.Output)
			}
			if tt.wantTimedOut && !strings.HasSuffix(res.Output, fmt.Sprintf("[timed out after %s]\n", tt.timeout)) {
				t.Errorf("Output = %q, want a timeout note", res.Output)
			}
			time.Sleep(1500 * time.Millisecond) // past the background sleep
			if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("background process survived the run: marker %s exists (err %v)", marker, err)
			}
		})
	}
}

func TestLocalBoundsOutput(t *testing.T) {
	const total = 50 << 20
	tests := []struct {
		name      string
		maxOutput int
		wantKept  int
	}{
		{"default 1 MiB", 0, runner.DefaultMaxOutput},
		{"64 KiB", 64 << 10, 64 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, runs := newLocal(t)
			res, err := run(t, l, runs, pullwright.RunSpec{
				Dir:       t.TempDir(),
				Command:   fmt.Sprintf(`printf START; head -c %d /dev/zero | tr '\0' x; printf END`, total),
				MaxOutput: tt.maxOutput,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != 0 || !res.Truncated {
				t.Errorf("ExitCode, Truncated = %d, %v, want 0, true", res.ExitCode, res.Truncated)
			}
			produced := len("START") + total + len("END")
			marker := fmt.Sprintf("\n[… %d bytes cut …]\n", produced-tt.wantKept)
			if got, limit := len(res.Output), tt.wantKept+len(marker); got != limit {
				t.Errorf("len(Output) = %d, want %d", got, limit)
			}
			head, tail, found := strings.Cut(res.Output, marker)
			if !found {
				t.Fatalf("Output has no marker %q", marker)
			}
			if !strings.HasPrefix(head, "STARTxxx") || !strings.HasSuffix(tail, "xxxEND") {
				t.Errorf("Output does not keep head and tail: %q … %q", head[:20], tail[len(tail)-20:])
			}
			if len(head) != tt.wantKept/2 || len(tail) != tt.wantKept-tt.wantKept/2 {
				t.Errorf("kept %d + %d bytes, want %d + %d", len(head), len(tail), tt.wantKept/2, tt.wantKept-tt.wantKept/2)
			}
		})
	}
}

func TestLocalContextCancel(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	l, runs := newLocal(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(ready); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	res, err := l.Run(ctx, pullwright.RunSpec{Dir: t.TempDir(), Command: fmt.Sprintf("echo before; touch %s; sleep 1000", ready)})
	assertEmpty(t, runs)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want one wrapping context.Canceled", err)
	}
	if res.ExitCode != -1 || res.TimedOut {
		t.Errorf("ExitCode, TimedOut = %d, %v, want -1, false", res.ExitCode, res.TimedOut)
	}
	if res.Output != "before\n[cancelled: context canceled]\n" {
		t.Errorf("Output = %q, want the output so far and a note", res.Output)
	}
}

func TestLocalSymlinks(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "outside\n", "dir/inner.txt": "outside dir\n"})
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"real.txt": "inside\n"})
	links := map[string]string{
		"to-file":     filepath.Join(outside, "secret.txt"),
		"to-dir":      filepath.Join(outside, "dir"),
		"relative-up": "../../escape",
		"inside":      "real.txt",
		"dangling":    "does-not-exist",
		"loop":        "loop",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	l, runs := newLocal(t)
	res, err := run(t, l, runs, pullwright.RunSpec{Dir: ws, Command: `
		for f in to-file to-dir relative-up inside dangling loop; do
			test -L "$f" && echo "$f -> $(readlink "$f")"
		done
		find . -type f | sort`})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := fmt.Sprintf("to-file -> %s\nto-dir -> %s\nrelative-up -> ../../escape\ninside -> real.txt\ndangling -> does-not-exist\nloop -> loop\n./real.txt\n",
		links["to-file"], links["to-dir"])
	if res.Output != want {
		t.Errorf("Output =\n%s\nwant\n%s", res.Output, want)
	}
}

func TestLocalRunnerErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	writeTree(t, filepath.Dir(file), map[string]string{"file": "x"})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		spec pullwright.RunSpec
		is   error
	}{
		{"no directory", t.Context(), pullwright.RunSpec{Command: "true"}, nil},
		{"missing directory", t.Context(), pullwright.RunSpec{Dir: filepath.Join(t.TempDir(), "nope"), Command: "true"}, fs.ErrNotExist},
		{"directory is a file", t.Context(), pullwright.RunSpec{Dir: file, Command: "true"}, nil},
		{"empty command", t.Context(), pullwright.RunSpec{Dir: t.TempDir()}, nil},
		{"context already cancelled", cancelled, pullwright.RunSpec{Dir: t.TempDir(), Command: "true"}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, runs := newLocal(t)
			res, err := l.Run(tt.ctx, tt.spec)
			assertEmpty(t, runs)
			if err == nil {
				t.Fatalf("Run = %+v, nil; want an error", res)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Run error = %v, want one wrapping %v", err, tt.is)
			}
			if res.ExitCode != -1 {
				t.Errorf("ExitCode = %d, want -1", res.ExitCode)
			}
		})
	}
}

func TestLocalLogs(t *testing.T) {
	t.Setenv("PULLWRIGHT_SECRET_TEST", "hunter2")
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	l := runner.NewLocal(t.TempDir(), log)
	if got := strings.Count(buf.String(), "level=WARN"); got != 1 || !strings.Contains(buf.String(), "NO ISOLATION") {
		t.Errorf("NewLocal logged %d warnings, want 1 about isolation:\n%s", got, buf.String())
	}
	_, err := l.Run(t.Context(), pullwright.RunSpec{
		Dir:     t.TempDir(),
		Command: "env >/dev/null; exit 2",
		Labels:  map[string]string{"task_id": "T42", "request_id": "R7"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	logs := buf.String()
	for _, want := range []string{
		`msg="runner: start" request_id=R7 task_id=T42 command="env >/dev/null; exit 2"`,
		`msg="runner: end" request_id=R7 task_id=T42 command="env >/dev/null; exit 2" exit_code=2 duration=`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	for _, secret := range []string{"hunter2", "PATH=", runner.DefaultPath} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs)
		}
	}
}

// Local has no isolation to apply a Spec's sandbox limits to: it runs the
// command as it would without them, rather than failing a task over a
// setting meant for the Docker backend.
func TestLocalIgnoresSandboxLimits(t *testing.T) {
	l, runs := newLocal(t)
	res, err := run(t, l, runs, pullwright.RunSpec{Dir: t.TempDir(), Command: "echo ran", Network: "bridge", Memory: 64 << 20, NanoCPUs: 5e8, Disk: 1 << 20})
	if err != nil || res.ExitCode != 0 || res.Output != "ran\n" {
		t.Errorf("Run = %+v, %v; want it to run as without limits", res, err)
	}
}
