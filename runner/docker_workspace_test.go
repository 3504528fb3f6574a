package runner_test

// Tests of how the Docker runner brings the workspace into the sandbox and
// bounds it, against the real engine; internal/sandboxtest says what they
// need and when they skip.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
)

// ownedVolumes lists the volumes labelled pullwright.managed=true with the
// given owner.
func ownedVolumes(t testing.TB, owner string) []string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.VolumeList(context.Background(), client.VolumeListOptions{
		Filters: client.Filters{}.Add("label", runner.LabelManaged+"=true").
			Add("label", runner.LabelOwner+"="+owner),
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range list.Items {
		names = append(names, v.Name)
	}
	return names
}

// assertNothingLeft fails the test if a container or volume of d's owner is
// still there once the removals Run left in the background are done.
func assertNothingLeft(t *testing.T, d *runner.Docker) {
	t.Helper()
	runner.WaitRemovals(d)
	owner := d.Config().Owner
	if left := ownedContainers(t, owner); len(left) > 0 {
		t.Errorf("containers left after Run: %v", left)
	}
	if left := ownedVolumes(t, owner); len(left) > 0 {
		t.Errorf("volumes left after Run: %v", left)
	}
}

func TestDockerWorkspaceArrives(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})
	dir := t.TempDir()
	long := strings.Repeat("n", 120) + ".txt" // beyond a plain tar header's 100 bytes
	files := []struct {
		name, content string
		mode          os.FileMode
	}{
		{"script.sh", "#!/bin/sh\necho script ran\n", 0o755},
		{"data.txt", "data\n", 0o640},
		{"ro.txt", "read only\n", 0o444},
		{"empty", "", 0o600},
		{"sub dir/deep/note.txt", "deep note\n", 0o644},
		{long, "long\n", 0o644},
		{"caf\xe9 odd", "not UTF-8\n", 0o644}, // a PAX header in the tar stream
	}
	for _, f := range files {
		writeTree(t, dir, map[string]string{f.name: f.content})
		if err := os.Chmod(filepath.Join(dir, f.name), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "sub dir"), 0o750); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"link-rel": "data.txt", "link-abs": "/etc/passwd", "link-dir": "sub dir", "dangling": "nope",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	res := dockerRun(t, d, dir, `pwd; id -u
find . ! -name 'caf*' | sort | while read -r f; do
	if [ -L "$f" ]; then echo "$f -> $(readlink "$f")"; else echo "$f $(stat -c '%a %u:%g' "$f")"; fi
done
cat data.txt "sub dir/deep/note.txt"
./script.sh
cat "$(printf 'caf\351 odd')"
echo made > new.txt && cat new.txt`, time.Minute)

	user := d.Config().User
	uid, _, _ := strings.Cut(user, ":")
	want := fmt.Sprintf(`/workspace
%[1]s
. 700 %[2]s
./dangling -> nope
./data.txt 640 %[2]s
./empty 600 %[2]s
./link-abs -> /etc/passwd
./link-dir -> sub dir
./link-rel -> data.txt
./%[3]s 644 %[2]s
./ro.txt 444 %[2]s
./script.sh 755 %[2]s
./sub dir 750 %[2]s
./sub dir/deep 755 %[2]s
./sub dir/deep/note.txt 644 %[2]s
data
deep note
script ran
not UTF-8
made
`, uid, user, long)
	if res.ExitCode != 0 || res.Output != want {
		t.Errorf("exit %d, output:\n%s\nwant:\n%s", res.ExitCode, res.Output, want)
	}
	if after := snapshot(t, dir); !equalMaps(before, after) {
		t.Errorf("workspace changed:\nbefore %v\nafter  %v", before, after)
	}
	assertNothingLeft(t, d)
}

// freeBytes is the space left for unprivileged writers on the file system
// holding path.
func freeBytes(t testing.TB, path string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		t.Errorf("statfs %s: %v", path, err) // not Fatal: also called off the test's goroutine
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// hostDisk is where a sandbox's writes would land if they reached the disk:
// the engine's root directory when the engine is on this machine, else the
// temporary directory.
func hostDisk(t testing.TB) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.Info(t.Context(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(info.Info.DockerRootDir); err == nil {
		return info.Info.DockerRootDir
	}
	return os.TempDir()
}

func TestDockerOutOfSpace(t *testing.T) {
	t.Parallel()
	const writes = 128 << 20 // what the command tries to write, far past either cap
	tests := []struct {
		name    string
		cfg     runner.DockerConfig
		disk    int64
		file    string
		wantCap int64
		note    string
	}{
		{
			name: "workspace", disk: 16 << 20, file: "/workspace/big", wantCap: 16 << 20,
			note: "[out of space: /workspace holds at most 16 MiB and /tmp 1 GiB in this sandbox]\n",
		},
		{
			// A Spec asking for more than the operator's cap gets the cap.
			name: "workspace, asked above the cap", cfg: runner.DockerConfig{WorkspaceSize: 16 << 20},
			disk: 1 << 30, file: "/workspace/big", wantCap: 16 << 20,
			note: "[out of space: /workspace holds at most 16 MiB and /tmp 1 GiB in this sandbox]\n",
		},
		{
			name: "tmp", cfg: runner.DockerConfig{TmpfsSize: 16 << 20}, file: "/tmp/big", wantCap: 16 << 20,
			note: "[out of space: /workspace holds at most 2 GiB and /tmp 16 MiB in this sandbox]\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDocker(t, tt.cfg)
			disk := hostDisk(t)

			// Other tests and builds on this host write too: allow them
			// 32 MiB, a quarter of what the command tried to write. They
			// may still write more during one run; a command that wrote
			// to the disk would do so in every run, so a drop past the
			// bound is measured once more before it counts.
			const slack = 32 << 20
			var drop int64
			for try := 1; try <= 2; try++ {
				drop = outOfSpaceRun(t, d, disk, tt.file, tt.disk, writes, tt.note)
				t.Logf("try %d: the free space on %s dropped by %d MiB (cap %d MiB)", try, disk, drop>>20, tt.wantCap>>20)
				if drop <= tt.wantCap+slack {
					break
				}
			}
			if drop > tt.wantCap+slack {
				t.Errorf("the host's free space dropped by %d MiB during the run, twice: more than the %d MiB cap (+%d MiB for others)",
					drop>>20, tt.wantCap>>20, slack>>20)
			}
			assertNothingLeft(t, d)
		})
	}
}

// /workspace and /tmp are size-capped tmpfs, never the engine host's disk,
// and neither honours set-uid bits or device nodes.
func TestDockerWorkspaceMount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cfg       runner.DockerConfig
		disk      int64
		wantSizes string // of /workspace and /tmp, as the kernel reports them
	}{
		{"defaults", runner.DockerConfig{}, 0, "size=2097152k size=1048576k"},
		{"configured", runner.DockerConfig{WorkspaceSize: 64 << 20, TmpfsSize: 32 << 20}, 0, "size=65536k size=32768k"},
		{"spec below the cap", runner.DockerConfig{WorkspaceSize: 64 << 20}, 8 << 20, "size=8192k size=1048576k"},
		{"spec above the cap", runner.DockerConfig{WorkspaceSize: 64 << 20}, 1 << 30, "size=65536k size=1048576k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDocker(t, tt.cfg)
			res, err := d.Run(t.Context(), pullwright.RunSpec{
				Dir: t.TempDir(), Disk: tt.disk, Timeout: time.Minute,
				// Fields: device, mount point, type, options.
				Command: `for m in /workspace /tmp; do
	awk -v m="$m" '$2 == m { print $1, $3; n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] ~ /^(nosuid|nodev|size=.*)$/) print o[i] }' /proc/mounts
done`,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			ws, tmp, _ := strings.Cut(tt.wantSizes, " ")
			want := "tmpfs tmpfs\nnosuid\nnodev\n" + ws + "\ntmpfs tmpfs\nnosuid\nnodev\n" + tmp + "\n"
			if res.ExitCode != 0 || res.Output != want {
				t.Errorf("exit %d, mounts:\n%s\nwant:\n%s", res.ExitCode, res.Output, want)
			}
		})
	}
}

func TestDockerWorkspaceTooBig(t *testing.T) {
	t.Parallel()
	const notRun = "not run: the workspace is larger than the 1 MiB the sandbox's /workspace holds\n"
	tests := []struct {
		name       string
		files      map[string]string
		wantOutput string
		wantExit   int
	}{
		{"one file over the cap", map[string]string{"big": strings.Repeat("x", 2<<20)}, notRun, -1},
		// 300 files of 100 bytes: 30 kB of data, but tmpfs holds each in a
		// page of its own.
		{"small files in whole pages", smallFiles(300, 100), notRun, -1},
		{"exactly the cap", map[string]string{"full": strings.Repeat("x", 1<<20)}, "1048576\nran\n", 0},
		// Not counted before the copy: Linux's tmpfs keeps a symbolic link
		// of more than 128 bytes in a page, so the engine runs out of space.
		{"long symbolic links", nil, notRun, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDocker(t, runner.DockerConfig{})
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			if tt.files == nil {
				for i := range 300 {
					if err := os.Symlink(strings.Repeat("t", 200), filepath.Join(dir, fmt.Sprintf("l%03d", i))); err != nil {
						t.Fatal(err)
					}
				}
			}
			res, err := d.Run(t.Context(), pullwright.RunSpec{
				Dir: dir, Disk: 1 << 20, Timeout: time.Minute,
				Command: "if [ -f full ]; then wc -c < full; fi; echo ran",
			})
			if err != nil {
				t.Fatalf("Run: %v, want a Result", err)
			}
			if res.ExitCode != tt.wantExit || res.Output != tt.wantOutput || res.TimedOut || res.OOMKilled {
				t.Errorf("got exit %d, output %q (%+v); want exit %d, output %q", res.ExitCode, res.Output, res, tt.wantExit, tt.wantOutput)
			}
			assertNothingLeft(t, d)
		})
	}
}

// smallFiles is n files of size bytes each.
func smallFiles(n, size int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f%03d", i)] = strings.Repeat("y", size)
	}
	return files
}

// The command is an argument of the entry point, never part of its script:
// whatever it contains, the shell sees it as written.
func TestDockerCommandVerbatim(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})
	tests := []struct {
		name, command string
		wantExit      int
		want          string
	}{
		{"no arguments reach it", `printf '[%s]' "$1" "$#"; echo`, 0, "[][0]\n"},
		{"quotes and semicolons", `a='x;y'; printf '%s\n' "$a" "it's" 'say "hi"' 'back\slash' "\"\$1\""`, 0,
			"x;y\nit's\nsay \"hi\"\nback\\slash\n\"$1\"\n"},
		{"newlines", "echo one\necho two; echo three\n", 0, "one\ntwo\nthree\n"},
		{"stdin is at its end", `cat; echo "stdin closed"`, 0, "stdin closed\n"},
		{"exit status", "exit 3", 3, ""},
		{"a syntax error stays one", `echo "unterminated`, 2, "/bin/sh: syntax error: unterminated quoted string\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := dockerRun(t, d, "", tt.command, time.Minute)
			if res.ExitCode != tt.wantExit || res.Output != tt.want {
				t.Errorf("got exit %d, output %q; want exit %d, output %q", res.ExitCode, res.Output, tt.wantExit, tt.want)
			}
		})
	}
}

func TestDockerCleanupOrphanVolumes(t *testing.T) {
	t.Parallel()
	owner := fmt.Sprintf("orphan-volumes-%d", os.Getpid())
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := t.Context()
	sandboxImage(t) // skips, or fails under CI=true, without an engine
	// What a bot killed between creating a run's volume and removing it
	// leaves, and a volume of another bot sharing the Docker host, which
	// must survive.
	create := func(owner string) string {
		t.Helper()
		v, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{
			Driver: "local",
			DriverOpts: map[string]string{
				"type": "tmpfs", "device": "tmpfs", "o": "size=1m",
			},
			Labels: map[string]string{runner.LabelManaged: "true", runner.LabelOwner: owner, "pullwright.task": "7"},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = cli.VolumeRemove(context.Background(), v.Volume.Name, client.VolumeRemoveOptions{}) })
		return v.Volume.Name
	}
	left := create(owner)
	other := create(owner + "-other")

	d := newDocker(t, runner.DockerConfig{Owner: owner})
	if _, err := d.CleanupOrphans(ctx); err != nil {
		t.Errorf("CleanupOrphans: %v", err)
	}
	if _, err := cli.VolumeInspect(ctx, left, client.VolumeInspectOptions{}); err == nil {
		t.Errorf("volume %s still there", left)
	}
	if _, err := cli.VolumeInspect(ctx, other, client.VolumeInspectOptions{}); err != nil {
		t.Errorf("another owner's volume was removed: %v", err)
	}
}

func TestDockerCopyFails(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})
	file := filepath.Join(t.TempDir(), "file")
	writeTree(t, filepath.Dir(file), map[string]string{"file": "x"})
	tests := []struct {
		name, dir, wantErr string
	}{
		{"not a directory", file, "is not a directory"},
		{"missing", filepath.Join(t.TempDir(), "gone"), "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := d.Run(t.Context(), pullwright.RunSpec{Dir: tt.dir, Command: "echo ran", Timeout: time.Minute})
			if err == nil || !strings.Contains(err.Error(), "copy workspace") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want a failed copy: %s", err, tt.wantErr)
			}
			if res.ExitCode != -1 || res.Output != "" {
				t.Errorf("result %+v, want nothing run", res)
			}
			assertNothingLeft(t, d)
		})
	}
}

// A VOLUME the image declares would be an anonymous volume on the engine's
// disk, writable on a read-only root and bounded by nothing: the sandbox
// mounts a capped tmpfs there instead.
func TestDockerImageVolumesAreCapped(t *testing.T) {
	image := sandboxtest.ImageWith(t, "VOLUME /data")
	d := newDocker(t, runner.DockerConfig{TmpfsSize: 16 << 20})
	res, err := d.Run(t.Context(), pullwright.RunSpec{
		Dir: t.TempDir(), Image: image, Timeout: time.Minute, Memory: 256 << 20,
		Command: "grep ' /data ' /proc/mounts; dd if=/dev/zero of=/data/big bs=1M count=64",
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("exit %d:\n%s", res.ExitCode, res.Output)
	if !strings.Contains(res.Output, "tmpfs /data tmpfs") || res.ExitCode == 0 ||
		!strings.Contains(res.Output, "No space left on device") {
		t.Errorf("the image's volume is not a capped tmpfs: exit %d", res.ExitCode)
	}
	assertNothingLeft(t, d)
}

// outOfSpaceRun runs a command that writes writes bytes to file, far past
// its file system's cap, checks that it fails with the note once, and
// returns by how much the free space on disk dropped at most meanwhile.
func outOfSpaceRun(t *testing.T, d *runner.Docker, disk, file string, size, writes int64, note string) (drop int64) {
	t.Helper()
	// The least free space seen from before the run until after it.
	// The command holds its full file system for a while, so that
	// the sampling sees the run at its fullest.
	before := freeBytes(t, disk)
	least := before
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			least = min(least, freeBytes(t, disk))
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	res, err := d.Run(t.Context(), pullwright.RunSpec{
		Dir: t.TempDir(), Timeout: time.Minute, Disk: size, Memory: 256 << 20,
		// A second write finds the file system full too: the
		// note still comes once.
		Command: fmt.Sprintf("dd if=/dev/zero of=%[1]s bs=1M count=%[2]d; s=$?; dd if=/dev/zero of=%[1]s.2 bs=1M count=1; sleep 2; exit $s",
			file, writes>>20),
	})
	close(done)
	wg.Wait()
	least = min(least, freeBytes(t, disk))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("exit %d:\n%s", res.ExitCode, res.Output)
	if res.ExitCode == 0 || res.OOMKilled || res.TimedOut {
		t.Errorf("exit %d, OOMKilled %v, TimedOut %v; want a failed command", res.ExitCode, res.OOMKilled, res.TimedOut)
	}
	if strings.Count(res.Output, "No space left on device") != 2 || !strings.HasSuffix(res.Output, "\n"+note) ||
		strings.Count(res.Output, "[out of space") != 1 {
		t.Errorf("output lacks the two errors or does not end with the note %q, once", note)
	}
	return before - least
}
