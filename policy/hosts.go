package policy

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The host patterns of fence.hosts and setup_hosts are the fence's (see
// package fence, Policy.Hosts): "name", "*.domain" for any name under the
// domain (not the domain itself), or an address, each optionally with
// ":port"; without a port, 443 and 80. They are checked here with rules
// of this package's own, a little stricter than the fence's, so that
// every pattern a file gets through is one the fence accepts, and the
// mistake is reported with its line rather than when setup starts.

// hostPattern is a parsed host pattern.
type hostPattern struct {
	// name is the lower-case host name without "*.", or the address in
	// its canonical form when addr is valid.
	name     string
	wildcard bool
	addr     netip.Addr
	ports    []int
}

// defaultPorts are the ports a pattern without one allows: the fence's.
var defaultPorts = []int{443, 80}

// parseHostPattern reads h, or says why it is not a host pattern.
func parseHostPattern(h string) (hostPattern, string) {
	notPattern := fmt.Sprintf("%q is not a host pattern: write a host name (mirror.example), \"*.\" and a domain (*.mirror.example), or an address (10.0.0.5, fd00::5), each optionally with \":port\"", shorten(h, 80))
	p := hostPattern{ports: defaultPorts}
	host := h
	// A port follows the last colon, unless the colons are an IPv6
	// address's, which must then be in brackets to carry a port.
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1 {
		hp, port, err := net.SplitHostPort(h)
		if err != nil || port == "" || strings.TrimLeft(port, "0123456789") != "" {
			return p, notPattern // a URL ("https://…") lands here
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return p, fmt.Sprintf("%q: the port must be a number from 1 to 65535", shorten(h, 80))
		}
		host, p.ports = hp, []int{n}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		// A zone ("%eth0") names an interface of the bot's machine, not
		// a place in the network.
		if a.Zone() != "" {
			return p, notPattern
		}
		p.addr, p.name = a, a.String()
		return p, ""
	}
	if strings.HasPrefix(h, "[") {
		return p, notPattern // brackets hold only an IPv6 address
	}
	name, wildcard := strings.CutPrefix(strings.ToLower(host), "*.")
	if !hostName(name) {
		return p, notPattern
	}
	p.name, p.wildcard = name, wildcard
	return p, ""
}

// hostName reports a DNS name: dot-separated labels of letters, digits
// and inner hyphens, at most 253 bytes, whose last label is not all
// digits. That last rule keeps "*.0.5" out: the fence matches
// wildcards on text, and would read it as a suffix of addresses.
func hostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return strings.TrimLeft(labels[len(labels)-1], "0123456789") != ""
}

// covers reports whether p allows name (a host name, or an address in
// canonical form) on port.
func (p hostPattern) covers(name string, isAddr bool, port int) bool {
	if !slices.Contains(p.ports, port) {
		return false
	}
	if p.addr.IsValid() || isAddr {
		return p.addr.IsValid() && isAddr && p.name == name
	}
	if p.wildcard {
		return strings.HasSuffix(name, "."+p.name)
	}
	return p.name == name
}

// hostWithin reports whether pattern h, a valid one, allows nothing that
// the patterns of allowed do not: on each of its ports, its name (or
// every name under its wildcard) is allowed by one of them.
func hostWithin(h string, allowed []string) bool {
	p, problem := parseHostPattern(h)
	if problem != "" {
		return false
	}
	var caps []hostPattern
	for _, a := range allowed {
		if c, problem := parseHostPattern(a); problem == "" {
			caps = append(caps, c)
		}
	}
	for _, port := range p.ports {
		ok := false
		for _, c := range caps {
			switch {
			case p.wildcard:
				// Every name under *.d is allowed when *.d itself, or
				// a wildcard over a domain d ends in, is.
				ok = c.wildcard && slices.Contains(c.ports, port) && (c.name == p.name || strings.HasSuffix(p.name, "."+c.name))
			default:
				ok = c.covers(p.name, p.addr.IsValid(), port)
			}
			if ok {
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// parseAllowedNet reads an entry of fence.allowed_nets, or says why it
// is not one. Only the canonical form is accepted (10.0.0.0/8, not
// 10.1.2.3/8): with host bits set, whether the operator meant the whole
// range or one address is a guess, and a wrong guess opens a range.
func parseAllowedNet(s string) (netip.Prefix, string) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Sprintf("%q is not an address range; write it like 10.20.0.0/16 or fd00:1::/64 (one address: 10.20.0.5/32)", shorten(s, 80))
	}
	switch {
	case p != p.Masked():
		return netip.Prefix{}, fmt.Sprintf("%q has bits set past its /%d; write the range as %s, or the one address as %s/%d", s, p.Bits(), p.Masked(), p.Addr(), p.Addr().BitLen())
	case p.Bits() == 0:
		// Every address would be open to setup, the cloud metadata
		// service's and the host's own services on private addresses
		// among them: a fence with no fence.
		return netip.Prefix{}, fmt.Sprintf("%q is every address; name the ranges the mirrors are on", s)
	case p.Addr().Is4In6() && p.Bits() >= 96:
		// The fence compares IPv4 addresses in their IPv4 form, which an
		// IPv4-mapped range would never contain.
		return netip.Prefix{}, fmt.Sprintf("%q is an IPv4 range written as IPv6; write it as %s", s, netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96))
	}
	return p, ""
}

// checkParentProxy checks the fence's parent proxy and the hosts reached
// without it. A proxy is written as a whole URL here (the environment's
// "host:port" shorthand is not taken in the file), and never quoted back
// in an error: it may carry a password.
func checkParentProxy(errs *Errors, at func(string) int, f Fence) {
	const key = "fence.parent_proxy"
	if problem := parentProxyProblem(f.ParentProxy); problem != "" {
		errs.add(at(key), key, "%s", problem)
	}
	for i, h := range f.ParentNoProxy {
		k := fmt.Sprintf("fence.parent_no_proxy[%d]", i)
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, ", \t/") && !isCIDR(h) {
			errs.add(at(k), k, "%q is not a host, a domain, an address or a range as NO_PROXY writes them (corp.example, .corp.example, 10.0.0.0/8, host:port)", shorten(h, 80))
		}
	}
	if len(f.ParentNoProxy) > 0 && (f.ParentProxy == "" || f.ParentProxy == NoParentProxy) {
		errs.add(at("fence.parent_no_proxy"), "fence.parent_no_proxy", "names the hosts reached without fence.parent_proxy, but there is none here (the environment's NO_PROXY goes with the environment's proxies)")
	}
}

func isCIDR(s string) bool {
	_, err := netip.ParsePrefix(s)
	return err == nil
}

// parentProxyProblem says why s is not a parent proxy for the fence, or
// "" ("" and NoParentProxy are not proxies but are fine).
func parentProxyProblem(s string) string {
	if s == "" || s == NoParentProxy {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Opaque != "" || u.Scheme == "" && u.Host == "":
		return `is not a URL; write it like http://proxy.corp.example:3128 (or "none" for no parent proxy)`
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%s:// is not a proxy the fence can use: it speaks HTTP to its parent, at an http:// or https:// URL", shorten(u.Scheme, 20))
	case u.Hostname() == "":
		return "names no host; write it like http://proxy.corp.example:3128"
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("%s://%s has a path, query or fragment; a proxy is only a scheme, a host and a port", u.Scheme, shorten(u.Host, 80))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("%s://%s: the port must be a number from 1 to 65535", u.Scheme, shorten(u.Host, 80))
		}
	}
	return ""
}
