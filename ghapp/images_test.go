package ghapp

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/testimage"
)

var (
	pngBytes  = testimage.PNG(2, 2)
	pageBytes = []byte("<!DOCTYPE html><html><body>Sign in to GitHub</body></html>")
)

var widgets = pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}

// newImageEnv is newEnv with the fake's storage host, on loopback under
// the name localhost, taken as GitHub's (ImageTest): its web host is the
// API's own address, which the fetch may reach as it is.
func newImageEnv(t *testing.T) *env {
	t.Helper()
	fake := fakegithub.New(t)
	return newEnvOn(t, fake, func(c *Config) {
		c.ImageTest = &ImageTest{Storage: []string{fake.StorageURL()}, Loopback: []netip.AddrPort{fake.StorageAddr()}}
	})
}

// addrOf is the loopback address a test server listens on.
func addrOf(t *testing.T, srv *httptest.Server) netip.AddrPort {
	t.Helper()
	return netip.MustParseAddrPort(srv.Listener.Addr().String())
}

// An attachment is fetched as GitHub serves it: the link on the web host,
// asked with the installation's token, answers with a redirect to a
// signed URL on the storage host, which gets no token and serves the
// bytes. Neither the token nor the signature is logged.
func TestImageFollowsGitHubsRedirectWithoutTheToken(t *testing.T) {
	e := newImageEnv(t)
	link := e.fake.AddAttachment(fakegithub.Attachment{Owner: owner, Repo: repo, Data: pngBytes, ContentType: "image/png"})
	data, kind, err := e.app.Image(context.Background(), widgets, link, 1<<20)
	if err != nil {
		t.Fatalf("Image: %v\nlogs:\n%s", err, e.logs)
	}
	if kind != "image/png" || string(data) != string(pngBytes) {
		t.Errorf("Image = %q, %d bytes; want image/png, %d bytes", kind, len(data), len(pngBytes))
	}
	path := strings.TrimPrefix(link, e.fake.WebURL)
	var asked []fakegithub.Request
	for _, r := range e.fake.Requests() {
		if r.Path == path {
			asked = append(asked, r)
		}
	}
	if len(asked) != 1 || asked[0].Auth != "token" || asked[0].Status != http.StatusFound {
		t.Errorf("the web host was asked %+v; want one request with the installation's token, answered 302", asked)
	}
	stored := e.fake.StorageRequests()
	if len(stored) != 1 || stored[0].Status != http.StatusOK {
		t.Fatalf("the storage host was asked %+v; want one signed request answered 200", stored)
	}
	if stored[0].Authorization != "" {
		t.Errorf("the storage host, another host, got Authorization %q", stored[0].Authorization)
	}
	tok, err := e.app.Token(context.Background(), inst)
	if err != nil {
		t.Fatal(err)
	}
	if logs := e.logs.String(); strings.Contains(logs, tok) || strings.Contains(logs, stored[0].Query) {
		t.Errorf("the logs hold the token or the signed query:\n%s", logs)
	}
}

// What may not be given to the model is refused, and says why.
func TestImageRefusals(t *testing.T) {
	e := newImageEnv(t)
	e.fake.AddInstallation(99, "other/secret")
	elsewhere := &recorder{}
	other := httptest.NewServer(elsewhere)
	t.Cleanup(other.Close)
	big := append(append([]byte(nil), pngBytes...), make([]byte, 2048)...)
	for _, tc := range []struct {
		name string
		link string
		want error
	}{
		{"another host", other.URL + "/screenshot.png", pullwright.ErrNotGitHubs},
		{"another host, with GitHub's path", other.URL + "/user-attachments/assets/1", pullwright.ErrNotGitHubs},
		{"credentials in the link", strings.Replace(e.fake.WebURL, "http://", "http://u:p@", 1) + "/user-attachments/assets/1", pullwright.ErrNotGitHubs},
		{"too large", e.fake.AddAttachment(fakegithub.Attachment{Owner: owner, Repo: repo, Data: big, ContentType: "image/png"}), pullwright.ErrTooLarge},
		{"a page called a picture", e.fake.AddAttachment(fakegithub.Attachment{Owner: owner, Repo: repo, Data: pageBytes, ContentType: "image/png"}), pullwright.ErrNotAnImage},
		{"another repository's file", e.fake.AddAttachment(fakegithub.Attachment{Owner: "other", Repo: "secret", Data: pngBytes, ContentType: "image/png"}), pullwright.ErrGone},
		{"no such file", e.fake.WebURL + "/user-attachments/assets/00000000-0000-4000-a000-000000000000", pullwright.ErrGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := e.app.Image(context.Background(), widgets, tc.link, 1024)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Image(%s) = %v, want %v", tc.link, err, tc.want)
			}
			if strings.Contains(err.Error(), "jwt=") {
				t.Errorf("the error shows the signed URL: %v", err)
			}
		})
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("the other host was asked %d times", n)
	}
	for _, r := range e.fake.StorageRequests() {
		if r.Status == http.StatusOK && r.Authorization != "" {
			t.Errorf("the storage host got a token: %+v", r)
		}
	}
}

// recorder is a host that is not GitHub's: it counts what it is asked.
type recorder struct {
	mu    sync.Mutex
	asked []http.Header
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.asked = append(r.asked, req.Header.Clone())
	r.mu.Unlock()
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(pngBytes)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.asked)
}

// A GitHub whose redirects go on, or go to its storage host on another
// port of its own host name (where net/http alone would still send the
// token): the redirects are bounded, and the token stays with the first
// host and port.
func TestImageRedirects(t *testing.T) {
	side := &recorder{}
	sideSrv := httptest.NewServer(side)
	t.Cleanup(sideSrv.Close)
	hops := 0
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/user-attachments/assets/loop":
			hops++
			http.Redirect(w, r, "/user-attachments/assets/loop", http.StatusFound)
		case "/user-attachments/assets/port":
			http.Redirect(w, r, sideSrv.URL+"/signed.png?jwt=secret-signature", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(web.Close)
	app, err := New(Config{Token: "ghs_fixedtoken", Identity: &pullwright.Identity{Login: "github-actions[bot]"}, BaseURL: web.URL, MaxRetries: -1,
		ImageTest: &ImageTest{Storage: []string{sideSrv.URL}, Loopback: []netip.AddrPort{addrOf(t, sideSrv)}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := app.Image(context.Background(), widgets, web.URL+"/user-attachments/assets/loop", 1024); err == nil || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("a redirect loop = %v, want the bound on redirects", err)
	}
	if hops != maxImageRedirects+1 {
		t.Errorf("the loop was followed %d times, want %d", hops, maxImageRedirects+1)
	}
	data, _, err := app.Image(context.Background(), widgets, web.URL+"/user-attachments/assets/port", 1024)
	if err != nil || len(data) != len(pngBytes) {
		t.Fatalf("Image = %d bytes, %v", len(data), err)
	}
	side.mu.Lock()
	defer side.mu.Unlock()
	if len(side.asked) != 1 || side.asked[0].Get("Authorization") != "" {
		t.Errorf("the other port was asked %d times, with Authorization %q", len(side.asked), side.asked[0].Get("Authorization"))
	}
}

func TestImageHosts(t *testing.T) {
	for _, tc := range []struct {
		base        string
		link        string
		ours, token bool
	}{
		{"https://api.github.com", "https://github.com/user-attachments/assets/1", true, true},
		{"https://api.github.com", "https://private-user-images.githubusercontent.com/1/2.png?jwt=x", true, false},
		{"https://api.github.com", "https://user-images.githubusercontent.com/1/2.png", true, false},
		{"https://api.github.com", "http://github.com/user-attachments/assets/1", false, false},
		{"https://api.github.com", "https://api.github.com/user-attachments/assets/1", false, false},
		{"https://api.github.com", "https://github.com.evil.example/x.png", false, false},
		{"https://api.github.com", "https://camo.githubusercontent.com/x", false, false},
		{"https://ghe.example.com/api/v3", "https://ghe.example.com/user-attachments/assets/1", true, true},
		{"https://ghe.example.com/api/v3", "https://media.ghe.example.com/user/1/files/2", true, false},
		{"https://ghe.example.com/api/v3", "https://github.com/user-attachments/assets/1", false, false},
		{"https://ghe.example.com/api/v3", "https://private-user-images.githubusercontent.com/1/2.png", false, false},
		{"https://api.acme.ghe.com", "https://acme.ghe.com/user-attachments/assets/1", true, true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/user-attachments/assets/1", true, true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8081/user-attachments/assets/1", false, false},
		// A server named api.* serving /api/v3 is its own web host; the
		// name without api. may be anyone's.
		{"https://api.corp.example.com/api/v3", "https://corp.example.com/x.png", false, false},
		{"https://api.corp.example.com/api/v3", "https://api.corp.example.com/user-attachments/assets/1", true, true},
		// The token goes to an attachment's link only, never to a file an
		// issue's author points at.
		{"https://api.github.com", "https://github.com/org/private/raw/main/x.png", false, false},
		{"https://api.github.com", "https://github.com/user-attachments/assets/1/../../org/private/raw/main/x.png", false, false},
		{"https://api.github.com", "https://github.com/user-attachments/files/1/secret.png", false, false},
	} {
		h, err := newImageHosts(tc.base, nil)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(tc.link)
		if ours, token := h.classify(u); ours != tc.ours || token != tc.token {
			t.Errorf("on %s, %s: ours %v, token %v; want %v, %v", tc.base, tc.link, ours, token, tc.ours, tc.token)
		}
	}
}

// Every redirect is judged as the first link: GitHub's attachment link
// may lead to its storage host, and nowhere else. A redirect to another
// server, to a loopback or metadata address, or to another page of the
// web host (where the token would still go) is refused before anything
// is asked of it, as a picture not on GitHub's hosts; the agent is told
// "it is on a site that is not GitHub's, which the bot does not fetch
// from" (task.pictureRefusal).
func TestImageRedirectsStayOnGitHub(t *testing.T) {
	elsewhere := &recorder{}
	other := httptest.NewServer(elsewhere)
	t.Cleanup(other.Close)
	private := &recorder{}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/org/private/raw/main/x.png" {
			private.ServeHTTP(w, r)
			return
		}
		// The attachment's id is where it leads, in hex.
		to, err := hex.DecodeString(strings.TrimPrefix(r.URL.Path, "/user-attachments/assets/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, string(to), http.StatusFound)
	}))
	t.Cleanup(web.Close)
	app, err := New(Config{Token: "ghs_fixedtoken", Identity: &pullwright.Identity{Login: "github-actions[bot]"}, BaseURL: web.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, to string }{
		// Every target is a server of this test's: on today's code, where
		// they were followed, a redirect to anything else would leave it.
		{"another server, at a loopback address", other.URL + "/signed.png?jwt=secret-signature"},
		{"localhost by name", strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/x.png"},
		{"the web host's address under another name", strings.Replace(web.URL, "127.0.0.1", "localhost", 1) + "/user-attachments/assets/zz"},
		{"another page of the web host", web.URL + "/org/private/raw/main/x.png"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := web.URL + "/user-attachments/assets/" + hex.EncodeToString([]byte(tc.to))
			_, _, err := app.Image(context.Background(), widgets, link, 1024)
			if !errors.Is(err, pullwright.ErrNotGitHubs) {
				t.Fatalf("a redirect to %s = %v, want %v", tc.to, err, pullwright.ErrNotGitHubs)
			}
			for _, leak := range []string{"secret-signature", "ghs_fixedtoken"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the error shows %q: %v", leak, err)
				}
			}
		})
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("the other server was asked %d times", n)
	}
	if n := private.count(); n != 0 {
		t.Errorf("the web host's other page was asked %d times (Authorization %q)", n, private.asked[0].Get("Authorization"))
	}
}

// A host the fetch may ask (here a storage host of the test's GitHub) is
// still not connected to when it resolves to a loopback address that is
// not one of the test's own: the address dialled is judged, not the name,
// so neither a name that resolves to the bot's machine nor one rebound
// between two lookups reaches it. The refusal is not retried, and says
// which address and why.
func TestImageConnectsOnlyToPublicAddresses(t *testing.T) {
	stored := &recorder{}
	storage := httptest.NewServer(stored)
	t.Cleanup(storage.Close)
	named := strings.Replace(storage.URL, "127.0.0.1", "localhost", 1)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, named+"/signed.png?jwt=secret-signature", http.StatusFound)
	}))
	t.Cleanup(web.Close)
	logs := &strings.Builder{}
	var mu sync.Mutex
	app, err := New(Config{Token: "ghs_fixedtoken", Identity: &pullwright.Identity{Login: "github-actions[bot]"}, BaseURL: web.URL,
		Logger:    slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, nil)),
		ImageTest: &ImageTest{Storage: []string{named}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{web.URL + "/user-attachments/assets/1", named + "/direct.png"} {
		_, _, err := app.Image(context.Background(), widgets, link, 1024)
		var refused *refusedAddress
		if !errors.Is(err, pullwright.ErrNotGitHubs) || !errors.As(err, &refused) {
			t.Fatalf("Image(%s) = %v; want a refused address, %v", link, err, pullwright.ErrNotGitHubs)
		}
		if !refused.addr.IsLoopback() || !strings.Contains(err.Error(), "is a loopback address: pictures are fetched from public addresses only") {
			t.Errorf("Image(%s) = %v; want it to name the loopback address", link, err)
		}
		if strings.Contains(err.Error(), "secret-signature") {
			t.Errorf("the error shows the signed URL: %v", err)
		}
	}
	if n := stored.count(); n != 0 {
		t.Errorf("the storage host at a loopback address was asked %d times", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "retry") {
		t.Errorf("a refused connection was retried:\n%s", logs)
	}
}

// The configured API's own address is reached whatever its class: a
// GitHub Enterprise Server on the operator's network (here localhost, by
// name) serves its attachment links from it. Its other ports are not.
func TestImageReachesTheAPIsOwnAddress(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/user-attachments/assets/1" || r.Header.Get("Authorization") != "Bearer ghs_fixedtoken" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngBytes)
	}))
	t.Cleanup(web.Close)
	host := strings.Replace(web.URL, "127.0.0.1", "localhost", 1)
	app, err := New(Config{Token: "ghs_fixedtoken", Identity: &pullwright.Identity{Login: "github-actions[bot]"}, BaseURL: host + "/api/v3"})
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := app.Image(context.Background(), widgets, host+"/user-attachments/assets/1", 1024)
	if err != nil || string(data) != string(pngBytes) {
		t.Fatalf("Image = %d bytes, %v; want the picture from the API's own address", len(data), err)
	}
	other := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), addrOf(t, web).Port()+1)
	if err := app.imgDial.judge(context.Background(), other); err == nil {
		t.Errorf("%s, another port of the API's address, was allowed", other)
	}
}

// What the fetch connects to is judged as the fence judges setup's
// addresses: only public ones, and the configured API's own address (a
// test's server here) on its port. Judged without dialling anything.
func TestImageAddresses(t *testing.T) {
	app, err := New(Config{Token: "ghs_fixedtoken", Identity: &pullwright.Identity{Login: "github-actions[bot]"}, BaseURL: "http://127.0.0.1:8080",
		ImageTest: &ImageTest{Loopback: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9000")}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr string
		want string // "" when allowed
	}{
		{"140.82.112.3:443", ""},
		{"[2606:50c0:8000::154]:443", ""},
		{"127.0.0.1:8080", ""}, // the API's own
		{"127.0.0.1:9000", ""}, // the test's own
		{"127.0.0.1:443", "loopback"},
		{"127.0.0.2:8080", "loopback"},
		{"[::1]:9000", "loopback"},
		{"[::ffff:127.0.0.1]:443", "loopback"},
		{"169.254.169.254:80", "link-local"},
		{"[fe80::1]:443", "link-local"},
		{"10.0.0.1:443", "private"},
		{"192.168.1.1:443", "private"},
		{"[fd00::1]:443", "private"},
		{"0.0.0.0:443", "unspecified"},
		{"224.0.0.1:443", "multicast"},
		{"100.100.100.200:80", "carrier-grade NAT"},
		{"[64:ff9b::a9fe:a9fe]:80", "169.254.169.254"},
	} {
		err := app.imgDial.judge(context.Background(), netip.MustParseAddrPort(tc.addr))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s refused: %v", tc.addr, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, pullwright.ErrNotGitHubs)):
			t.Errorf("%s = %v, want refused as %s", tc.addr, err, tc.want)
		}
	}
	if _, err := New(Config{Token: "t", Identity: &pullwright.Identity{Login: "x"}, ImageTest: &ImageTest{Loopback: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:80")}}}); err == nil {
		t.Error("a test's address that is not loopback was taken")
	}
}

// Behind the operator's proxy, the proxy is dialled as it is (it is
// often on a private address) and the target is judged before it is
// handed over, on what its name resolves to.
func TestImageBehindAProxy(t *testing.T) {
	var mu sync.Mutex
	var proxied []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.URL.Host+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngBytes)
	}))
	t.Cleanup(proxy.Close)
	proxyURL, _ := url.Parse(proxy.URL)
	web := "http://127.0.0.1:1" // never dialled: the proxy answers for it
	app, err := New(Config{Token: "ghs_fixedtoken", Identity: &pullwright.Identity{Login: "github-actions[bot]"}, BaseURL: web,
		Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)},
		ImageTest: &ImageTest{Storage: []string{"http://localhost:2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := app.Image(context.Background(), widgets, web+"/user-attachments/assets/1", 1024); err != nil {
		t.Fatalf("Image through the proxy: %v", err)
	}
	_, _, err = app.Image(context.Background(), widgets, "http://localhost:2/signed.png", 1024)
	if !errors.Is(err, pullwright.ErrNotGitHubs) || !strings.Contains(err.Error(), "localhost resolves to") {
		t.Errorf("a storage host resolving to a loopback address, through the proxy = %v; want it refused", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(proxied) != 1 || proxied[0] != "127.0.0.1:1/user-attachments/assets/1" {
		t.Errorf("the proxy was asked for %q; want the attachment link alone", proxied)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
