package app

import (
	"context"
	"fmt"
	"log/slog"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/policy"
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

// fenceParent is the network's own proxy that setups go out through
// (fence.Parent): the operator's fence.parent_proxy, or the bot's proxy
// environment when the file names none; nil for none. One the fence
// cannot speak to stops the bot at start, naming where it came from.
func fenceParent(f policy.Fence, env httpproxy.Config, log *slog.Logger) (*fence.Parent, error) {
	c, from := f.ParentProxyConfig(env)
	parent, err := fence.NewParent(c)
	if err != nil {
		return nil, fmt.Errorf("the parent proxy of setups' fence, from %s: %w; set fence.parent_proxy to one it can use, or to %q for none",
			from, err, policy.NoParentProxy)
	}
	if parent != nil {
		log.Info("setups go out through a parent proxy", "parent", parent.String(), "from", from)
	}
	return parent, nil
}
