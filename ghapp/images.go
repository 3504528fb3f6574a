package ghapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/images"
)

// maxImageRedirects bounds the redirects of one image: GitHub's
// attachment link answers with one, to its storage's signed URL.
const maxImageRedirects = 3

// imageHosts are the hosts of the configured GitHub that serve the
// pictures people put in issues: its web host, where attachment links
// live (github.com/user-attachments/assets/…, the same on a GitHub
// Enterprise Server's host) and the only one the installation token is
// sent to, and the storage hosts that serve older uploads by a signed or
// public URL, sent nothing.
type imageHosts struct {
	web     *url.URL
	storage map[string]bool
	// test are the origins ("http://localhost:41234") a test's
	// ImageTest.Storage names as storage hosts; empty in production.
	test map[string]bool
}

// newImageHosts derives the hosts from the REST base URL, as GitHub pairs
// them: api.github.com with github.com and its githubusercontent.com
// image hosts; a GitHub Enterprise Server's https://HOST/api/v3 with HOST
// and, with subdomain isolation, media.HOST; api.SUB.ghe.com with SUB.ghe.com;
// anything else (a test's server) is its own web host.
func newImageHosts(base string, test *ImageTest) (imageHosts, error) {
	u, err := url.Parse(base)
	if err != nil {
		return imageHosts{}, fmt.Errorf("GitHub API base URL %q: %w", base, err)
	}
	web := &url.URL{Scheme: u.Scheme, Host: u.Host}
	// A server's API under /api/v3 is on its web host, whatever the host
	// is called: api.corp.example/api/v3 serves api.corp.example, and
	// corp.example may be anyone's.
	if h, ok := strings.CutPrefix(u.Host, "api."); ok && !strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3") {
		web.Host = h
	}
	h := imageHosts{web: web, storage: map[string]bool{}, test: map[string]bool{}}
	if test != nil {
		for _, o := range test.Storage {
			t, err := url.Parse(o)
			if err != nil || t.Host == "" || (t.Path != "" && t.Path != "/") {
				return imageHosts{}, fmt.Errorf("test image storage %q: want scheme://host:port", o)
			}
			h.test[t.Scheme+"://"+strings.ToLower(t.Host)] = true
		}
	}
	switch {
	case web.Host == "github.com":
		h.storage["private-user-images.githubusercontent.com"] = true
		h.storage["user-images.githubusercontent.com"] = true
	case strings.HasSuffix(u.Path, "/api/v3"):
		h.storage["media."+web.Host] = true
	}
	return h, nil
}

// classify says whether u may be fetched, and whether with the token.
func (h imageHosts) classify(u *url.URL) (ours, token bool) {
	if u.User != nil {
		return false, false
	}
	if u.Scheme == h.web.Scheme && strings.EqualFold(u.Host, h.web.Host) {
		// The token reads whatever the installation may: on the web
		// host it goes only to an attachment's link, never to a
		// repository's raw file an issue's author picked.
		if !strings.HasPrefix(u.Path, "/user-attachments/assets/") || strings.Contains(u.Path[len("/user-attachments/assets/"):], "/") {
			return false, false
		}
		return true, true
	}
	host := strings.ToLower(u.Host)
	return (u.Scheme == "https" && h.storage[host]) || h.test[u.Scheme+"://"+host], false
}

// Image fetches a picture an issue or comment of r shows, when ref is on
// the configured GitHub's own hosts; a link to any other host is refused
// with pullwright.ErrNotGitHubs before anything is asked of it, and so is
// every redirect: each hop is judged as the first (imageHosts.classify),
// and a connection is made only to a public address, judged on the
// address actually dialled (imageDial), whatever a host's name resolves
// to. The installation's token goes to an attachment link on GitHub's web
// host alone: GitHub answers one with a redirect to its storage, on
// another host, which gets no Authorization header (checkRedirect drops
// it on every hop that is not an attachment link, net/http only on a
// change of host). At most limit bytes are taken (more is
// pullwright.ErrTooLarge, after reading limit+1), and the bytes must be a
// PNG, JPEG, GIF or WebP picture whatever the server's Content-Type says
// (pullwright.ErrNotAnImage). Errors and logs name the URL without its
// query, where a signed URL keeps its signature.
func (a *App) Image(ctx context.Context, r pullwright.Repo, ref string, limit int64) (data []byte, kind string, err error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, "", fmt.Errorf("image link: %w", pullwright.ErrNotGitHubs)
	}
	hosts := a.imgHosts
	ours, withToken := hosts.classify(u)
	if !ours {
		return nil, "", fmt.Errorf("image on %s: %w", redact(u), pullwright.ErrNotGitHubs)
	}
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", fmt.Errorf("image %s: %w", redact(u), err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "image/*")
	if withToken {
		tok, err := a.Token(ctx, r.InstallationID)
		if err != nil {
			return nil, "", fmt.Errorf("image %s: %w", redact(u), err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	// GitHub's retries (rate limits, 5xx, network errors) over the image
	// transport, whose connections are judged by address; a copy, so that
	// a test's clock on a.rt holds here too.
	rt := *a.rt
	rt.next = a.imgTransport
	client := &http.Client{Transport: &rt, CheckRedirect: hosts.checkRedirect}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// url.Error prints the URL it failed on, a signed one after a
			// redirect: keep its cause only.
			err = ue.Err
		}
		return nil, "", fmt.Errorf("fetch image %s: %w", redact(u), err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, "", fmt.Errorf("fetch image %s: %w", redact(u), pullwright.ErrGone)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, "", fmt.Errorf("fetch image %s: GitHub answered %d: %w", redact(u), resp.StatusCode, pullwright.ErrNotPermitted)
	case resp.StatusCode != http.StatusOK:
		return nil, "", fmt.Errorf("fetch image %s: GitHub answered %d", redact(u), resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, "", fmt.Errorf("image %s of %d bytes: %w (%d)", redact(u), resp.ContentLength, pullwright.ErrTooLarge, limit)
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("read image %s: %w", redact(u), err)
	}
	if int64(len(data)) > limit {
		return nil, "", fmt.Errorf("image %s: %w (%d bytes)", redact(u), pullwright.ErrTooLarge, limit)
	}
	kind, ok := images.Kind(data)
	if !ok {
		return nil, "", fmt.Errorf("image %s (%s): %w", redact(u), http.DetectContentType(data), pullwright.ErrNotAnImage)
	}
	a.log.DebugContext(ctx, "fetched an image", "url", redact(u), "bytes", len(data), "type", kind)
	return data, kind, nil
}

// checkRedirect follows at most maxImageRedirects redirects, each to a
// place the first request could have been made to (classify: GitHub's
// web host's attachment links and its storage hosts, nowhere else), never
// from https to http, and keeps the token only on a hop to an attachment
// link: net/http would still send it to another path of the web host,
// to a subdomain, or to another port of the same host.
func (h imageHosts) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxImageRedirects {
		return fmt.Errorf("more than %d redirects", maxImageRedirects)
	}
	if req.URL.Scheme != "https" && via[0].URL.Scheme == "https" {
		return fmt.Errorf("redirect from https to %s: %w", redact(req.URL), pullwright.ErrNotGitHubs)
	}
	ours, token := h.classify(req.URL)
	if !ours {
		return fmt.Errorf("redirect to %s: %w", redact(req.URL), pullwright.ErrNotGitHubs)
	}
	if !token {
		req.Header.Del("Authorization")
	}
	return nil
}

// ImageTest lets a test's own servers, on loopback and under names GitHub
// does not use, stand in for the configured GitHub's image hosts. It is
// for tests only: production leaves Config.ImageTest nil, and the image
// fetch then reaches GitHub's hosts at public addresses alone (and the
// configured API's own address, below).
type ImageTest struct {
	// Storage are origins ("http://localhost:41234") taken as image
	// storage hosts of the configured GitHub, beside its own: sent no
	// token, reached by redirect or by a link.
	Storage []string
	// Loopback are the loopback addresses ("127.0.0.1:41234") the fetch
	// may connect to: the test's servers, each on its own port. Any other
	// loopback address, and every other non-public one, stays refused.
	Loopback []netip.AddrPort
}

// refusedAddress is a connection the image fetch would not make: the
// address it was about to dial (or that the target resolved to, behind a
// proxy) is not public. It is an ErrNotGitHubs: GitHub serves pictures
// from public addresses, so whatever a name led to there is not GitHub's.
type refusedAddress struct {
	host string // the name resolved, behind a proxy; "" when dialled
	addr netip.Addr
	why  string
}

func (e *refusedAddress) Error() string {
	what := e.addr.String()
	if e.host != "" {
		what = e.host + " resolves to " + what + ", which"
	}
	return fmt.Sprintf("%s is %s: pictures are fetched from public addresses only", what, e.why)
}

func (e *refusedAddress) Unwrap() error { return pullwright.ErrNotGitHubs }

// imageDial judges every address the image fetch connects to, on the
// address itself, as the fence judges setup's (fence.NotPublic): a host
// that resolves to a loopback, private, link-local (a cloud's metadata
// service), unspecified, multicast or otherwise reserved address is
// refused when the connection is made, so neither a redirect nor a name
// that resolves differently on the next lookup (DNS rebinding) reaches
// the bot's machine or network. Two kinds of address are let through:
// those the configured API's own host resolves to, on its port (a GitHub
// Enterprise Server on the operator's network; the bot already sends it
// every call), and a test's ImageTest.Loopback.
type imageDial struct {
	apiHost  string
	apiPort  uint16
	loopback []netip.AddrPort
	resolver *net.Resolver

	mu sync.Mutex
	// proxies are the proxies (host:port, as the transport dials them)
	// the transport was told to use: the operator's, dialled as they are,
	// the target having been judged before (proxy).
	proxies map[string]bool
}

// newImageTransport is the transport of the image fetch: a clone of base
// when it is an *http.Transport (http.DefaultTransport otherwise), whose
// every connection, and every target behind a proxy, imageDial judges.
func newImageTransport(base http.RoundTripper, api *url.URL, test *ImageTest) (*http.Transport, *imageDial, error) {
	d := &imageDial{apiHost: api.Hostname(), resolver: net.DefaultResolver, proxies: map[string]bool{}}
	d.apiPort = defaultPort(api)
	if test != nil {
		for _, ap := range test.Loopback {
			if !ap.Addr().Unmap().IsLoopback() {
				return nil, nil, fmt.Errorf("test image address %s: want a loopback address", ap)
			}
			d.loopback = append(d.loopback, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		}
	}
	tr, ok := base.(*http.Transport)
	if !ok {
		tr = http.DefaultTransport.(*http.Transport)
	}
	tr = tr.Clone()
	// Every connection goes through DialContext: no other dial hook of
	// the base may go around it.
	tr.DialTLSContext, tr.DialTLS, tr.Dial = nil, nil, nil
	checked := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, ControlContext: d.control}
	plain := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if d.isProxy(addr) {
			return plain.DialContext(ctx, network, addr)
		}
		return checked.DialContext(ctx, network, addr)
	}
	if next := tr.Proxy; next != nil {
		tr.Proxy = d.proxy(next)
	}
	return tr, d, nil
}

// control judges the address a connection is about to be made to, after
// the name was resolved: the address dialled is the one judged.
func (d *imageDial) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("connect to %q: not an address: %w", address, pullwright.ErrNotGitHubs)
	}
	return d.judge(ctx, ap)
}

// judge says why the fetch may not connect to ap, or nil.
func (d *imageDial) judge(ctx context.Context, ap netip.AddrPort) error {
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	why := fence.NotPublic(ap.Addr())
	if why == "" || slices.Contains(d.loopback, ap) {
		return nil
	}
	if ap.Port() == d.apiPort && d.isAPI(ctx, ap.Addr()) {
		return nil
	}
	return &refusedAddress{addr: ap.Addr(), why: why}
}

// isAPI reports whether a is an address of the configured API's host.
// Looked up only for a non-public address, which on github.com is never
// the API's.
func (d *imageDial) isAPI(ctx context.Context, a netip.Addr) bool {
	if ip, err := netip.ParseAddr(d.apiHost); err == nil {
		return ip.Unmap() == a
	}
	addrs, err := d.resolver.LookupNetIP(ctx, "ip", d.apiHost)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(addrs, func(b netip.Addr) bool { return b.Unmap() == a })
}

// proxy wraps the transport's choice of proxy. Behind a proxy the
// connection is to the proxy, which resolves the target itself: the
// target is judged here on what it resolves to now, as the fence judges
// a host before handing it to its parent proxy (a name that resolves
// differently for the proxy a moment later is the proxy's to judge).
func (d *imageDial) proxy(next func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		p, err := next(req)
		if p == nil || err != nil {
			return p, err
		}
		host, port := req.URL.Hostname(), defaultPort(req.URL)
		addrs, err := d.resolver.LookupNetIP(req.Context(), "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		for _, a := range addrs {
			if err := d.judge(req.Context(), netip.AddrPortFrom(a, port)); err != nil {
				if r, ok := err.(*refusedAddress); ok {
					r.host = host
				}
				return nil, err
			}
		}
		d.mu.Lock()
		d.proxies[net.JoinHostPort(p.Hostname(), fmt.Sprint(defaultPort(p)))] = true
		d.mu.Unlock()
		return p, nil
	}
}

func (d *imageDial) isProxy(addr string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.proxies[addr]
}

// defaultPort is u's port, or its scheme's.
func defaultPort(u *url.URL) uint16 {
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	switch u.Scheme {
	case "http":
		return 80
	case "socks5", "socks5h":
		return 1080
	}
	return 443
}

// redact is u without its query, fragment or credentials: what a log or
// an error may show of a URL that may be signed.
func redact(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
