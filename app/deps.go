package app

import (
	"context"
	"debug/elf"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
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
	out := task.DepsReady{Env: p.Env, Release: p.Release}
	for _, c := range p.Caches {
		out.Caches = append(out.Caches, task.CacheMount{Volume: c.Volume, Target: c.Target, ReadOnly: c.ReadOnly})
	}
	if p.Setup != nil {
		rec := &task.SetupRecord{Steps: p.Plan.Steps, ExitCode: p.Setup.ExitCode, Failed: p.Failed, Duration: p.Setup.Duration,
			Output: tailLines(p.Setup.Output, 60)}
		for _, e := range p.Events {
			hp := net.JoinHostPort(e.Host, fmt.Sprint(e.Port))
			if e.Allowed {
				rec.Reached = appendNew(rec.Reached, hp)
			} else {
				rec.Blocked = appendNew(rec.Blocked, hp)
			}
		}
		out.Setup = rec
	}
	if d.m != nil {
		d.m.setup(out, err)
	}
	return out, err
}

// maxHostsShown bounds the hosts a setup record keeps of each kind: the
// record is stored with the task and shown in its status.
const maxHostsShown = 20

func appendNew(list []string, s string) []string {
	if len(list) >= maxHostsShown || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// tailLines keeps the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return "[…]\n" + strings.Join(lines[len(lines)-n:], "")
}

// ownAddresses are this machine's addresses but loopback's (which the
// fence refuses unless the operator allows it by name): a setup must not
// reach the bot's own services through them.
func ownAddresses() []netip.Prefix {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok || ip.Unmap().IsLoopback() {
			continue
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out
}

// forwarder is the binary copied into fenced setups: the configured one,
// or this bot's own when it is a static build (the image's is), since a
// sandbox image may have no C library for it.
func forwarder(configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := elf.Open(exe)
	if err != nil {
		return "", fmt.Errorf("%s is not a Linux binary: %w", exe, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%s is linked dynamically; build the bot with CGO_ENABLED=0 for setup to run", exe)
		}
	}
	return exe, nil
}
