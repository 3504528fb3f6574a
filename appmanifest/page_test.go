package appmanifest

import (
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/console"
	"github.com/pullwright/pullwright/internal/browsertest"
)

// page is the setup's first page for a bot at public, as a browser gets it.
func page(t *testing.T, public string, stylesheet []byte) (*Setup, string) {
	t.Helper()
	s, err := New(Config{
		APIURL: "https://api.github.com", WebURL: "https://github.com", PublicURL: public,
		Dir: filepath.Join(t.TempDir(), "app"), Manifest: pullwright.AppManifest(), Stylesheet: stylesheet,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/setup", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /setup = %d", w.Code)
	}
	return s, w.Body.String()
}

var section = regexp.MustCompile(`(?s)<section id="asks">.*?</section>`)

// The page shows every permission and event app-manifest.json asks for,
// with the access asked, read from the manifest itself.
func TestSetupPageShowsWhatTheAppAsksFor(t *testing.T) {
	var m struct {
		Permissions map[string]string `json:"default_permissions"`
		Events      []string          `json:"default_events"`
	}
	if err := json.Unmarshal(pullwright.AppManifest(), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Permissions) == 0 || len(m.Events) == 0 {
		t.Fatal("app-manifest.json asks for nothing?")
	}
	_, body := page(t, "https://bot.example.com", nil)
	asks := section.FindString(body)
	if asks == "" {
		t.Fatalf("no section of what the app asks for:\n%s", body)
	}
	for name, access := range m.Permissions {
		if !strings.Contains(asks, "<tr><td><code>"+name+"</code></td><td>"+access+"</td></tr>") {
			t.Errorf("permission %s (%s) not shown:\n%s", name, access, asks)
		}
	}
	if n := strings.Count(asks, "<tr><td>"); n != len(m.Permissions) {
		t.Errorf("%d permissions shown, the manifest has %d", n, len(m.Permissions))
	}
	for _, e := range m.Events {
		if !strings.Contains(asks, "<code>"+e+"</code>") {
			t.Errorf("event %s not shown:\n%s", e, asks)
		}
	}
}

// The page tells the one way to read the token file that fits how the
// bot was started, with the file's absolute path even for a relative
// BOT_APP_DIR (a "/" was missing after /proc/1/root), and not the others.
func TestSetupPageTellsHowToReadTheToken(t *testing.T) {
	commands := map[string]string{
		"local":      "<pre>cat PATH</pre>",
		"systemd":    "<pre>sudo cat PATH</pre>",
		"docker":     "<pre>docker cp HOST:PATH - | tar -xO</pre>",
		"kubernetes": "<pre>kubectl debug -it POD --image=busybox --target=pullwright -- cat /proc/1/rootPATH</pre>",
	}
	tests := []struct {
		started  Start
		hostname string
		want     string // the key of commands
		also     []string
	}{
		{started: StartLocal, want: "local", also: []string{"as the user that started the bot"}},
		{started: StartSystemd, want: "systemd", also: []string{"deploy/pullwright.service"}},
		{started: StartContainer, hostname: "3f2a9c1d7e4b", want: "docker", also: []string{"no shell", "<code>3f2a9c1d7e4b</code> is this container's host name"}},
		{started: StartContainer, want: "docker"},
		{started: StartKubernetes, want: "kubernetes", also: []string{"deploy/kubernetes.yaml"}},
	}
	// A relative directory, as the README's quick start once had it.
	t.Chdir(t.TempDir())
	for _, tt := range tests {
		t.Run(tt.want+"/"+tt.hostname, func(t *testing.T) {
			s, err := New(Config{
				APIURL: "https://api.github.com", WebURL: "https://github.com", PublicURL: "https://bot.example.com",
				Dir: "pullwright-app", Started: tt.started, Hostname: tt.hostname, Manifest: pullwright.AppManifest(),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/setup", nil))
			body := w.Body.String()
			path := s.TokenPath()
			wd, _ := os.Getwd()
			if want := filepath.Join(wd, "pullwright-app", "setup-token"); path != want {
				t.Errorf("TokenPath() = %q, want %q", path, want)
			}
			host := tt.hostname
			if host == "" {
				host = "pullwright"
			}
			for kind, cmd := range commands {
				cmd = strings.NewReplacer("PATH", html.EscapeString(path), "HOST", host).Replace(cmd)
				has := strings.Contains(body, cmd)
				switch {
				case kind == tt.want && !has:
					t.Errorf("the page does not say %q:\n%s", cmd, section.ReplaceAllString(body, ""))
				case kind != tt.want && has:
					t.Errorf("started as %q, the page says %q too", tt.started, cmd)
				}
			}
			if tt.want != "docker" && strings.Contains(body, "docker") {
				t.Errorf("started as %q, the page speaks of docker", tt.started)
			}
			if tt.want != "kubernetes" && strings.Contains(body, "kubectl") {
				t.Errorf("started as %q, the page speaks of kubectl", tt.started)
			}
			for _, a := range tt.also {
				if !strings.Contains(body, a) {
					t.Errorf("the page does not say %q", a)
				}
			}
			if cmd := strings.NewReplacer("PATH", path, "HOST", host).Replace(strings.TrimSuffix(strings.TrimPrefix(commands[tt.want], "<pre>"), "</pre>")); s.TokenCommand() != cmd {
				t.Errorf("TokenCommand() = %q, want %q", s.TokenCommand(), cmd)
			}
		})
	}
}

// A directory git would commit is warned of on the page, on every page
// of the setup (the key is saved there at the end); none is warned of
// otherwise.
func TestSetupPageWarnsOfACommittableDirectory(t *testing.T) {
	for _, exposed := range []string{"", "the GitHub App's directory /src/clone/pullwright-app is inside the git work tree /src/clone"} {
		s, err := New(Config{
			APIURL: "https://api.github.com", WebURL: "https://github.com", PublicURL: "https://bot.example.com",
			Dir: filepath.Join(t.TempDir(), "app"), Exposed: exposed, Manifest: pullwright.AppManifest(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []pageData{{Page: "token"}, {Page: "create"}, {Page: "done", App: Credentials{Slug: "bot", AppID: 1}}} {
			w := httptest.NewRecorder()
			s.render(w, http.StatusOK, d)
			body := w.Body.String()
			warned := strings.Contains(body, `id="exposed"`)
			if warned != (exposed != "") || (exposed != "" && !strings.Contains(body, html.EscapeString(exposed))) {
				t.Errorf("page %s with Exposed %q: warned %v:\n%s", d.Page, exposed, warned, body)
			}
		}
	}
}

// An address GitHub can never deliver to is warned of, and the page
// still offers the setup (a tunnel may forward it); a public https
// address is not.
func TestSetupPageWarnsOfAnUnreachableAddress(t *testing.T) {
	tests := []struct {
		public string
		why    string // "" for no warning
	}{
		{"https://bot.example.com", ""},
		{"https://bot.example.com:8443/pullwright", ""},
		{"https://8.8.8.8", ""},
		{"https://[2001:4860:4860::8888]", ""},
		{"http://127.0.0.1:8080", "loopback address"},
		{"http://127.0.0.1:8080", "plain http"},
		{"http://localhost:8080", "this machine"},
		{"http://[::1]:8080", "loopback address"},
		{"https://127.0.0.1", "loopback address"},
		{"https://10.1.2.3", "private address"},
		{"https://192.168.1.20:8443", "private address"},
		{"https://172.16.0.9", "private address"},
		{"https://100.64.1.1", "private address"},
		{"https://[fd00::1]", "private address"},
		{"https://169.254.1.1", "not an address"},
		{"https://bot", "without a domain"},
		{"https://bot.internal", "local network"},
		{"https://pi.local", "local network"},
		{"https://app.localhost", "this machine"},
	}
	for _, tt := range tests {
		t.Run(tt.public, func(t *testing.T) {
			s, body := page(t, tt.public, nil)
			warned := strings.Contains(body, `id="unreachable"`)
			if tt.why == "" {
				if warned || s.unreachable != "" {
					t.Errorf("a public https address is warned of: %q", s.unreachable)
				}
				return
			}
			if !warned || !strings.Contains(s.unreachable, tt.why) {
				t.Errorf("warning %q (on the page: %v), want one saying %q", s.unreachable, warned, tt.why)
			}
			if !strings.Contains(body, `<form method="post" action="/setup">`) {
				t.Error("the warning refused the setup")
			}
		})
	}
}

// With the console's stylesheet the page links it and serves it, under
// a policy that lets the page's own stylesheet in.
func TestSetupPageIsStyled(t *testing.T) {
	css := []byte("body { color: #1f2328; }")
	s, body := page(t, "https://bot.example.com", css)
	if !strings.Contains(body, `<link rel="stylesheet" href="/setup/style.css">`) {
		t.Error("the page links no stylesheet")
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/setup/style.css", nil))
	if w.Code != http.StatusOK || w.Body.String() != string(css) || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/css") {
		t.Errorf("GET /setup/style.css = %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'self'") {
		t.Errorf("CSP %q keeps the stylesheet out", csp)
	}
	_, plain := page(t, "https://bot.example.com", nil)
	if strings.Contains(plain, "stylesheet") {
		t.Error("a page with no stylesheet links one")
	}
}

// The setup page in a real browser, styled as the console;
// PULLWRIGHT_SCREENSHOTS=DIR writes it for docs/deploy.md.
func TestSetupPageInABrowser(t *testing.T) {
	s, _ := page(t, "https://bot.example.com", console.Stylesheet())
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	b := browsertest.New(t)
	if err := browsertest.Do(b, 30*time.Second, chromedp.Navigate(srv.URL+"/setup"), chromedp.WaitVisible(chromedp.CSS("#asks table"))); err != nil {
		t.Fatalf("open the setup page: %v", err)
	}
	// The stylesheet applies under the page's policy.
	if font, err := browsertest.Eval[string](b, 30*time.Second, `getComputedStyle(document.querySelector("header")).display`); err != nil || font != "flex" {
		t.Errorf("the header is not styled: %q (%v)", font, err)
	}
	if dir := os.Getenv("PULLWRIGHT_SCREENSHOTS"); dir != "" {
		if _, err := browsertest.Screenshot(b, dir, "setup-page.png"); err != nil {
			t.Error(err)
		}
	}
}
