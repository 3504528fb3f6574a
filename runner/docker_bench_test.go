package runner

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
)

// BenchmarkDockerOverhead measures, in the same run and interleaved so that
// drift in the machine's load hits all alike, the cost of running `true`:
//
//   - runner: Docker.Run, container per command (create with its
//     workspace volume, attach, start, copy of an empty workspace into it,
//     wait, inspect, remove of container and volume), until it returns;
//     start-ms is the part from Run being called to the go-ahead after the
//     copy ("approved" to "command started"), and removal-ms what was left
//     to remove in the background after it returned, waited for before
//     the next variant so that it slows none of them;
//   - floor: the bare Engine API through the same client, as a user of it
//     would run `true` locked down like the sandbox's essentials (network
//     none, read-only root, the sandbox user): create, start, wait,
//     remove, nothing else; runner/floor is the runner's cost against it,
//     the median of the iterations' ratios, so that a stall of the shared
//     machine in one iteration does not decide it;
//   - copy: the runner's copy of the same empty workspace into a running
//     container's workspace volume, alone: the part of runner/floor that
//     is the engine extracting the archive (copy/floor, the median of the
//     iterations' ratios to the floor);
//   - cli: `docker run --rm --network none IMAGE true`;
//   - exec: one container per task, kept running, and `docker exec` per
//     command (create, attach, start, inspect of the exec).
//
// Needs the Docker engine and the sandbox image (scripts/sandbox-image.sh,
// or PULLWRIGHT_SANDBOX_IMAGE):
//
//	go test -run '^$' -bench DockerOverhead -benchtime 20x ./runner/
func BenchmarkDockerOverhead(b *testing.B) {
	image := os.Getenv("PULLWRIGHT_SANDBOX_IMAGE")
	if image == "" {
		image = "pullwright/sandbox-go:test"
	}
	ctx := context.Background()
	d, err := NewDocker(DockerConfig{Image: image, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if _, err := d.cli.ImageInspect(ctx, image); err != nil {
		b.Skipf("image %s not available (run scripts/sandbox-image.sh): %v", image, err)
	}
	dir := b.TempDir()

	// The per-task container for the exec variant, locked down like a run.
	hostCPUs, err := d.checkHost(ctx)
	if err != nil {
		b.Fatal(err)
	}
	spec := pullwright.RunSpec{Command: "sleep 86400"}
	lim := d.limitsFor(spec, hostCPUs)
	opts := d.containerConfig(spec, image, lim)
	// No go-ahead comes for this one: it runs its command at once.
	opts.Config.Entrypoint, opts.Config.Cmd = []string{"/bin/sh", "-c"}, []string{spec.Command}
	opts.Config.OpenStdin, opts.Config.AttachStdin = false, false
	task, err := d.cli.ContainerCreate(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer d.remove(d.log, task.ID)
	if _, err := d.cli.ContainerStart(ctx, task.ID, client.ContainerStartOptions{}); err != nil {
		b.Fatal(err)
	}

	var started time.Time
	d.onStarted = func() { started = time.Now() }
	var runner, toStart, removal, floor, copied, cli, execd time.Duration
	var ratios, copyRatios []float64 // runner/floor and copy/floor of each iteration
	n := 0
	for b.Loop() {
		n++
		var run, bare time.Duration
		runRunner := func() {
			t0 := time.Now()
			res, err := d.Run(ctx, pullwright.RunSpec{Dir: dir, Command: "true"})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("runner: %v %+v", err, res)
			}
			run = time.Since(t0)
			toStart += started.Sub(t0)
			t0 = time.Now()
			d.removals.Wait()
			removal += time.Since(t0)
		}
		runFloor := func() {
			t0 := time.Now()
			if code := bareTrue(ctx, b, d.cli, image, d.cfg.User); code != 0 {
				b.Fatalf("floor: exit %d", code)
			}
			bare = time.Since(t0)
		}
		// Each goes first in every other iteration: neither always
		// follows the same variant.
		if n%2 == 0 {
			runRunner()
			runFloor()
		} else {
			runFloor()
			runRunner()
		}
		runner += run
		floor += bare
		ratios = append(ratios, float64(run)/float64(bare))

		t0 := time.Now()
		if err := d.copyIn(ctx, task.ID, dir, lim.disk, nil); err != nil {
			b.Fatalf("copy: %v", err)
		}
		cp := time.Since(t0)
		copied += cp
		copyRatios = append(copyRatios, float64(cp)/float64(bare))

		t0 = time.Now()
		if out, err := exec.Command("docker", "run", "--rm", "--network", "none", image, "true").CombinedOutput(); err != nil {
			b.Fatalf("docker run: %v\n%s", err, out)
		}
		cli += time.Since(t0)

		t0 = time.Now()
		if code := execTrue(ctx, b, d.cli, task.ID); code != 0 {
			b.Fatalf("exec: exit %d", code)
		}
		execd += time.Since(t0)
	}
	ms := func(total time.Duration) float64 { return float64(total.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(0, "ns/op") // the variants are reported separately
	b.ReportMetric(ms(runner), "runner-ms")
	b.ReportMetric(ms(toStart), "runner-start-ms")
	b.ReportMetric(ms(removal), "removal-ms")
	b.ReportMetric(ms(floor), "floor-ms")
	b.ReportMetric(ms(copied), "copy-ms")
	b.ReportMetric(ms(cli), "cli-ms")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "runner/floor")
	slices.Sort(copyRatios)
	b.ReportMetric(copyRatios[len(copyRatios)/2], "copy/floor")
	b.ReportMetric(ms(execd), "exec-ms")
	b.ReportMetric(float64(runner)/float64(cli), "runner/cli")
	b.ReportMetric(float64(execd)/float64(runner), "exec/runner")
}

// bareTrue runs `true` in a new container of image, through the Engine API
// and nothing else, and returns its exit code: the floor a run cannot go
// below.
func bareTrue(ctx context.Context, b *testing.B, cli *client.Client, image, user string) int64 {
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, User: user, Entrypoint: []string{"true"}},
		HostConfig: &container.HostConfig{
			NetworkMode:    container.NetworkMode(NetworkNone),
			ReadonlyRootfs: true,
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		b.Fatal(err)
	}
	wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{})
	var code int64
	select {
	case r := <-wait.Result:
		code = r.StatusCode
	case err := <-wait.Error:
		b.Fatal(err)
	}
	if _, err := cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{}); err != nil {
		b.Fatal(err)
	}
	return code
}

// execTrue runs `true` in the running container id, as an exec, and returns
// its exit code.
func execTrue(ctx context.Context, b *testing.B, cli *client.Client, id string) int {
	e, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true, WorkingDir: SandboxWorkdir,
	})
	if err != nil {
		b.Fatal(err)
	}
	att, err := cli.ExecAttach(ctx, e.ID, client.ExecAttachOptions{})
	if err != nil {
		b.Fatal(err)
	}
	_, _ = stdcopy.StdCopy(io.Discard, io.Discard, att.Reader)
	att.Close()
	ins, err := cli.ExecInspect(ctx, e.ID, client.ExecInspectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return ins.ExitCode
}
