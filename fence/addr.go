package fence

import "net/netip"

// NotPublic says what kind of non-public address a is ("a loopback
// address", …), or "" when a is an ordinary public unicast address. Names
// of such addresses are refused unless the operator allowed the range:
// they are the bot's machine, its network, or a cloud's metadata service,
// none of which a dependency download has any business with. It is
// exported so that the bot's other fetches of addresses someone else
// wrote (ghapp's image fetch) judge them by the same list.
func NotPublic(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "no address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsLinkLocalUnicast():
		return "a link-local address (cloud metadata services live there)"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "a multicast address"
	case a.IsPrivate():
		return "a private address"
	}
	if a.Is6() {
		// Every IPv6 form that carries an IPv4 address in its last 32
		// bits: the address inside is what it would reach.
		b := a.As16()
		inner := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		for _, f := range embedding {
			if !f.prefix.Contains(a) {
				continue
			}
			if why := NotPublic(inner); why != "" {
				return "an IPv6 form of " + inner.String() + ", " + why
			}
			if f.refused != "" {
				return f.refused + " (of " + inner.String() + ")"
			}
		}
	}
	for _, r := range reserved {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	return ""
}

// embedding are the IPv6 forms with an IPv4 address in their last 32
// bits. NAT64's is allowed when the address inside is public (a gateway
// reaches it); the others are deprecated or translation-only forms no
// dependency host is published under, refused whatever is inside.
var embedding = []struct {
	prefix  netip.Prefix
	refused string
}{
	{netip.MustParsePrefix("64:ff9b::/96"), ""},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible IPv6 address (deprecated)"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "an IPv4-translated IPv6 address"},
}

// reserved are the special-purpose ranges (RFC 6890 and successors) that
// netip's predicates do not name.
var reserved = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `a "this network" address`},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay anycast address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address (deprecated)"},
}
