package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
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

// EvictCaches removes repo's caches but the keep newest ready ones (and
// any that is not ready yet, which a setup may be filling), oldest first;
// a cache a run is using stays. It returns the volumes removed.
func (d *Docker) EvictCaches(ctx context.Context, repo string, keep int) ([]string, error) {
	list, err := d.cli.VolumeList(ctx, client.VolumeListOptions{
		Filters: client.Filters{}.Add("label", LabelCacheRepo+"="+repo).Add("label", LabelCacheReady),
	})
	if err != nil {
		return nil, fmt.Errorf("list caches of %s: %w", repo, err)
	}
	type ready struct {
		marker, volume string
		at             time.Time
	}
	var all []ready
	for _, v := range list.Items {
		at, _ := time.Parse(time.RFC3339, v.CreatedAt)
		all = append(all, ready{v.Name, v.Labels[LabelCacheReady], at})
	}
	slices.SortFunc(all, func(a, b ready) int { return b.at.Compare(a.at) })
	var removed []string
	for _, r := range all[min(keep, len(all)):] {
		// The cache first: if a run holds it, it stays ready.
		if _, err := d.cli.VolumeRemove(ctx, r.volume, client.VolumeRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			d.log.Info("runner: cache in use, kept", "volume", r.volume, "err", err)
			continue
		}
		if _, err := d.cli.VolumeRemove(ctx, r.marker, client.VolumeRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			return removed, fmt.Errorf("remove cache marker %s: %w", r.marker, err)
		}
		removed = append(removed, r.volume)
	}
	return removed, nil
}

// PrivateCache makes a cache volume for one run's setup alone, on files
// whose dependencies must not be shared (the agent changed a manifest):
// never marked ready, removed with RemoveCache after the run, and, like a
// workspace volume, by CleanupOrphans after a crash.
func (d *Docker) PrivateCache(ctx context.Context, labels map[string]string) (string, error) {
	name := "pullwright-deps-private-" + randomHex(8)
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Driver: "local", Labels: d.labels(Spec{Labels: labels})}); err != nil {
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
