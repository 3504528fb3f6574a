package app

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/setup"
	"github.com/pullwright/pullwright/task"
)

// dependencies adapts setup.Setup to the task's port.
type dependencies struct {
	s *setup.Setup
	m *metrics
	// denied are the bot's own addresses, which no setup reaches.
	denied []netip.Prefix
}

func (d dependencies) Prepare(ctx context.Context, r task.DepsRequest) (task.DepsReady, error) {
	var nets []netip.Prefix
	for _, n := range r.Nets {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return task.DepsReady{}, fmt.Errorf("setup: allowed range %q: %w", n, err)
		}
		nets = append(nets, p.Masked())
	}
	p, err := d.s.Prepare(ctx, setup.Request{
		Repo: r.Repo.FullName(), Dir: r.Dir, Base: r.Base, Image: r.Image, Setup: r.Setup,
		Policy:         fence.Policy{Hosts: r.Hosts, AllowedNets: nets, Denied: d.denied},
		ToolchainHosts: r.ToolchainHosts,
		Memory:         r.Memory, Disk: r.Disk, NanoCPUs: int64(r.CPUs * 1e9), Timeout: r.Timeout, Labels: r.Labels,
	})
	out := task.DepsReady{Caches: p.Caches, Env: p.Env, Links: p.Links, Release: p.Release}
	if p.Setup != nil {
		reached, blocked := p.Hosts()
		out.Setup = &task.SetupRecord{Steps: p.Plan.Steps, ExitCode: p.Setup.ExitCode, Failed: p.Failed, Duration: p.Setup.Duration,
			Output: tailLines(p.Setup.Output, 60), Reached: firstHosts(reached), Blocked: firstHosts(blocked)}
	}
	if d.m != nil {
		d.m.setup(out, err)
		if p.Measured {
			d.m.caches(p.CacheBytes, len(p.Evicted))
		}
	}
	return out, err
}

// maxHostsShown bounds the hosts a setup record keeps of each kind: the
// record is stored with the task and shown in its status.
const maxHostsShown = 20

func firstHosts(list []string) []string { return list[:min(len(list), maxHostsShown)] }

// tailLines keeps the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return "[…]\n" + strings.Join(lines[len(lines)-n:], "")
}
