package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
)

// Labels of a dependency cache volume.
const (
	LabelCacheRepo = "pullwright.cache.repo" // owner/name
	LabelCacheKey  = "pullwright.cache.key"  // the deps.Plan key
	// LabelCacheReady marks the volume that says a cache is complete: a
	// volume's labels cannot change, so readiness is a second, empty
	// volume made once setup succeeded.
	LabelCacheReady = "pullwright.cache.ready"
)

// Cache is a repository's dependency cache for one plan key: a volume on
// the engine's disk, kept across tasks.
type Cache struct {
	Volume string
	Repo   string
	Key    string
	// Ready is true once a setup run filled it completely.
	Ready bool
}

// CacheVolumeName is the volume of repo's cache for key.
func CacheVolumeName(repo, key string) string {
	sum := sha256.Sum256([]byte(repo + "\x00" + key))
	return "pullwright-deps-" + hex.EncodeToString(sum[:16])
}

func readyName(volume string) string { return volume + "-ready" }

// Cache returns repo's cache for key, making its volume if there is none.
func (d *Docker) Cache(ctx context.Context, repo, key string) (Cache, error) {
	c := Cache{Volume: CacheVolumeName(repo, key), Repo: repo, Key: key}
	if _, err := d.cli.VolumeInspect(ctx, readyName(c.Volume), client.VolumeInspectOptions{}); err == nil {
		c.Ready = true
		return c, nil
	} else if !cerrdefs.IsNotFound(err) {
		return c, fmt.Errorf("inspect cache %s: %w", c.Volume, err)
	}
	// Creating a volume that exists returns it: a setup that crashed
	// halfway leaves a volume that is not ready, and the next setup goes
	// on in it.
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: c.Volume, Driver: "local", Labels: d.cacheLabels(c, false)}); err != nil {
		return c, fmt.Errorf("create cache %s: %w", c.Volume, err)
	}
	return c, nil
}

// MarkCacheReady records that a setup run filled c completely.
func (d *Docker) MarkCacheReady(ctx context.Context, c Cache) error {
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: readyName(c.Volume), Driver: "local", Labels: d.cacheLabels(c, true)}); err != nil {
		return fmt.Errorf("mark cache %s ready: %w", c.Volume, err)
	}
	return nil
}

func (d *Docker) cacheLabels(c Cache, ready bool) map[string]string {
	l := map[string]string{LabelManaged: "true", LabelCacheRepo: c.Repo, LabelCacheKey: c.Key}
	if d.cfg.Owner != "" {
		l[LabelOwner] = d.cfg.Owner
	}
	if ready {
		l[LabelCacheReady] = c.Volume
	}
	return l
}

// ReadyCache is a complete dependency cache on the engine, as eviction
// sees it.
type ReadyCache struct {
	Volume, Repo string
	// ReadyAt is when its setup finished.
	ReadyAt time.Time
	// Bytes is what it holds on the engine's disk, -1 when the engine
	// does not say.
	Bytes int64
}

// sizeWait bounds how long ReadyCaches waits for the engine to measure
// its caches while it is busy measuring them for someone else.
const sizeWait = 20 * time.Second

// errBusyMeasuring is how engines before 23.0 refuse a disk usage call
// made while another one walks the disk (a plain error, with no type).
const errBusyMeasuring = "a disk usage operation is already running"

// ReadyCaches lists this runner's ready dependency caches on the engine
// (its Owner's, when it has one: another bot's are not its to measure or
// remove), with their sizes.
func (d *Docker) ReadyCaches(ctx context.Context) ([]ReadyCache, error) {
	f := client.Filters{}.Add("label", LabelCacheReady).Add("label", LabelManaged+"=true")
	if d.cfg.Owner != "" {
		f = f.Add("label", LabelOwner+"="+d.cfg.Owner)
	}
	list, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list caches: %w", err)
	}
	// Only the disk usage call measures volumes: the engine walks each
	// one, so it is asked for all of them at once. While it walks for
	// another caller, an older engine refuses the call and a newer one
	// hands it that walk's answer, which may predate a cache just filled
	// (0 bytes, or no such cache). So it is asked until it has answered
	// twice: a walk running when the second call is made began after the
	// first answer, after every listed cache was ready. While a listed
	// cache is missing it is asked again. A cache still missing counts as
	// of unknown size.
	sizes := map[string]int64{}
	deadline := time.Now().Add(sizeWait)
	wait := false // the last call was refused, or missed a cache
	for try, answers := 0, 0; ; try++ {
		if wait {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("measure caches: %w", ctx.Err())
			case <-time.After(min(time.Duration(try)*100*time.Millisecond, time.Second)):
			}
		}
		du, err := d.cli.DiskUsage(ctx, client.DiskUsageOptions{Volumes: true, Verbose: true})
		if wait = err != nil && strings.Contains(err.Error(), errBusyMeasuring); wait && time.Now().Before(deadline) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("measure caches: %w", err)
		}
		if answers++; answers == 1 {
			continue
		}
		for _, v := range du.Volumes.Items {
			if v.UsageData != nil && v.UsageData.Size >= 0 {
				sizes[v.Name] = v.UsageData.Size
			}
		}
		missing := false
		for _, m := range list.Items {
			if v := m.Labels[LabelCacheReady]; v != "" {
				if _, ok := sizes[v]; !ok {
					missing = true
				}
			}
		}
		if wait = missing; !missing || !time.Now().Before(deadline) {
			break
		}
	}
	var out []ReadyCache
	for _, m := range list.Items {
		c := ReadyCache{Volume: m.Labels[LabelCacheReady], Repo: m.Labels[LabelCacheRepo], Bytes: -1}
		if c.Volume == "" || readyName(c.Volume) != m.Name {
			continue // not a marker this runner made
		}
		c.ReadyAt, _ = time.Parse(time.RFC3339, m.CreatedAt)
		if n, ok := sizes[c.Volume]; ok && n >= 0 {
			c.Bytes = n
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b ReadyCache) int { return strings.Compare(a.Volume, b.Volume) })
	return out, nil
}

// ErrCacheInUse is RemoveReadyCache's answer for a cache a run mounts.
var ErrCacheInUse = errors.New("the cache is in use")

// RemoveReadyCache removes a ready cache: the cache first, so that one a
// run holds stays ready (ErrCacheInUse), then its marker. A volume that
// is not a dependency cache of this runner's is left alone.
func (d *Docker) RemoveReadyCache(ctx context.Context, volume string) error {
	v, err := d.cli.VolumeInspect(ctx, volume, client.VolumeInspectOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("inspect cache %s: %w", volume, err)
	}
	if err == nil {
		l := v.Volume.Labels
		if l[LabelManaged] != "true" || l[LabelCacheKey] == "" || (d.cfg.Owner != "" && l[LabelOwner] != d.cfg.Owner) {
			return fmt.Errorf("remove cache %s: not a dependency cache of this runner's", volume)
		}
	}
	if _, err := d.cli.VolumeRemove(ctx, volume, client.VolumeRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		if cerrdefs.IsConflict(err) {
			return fmt.Errorf("remove cache %s: %w: %w", volume, ErrCacheInUse, err)
		}
		return fmt.Errorf("remove cache %s: %w", volume, err)
	}
	if _, err := d.cli.VolumeRemove(ctx, readyName(volume), client.VolumeRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove cache marker %s: %w", readyName(volume), err)
	}
	return nil
}

// PrivateCache makes a cache volume for one run's setup alone, on files
// whose dependencies must not be shared (the agent changed a manifest):
// never marked ready, removed with RemoveCache after the run, and, like a
// workspace volume, by CleanupOrphans after a crash.
func (d *Docker) PrivateCache(ctx context.Context, labels map[string]string) (string, error) {
	name := "pullwright-deps-private-" + randomHex(8)
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Driver: "local", Labels: d.labels(pullwright.RunSpec{Labels: labels})}); err != nil {
		return "", fmt.Errorf("create a private cache: %w", err)
	}
	return name, nil
}

// RemoveCache removes a private cache volume.
func (d *Docker) RemoveCache(ctx context.Context, name string) error {
	if _, err := d.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove cache %s: %w", name, err)
	}
	return nil
}
