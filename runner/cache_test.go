package runner_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/runner"
)

// A cache filled while the engine walks its volumes for someone else
// (other setups on the same engine measure theirs) is measured as it is
// once ready, not as the walk begun before it was filled saw it: the
// engine hands that walk's answer to every call that overlaps it.
func TestReadyCachesMeasuresACacheFilledDuringAWalk(t *testing.T) {
	d := newDocker(t, runner.DockerConfig{})
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c, err := d.Cache(t.Context(), "test/walk", "key")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.RemoveReadyCache(context.Background(), c.Volume); err != nil {
			t.Error(err)
		}
	})

	// Walks keep running, back to back, from before the cache is filled
	// until it is ready; the last one is still running when it is
	// measured.
	var stop atomic.Bool
	var walks sync.WaitGroup
	for range 2 {
		walks.Go(func() {
			for !stop.Load() {
				cli.DiskUsage(context.Background(), client.DiskUsageOptions{Volumes: true, Verbose: true}) //nolint:errcheck // only keeps walks running
				time.Sleep(10 * time.Millisecond)                                                          // an engine that refuses overlapping walks answers at once
			}
		})
	}
	defer walks.Wait()
	defer stop.Store(true)

	const size = 2 << 20
	fill, err := cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
		Config: &container.Config{Image: sandboxImage(t), User: "0:0", Cmd: []string{"sh", "-c", "dd if=/dev/zero of=/c/blob bs=1048576 count=2 2>/dev/null"}},
		HostConfig: &container.HostConfig{
			Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: c.Volume, Target: "/c"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), fill.ID, client.ContainerRemoveOptions{Force: true}) //nolint:errcheck // cleanup
	if _, err := cli.ContainerStart(t.Context(), fill.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait := cli.ContainerWait(t.Context(), fill.ID, client.ContainerWaitOptions{})
	select {
	case res := <-wait.Result:
		if res.StatusCode != 0 {
			t.Fatalf("filling the cache exited %d", res.StatusCode)
		}
	case err := <-wait.Error:
		t.Fatal(err)
	}
	if _, err := cli.ContainerRemove(t.Context(), fill.ID, client.ContainerRemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.MarkCacheReady(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	ready, err := d.ReadyCaches(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ready) != 1 || ready[0].Volume != c.Volume || ready[0].Bytes < size {
		t.Fatalf("ready caches = %+v, want %s with at least %d bytes", ready, c.Volume, size)
	}
}
