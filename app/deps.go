package app

import (
	"context"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// metered is a setup whose outcomes are counted in the metrics: a cache
// hit, a fill, a failure, what the fence refused, and the caches' size.
// It passes the request and the result through unchanged.
type meteredSetup struct {
	task.Dependencies
	m *metrics
}

func (d meteredSetup) Prepare(ctx context.Context, r pullwright.SetupRequest) (pullwright.SetupResult, error) {
	out, err := d.Dependencies.Prepare(ctx, r)
	d.m.setup(out, err)
	if out.Measured {
		d.m.caches(out.CacheBytes, len(out.Evicted))
	}
	return out, err
}
