package fence

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// names is a resolver over a fixed table, standing in for DNS: the tests
// reach only servers they started, under names that would resolve
// nowhere. It records what it was asked.
type names struct {
	mu    sync.Mutex
	table map[string][]netip.Addr
	asked []string
}

func (n *names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.asked = append(n.asked, host)
	if a, ok := n.table[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func testLog(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

// backend is a server a test stands up, counting what reached it.
type backend struct {
	*httptest.Server
	hits atomic.Int64
}

func newBackend(t *testing.T, tlsToo bool) *backend {
	b := &backend{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		fmt.Fprintf(w, "served %s", r.URL.Path)
	})
	if tlsToo {
		b.Server = httptest.NewTLSServer(h)
	} else {
		b.Server = httptest.NewServer(h)
	}
	t.Cleanup(b.Close)
	return b
}

func (b *backend) port() string {
	_, p, _ := net.SplitHostPort(b.Listener.Addr().String())
	return p
}

func (b *backend) addr() netip.Addr {
	return netip.MustParseAddrPort(b.Listener.Addr().String()).Addr()
}

// client goes through proxy; it trusts srv's certificate under the name
// the certificate carries (httptest's), whatever name the URL uses. The
// TLS hello names the URL's host, as a real client's does: the fence
// checks it.
func client(proxy string, srv *httptest.Server) *http.Client {
	u, _ := url.Parse(proxy)
	tr := &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}
	if srv != nil && srv.TLS != nil {
		tr.TLSClientConfig = trusting(srv)
	}
	return &http.Client{Transport: tr}
}

// trusting verifies srv's certificate (httptest's, for example.com)
// whatever name the hello carries.
func trusting(srv *httptest.Server) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &tls.Config{
		InsecureSkipVerify: true, // verified below, under the certificate's own name
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			cert, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "example.com"})
			return err
		},
	}
}

func TestProxyAllowsOnlyWhatThePolicySays(t *testing.T) {
	registry := newBackend(t, true)  // the allowed registry, over TLS
	plain := newBackend(t, false)    // an allowed mirror over plain HTTP
	elsewhere := newBackend(t, true) // somewhere else, which nothing may reach
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	resolver := &names{table: map[string][]netip.Addr{
		"registry.test":        {registry.addr()},
		"mirror.test":          {plain.addr()},
		"elsewhere.test":       {elsewhere.addr()},
		"pkg.cdn.test":         {registry.addr()},
		"cdn.test":             {registry.addr()},
		"inside.test":          {netip.MustParseAddr("10.1.2.3")},
		"metadata.test":        {netip.MustParseAddr("169.254.169.254")},
		"mixed.test":           {registry.addr(), netip.MustParseAddr("192.168.0.1")},
		"mapped.test":          {netip.MustParseAddr("::ffff:10.0.0.1")},
		"gone.test":            nil,
		"nat64-metadata.test":  {netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
		"bots-own.test":        {registry.addr()},
		"registry-public.test": {netip.MustParseAddr("192.0.2.10")},
	}}
	listed := []string{
		"registry.test:" + registry.port(), "mirror.test:" + plain.port(), "*.cdn.test:" + registry.port(),
		"inside.test", "metadata.test", "mixed.test:" + registry.port(), "mapped.test", "gone.test",
		"nat64-metadata.test", "registry-public.test",
	}
	p, err := New(Policy{Hosts: listed, AllowedNets: []netip.Prefix{loopback}}, resolver, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	tests := []struct {
		name   string
		url    string
		via    *httptest.Server
		status int    // 0: the client's request fails (a refused CONNECT)
		why    string // in the event, and the refusal's body or error
	}{
		{"allowed, over TLS", "https://registry.test:" + registry.port() + "/mod/@v/list", registry.Server, 200, ""},
		{"allowed, plain HTTP", "http://mirror.test:" + plain.port() + "/simple/", plain.Server, 200, ""},
		{"a name under an allowed wildcard", "https://pkg.cdn.test:" + registry.port() + "/x", registry.Server, 200, ""},
		{"the wildcard's own domain", "https://cdn.test:" + registry.port() + "/x", registry.Server, 0, "not on the allow-list"},
		{"a host off the list", "https://elsewhere.test:" + elsewhere.port() + "/", elsewhere.Server, 0, "not on the allow-list"},
		{"a listed host on another port", "https://registry.test:" + elsewhere.port() + "/", elsewhere.Server, 0, "not on the allow-list"},
		{"an address literal", "https://" + elsewhere.Listener.Addr().String() + "/", elsewhere.Server, 0, "not on the allow-list"},
		{"a listed name on a private address", "https://inside.test/", nil, 0, "resolves to 10.1.2.3, a private address"},
		{"a listed name on the metadata address", "http://metadata.test/latest/meta-data/", nil, 403, "resolves to 169.254.169.254, a link-local address"},
		{"a listed name with one private address among others", "https://mixed.test:" + registry.port() + "/", nil, 0, "resolves to 192.168.0.1, a private address"},
		{"a listed name on an IPv4-mapped private address", "https://mapped.test/", nil, 0, "resolves to 10.0.0.1, a private address"},
		{"a listed name that does not resolve", "https://gone.test/", nil, 0, "does not resolve"},
		{"a listed name on a NAT64 form of the metadata address", "https://nat64-metadata.test/", nil, 0, "an IPv6 form of 169.254.169.254"},
		{"a listed name on a documentation address", "https://registry-public.test/", nil, 0, "a documentation address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := elsewhere.hits.Load()
			resp, err := client(srv.URL, tc.via).Get(tc.url)
			switch {
			case tc.status == 0:
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET %s through the fence: %s, want the CONNECT refused", tc.url, resp.Status)
				}
			case err != nil:
				t.Fatalf("GET %s: %v", tc.url, err)
			default:
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.why) {
					t.Fatalf("GET %s = %d %q, want %d with %q", tc.url, resp.StatusCode, body, tc.status, tc.why)
				}
			}
			if elsewhere.hits.Load() != before {
				t.Fatalf("a refused request reached the server")
			}
			events, _ := p.Events()
			last := events[len(events)-1]
			if want := tc.why == ""; last.Allowed != want || !strings.Contains(last.Why, tc.why) {
				t.Fatalf("last event = %s, want allowed %v with %q", last, want, tc.why)
			}
		})
	}
	if registry.hits.Load() != 2 || plain.hits.Load() != 1 {
		t.Errorf("allowed requests reached the registry %d times and the mirror %d, want 2 and 1", registry.hits.Load(), plain.hits.Load())
	}
}

// The operator's allowed ranges never open the bot's own addresses, and
// only the ranges named are opened.
func TestProxyDeniedAndAllowedNets(t *testing.T) {
	own := newBackend(t, false)
	resolver := &names{table: map[string][]netip.Addr{"own.test": {own.addr()}}}
	for _, tc := range []struct {
		name   string
		policy Policy
		why    string
	}{
		{"loopback not allowed", Policy{}, "a loopback address"},
		{"another range allowed", Policy{AllowedNets: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, "a loopback address"},
		{"the bot's own address", Policy{AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			Denied: []netip.Prefix{netip.PrefixFrom(own.addr(), 32)}}, "an address of the bot's own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.policy.Hosts = []string{"own.test:" + own.port()}
			p, err := New(tc.policy, resolver, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			defer srv.Close()
			resp, err := client(srv.URL, nil).Get("http://own.test:" + own.port() + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), tc.why) || own.hits.Load() != 0 {
				t.Fatalf("= %d %q (hits %d), want 403 saying %q", resp.StatusCode, body, own.hits.Load(), tc.why)
			}
		})
	}
}

// The proxy is no web server, and a request for its own address is not a
// way around it.
func TestProxyRefusesOtherRequests(t *testing.T) {
	p, err := New(Policy{}, &names{}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a direct request = %d, want 400", resp.StatusCode)
	}
}

func TestPatterns(t *testing.T) {
	for _, tc := range []struct {
		entry string
		ok    bool
	}{
		{"proxy.example", true}, {"*.example", true}, {"proxy.example:8443", true}, {"10.0.0.5:3000", true},
		{"[fd00::1]:3000", true}, {"Proxy.Example.", true},
		{"", false}, {"*", false}, {"*.", false}, {"a.*.example", false}, {"proxy.example:0", false},
		{"proxy.example:http", false}, {"https://proxy.example", false}, {"a b", false},
	} {
		_, err := New(Policy{Hosts: []string{tc.entry}}, &names{}, testLog(t))
		if (err == nil) != tc.ok {
			t.Errorf("New with %q: %v, want ok %v", tc.entry, err, tc.ok)
		}
	}
	p, _ := New(Policy{Hosts: []string{"Proxy.Example.", "*.cdn.example:8443"}}, &names{}, testLog(t))
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"proxy.example", 443, true}, {"PROXY.EXAMPLE.", 80, true}, {"proxy.example", 8080, false},
		{"a.cdn.example", 8443, true}, {"a.b.cdn.example", 8443, true}, {"cdn.example", 8443, false},
		{"a.cdn.example", 443, false}, {"evilcdn.example", 8443, false}, {"proxy.example.evil", 443, false},
	} {
		if got := p.listed(tc.host, tc.port); got != tc.want {
			t.Errorf("listed(%s, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
}

func TestNotPublic(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want string // part of the reason; "" for a public address
	}{
		{"93.184.215.14", ""}, {"2a00:1450:4001:80b::200e", ""}, {"1.1.1.1", ""},
		{"127.0.0.1", "loopback"}, {"::1", "loopback"}, {"::ffff:127.0.0.1", "loopback"},
		{"10.0.0.1", "private"}, {"172.16.5.4", "private"}, {"192.168.1.1", "private"}, {"fd12::1", "private"},
		{"169.254.169.254", "link-local"}, {"fe80::1", "link-local"},
		{"0.0.0.0", "unspecified"}, {"::", "unspecified"}, {"0.1.2.3", "this network"},
		{"100.100.100.200", "carrier-grade NAT"}, {"224.0.0.1", "multicast"}, {"ff02::1", "multicast"},
		{"198.18.0.1", "benchmarking"}, {"240.0.0.1", "reserved"}, {"255.255.255.255", "reserved"},
		{"64:ff9b::a00:1", "IPv6 form of 10.0.0.1"}, {"64:ff9b::5db8:d70e", ""},
		{"2001:db8::1", "documentation"}, {"2002:a00:1::1", "6to4"},
		// Every IPv6 form that carries an IPv4 address is judged by it,
		// and the deprecated forms are refused whatever they carry.
		{"::7f00:1", "IPv6 form of 127.0.0.1, a loopback"}, {"::a9fe:a9fe", "IPv6 form of 169.254.169.254, a link-local"},
		{"::5db8:d70e", "IPv4-compatible"}, {"::ffff:0:7f00:1", "IPv6 form of 127.0.0.1"}, {"::ffff:0:5db8:d70e", "IPv4-translated"},
		{"fec0::1", "site-local"}, {"192.88.99.1", "6to4 relay"},
	} {
		got := NotPublic(netip.MustParseAddr(tc.addr))
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("NotPublic(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// A sandbox that loops on a refused host does not grow the bot's memory.
func TestEventsAreBounded(t *testing.T) {
	p, _ := New(Policy{}, &names{}, testLog(t))
	p.maxEvents = 3
	for range 5 {
		p.record(Event{Host: "x", Port: 443, Why: "not on the allow-list"})
	}
	events, dropped := p.Events()
	if len(events) != 3 || dropped != 2 || events[0].String() != "blocked: x:443 (not on the allow-list)" {
		t.Fatalf("events %v, dropped %d", events, dropped)
	}
	long, _ := New(Policy{}, &names{}, testLog(t))
	long.record(Event{Host: strings.Repeat("a", 40000), Port: 443})
	if events, _ := long.Events(); len(events[0].Host) > maxHostLen+len("…") {
		t.Fatalf("a host of %d bytes was kept", len(events[0].Host))
	}
}

// A plain-HTTP request reaches the allowed server under the allowed name,
// whatever Host header the client sent: on a server of many names, another
// Host would reach a name the allow-list does not hold.
func TestProxySendsTheCheckedHost(t *testing.T) {
	var seen atomic.Value
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Store(r.Host) }))
	defer mirror.Close()
	_, port, _ := net.SplitHostPort(mirror.Listener.Addr().String())
	p, err := New(Policy{Hosts: []string{"mirror.test:" + port}, AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		&names{table: map[string][]netip.Addr{"mirror.test": {netip.MustParseAddr("127.0.0.1")}}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	// Written by hand: Go's client would put the Host into the request
	// line too.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET http://mirror.test:%s/ HTTP/1.1\r\nHost: elsewhere.test\r\nConnection: close\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := seen.Load(); got != "mirror.test:"+port {
		t.Fatalf("the server saw Host %v, want the allowed name (%s)", got, resp.Status)
	}
}

// A tunnel carries TLS to the name it was opened for: its hello must name
// that host (or none, for an address), so that a server of many names
// reached under an allowed one is not asked for another; anything but
// TLS is refused. Each refusal is an event.
func TestProxyChecksTheTLSName(t *testing.T) {
	mirror := newBackend(t, true)
	port := mirror.port()
	lo := netip.MustParseAddr("127.0.0.1")
	p, err := New(Policy{Hosts: []string{"mirror.test:" + port, "127.0.0.1:" + port}, AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		&names{table: map[string][]netip.Addr{"mirror.test": {lo}}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	tunnel := func(target string) net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK || br.Buffered() != 0 {
			t.Fatalf("CONNECT %s: %v %v", target, resp, err)
		}
		return conn
	}
	get := func(target, serverName string) error {
		conn := tunnel(target)
		defer conn.Close()
		cfg := trusting(mirror.Server)
		cfg.ServerName = serverName
		tc := tls.Client(conn, cfg)
		if err := tc.Handshake(); err != nil {
			return err
		}
		fmt.Fprintf(tc, "GET /x HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	tests := []struct {
		name, target, serverName string
		ok                       bool
		why                      string
	}{
		{"the name it asked for", "mirror.test:" + port, "mirror.test", true, ""},
		{"the name, in capitals", "mirror.test:" + port, "MIRROR.test", true, ""},
		{"another name", "mirror.test:" + port, "other.example", false, `the TLS hello names "other.example", not mirror.test`},
		{"no name for a name", "mirror.test:" + port, "", false, "the TLS hello names no host; it must name mirror.test"},
		{"no name for an address", "127.0.0.1:" + port, "", true, ""},
		{"a name for an address", "127.0.0.1:" + port, "mirror.test", false, `the TLS hello names "mirror.test", not 127.0.0.1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := p.Events()
			hits := mirror.hits.Load()
			err := get(tt.target, tt.serverName)
			if tt.ok != (err == nil) || tt.ok != (mirror.hits.Load() == hits+1) {
				t.Fatalf("err %v, %d requests reached the server; want ok=%v", err, mirror.hits.Load()-hits, tt.ok)
			}
			events, _ := p.Events()
			last := events[len(events)-1]
			// A refused tunnel is one event, and dialled nothing.
			if !tt.ok && (len(events) != len(before)+1 || last.Allowed || last.Why != tt.why) {
				t.Errorf("events after the refusal: %v; want a refusal saying %q", events[len(before):], tt.why)
			}
		})
	}
	// Not TLS at all.
	conn := tunnel("mirror.test:" + port)
	fmt.Fprintf(conn, "GET /x HTTP/1.1\r\nHost: mirror.test\r\n\r\n")
	if b, err := io.ReadAll(conn); err != nil || len(b) != 0 {
		t.Errorf("plain HTTP in a tunnel got %q, %v; want the connection closed", b, err)
	}
	conn.Close()
	events, _ := p.Events()
	if last := events[len(events)-1]; last.Allowed || !strings.HasPrefix(last.Why, "not TLS") {
		t.Errorf("last event %v, want the refusal of plain HTTP", last)
	}
}
