package setup

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/pullwright/pullwright/runner"
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

// forwarderCheckTimeout bounds finding the forwarder's files.
const forwarderCheckTimeout = 30 * time.Second

// Forwarder is the binary copied into fenced setups: the configured one,
// or else this bot's own, however it was linked (a dynamic build goes with
// its loader and libraries, runner.LoadForwarder). Its files are found
// here, so that a bot whose forwarder cannot run says so at the start.
func Forwarder(configured string) (string, error) {
	exe := configured
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Errorf("find this bot's executable: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), forwarderCheckTimeout)
	defer cancel()
	if _, err := runner.LoadForwarder(ctx, exe); err != nil {
		return "", err
	}
	return exe, nil
}
