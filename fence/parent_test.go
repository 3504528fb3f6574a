package fence

import (
	"bytes"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright/internal/egresstest"
)

// newParentProxy is the network's proxy on loopback (egresstest.Proxy):
// it resolves names alone, wants auth ("user:password") if not "", and
// records what it was asked.
func newParentProxy(t *testing.T, names map[string]netip.Addr, auth string, overTLS bool) *egresstest.Proxy {
	p := egresstest.NewProxy(t, names, overTLS)
	p.Auth = auth
	return p
}

// parentOf is a Parent of every request through proxy, but for noProxy.
func parentOf(t *testing.T, proxy, noProxy string) *Parent {
	t.Helper()
	pp, err := NewParent(httpproxy.Config{HTTPProxy: proxy, HTTPSProxy: proxy, NoProxy: noProxy})
	if err != nil || pp == nil {
		t.Fatalf("NewParent(%s): %v, %v", proxy, pp, err)
	}
	return pp
}

// logBuffer keeps what a proxy logged, from its handlers' goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logTo is a logger into buf, and into the test's output.
func logTo(t *testing.T, buf *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.MultiWriter(buf, t.Output()), nil))
}

const secret = "s3cret-pa55"

// In a network whose only way out is its proxy, the fence goes through it:
// the allowed hosts are reached through the parent alone (the fence here
// cannot resolve them at all), as CONNECT tunnels and absolute-URI
// requests with the parent's credentials, and a host the fence refuses
// never reaches the parent. No credential shows in events, logs or
// answers.
func TestParentCarriesWhatTheFenceAllows(t *testing.T) {
	registry := newBackend(t, true)
	mirror := newBackend(t, false)
	elsewhere := newBackend(t, true)
	parent := newParentProxy(t, map[string]netip.Addr{
		"registry.test": registry.addr(), "mirror.test": mirror.addr(), "elsewhere.test": elsewhere.addr(),
	}, "fence:"+secret, false)
	var logs logBuffer
	p, err := New(Policy{
		Hosts:  []string{"registry.test:" + registry.port(), "mirror.test:" + mirror.port()},
		Parent: parentOf(t, parent.URLWith("fence:"+secret), ""),
	}, &names{}, logTo(t, &logs)) // the fence resolves nothing
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	tests := []struct {
		name   string
		url    string
		via    *httptest.Server
		asked  string // what the parent was asked; "" for nothing
		status int    // 0: the CONNECT is refused
	}{
		{"a tunnel", "https://registry.test:" + registry.port() + "/mod/@v/list", registry.Server, "CONNECT registry.test:" + registry.port(), 200},
		{"a plain request", "http://mirror.test:" + mirror.port() + "/simple/", mirror.Server, "GET http://mirror.test:" + mirror.port() + "/simple/", 200},
		{"a host off the list", "https://elsewhere.test:" + elsewhere.port() + "/", elsewhere.Server, "", 0},
		{"a plain request off the list", "http://elsewhere.test:" + elsewhere.port() + "/", nil, "", 403},
		{"an address off the list", "https://" + elsewhere.Listener.Addr().String() + "/", elsewhere.Server, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(parent.Requests())
			resp, err := client(srv.URL, tc.via).Get(tc.url)
			if tc.status == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET %s = %s, want the CONNECT refused", tc.url, resp.Status)
				}
			} else {
				if err != nil {
					t.Fatalf("GET %s: %v", tc.url, err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("GET %s = %s, want %d", tc.url, resp.Status, tc.status)
				}
			}
			asked := parent.Requests()[before:]
			if tc.asked == "" && len(asked) > 0 || tc.asked != "" && (len(asked) != 1 || asked[0] != tc.asked) {
				t.Fatalf("the parent was asked %q, want %q", asked, tc.asked)
			}
		})
	}
	if registry.hits.Load() != 1 || mirror.hits.Load() != 1 || elsewhere.hits.Load() != 0 {
		t.Errorf("hits: registry %d, mirror %d, elsewhere %d; want 1, 1, 0", registry.hits.Load(), mirror.hits.Load(), elsewhere.hits.Load())
	}
	events, _ := p.Events()
	want := "allowed: registry.test:" + registry.port() + " (through the parent proxy " + parent.URL + ")"
	if len(events) != 5 || events[0].String() != want || !events[1].Allowed || events[2].Allowed {
		t.Errorf("events = %v; want first %q", events, want)
	}
	for _, e := range events {
		if strings.Contains(e.String(), secret) {
			t.Errorf("an event shows the parent's password: %s", e)
		}
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log shows the parent's password:\n%s", logs.String())
	}
}

// What the fence can still judge, it judges with a parent too: an
// address, and a name it resolves, must not be the bot's own or a
// non-public address outside the allowed ranges, and are refused before
// the parent hears of them. A name it cannot resolve is the parent's.
func TestParentFenceStillJudgesWhatItResolves(t *testing.T) {
	registry := newBackend(t, true)
	own := newBackend(t, false)
	parent := newParentProxy(t, map[string]netip.Addr{
		"registry.test": registry.addr(), "outside.test": registry.addr(), "inside.test": registry.addr(), "own.test": own.addr(),
	}, "", false)
	resolver := &names{table: map[string][]netip.Addr{
		"registry.test": {registry.addr()},                    // on loopback, which the policy allows
		"inside.test":   {netip.MustParseAddr("10.1.2.3")},    // a private address, not allowed
		"own.test":      {netip.MustParseAddr("127.0.0.2")},   // the bot's own
		"meta.test":     {netip.MustParseAddr("169.254.0.1")}, // link-local
	}}
	p, err := New(Policy{
		Hosts: []string{"registry.test:" + registry.port(), "outside.test:" + registry.port(), "inside.test:" + registry.port(),
			"own.test:" + own.port(), "meta.test", "169.254.169.254"},
		AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Denied:      []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		Parent:      parentOf(t, parent.URL, ""),
	}, resolver, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		url string
		ok  bool
		why string
	}{
		{"https://registry.test:" + registry.port() + "/", true, ""},
		{"https://outside.test:" + registry.port() + "/", true, ""}, // not resolved here: the parent's
		{"https://inside.test:" + registry.port() + "/", false, "resolves to 10.1.2.3, a private address"},
		{"http://own.test:" + own.port() + "/", false, "resolves to 127.0.0.2, an address of the bot's own"},
		{"https://meta.test/", false, "resolves to 169.254.0.1, a link-local address"},
		{"http://169.254.169.254/latest/meta-data/", false, "resolves to 169.254.169.254, a link-local address"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			before := len(parent.Requests())
			resp, err := client(srv.URL, registry.Server).Get(tc.url)
			if err == nil {
				resp.Body.Close()
			}
			if ok := err == nil && resp.StatusCode == 200; ok != tc.ok {
				t.Fatalf("GET %s: %v %v, want ok %v", tc.url, resp, err, tc.ok)
			}
			events, _ := p.Events()
			last := events[len(events)-1]
			if tc.ok != last.Allowed || !strings.Contains(last.Why, tc.why) {
				t.Errorf("last event %s, want allowed %v with %q", last, tc.ok, tc.why)
			}
			if n := len(parent.Requests()) - before; !tc.ok && n > 0 {
				t.Errorf("a refused host reached the parent: %q", parent.Requests()[before:])
			}
		})
	}
	if own.hits.Load() != 0 {
		t.Errorf("the bot's own address was reached")
	}
}

// Hosts the no-proxy list names are dialled directly, under the rules
// as without a parent; the rest goes through the parent.
func TestParentNoProxyIsDialledDirectly(t *testing.T) {
	mirror := newBackend(t, false)
	registry := newBackend(t, true)
	parent := newParentProxy(t, map[string]netip.Addr{"registry.test": registry.addr(), "mirror.corp.test": mirror.addr()}, "", false)
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	p, err := New(Policy{
		Hosts:       []string{"mirror.corp.test:" + mirror.port(), "registry.test:" + registry.port()},
		AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Parent:      parentOf(t, parent.URL, ".corp.test"),
	}, &names{table: map[string][]netip.Addr{"mirror.corp.test": lo}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	resp, err := client(srv.URL, nil).Get("http://mirror.corp.test:" + mirror.port() + "/simple/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the mirror, directly: %v %v", resp, err)
	}
	resp.Body.Close()
	if asked := parent.Requests(); len(asked) != 0 || mirror.hits.Load() != 1 {
		t.Fatalf("a no-proxy host: the parent was asked %q, the mirror hit %d times; want it reached directly", asked, mirror.hits.Load())
	}
	resp, err = client(srv.URL, registry.Server).Get("https://registry.test:" + registry.port() + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the registry, through the parent: %v %v", resp, err)
	}
	resp.Body.Close()
	if asked := parent.Requests(); len(asked) != 1 {
		t.Fatalf("the parent was asked %q, want the registry's CONNECT", asked)
	}
	events, _ := p.Events()
	if len(events) != 2 || events[0].Why != "127.0.0.1:"+mirror.port() || !strings.HasPrefix(events[1].Why, "through the parent proxy") {
		t.Errorf("events = %v", events)
	}
}

// What the parent refuses is a refusal the setup's record shows, with
// the parent's answer and never its password; its demand for other
// credentials is not passed to the sandbox as if its proxy asked.
func TestParentRefusals(t *testing.T) {
	registry := newBackend(t, true)
	mirror := newBackend(t, false)
	parent := newParentProxy(t, map[string]netip.Addr{"registry.test": registry.addr(), "mirror.test": mirror.addr()}, "fence:right", false)
	var logs logBuffer
	hosts := []string{"registry.test:" + registry.port(), "mirror.test:" + mirror.port(), "unknown.test"}
	p, err := New(Policy{Hosts: hosts, Parent: parentOf(t, parent.URLWith("fence:"+secret), "")}, &names{}, logTo(t, &logs))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	if resp, err := client(srv.URL, registry.Server).Get("https://registry.test:" + registry.port() + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("a tunnel the parent refused: %s", resp.Status)
	}
	events, _ := p.Events()
	want := "blocked: registry.test:" + registry.port() + " (refused by the parent proxy " + parent.URL + ": it answered 407 Proxy Authentication Required)"
	if last := events[len(events)-1]; last.String() != want {
		t.Errorf("event %q, want %q", last, want)
	}

	resp, err := client(srv.URL, nil).Get("http://mirror.test:" + mirror.port() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "refused the fence's credentials") || resp.Header.Get("Proxy-Authenticate") != "" {
		t.Errorf("a plain request with the wrong credentials = %s %q (Proxy-Authenticate %q), want 502 saying why", resp.Status, body, resp.Header.Get("Proxy-Authenticate"))
	}

	// A name the parent cannot resolve: its 502 is the refusal.
	right := parentOf(t, parent.URLWith("fence:right"), "")
	p2, _ := New(Policy{Hosts: hosts, Parent: right}, &names{}, logTo(t, &logs))
	srv2 := httptest.NewServer(p2)
	t.Cleanup(srv2.Close)
	if resp, err := client(srv2.URL, registry.Server).Get("https://unknown.test/"); err == nil {
		resp.Body.Close()
		t.Fatal("a host the parent does not know was reached")
	}
	events, _ = p2.Events()
	if last := events[len(events)-1]; last.Allowed || !strings.Contains(last.Why, "502 Bad Gateway") {
		t.Errorf("event %s, want the parent's 502", last)
	}
	if mirror.hits.Load() != 0 || registry.hits.Load() != 0 {
		t.Errorf("refused requests reached the servers")
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log shows the parent's password:\n%s", logs.String())
	}
}

// An https:// parent is spoken to over TLS, verified against RootCAs.
func TestParentOverTLS(t *testing.T) {
	registry := newBackend(t, true)
	parent := newParentProxy(t, map[string]netip.Addr{"registry.test": registry.addr()}, "fence:"+secret, true)
	pp := parentOf(t, parent.URLWith("fence:"+secret), "")
	p, err := New(Policy{Hosts: []string{"registry.test:" + registry.port()}, Parent: pp}, &names{}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	get := func() error {
		resp, err := client(srv.URL, registry.Server).Get("https://registry.test:" + registry.port() + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err == nil {
		t.Fatal("a parent whose certificate the fence does not trust was used")
	}
	pool := x509.NewCertPool()
	pool.AddCert(parent.Certificate())
	pp.RootCAs = pool
	if err := get(); err != nil {
		t.Fatalf("through the https:// parent: %v", err)
	}
	if asked := parent.Requests(); len(asked) != 1 || asked[0] != "CONNECT registry.test:"+registry.port() {
		t.Fatalf("the parent was asked %q", asked)
	}
}

// A parent that takes the connection and never answers costs a tunnel
// the dial timeout, not a goroutine for ever.
func TestParentThatNeverAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	pp := parentOf(t, "http://"+l.Addr().String(), "")
	u, _ := url.Parse("http://" + l.Addr().String())
	_, err = pp.connect(t.Context(), u, "registry.test:443", 200*time.Millisecond)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("connect = %v, want a timeout", err)
	}
}

func TestNewParent(t *testing.T) {
	for _, tc := range []struct {
		cfg  httpproxy.Config
		want string // the String, or the error
		ok   bool
	}{
		{httpproxy.Config{}, "", true},
		{httpproxy.Config{NoProxy: "corp.test"}, "", true},
		{httpproxy.Config{HTTPSProxy: "proxy.test:3128"}, "https:// through http://proxy.test:3128", true},
		{httpproxy.Config{HTTPSProxy: "https://fence:" + secret + "@proxy.test", HTTPProxy: "http://proxy.test:8080/", NoProxy: ".corp.test,10.0.0.0/8"},
			"https:// through https://proxy.test, http:// through http://proxy.test:8080; directly: .corp.test,10.0.0.0/8", true},
		{httpproxy.Config{HTTPSProxy: "socks5://fence:" + secret + "@proxy.test:1080"}, "the proxy for https://: socks5:// is not a proxy the fence can use", false},
		{httpproxy.Config{HTTPProxy: "http://fence:" + secret + "@proxy.test:3128/path"}, "the proxy for http://: http://proxy.test:3128 has a path", false},
		{httpproxy.Config{HTTPProxy: "http://fence:" + secret + "@[::1"}, "the proxy for http://: not a URL", false},
		{httpproxy.Config{HTTPProxy: "http://proxy.test:99999"}, "the port must be a number from 1 to 65535", false},
	} {
		pp, err := NewParent(tc.cfg)
		switch {
		case !tc.ok:
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
				t.Errorf("NewParent(%+v) = %v, want an error with %q and no password", tc.cfg, err, tc.want)
			}
		case err != nil:
			t.Errorf("NewParent(%+v): %v", tc.cfg, err)
		case tc.want == "" && pp != nil:
			t.Errorf("NewParent(%+v) = %s, want none", tc.cfg, pp)
		case tc.want != "" && (pp == nil || pp.String() != tc.want):
			t.Errorf("NewParent(%+v) = %v, want %q", tc.cfg, pp, tc.want)
		}
	}
	// The parent is picked per scheme, and not for what NO_PROXY names.
	pp, _ := NewParent(httpproxy.Config{HTTPSProxy: "http://tls.test:3128", HTTPProxy: "http://plain.test:3128", NoProxy: ".corp.test"})
	for _, tc := range []struct {
		scheme, host string
		want         string
	}{
		{"https", "registry.test", "http://tls.test:3128"}, {"http", "registry.test", "http://plain.test:3128"},
		{"https", "mirror.corp.test", ""}, {"http", "a.corp.test", ""}, {"http", "corp.test", "http://plain.test:3128"}, {"https", "127.0.0.1", ""},
	} {
		got := ""
		if u := pp.forURL(tc.scheme, tc.host, 443); u != nil {
			got = u.String()
		}
		if got != tc.want {
			t.Errorf("parent for %s://%s = %q, want %q", tc.scheme, tc.host, got, tc.want)
		}
	}
}
