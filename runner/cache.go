package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
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
	// LabelCacheBytes, on the marker, is what the cache held on the
	// engine's disk when it was made ready; approved runs only read it,
	// so it stays that size.
	LabelCacheBytes = "pullwright.cache.bytes"
	// LabelCacheBuild, on the marker, says the cache holds a build cache
	// and the program runs read it with (BuildCache).
	LabelCacheBuild = "pullwright.cache.build"
)

// Cache is a repository's dependency cache for one plan key: a volume on
// the engine's disk, kept across tasks.
type Cache struct {
	Volume string
	Repo   string
	Key    string
	// Ready is true once a setup run filled it completely.
	Ready bool
	// BuildCache is true when it holds a build cache and the program that
	// serves it to runs (its marker says so, or its setup found them).
	BuildCache bool
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
	if m, err := d.cli.VolumeInspect(ctx, readyName(c.Volume), client.VolumeInspectOptions{}); err == nil {
		c.Ready, c.BuildCache = true, m.Volume.Labels[LabelCacheBuild] == "true"
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

// MarkCacheReady records that a setup run filled c completely, that it
// holds bytes (-1: not known), and whether it holds a build cache.
func (d *Docker) MarkCacheReady(ctx context.Context, c Cache, bytes int64) error {
	labels := d.cacheLabels(c, true)
	if bytes >= 0 {
		labels[LabelCacheBytes] = strconv.FormatInt(bytes, 10)
	}
	if c.BuildCache {
		labels[LabelCacheBuild] = "true"
	}
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: readyName(c.Volume), Driver: "local", Labels: labels}); err != nil {
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
	// Bytes is what it holds on the engine's disk, as measured when it
	// was made ready; -1 when that is not known.
	Bytes int64
}

// ReadyCaches lists this runner's ready dependency caches on the engine
// (its Owner's, when it has one: another bot's are not its to measure or
// remove), with their sizes.
//
// The sizes are those the markers carry (MarkCacheReady), not the
// engine's disk usage call: that call walks every image, container and
// volume, an engine before 23.0 refuses it while another runs, and setups
// on a busy engine were seen to wait on one another's walks for longer
// than a setup takes.
func (d *Docker) ReadyCaches(ctx context.Context) ([]ReadyCache, error) {
	f := client.Filters{}.Add("label", LabelCacheReady).Add("label", LabelManaged+"=true")
	if d.cfg.Owner != "" {
		f = f.Add("label", LabelOwner+"="+d.cfg.Owner)
	}
	list, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list caches: %w", err)
	}
	var out []ReadyCache
	for _, m := range list.Items {
		c := ReadyCache{Volume: m.Labels[LabelCacheReady], Repo: m.Labels[LabelCacheRepo], Bytes: -1}
		if c.Volume == "" || readyName(c.Volume) != m.Name {
			continue // not a marker this runner made
		}
		c.ReadyAt, _ = time.Parse(time.RFC3339, m.CreatedAt)
		if n, err := strconv.ParseInt(m.Labels[LabelCacheBytes], 10, 64); err == nil && n >= 0 {
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

// LabelCacheFill, on a claim's container, names the cache it claims;
// LabelCacheFillUntil is when the claim lapses (RFC 3339).
const (
	LabelCacheFill      = "pullwright.cache.fill"
	LabelCacheFillUntil = "pullwright.cache.fill.until"
)

// ClaimCache waits until no other process on the engine fills c, then
// claims it for this one until release is called or ttl has passed: two
// bots sharing an engine must not write one cache at once, nor one mark
// it ready while the other writes. The claim is a container named for the
// cache, made and never started: the engine refuses a second container of
// a name, so the claim is taken or refused in one step on the engine.
// image only has to be present (the setup's own).
//
// A claim left by a process that died lapses at its ttl (or is removed by
// CleanupOrphans when that process's successor starts); a waiter then
// takes it over. The caller looks the cache up again once it holds the
// claim: the one it waited for may have made it ready.
func (d *Docker) ClaimCache(ctx context.Context, c Cache, image string, ttl time.Duration) (release func(), err error) {
	name := c.Volume + "-fill"
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		labels := d.labels(pullwright.RunSpec{Labels: map[string]string{
			LabelCacheFill:      c.Volume,
			LabelCacheFillUntil: time.Now().Add(ttl).UTC().Format(time.RFC3339),
		}})
		res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:       name,
			Config:     &container.Config{Image: image, Cmd: []string{"true"}, Labels: labels, NetworkDisabled: true},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err == nil {
			return func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				defer cancel()
				if _, err := d.cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
					d.log.Warn("runner: release a cache's claim", "cache", c.Volume, "err", err)
				}
			}, nil
		}
		if !cerrdefs.IsConflict(err) {
			return nil, fmt.Errorf("claim cache %s: %w", c.Volume, err)
		}
		held, err := d.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		switch {
		case cerrdefs.IsNotFound(err):
			continue // released between the two calls
		case err != nil:
			return nil, fmt.Errorf("claim cache %s: inspect the claim: %w", c.Volume, err)
		}
		var on map[string]string
		if held.Container.Config != nil {
			on = held.Container.Config.Labels
		}
		if on[LabelCacheFill] != c.Volume {
			return nil, fmt.Errorf("claim cache %s: a container named %s is there and is not a claim", c.Volume, name)
		}
		until, _ := time.Parse(time.RFC3339, on[LabelCacheFillUntil])
		if time.Now().After(until) {
			d.log.Warn("runner: a cache's claim lapsed; taking it over", "cache", c.Volume, "until", until)
			if _, err := d.cli.ContainerRemove(ctx, held.Container.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
				return nil, fmt.Errorf("claim cache %s: remove a lapsed claim: %w", c.Volume, err)
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("claim cache %s: another process fills it: %w", c.Volume, context.Cause(ctx))
		case <-time.After(wait):
		}
	}
}
