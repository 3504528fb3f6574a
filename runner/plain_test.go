package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
)

// plainContainer is a container as `docker run --network none` makes it:
// the image's user, working directory and environment, a writable root,
// Docker's default capabilities, no terminal and no stdin. User, Env,
// Mounts and WorkingDir are what a `docker run -u -e -v -w` would add.
type plainContainer struct {
	Image, Command string
	User           string
	Env            []string
	Mounts         []mount.Mount
	WorkingDir     string
	Timeout        time.Duration // default a minute
}

// run runs the container through the engine's API and returns its output
// (stdout and stderr as written, interleaved) and exit code.
func (p plainContainer) run(t *testing.T) (string, int) {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if p.Timeout == 0 {
		p.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(t.Context(), p.Timeout)
	defer cancel()
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: p.Image, Cmd: []string{"/bin/sh", "-c", p.Command}, User: p.User, Env: p.Env,
			WorkingDir: p.WorkingDir},
		HostConfig: &container.HostConfig{NetworkMode: "none", Mounts: p.Mounts},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, client.ContainerRemoveOptions{Force: true})
	wait := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	var exit int
	select {
	case r := <-wait.Result:
		exit = int(r.StatusCode)
	case err := <-wait.Error:
		t.Fatalf("plain container of %s: %v", p.Image, err)
	}
	logs, err := cli.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, logs); err != nil {
		t.Fatal(err)
	}
	return out.String(), exit
}

// plainRun runs command in a plain container of image (see plainContainer)
// and returns its output.
func plainRun(t *testing.T, image, command string) string {
	t.Helper()
	out, _ := plainContainer{Image: image, Command: command}.run(t)
	return out
}

// loopbackNames are the lines of /etc/hosts (in out) that name the
// loopback addresses, sorted.
func loopbackNames(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && (f[0] == "127.0.0.1" || f[0] == "::1") {
			lines = append(lines, strings.Join(f, " "))
		}
	}
	slices.Sort(lines)
	return lines
}

// view is what one aspect of a container looks like from inside: a shell
// probe, and what the sandbox's answer must be given a plain container's.
type view struct {
	name  string
	probe string
	// check compares the sandbox's answer with the plain container's;
	// user is the sandbox's configured "uid:gid".
	check func(t *testing.T, sandbox, plain, user string)
}

// same is a check that the sandbox answers as the plain container does.
func same(t *testing.T, sandbox, plain, _ string) {
	t.Helper()
	if sandbox != plain {
		t.Errorf("the sandbox sees\n%s\na plain container\n%s", sandbox, plain)
	}
}

// keyed splits "key value" lines into a map.
func keyed(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, " ")
		m[k] = v
	}
	return m
}

// writableProbe writes a file in each place a test suite or a tool writes
// to, as "place yes|no|missing", then the file system type and size of
// /tmp and /var/tmp.
const writableProbe = `w() {
	if [ ! -d "$2" ]; then echo "$1 missing"
	elif f="$2/.pullwright-probe-$$" && touch "$f" 2>/dev/null; then rm -f "$f"; echo "$1 yes"
	else echo "$1 no"; fi
}
w HOME "$HOME"; w TMPDIR "${TMPDIR:-/tmp}"; w cwd "$PWD"; w /tmp /tmp; w /dev/shm /dev/shm; w /var/tmp /var/tmp
awk '$2 == "/tmp" || $2 == "/var/tmp" { s = ""; n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] ~ /^size=/) s = o[i]; print "fs" $2, $3, s }' /proc/mounts | sort`

// execProbe runs a script written where a test suite runs what it builds,
// as "place ran|not-run|not-writable".
const execProbe = `x() {
	f="$2/.pullwright-exec-$$"
	if ! printf '#!/bin/sh\necho ran\n' > "$f" 2>/dev/null; then echo "$1 not-writable"; return; fi
	chmod +x "$f"; echo "$1 $("$f" 2>/dev/null || echo not-run)"; rm -f "$f"
}
x TMPDIR "${TMPDIR:-/tmp}"; x cwd "$PWD"; x /dev/shm /dev/shm; x /var/tmp /var/tmp`

// plainViews are what the code inside a container can see of it, each as
// the sandbox shows it next to `docker run --network none` of the same
// image: the same, unless the check says why not.
var plainViews = []view{
	{
		// Test suites listen on and dial "localhost".
		name: "hosts", probe: "cat /etc/hosts",
		check: func(t *testing.T, sandbox, plain, _ string) {
			got, want := loopbackNames(sandbox), loopbackNames(plain)
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("the sandbox's loopback names %q, a plain container's %q", got, want)
			}
			if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "127.0.0.1 ") && strings.Contains(l, "localhost") }) {
				t.Errorf("localhost is not 127.0.0.1 in the sandbox: %q", got)
			}
		},
	},
	{
		// The sandbox runs as its configured user on purpose (never root,
		// whatever the image's USER), but that user's name resolves as the
		// image's /etc/passwd has it: suites and tools call getpwuid.
		name: "user",
		probe: `echo "ids $(id -u):$(id -g)"; echo "name $(id -un 2>&1)"; echo "group $(id -gn 2>&1)"; echo "groups $(id -G)"
echo "passwd $(awk -F: -v u="$(id -u)" '$3 == u { print $1; exit }' /etc/passwd)"`,
		check: func(t *testing.T, sandbox, plain, user string) {
			s, p := keyed(sandbox), keyed(plain)
			if s["ids"] != user {
				t.Errorf("the sandbox runs as %s, want %s", s["ids"], user)
			}
			if s["passwd"] != "" && s["name"] != s["passwd"] {
				t.Errorf("the image names uid %s %q, but in the sandbox id -un says %q", user, s["passwd"], s["name"])
			}
			if s["ids"] == p["ids"] {
				same(t, sandbox, plain, user)
			}
		},
	},
	{
		// HOME is /tmp on purpose: the root is read-only, and the image's
		// home for the user may not exist (Debian's nobody has
		// /nonexistent) or be another user's. It must exist and be
		// writable: tools keep caches and settings there.
		name:  "home",
		probe: `echo "HOME $HOME"; [ -d "$HOME" ] && echo "exists yes"; f="$HOME/.pullwright-probe-$$"; touch "$f" 2>/dev/null && rm -f "$f" && echo "writable yes"`,
		check: func(t *testing.T, sandbox, _, _ string) {
			s := keyed(sandbox)
			if s["HOME"] != "/tmp" || s["exists"] != "yes" || s["writable"] != "yes" {
				t.Errorf("the sandbox's home:\n%s\nwant /tmp, existing and writable", sandbox)
			}
		},
	},
	{
		// Where suites write, the sandbox lets them, though its root is
		// read-only: everything a plain container lets the user write
		// and more (its workspace is the user's). /tmp and /var/tmp are
		// tmpfs capped at TmpfsSize each, so nothing written there reaches
		// the host's disk.
		name: "writable", probe: writableProbe,
		check: func(t *testing.T, sandbox, plain, _ string) {
			s, p := keyed(sandbox), keyed(plain)
			for _, place := range []string{"HOME", "TMPDIR", "cwd", "/tmp", "/dev/shm", "/var/tmp"} {
				if s[place] != "yes" {
					t.Errorf("the sandbox cannot write %s (%s; a plain container: %s)", place, s[place], p[place])
				}
			}
			if !strings.HasPrefix(s["fs/tmp"], "tmpfs size=") || s["fs/var/tmp"] != s["fs/tmp"] {
				t.Errorf("/tmp is %q and /var/tmp %q in the sandbox, want tmpfs of the same size", s["fs/tmp"], s["fs/var/tmp"])
			}
		},
	},
	{
		// A suite runs what it built in TMPDIR (go test) or its working
		// directory (./configure, ./gradlew): wherever a plain container
		// does, the sandbox does. /dev/shm is noexec in both.
		name: "exec", probe: execProbe,
		check: func(t *testing.T, sandbox, plain, _ string) {
			s, p := keyed(sandbox), keyed(plain)
			for place, ran := range p {
				if ran == "ran" && s[place] != "ran" {
					t.Errorf("%s: a plain container runs a script written there, the sandbox %q", place, s[place])
				}
			}
			if s["TMPDIR"] != "ran" || s["cwd"] != "ran" {
				t.Errorf("the sandbox runs no script written in TMPDIR or its working directory:\n%s", sandbox)
			}
			if s["/dev/shm"] != p["/dev/shm"] {
				t.Errorf("/dev/shm: the sandbox %q, a plain container %q", s["/dev/shm"], p["/dev/shm"])
			}
		},
	},
	{
		// The root is read-only on purpose: what a command writes goes to
		// its tmpfs and is gone with it.
		name:  "root",
		probe: `touch /.pullwright-probe 2>/dev/null && echo "write yes" || echo "write no"; awk '$2 == "/" { split($4, o, ","); print "mount", o[1] }' /proc/mounts`,
		check: func(t *testing.T, sandbox, _, _ string) {
			if s := keyed(sandbox); s["write"] != "no" || s["mount"] != "ro" {
				t.Errorf("the sandbox's root:\n%s\nwant read-only", sandbox)
			}
		},
	},
	{
		// The image's variables and Docker's (HOSTNAME, HOME) are there,
		// and no terminal's (TERM: neither has a terminal). On top, on
		// purpose, the runner's: CI=true (a suite behaves as in CI, not
		// interactively), TMPDIR, LANG (see locale), and GOCACHE and
		// GOPATH under /tmp, since an image's GOPATH (golang's /go) is on
		// the read-only root.
		name:  "env",
		probe: `awk 'BEGIN { for (k in ENVIRON) print k }' | sort`,
		check: func(t *testing.T, sandbox, plain, _ string) {
			s, p := strings.Fields(sandbox), strings.Fields(plain)
			for _, k := range p {
				if !slices.Contains(s, k) {
					t.Errorf("a plain container has %s, the sandbox not", k)
				}
			}
			for _, k := range s {
				if !slices.Contains(p, k) && !slices.Contains([]string{"CI", "TMPDIR", "LANG", "GOCACHE", "GOPATH"}, k) {
					t.Errorf("the sandbox has %s, a plain container not", k)
				}
			}
			for _, k := range []string{"HOME", "HOSTNAME", "PATH"} {
				if !slices.Contains(s, k) {
					t.Errorf("the sandbox has no %s", k)
				}
			}
		},
	},
	{name: "PATH", probe: `echo "$PATH"`, check: same},
	{
		name: "dev",
		probe: `for f in null zero full random urandom tty ptmx pts shm mqueue fd stdin stdout stderr; do [ -e /dev/$f ] && echo /dev/$f; done
echo "urandom $(head -c 16 /dev/urandom | wc -c)"; echo x > /dev/null && echo "null writable"
awk '$2 == "/dev/shm" { print "shm", $3 }' /proc/mounts`,
		check: same,
	},
	{
		// No terminal, and stdin at its end: a command that reads it
		// does not hang.
		name:  "stdio",
		probe: `[ -t 0 ] && echo "stdin terminal"; [ -t 1 ] && echo "stdout terminal"; echo "stdin $(head -c 1 | wc -c) bytes"`,
		check: same,
	},
	{
		name: "proc",
		probe: `echo "exe $(readlink /proc/self/exe)"; echo "cwd $(readlink /proc/self/cwd)"; echo "fd $(ls /proc/self/fd | tr '\n' ' ')"
for f in status maps mountinfo limits; do [ -r /proc/self/$f ] && echo "readable $f"; done`,
		check: same,
	},
	{
		// LANG is C.UTF-8 on purpose, whatever the image says, so that
		// tools write UTF-8 text the agent reads; the other locale
		// variables are the image's.
		name:  "locale",
		probe: `echo "LANG $LANG"; echo "LC_ALL $LC_ALL"; echo "LC_CTYPE $LC_CTYPE"`,
		check: func(t *testing.T, sandbox, plain, _ string) {
			s, p := keyed(sandbox), keyed(plain)
			if s["LANG"] != "C.UTF-8" {
				t.Errorf("LANG is %q in the sandbox, want C.UTF-8", s["LANG"])
			}
			if s["LC_ALL"] != p["LC_ALL"] || s["LC_CTYPE"] != p["LC_CTYPE"] {
				t.Errorf("the sandbox's locale\n%s\na plain container's\n%s", sandbox, plain)
			}
		},
	},
	{
		// The engine's defaults in both: servers in suites open many
		// files.
		name: "ulimit", probe: `echo "n $(ulimit -n)"; echo "s $(ulimit -s)"; echo "c $(ulimit -c)"`, check: same,
	},
	{
		// No network in either: a loopback and nothing else, and the
		// engine's resolv.conf, so that a lookup fails at once.
		name: "network", probe: "ls /sys/class/net; cat /etc/resolv.conf", check: same,
	},
	{
		// Suites that check the modes of the files they create.
		name: "umask", probe: "umask", check: same,
	},
	{
		// The sandbox's host name is "sandbox" on purpose: the same in
		// every run, where a plain container's is its id. In neither
		// does it resolve: with no network, /etc/hosts names no address
		// for it.
		name:  "hostname",
		probe: `h=$(hostname); echo "name $h"; [ "$HOSTNAME" = "$h" ] && echo "HOSTNAME same"; grep -qw "$h" /etc/hosts && echo "resolves yes" || echo "resolves no"`,
		check: func(t *testing.T, sandbox, plain, _ string) {
			s, p := keyed(sandbox), keyed(plain)
			if s["name"] != "sandbox" || s["HOSTNAME"] != "same" {
				t.Errorf("the sandbox's host name:\n%s\nwant sandbox, also in HOSTNAME", sandbox)
			}
			if s["resolves"] != p["resolves"] {
				t.Errorf("the host name resolves: %s in the sandbox, %s in a plain container", s["resolves"], p["resolves"])
			}
		},
	},
	{
		// No capabilities and no new privileges, on purpose.
		name:  "capabilities",
		probe: `awk '/^(CapEff|CapBnd|NoNewPrivs):/ { sub(":", ""); print $1, $2 }' /proc/self/status`,
		check: func(t *testing.T, sandbox, _, _ string) {
			s := keyed(sandbox)
			if s["CapEff"] != "0000000000000000" || s["CapBnd"] != "0000000000000000" || s["NoNewPrivs"] != "1" {
				t.Errorf("the sandbox's privileges:\n%s", sandbox)
			}
		},
	},
}

// viewsScript prints each view's probe's output after a line "== name".
func viewsScript() string {
	var b strings.Builder
	for _, v := range plainViews {
		fmt.Fprintf(&b, "echo '== %s'\n( %s\n) 2>&1\n", v.name, v.probe)
	}
	return b.String()
}

// views splits viewsScript's output by view.
func views(out string) map[string]string {
	m := map[string]string{}
	var name string
	for _, l := range strings.SplitAfter(out, "\n") {
		if n, ok := strings.CutPrefix(l, "== "); ok {
			name = strings.TrimSpace(n)
			continue
		}
		m[name] += l
	}
	return m
}

// To the code inside, the sandbox is a plain container with no network
// (`docker run --network none` of the same image, which test suites
// rightly expect), but for what it takes away or sets on purpose, each
// view's check says which and why. Three images: the Go test image
// (busybox, nobody's home /tmp, no /var/tmp), the Debian one (nobody's
// home /nonexistent, a /var/tmp, LANG set), and the first with USER root.
func TestDockerLooksLikeAPlainContainer(t *testing.T) {
	t.Parallel()
	for _, img := range []struct {
		name  string
		image func(testing.TB) string
	}{
		{"busybox", sandboxtest.Image},
		{"debian", sandboxtest.NodeAndPython},
		// As most images are, golang's among them: a plain container
		// runs as root, the sandbox still as its user.
		{"busybox as root", func(t testing.TB) string { return sandboxtest.ImageWith(t, "USER 0:0") }},
	} {
		t.Run(img.name, func(t *testing.T) {
			t.Parallel()
			image := img.image(t)
			d := newDocker(t, runner.DockerConfig{Image: image})
			script := viewsScript()
			res := dockerRun(t, d, "", script, time.Minute)
			if res.ExitCode != 0 {
				t.Fatalf("the probe failed in the sandbox, exit %d:\n%s", res.ExitCode, res.Output)
			}
			sandbox, plain := views(res.Output), views(plainRun(t, image, script))
			for _, v := range plainViews {
				t.Run(v.name, func(t *testing.T) {
					t.Logf("sandbox:\n%splain:\n%s", sandbox[v.name], plain[v.name])
					v.check(t, sandbox[v.name], plain[v.name], d.Config().User)
				})
			}
		})
	}
}
