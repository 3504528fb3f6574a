// Package fence is the egress allow-list of a sandbox that fetches
// dependencies: an HTTP proxy (CONNECT for TLS, absolute-form requests for
// plain HTTP) that reaches only the hosts a policy allows, at addresses
// that are public or in a range the operator named, and records every
// connection it allowed or refused.
//
// The proxy is only the gate. That nothing in the sandbox can go around it
// (a process that ignores HTTP_PROXY and dials an address itself) is the
// job of how the sandbox is wired to it: its only way out must be this
// proxy. The proxy resolves names itself and dials the address it checked,
// so a name that resolves to one address when checked and another when
// dialled (DNS rebinding) gets nowhere. In a network whose way out is a
// proxy of its own, the fence goes out through it (Parent, parent.go),
// which changes what it can check.
package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Policy is what a fenced sandbox may reach.
type Policy struct {
	// Hosts are the names the sandbox may reach: "proxy.example" exactly,
	// or "*.example" for any name under it (not "example" itself). A
	// pattern may end in ":port"; without one, ports 443 and 80 are
	// allowed. An address literal ("10.0.0.5:3000") is a host like any
	// other: allowed only if listed, and still subject to the address
	// rules below.
	Hosts []string
	// AllowedNets are the non-public ranges the operator allows (an
	// internal mirror on a private address, a test's registry on
	// loopback). Every other address that is not public is refused, even
	// for an allowed name.
	AllowedNets []netip.Prefix
	// Denied are addresses never reached whatever the rest says: the bot's
	// own, so that a sandbox cannot talk to the service that runs it.
	Denied []netip.Prefix
	// Parent, if set, is the network's own proxy, which what the rules
	// above allow goes out through (see Parent for what the fence can
	// still check then); nil dials every allowed address directly.
	Parent *Parent
}

// Resolver looks up a host's addresses (net.DefaultResolver does).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Event is one connection the proxy was asked for.
type Event struct {
	Host    string // as asked, without the port
	Port    int
	Allowed bool
	// Why is the reason of a refusal ("not on the allow-list", "resolves
	// to 10.0.0.5, a private address", a parent proxy's answer, …); for
	// an allowed connection, the address dialled, or "through the parent
	// proxy http://host:port".
	Why string
	At  time.Time
}

// String is how an event is shown: "blocked: host:port (why)".
func (e Event) String() string {
	hp := net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	if e.Allowed {
		return "allowed: " + hp + " (" + e.Why + ")"
	}
	return "blocked: " + hp + " (" + e.Why + ")"
}

// maxHostLen is the longest host name DNS has.
const maxHostLen = 253

// Proxy enforces a Policy on the connections it serves.
type Proxy struct {
	policy   Policy
	resolver Resolver
	log      *slog.Logger
	// dialTimeout bounds each connection attempt to an allowed address.
	dialTimeout time.Duration

	mu     sync.Mutex
	events []Event
	// maxEvents bounds what is kept: a sandbox that loops on a refused
	// host must not grow the bot's memory.
	maxEvents int
	dropped   int
}

// New returns a proxy for p. A nil resolver means net.DefaultResolver, a
// nil logger slog.Default().
func New(p Policy, r Resolver, log *slog.Logger) (*Proxy, error) {
	for _, h := range p.Hosts {
		if _, _, err := parsePattern(h); err != nil {
			return nil, err
		}
	}
	if r == nil {
		r = net.DefaultResolver
	}
	if log == nil {
		log = slog.Default()
	}
	return &Proxy{policy: p, resolver: r, log: log, dialTimeout: 30 * time.Second, maxEvents: 1000}, nil
}

// Events returns what the proxy was asked for so far, oldest first, and
// how many more were not kept.
func (p *Proxy) Events() ([]Event, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events), p.dropped
}

func (p *Proxy) record(e Event) {
	e.At = time.Now()
	if len(e.Host) > maxHostLen {
		// No name is longer (RFC 1035); a longer one is the sandbox's
		// words, kept short in the bot's memory, logs and comments.
		e.Host = e.Host[:maxHostLen] + "…"
	}
	p.mu.Lock()
	if len(p.events) < p.maxEvents {
		p.events = append(p.events, e)
	} else {
		p.dropped++
	}
	p.mu.Unlock()
	level := slog.LevelInfo
	if !e.Allowed {
		level = slog.LevelWarn
	}
	p.log.Log(context.Background(), level, "fence: "+e.String())
}

// ServeHTTP is the proxy: CONNECT host:port for TLS, or a request in
// absolute form (GET http://host/path) for plain HTTP. Anything else is
// refused: the proxy is no web server.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "fence: only CONNECT and absolute http:// requests go through this proxy", http.StatusBadRequest)
		return
	}
	p.forward(w, r)
}

// errBlocked marks a refusal by the policy, as opposed to a failure to
// reach an allowed host.
var errBlocked = errors.New("blocked by the fence")

// target is where an allowed connection goes: the address the fence
// checked and dials itself, or a parent proxy asked for the host by name.
type target struct {
	host   string
	port   int
	addr   netip.Addr // when direct
	parent *url.URL   // when through a parent
}

func (t target) hostport() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

// admit checks hostport against the policy, recording a refusal, and
// returns where to go. scheme is "https" for a tunnel and "http" for a
// plain request: it picks the parent proxy, if there is one.
func (p *Proxy) admit(ctx context.Context, hostport string, defaultPort int, scheme string) (target, error) {
	host, port, err := splitHostPort(hostport, defaultPort)
	if err != nil {
		p.record(Event{Host: hostport, Allowed: false, Why: err.Error()})
		return target{}, fmt.Errorf("%w: %v", errBlocked, err)
	}
	t := target{host: host, port: port}
	// The list before anything else: a host off it reaches no resolver
	// and no parent.
	why := "not on the allow-list"
	if p.listed(host, port) {
		if t.parent = p.policy.Parent.forURL(scheme, host, port); t.parent != nil {
			why = p.checkForParent(ctx, host)
		} else {
			t.addr, why = p.check(ctx, host)
		}
	}
	if why != "" {
		p.record(Event{Host: host, Port: port, Why: why})
		return target{}, fmt.Errorf("%w: %s:%d: %s", errBlocked, host, port, why)
	}
	return t, nil
}

// dialAddr connects to addr, admitted for host:port, recording it.
func (p *Proxy) dialAddr(ctx context.Context, host string, port int, addr netip.Addr) (net.Conn, error) {
	target := netip.AddrPortFrom(addr, uint16(port)).String()
	p.record(Event{Host: host, Port: port, Allowed: true, Why: target})
	d := net.Dialer{Timeout: p.dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, fmt.Errorf("fence: dial %s (%s): %w", net.JoinHostPort(host, strconv.Itoa(port)), target, err)
	}
	return conn, nil
}

// tunnel opens an admitted tunnel's connection: to the checked address,
// or through the parent. Through the parent, the event is recorded once
// it answered: a refusal with its answer, which the setup's record then
// shows; a parent that cannot be reached is an allowed connection that
// failed, as an address that cannot be dialled is.
func (p *Proxy) tunnel(ctx context.Context, t target) (net.Conn, error) {
	if t.parent == nil {
		return p.dialAddr(ctx, t.host, t.port, t.addr)
	}
	conn, err := p.policy.Parent.connect(ctx, t.parent, t.hostport(), p.dialTimeout)
	switch {
	case errors.Is(err, errParentRefused):
		p.record(Event{Host: t.host, Port: t.port, Why: scrub(err.Error(), t.parent)})
	default:
		p.record(Event{Host: t.host, Port: t.port, Allowed: true, Why: "through the parent proxy " + Shown(t.parent)})
	}
	if err != nil {
		msg := scrub(err.Error(), t.parent)
		if errors.Is(err, errParentRefused) {
			return nil, fmt.Errorf("%w: %s", errBlocked, msg)
		}
		return nil, errors.New(msg)
	}
	return conn, nil
}

// check returns the address to dial for host, listed, or the zero
// address and why not.
func (p *Proxy) check(ctx context.Context, host string) (netip.Addr, string) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		addrs, err = p.resolver.LookupNetIP(lctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return netip.Addr{}, "does not resolve"
		}
	}
	// Every address the name has must be allowed: a name that mixes a
	// public address with the metadata service's is not a registry.
	if why := p.refusesAny(addrs); why != "" {
		return netip.Addr{}, why
	}
	return addrs[0].Unmap(), ""
}

// checkForParent says why host, listed, may not go to the parent proxy,
// or "": what the fence can judge of it, it judges as without a parent
// (an address; a name it resolves); a name it cannot resolve is the
// parent's to resolve (see Parent).
func (p *Proxy) checkForParent(ctx context.Context, host string) string {
	if a, err := netip.ParseAddr(host); err == nil {
		return p.refusesAny([]netip.Addr{a})
	}
	lctx, cancel := context.WithTimeout(ctx, parentLookupTimeout)
	defer cancel()
	addrs, err := p.resolver.LookupNetIP(lctx, "ip", host)
	if err != nil {
		return ""
	}
	return p.refusesAny(addrs)
}

// refusesAny says why one of addrs may not be reached, or "".
func (p *Proxy) refusesAny(addrs []netip.Addr) string {
	for _, a := range addrs {
		if why := p.refuses(a); why != "" {
			return "resolves to " + a.Unmap().String() + ", " + why
		}
	}
	return ""
}

// refuses says why address a may not be reached, or "".
func (p *Proxy) refuses(a netip.Addr) string {
	a = a.Unmap()
	for _, d := range p.policy.Denied {
		if d.Contains(a) {
			return "an address of the bot's own"
		}
	}
	for _, n := range p.policy.AllowedNets {
		if n.Contains(a) {
			return ""
		}
	}
	return NotPublic(a)
}

// listed reports whether host:port matches an allowed pattern.
func (p *Proxy) listed(host string, port int) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range p.policy.Hosts {
		name, ports, _ := parsePattern(h)
		if !slices.Contains(ports, port) {
			continue
		}
		if suffix, ok := strings.CutPrefix(name, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if host == name {
			return true
		}
	}
	return false
}

// parsePattern splits an allow-list entry into its name and ports.
func parsePattern(h string) (name string, ports []int, err error) {
	name, ports = strings.ToLower(strings.TrimSpace(h)), []int{443, 80}
	if n, p, err := net.SplitHostPort(name); err == nil {
		port, perr := strconv.Atoi(p)
		if perr != nil || port < 1 || port > 65535 {
			return "", nil, fmt.Errorf("fence: allow-list entry %q: bad port", h)
		}
		name, ports = n, []int{port}
	}
	name = strings.TrimSuffix(name, ".")
	rest := strings.TrimPrefix(name, "*.")
	if rest == "" || strings.Contains(rest, "*") || strings.ContainsAny(rest, "/ :@") && !isAddr(rest) {
		return "", nil, fmt.Errorf("fence: allow-list entry %q is not a host name, \"*.\" and a domain, or an address", h)
	}
	return name, ports, nil
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// splitHostPort reads host[:port] as a client asked for it.
func splitHostPort(hostport string, defaultPort int) (string, int, error) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		if defaultPort == 0 {
			return "", 0, fmt.Errorf("no port in %q", hostport)
		}
		host, p = hostport, strconv.Itoa(defaultPort)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("not a host and port: %q", hostport)
	}
	return strings.Trim(host, "[]"), port, nil
}

// connect serves CONNECT: a TLS connection to the checked address. The
// tunnel's first bytes must be a TLS ClientHello naming the host the
// client asked for (or none, for an address): a name is checked once, and
// an allowed host's server must not be asked for another name it also
// serves (a CDN's other customers). After the hello the bytes go both
// ways unread.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	// The policy first, answered as a refusal; the address is dialled
	// only once the hello passed, so a refused tunnel reaches nothing.
	t, err := p.admit(r.Context(), r.Host, 0, "https")
	if err != nil {
		refuse(w, err)
		return
	}
	host, port := t.host, t.port
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "fence: cannot take over the connection", http.StatusInternalServerError)
		return
	}
	client, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		return
	}
	_ = client.SetReadDeadline(time.Now().Add(helloTimeout))
	h := clientHello(rw.Reader)
	_ = client.SetReadDeadline(time.Time{})
	if why := h.refusal(host); why != "" {
		p.record(Event{Host: host, Port: port, Why: why})
		client.Close()
		return
	}
	up, err := p.tunnel(r.Context(), t)
	if err != nil {
		if !errors.Is(err, errBlocked) { // a refusal is logged as its event
			p.log.Warn("fence: "+err.Error(), "host", host)
		}
		client.Close()
		return
	}
	if _, err := up.Write(h.read); err != nil {
		client.Close()
		up.Close()
		return
	}
	// What the client sent after its hello, already read into rw.
	if n := rw.Reader.Buffered(); n > 0 {
		buffered, _ := rw.Reader.Peek(n)
		if _, err := up.Write(buffered); err != nil {
			client.Close()
			up.Close()
			return
		}
	}
	splice(client, up)
}

// shortName cuts a name from the sandbox for an event.
func shortName(s string) string {
	if len(s) > maxHostLen {
		return s[:maxHostLen] + "…"
	}
	return s
}

// splice copies both ways until either side is done, then closes both.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// forward serves a plain-HTTP request in absolute form through a transport
// that dials only what the policy allowed: the checked address, or the
// parent proxy, which gets the request in absolute form too.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	t, err := p.admit(r.Context(), r.URL.Host, 80, "http")
	if err != nil {
		refuse(w, err)
		return
	}
	tr := &http.Transport{
		Proxy: nil, // never the bot's own proxy settings
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return p.dialAddr(ctx, t.host, t.port, t.addr)
		},
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: time.Minute,
	}
	if t.parent != nil {
		tr.Proxy = http.ProxyURL(t.parent) // its credentials go as Proxy-Authorization
		tr.TLSClientConfig = p.policy.Parent.tlsConfig(t.parent)
		tr.TLSHandshakeTimeout = p.dialTimeout // with an https:// parent
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			p.record(Event{Host: t.host, Port: t.port, Allowed: true, Why: "through the parent proxy " + Shown(t.parent)})
			return p.policy.Parent.dial(ctx, t.parent, p.dialTimeout)
		}
	}
	defer tr.CloseIdleConnections()
	out := r.Clone(r.Context())
	out.RequestURI = ""
	// The Host header is the host checked, not one the client chose: on a
	// server that hosts many names, another Host would reach a name the
	// allow-list does not hold at an address it does.
	out.Host = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	resp, err := tr.RoundTrip(out)
	if err != nil {
		if t.parent != nil {
			err = fmt.Errorf("%s", scrub(err.Error(), t.parent))
		}
		refuse(w, err)
		return
	}
	defer resp.Body.Close()
	if t.parent != nil && resp.StatusCode == http.StatusProxyAuthRequired {
		// The parent's, about the fence's credentials: not the
		// sandbox's to answer, and no proxy it knows asked.
		p.log.Warn("fence: the parent proxy wants other credentials (fence.parent_proxy, or the bot's HTTP_PROXY)", "parent", Shown(t.parent))
		http.Error(w, "fence: the parent proxy "+Shown(t.parent)+" refused the fence's credentials", http.StatusBadGateway)
		return
	}
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// hopHeaders are the connection's own, not the request's (RFC 9110 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// refuse answers a request the proxy did not carry: 403 for the policy's
// refusals (with the reason, which the client's error shows), 502 for an
// allowed host that could not be reached.
func refuse(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	if errors.Is(err, errBlocked) {
		code = http.StatusForbidden
	}
	http.Error(w, err.Error(), code)
}
