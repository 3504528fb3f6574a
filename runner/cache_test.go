package runner_test

import (
	"context"
	"testing"

	"github.com/pullwright/pullwright/runner"
)

// A ready cache's size is what its setup measured when it made it ready,
// read back from its marker; one made ready without a size is of unknown
// size, not 0.
func TestReadyCachesReadTheSizesTheirMarkersCarry(t *testing.T) {
	d := newDocker(t, runner.DockerConfig{})
	mark := func(key string, bytes int64) runner.Cache {
		t.Helper()
		c, err := d.Cache(t.Context(), "test/sizes", key)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := d.RemoveReadyCache(context.Background(), c.Volume); err != nil {
				t.Error(err)
			}
		})
		if err := d.MarkCacheReady(t.Context(), c, bytes); err != nil {
			t.Fatal(err)
		}
		return c
	}
	sized, unknown := mark("sized", 3<<20), mark("unknown", -1)
	ready, err := d.ReadyCaches(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, c := range ready {
		if c.Repo != "test/sizes" || c.ReadyAt.IsZero() {
			t.Errorf("ready cache %+v", c)
		}
		got[c.Volume] = c.Bytes
	}
	if len(got) != 2 || got[sized.Volume] != 3<<20 || got[unknown.Volume] != -1 {
		t.Fatalf("sizes = %v, want %s 3 MiB and %s unknown (-1)", got, sized.Volume, unknown.Volume)
	}
	if c, err := d.Cache(t.Context(), "test/sizes", "sized"); err != nil || !c.Ready {
		t.Errorf("the marked cache = %+v, %v; want it ready", c, err)
	}
}
