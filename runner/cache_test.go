package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

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

// A claim to fill a cache is one per engine: a second claimant waits for
// the first's release; a claim whose holder died lapses at its time and is
// taken over; the successor of the holder (same owner) clears it at start.
func TestClaimCache(t *testing.T) {
	image := sandboxImage(t)
	d1 := newDocker(t, runner.DockerConfig{})
	d2 := newDocker(t, runner.DockerConfig{})
	c, err := d1.Cache(t.Context(), "test/claims", fmt.Sprintf("claim-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d1.RemoveCache(context.Background(), c.Volume) })

	release, err := d1.ClaimCache(t.Context(), c, image, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	if _, err := d2.ClaimCache(short, c, image, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second claim while the first holds = %v; want it to wait until its deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := d2.ClaimCache(t.Context(), c, image, time.Hour)
		if err == nil {
			r()
		}
		got <- err
	}()
	time.Sleep(500 * time.Millisecond)
	release()
	if err := <-got; err != nil {
		t.Fatalf("a waiting claim after the release = %v", err)
	}

	// A holder that died: its claim lapses and the next takes it over.
	if _, err := d1.ClaimCache(t.Context(), c, image, time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	r, err := d2.ClaimCache(t.Context(), c, image, time.Hour)
	if err != nil {
		t.Fatalf("a claim over a lapsed one = %v", err)
	}
	r()

	// A holder that died and came back under its name clears its claims.
	if _, err := d1.ClaimCache(t.Context(), c, image, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := d1.CleanupOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	short2, cancel2 := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel2()
	r, err = d2.ClaimCache(short2, c, image, time.Hour)
	if err != nil {
		t.Fatalf("a claim after its holder's successor cleaned up = %v", err)
	}
	r()
}
