package deps

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The default hosts setup may reach are the ones the image's own package
// managers are configured with, so that an image built around a mirror
// just works and no registry's name is written into the bot. They are
// read by running a probe (ToolchainProbe) in the image, with no network,
// and parsing what it prints (ParseProbe, or GoHosts, NPMHosts and
// PipHosts directly). The parsers are pure: they read text and return
// the fence's host patterns, "host:port", sorted and without duplicates.
//
// What a parser cannot read gives no host rather than an error: a host
// left out is refused by the fence, and the refusal, with its name, is in
// setup's output, where an operator sees what to add to fence.hosts.

// ToolchainProbe returns the shell command that prints, in the sandbox
// image, the configuration ParseProbe reads for eco; false for an
// ecosystem whose configuration is not read.
//
// The command must run as setup's commands will (the image's user and
// environment, plus the variables setup gets) but in an empty working
// directory, never in the checkout, and with no network. The directory
// matters: npm, pnpm and Yarn read a project's own configuration (.npmrc,
// .yarnrc.yml) from the directory they run in, and a repository must not
// widen its own fence by naming a registry there; it asks for hosts with
// setup_hosts, within the operator's cap. Only the command's standard
// output is parsed.
//
// Cargo has no probe: its default registry's index names the host crates
// are downloaded from in a file fetched over the network, so the hosts
// cannot be read from the image alone, and Cargo prints its effective
// configuration only with unstable options. Setup for Cargo reaches what
// the operator's fence.hosts (and the repository's setup_hosts) allow.
func ToolchainProbe(eco Ecosystem) (string, bool) {
	switch eco {
	case Go:
		// GOTOOLCHAIN=local: a GOTOOLCHAIN in the image's go.env or
		// environment would otherwise have the go command fetch another
		// toolchain before printing anything, and the probe has no
		// network. The settings printed are the same either way.
		return "GOTOOLCHAIN=local go env GOPROXY GOSUMDB GOPRIVATE", true
	case NPM:
		return "npm config get registry", true
	case PNPM:
		return "pnpm config get registry", true
	case Yarn:
		// Yarn 1 calls the setting registry; Yarn 2 and later refuse that
		// name and call it npmRegistryServer.
		return "yarn config get registry 2>/dev/null || yarn config get npmRegistryServer", true
	case Python:
		// pip prints its effective index only through its own option
		// parser: "pip config list" shows what configuration files and
		// PIP_* variables set, but not pip's built-in default. One line
		// for the index, one per extra index; an empty first line when
		// pip is configured with no index at all.
		return `python3 -c 'from pip._internal.commands import create_command; o, _ = create_command("install").parse_args([]); print("\n".join([] if o.no_index else [o.index_url, *o.extra_index_urls]))'`, true
	}
	return "", false
}

// ParseProbe reads the output of eco's ToolchainProbe into host patterns.
// It fails when the output does not have the shape the probe prints (a
// probe that failed, or printed something else), so that the caller
// reports that rather than running setup with fewer hosts than meant.
func ParseProbe(eco Ecosystem, output string) ([]string, error) {
	lines := probeLines(output)
	switch eco {
	case Go:
		if len(lines) != 3 {
			return nil, fmt.Errorf("go env printed %d lines, want 3 (GOPROXY, GOSUMDB, GOPRIVATE)", len(lines))
		}
		return GoHosts(lines[0], lines[1], lines[2]), nil
	case NPM, PNPM, Yarn:
		if len(lines) != 1 || strings.TrimSpace(lines[0]) == "" {
			return nil, fmt.Errorf("%s printed %q, want one line: the registry's URL", eco, shortOutput(output))
		}
		return NPMHosts(lines[0]), nil
	case Python:
		if len(lines) == 0 {
			return nil, fmt.Errorf("pip printed nothing, want its index URL (or an empty line for none)")
		}
		return PipHosts(lines[0], lines[1:]), nil
	}
	return nil, fmt.Errorf("no toolchain probe for %q", eco)
}

// probeLines splits output into lines, dropping only the final line
// break: an empty line is a value (GOPRIVATE unset, pip with no index),
// so "\n" is one line and only "" is none.
func probeLines(output string) []string {
	if output == "" {
		return nil
	}
	output = strings.ReplaceAll(output, "\r\n", "\n")
	return strings.Split(strings.TrimSuffix(output, "\n"), "\n")
}

// shortOutput cuts a probe's output for an error message.
func shortOutput(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// GoHosts returns the hosts the go command downloads modules from, as `go
// env` prints its settings:
//
//   - goproxy is a list of proxy URLs separated by "," or "|". The go
//     command stops at "direct" or "off", so entries after either are
//     never reached and give no host. "direct" itself means each
//     module's version-control host, which is not allowed by default: an
//     operator who wants one lists it in fence.hosts. An entry with no
//     scheme is https, as for the go command; file:// URLs name no host.
//   - gosumdb is "off", "name", "name+key", or "name+key URL": the host of
//     the URL when one is given (the go command then asks only it),
//     otherwise the name's own host over https. Without a URL the go
//     command first asks each proxy whether it serves the checksum
//     database, and reaches the name only if none does; it is allowed
//     either way, since which will be asked is known only at run time.
//   - goprivate adds no host: the modules it names are fetched directly
//     from their version-control hosts, as for "direct", and do not
//     change what the other modules need.
//
// Each host comes with its port, the URL's or its scheme's (https 443,
// http 80).
func GoHosts(goproxy, gosumdb, goprivate string) []string {
	var hosts []string
	for entry := range strings.FieldsFuncSeq(goproxy, func(r rune) bool { return r == ',' || r == '|' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if entry == "direct" || entry == "off" {
			break
		}
		// The go command's own rule for a proxy written without a scheme.
		if strings.ContainsAny(entry, ".:/") && !strings.Contains(entry, ":/") && !path.IsAbs(entry) {
			entry = "https://" + entry
		}
		if h := urlHost(entry); h != "" {
			hosts = append(hosts, h)
		}
	}
	if f := strings.Fields(gosumdb); len(f) == 2 {
		if h := urlHost(f[1]); h != "" {
			hosts = append(hosts, h)
		}
	} else if len(f) == 1 && f[0] != "off" {
		name, _, _ := strings.Cut(f[0], "+")
		if h := urlHost("https://" + name); h != "" {
			hosts = append(hosts, h)
		}
	}
	return tidy(hosts)
}

// NPMHosts returns the host of the registry npm (or pnpm, or Yarn) is
// configured with, as `npm config get registry` prints it. Scoped
// registries ("@scope:registry") are not read: they are a project's own,
// which the probe does not see, so a repository that needs one names its
// host in setup_hosts.
func NPMHosts(registry string) []string {
	return tidy([]string{urlHost(registry)})
}

// PipHosts returns the hosts of pip's index and extra indexes, as pip's
// configuration gives them (an extra may hold several URLs separated by
// spaces, as pip reads them). find-links locations are not read.
func PipHosts(indexURL string, extraIndexURLs []string) []string {
	hosts := []string{urlHost(indexURL)}
	for _, e := range extraIndexURLs {
		for u := range strings.FieldsSeq(e) {
			hosts = append(hosts, urlHost(u))
		}
	}
	return tidy(hosts)
}

// urlHost returns the fence pattern "host:port" of an http or https URL,
// or "" for anything else: another scheme, no host, a bad port, or a host
// that is neither an address nor a plain name. The last matters: the
// pattern goes on the allow-list, and a host such as "*.example" would
// be read there as a wildcard.
func urlHost(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Opaque != "" {
		return ""
	}
	port := map[string]string{"https": "443", "http": "80"}[u.Scheme]
	if port == "" {
		return ""
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return ""
		}
		port = strconv.Itoa(n)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return ""
		}
		host = a.String()
	} else if !plainName(host) {
		return ""
	}
	return net.JoinHostPort(host, port)
}

// plainName reports a non-empty DNS name of letters, digits, "-", "_"
// and non-empty dot-separated labels.
func plainName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// tidy drops empty entries, sorts and removes duplicates, so that equal
// configurations give equal lists.
func tidy(hosts []string) []string {
	hosts = slices.DeleteFunc(hosts, func(h string) bool { return h == "" })
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	if len(hosts) == 0 {
		return nil
	}
	return hosts
}
