package fence

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// A parent is the proxy the fence's own connections go out through, in a
// network whose only way out is a proxy (an enterprise's egress proxy,
// often one that inspects TLS). The fence still decides first: a host off
// the allow-list never reaches the parent. What it can still judge of an
// allowed host, it judges (the address rules below); the rest is the
// parent's, which resolves the name it is given and dials what it finds.
//
// The fence asks the parent for the host by name, not by the address it
// may have resolved itself, because:
//
//   - in such a network the fence often cannot resolve outside names at
//     all, or resolves them differently from the parent (split DNS);
//   - the parent's own rules and its TLS inspection go by name, and many
//     refuse a CONNECT to a bare address;
//   - a tunnel's TLS hello must name the host anyway (hello.go), which the
//     parent sees too.
//
// So with a parent: an address literal is judged as without one (never
// the bot's own, never a non-public one outside AllowedNets); a name the
// fence can resolve is refused if any of its addresses is one of those;
// a name it cannot resolve goes to the parent by name, which is the
// parent's to vet. What the parent then dials is not the fence's to see:
// a name rebound between the fence's lookup and the parent's, or one the
// parent's DNS answers differently, reaches whatever the parent reaches.

// Parent picks, for each connection the fence allows, the parent proxy to
// go through, or none (direct, as without a parent).
type Parent struct {
	proxyFor func(*url.URL) (*url.URL, error)
	// RootCAs verifies an https:// parent's certificate; nil means the
	// bot's system roots.
	RootCAs *x509.CertPool
	desc    string
}

// parentTimeout bounds a lookup the fence makes for a host it sends to a
// parent: in a network where outside names do not resolve, an answer may
// never come, and the parent resolves the name anyway.
const parentLookupTimeout = 5 * time.Second

// NewParent reads c as the environment's HTTP_PROXY, HTTPS_PROXY and
// NO_PROXY are read (net/http's ProxyFromEnvironment; x/net's httpproxy
// does the matching): HTTPSProxy is asked for tunnels, HTTPProxy for
// plain-HTTP requests, and hosts NoProxy names are dialled directly. A
// proxy is an http:// or https:// URL, or "host:port" for http://, with
// credentials in its user info if the parent wants them. c.CGI is
// ignored. It returns nil when c names no proxy. Its errors name the
// proxy without its credentials.
func NewParent(c httpproxy.Config) (*Parent, error) {
	var shown []string
	for _, p := range []struct{ name, value string }{{"https", c.HTTPSProxy}, {"http", c.HTTPProxy}} {
		if p.value == "" {
			continue
		}
		u, err := parseParentURL(p.value)
		if err != nil {
			return nil, fmt.Errorf("the proxy for %s://: %w", p.name, err)
		}
		shown = append(shown, p.name+":// through "+Shown(u))
	}
	if len(shown) == 0 {
		return nil, nil
	}
	desc := strings.Join(shown, ", ")
	if c.NoProxy != "" {
		desc += "; directly: " + c.NoProxy
	}
	c.CGI = false
	return &Parent{proxyFor: c.ProxyFunc(), desc: desc}, nil
}

// String says which parent serves what, without credentials.
func (pp *Parent) String() string { return pp.desc }

// parseParentURL reads a proxy as httpproxy does ("host:port" is
// http://host:port), and holds it to what the fence can speak to.
func parseParentURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if (err != nil || u.Scheme == "" || u.Host == "") && !strings.Contains(s, "://") {
		if v, verr := url.Parse("http://" + s); verr == nil {
			u, err = v, nil
		}
	}
	if err != nil {
		// url's error quotes the value, credentials and all.
		return nil, errors.New("not a URL (write it like http://proxy.example:3128)")
	}
	return u, CheckParentURL(u)
}

// CheckParentURL says why u cannot be a parent proxy of the fence, or nil:
// an http:// or https:// URL with a host, an optional port, and nothing
// after it. The error never shows u's credentials.
func CheckParentURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s:// is not a proxy the fence can use: it speaks HTTP (CONNECT, and absolute-URI requests) to a parent at an http:// or https:// URL", u.Scheme)
	case u.Hostname() == "" || u.Opaque != "":
		return errors.New("names no host (write it like http://proxy.example:3128)")
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%s has a path, query or fragment; a proxy is only a scheme, a host and a port", Shown(u))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%s: the port must be a number from 1 to 65535", Shown(u))
		}
	}
	return nil
}

// Shown is a proxy URL as logs and errors show it: scheme, host and port,
// never its credentials.
func Shown(u *url.URL) string {
	return u.Scheme + "://" + u.Host
}

// forURL is the parent proxy for a connection to host:port of scheme
// ("https" for a tunnel, "http" for a request), or nil for a direct one.
func (pp *Parent) forURL(scheme, host string, port int) *url.URL {
	if pp == nil {
		return nil
	}
	u, err := pp.proxyFor(&url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))})
	if err != nil {
		return nil // only with CGI set, which NewParent clears
	}
	return u
}

// address is where proxy listens: its host and port, the scheme's port
// when it names none (as net/http does).
func address(proxy *url.URL) string {
	port := proxy.Port()
	if port == "" {
		port = "80"
		if proxy.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(proxy.Hostname(), port)
}

// tlsConfig is how the fence speaks TLS to an https:// parent.
func (pp *Parent) tlsConfig(proxy *url.URL) *tls.Config {
	return &tls.Config{ServerName: proxy.Hostname(), RootCAs: pp.RootCAs, MinVersion: tls.VersionTLS12}
}

// dial connects to proxy itself (a TCP connection; net/http's transport
// speaks TLS to an https:// one), within timeout.
func (pp *Parent) dial(ctx context.Context, proxy *url.URL, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", address(proxy))
	if err != nil {
		return nil, fmt.Errorf("fence: dial the parent proxy %s: %w", Shown(proxy), err)
	}
	return conn, nil
}

// errParentRefused is a parent's answer other than 2xx to a CONNECT.
var errParentRefused = errors.New("refused by the parent proxy")

// connect opens a tunnel to hostport through proxy: a connection to the
// proxy (TLS for https://), a CONNECT for hostport by name with the
// proxy's credentials, and its answer, all within timeout.
func (pp *Parent) connect(ctx context.Context, proxy *url.URL, hostport string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pp.dial(ctx, proxy, timeout)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (net.Conn, error) {
		conn.Close()
		return nil, err
	}
	// The exchange below is bounded by ctx: a parent that accepts and
	// says nothing must not hold the tunnel's goroutine.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if proxy.Scheme == "https" {
		tc := tls.Client(conn, pp.tlsConfig(proxy))
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(fmt.Errorf("fence: TLS with the parent proxy %s: %w", Shown(proxy), err))
		}
		conn = tc
	}
	req := &http.Request{
		Method: http.MethodConnect, URL: &url.URL{Opaque: hostport}, Host: hostport,
		Header: http.Header{"User-Agent": {"pullwright-fence"}},
	}
	if auth := proxyAuthorization(proxy); auth != "" {
		req.Header.Set("Proxy-Authorization", auth)
	}
	if err := req.Write(conn); err != nil {
		return fail(fmt.Errorf("fence: CONNECT %s through the parent proxy %s: %w", hostport, Shown(proxy), err))
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return fail(fmt.Errorf("fence: CONNECT %s through the parent proxy %s: read its answer: %w", hostport, Shown(proxy), err))
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fail(fmt.Errorf("%w %s: it answered %s", errParentRefused, Shown(proxy), resp.Status))
	}
	if !stop() {
		// ctx ended as the answer came: the deadline may be set.
		return fail(fmt.Errorf("fence: CONNECT %s through the parent proxy %s: %w", hostport, Shown(proxy), context.Cause(ctx)))
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return fail(err)
	}
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// proxyAuthorization is the Basic credentials of proxy's user info, or "".
func proxyAuthorization(proxy *url.URL) string {
	if proxy.User == nil {
		return ""
	}
	pass, _ := proxy.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(proxy.User.Username()+":"+pass))
}

// scrub removes proxy's password from s, should an error of a library
// ever quote the URL: credentials never reach a log, an event or the
// sandbox.
func scrub(s string, proxy *url.URL) string {
	if proxy == nil || proxy.User == nil {
		return s
	}
	if pass, ok := proxy.User.Password(); ok && pass != "" {
		s = strings.ReplaceAll(s, pass, "***")
		s = strings.ReplaceAll(s, url.QueryEscape(pass), "***")
	}
	return s
}

// bufferedConn is a tunnel whose first bytes the parent sent with its
// answer, already read into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
