package setup

import (
	"debug/elf"
	"fmt"
	"net"
	"net/netip"
	"os"
)

// OwnAddresses are this machine's addresses but loopback's (which the
// fence refuses unless the operator allows it by name): a setup must not
// reach the bot's own services through them.
func OwnAddresses() []netip.Prefix {
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

// Forwarder is the binary copied into fenced setups: the configured one,
// or this bot's own when it is a static build (the image's is), since a
// sandbox image may have no C library for it.
func Forwarder(configured string) (string, error) {
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
