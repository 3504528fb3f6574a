// Package egresstest is an enterprise network's way out as tests stand it
// up on loopback: its egress proxy (Proxy), which may want credentials and
// may inspect TLS, and the certificate authority such a proxy signs with
// (CA). Nothing here reaches a host the test did not start: the proxy
// resolves names from its own table alone.
package egresstest

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// CA is a certificate authority a test makes: what a TLS-inspecting
// proxy, or an internal server, presents certificates of.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA makes a CA named name, valid for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// PEM is the CA's certificate, as a bundle file holds it.
func (ca *CA) PEM() []byte { return ca.pem }

// Pool is a pool of the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Issue is a server certificate for names (host names or addresses),
// signed by the CA.
func (ca *CA) Issue(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	c, err := ca.issue(names...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (ca *CA) issue(names ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if a, err := netip.ParseAddr(n); err == nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}, nil
}

// HTTPS is a server on loopback with a certificate for names from the CA,
// closed when the test ends.
func (ca *CA) HTTPS(t testing.TB, h http.Handler, names ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, names...)}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// Proxy is a network's egress proxy as a test stands it up on loopback.
// It carries CONNECT host:port and absolute-URI http:// requests to the
// hosts in its own table (Names; and loopback addresses), and refuses the
// rest as a real proxy would: 400 for a request that is neither, 407
// without the credentials it wants (Auth), 502 for a name it cannot
// resolve. It records every request it was asked (Requests).
//
// With Inspect set it inspects TLS, as many enterprise proxies do: it
// answers a CONNECT itself, ends the tunnel's TLS with a certificate for
// the host that Inspect signs, and carries each request inside to the
// host as plain HTTP. A client that does not trust Inspect fails.
type Proxy struct {
	*httptest.Server
	// Names, Auth and Inspect are read as requests come: set them before.
	Names   map[string]netip.Addr
	Auth    string // the user:password it wants; "" for none
	Inspect *CA

	mu    sync.Mutex
	asked []string // "CONNECT host:port", "GET http://host:port/path"
}

// NewProxy is a proxy on loopback resolving names, closed when the test
// ends; overTLS serves it at an https:// URL, with httptest's certificate.
func NewProxy(t testing.TB, names map[string]netip.Addr, overTLS bool) *Proxy {
	t.Helper()
	p := &Proxy{Names: names}
	if overTLS {
		p.Server = httptest.NewTLSServer(p)
	} else {
		p.Server = httptest.NewServer(p)
	}
	t.Cleanup(p.Close)
	return p
}

// Requests are the requests asked so far, oldest first.
func (p *Proxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

// URLWith is the proxy's URL with userinfo ("user:password") in it.
func (p *Proxy) URLWith(userinfo string) string {
	u, _ := url.Parse(p.URL)
	if user, pass, ok := strings.Cut(userinfo, ":"); ok {
		u.User = url.UserPassword(user, pass)
	}
	return u.String()
}

// resolve is the address a request for hostport goes to.
func (p *Proxy) resolve(hostport string) (string, bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", false
	}
	if a, ok := p.Names[host]; ok {
		return net.JoinHostPort(a.String(), port), true
	}
	if a, err := netip.ParseAddr(host); err == nil && a.IsLoopback() {
		return hostport, true
	}
	return "", false
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.asked = append(p.asked, r.Method+" "+r.RequestURI)
	p.mu.Unlock()
	if p.Auth != "" && r.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte(p.Auth)) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="egress"`)
		http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
		return
	}
	switch {
	case r.Method == http.MethodConnect:
		p.connect(w, r)
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		addr, ok := p.resolve(r.URL.Host)
		if !ok {
			http.Error(w, "unknown host", http.StatusBadGateway)
			return
		}
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.Header.Del("Proxy-Authorization")
		p.relay(w, out, addr)
	default:
		http.Error(w, "not a proxy request", http.StatusBadRequest)
	}
}

// relay sends req to addr and copies the answer to w.
func (p *Proxy) relay(w http.ResponseWriter, req *http.Request, addr string) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	addr, ok := p.resolve(r.RequestURI)
	if !ok {
		http.Error(w, "unknown host", http.StatusBadGateway)
		return
	}
	var up net.Conn
	if p.Inspect == nil {
		var err error
		if up, err = net.DialTimeout("tcp", addr, 10*time.Second); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	conn, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		if up != nil {
			up.Close()
		}
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	if p.Inspect == nil {
		splice(&buffered{conn, rw.Reader}, up)
		return
	}
	host, _, _ := net.SplitHostPort(r.RequestURI)
	tc := tls.Server(&buffered{conn, rw.Reader}, &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, err := p.Inspect.issue(host)
			return &c, err
		},
	})
	// What the client asks inside, the proxy carries to the host.
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			out := req.Clone(req.Context())
			out.RequestURI = ""
			out.URL.Scheme, out.URL.Host = "http", req.Host
			p.relay(w, out, addr)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	_ = srv.Serve(&oneConn{conn: tc})
}

// splice copies both ways until either side is done, then closes both.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(a, b); a.Close() })
	wg.Go(func() { _, _ = io.Copy(b, a); b.Close() })
	wg.Wait()
}

// buffered is a hijacked connection with what its reader already read.
type buffered struct {
	net.Conn
	r *bufio.Reader
}

func (b *buffered) Read(p []byte) (int, error) { return b.r.Read(p) }

// oneConn is a listener of one connection, done when it closes.
type oneConn struct {
	mu   sync.Mutex
	conn net.Conn
	done chan struct{}
}

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	if l.done == nil {
		l.done = make(chan struct{})
	}
	done := l.done
	l.mu.Unlock()
	if c != nil {
		return &closing{Conn: c, done: done}, nil
	}
	<-done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return &net.TCPAddr{} }

// closing tells its listener when it closed.
type closing struct {
	net.Conn
	once sync.Once
	done chan struct{}
}

func (c *closing) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}
