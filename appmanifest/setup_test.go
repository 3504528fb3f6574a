package appmanifest

import (
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
)

// setupOn is a Setup for fake GitHub gh, served at its public address.
func setupOn(t *testing.T, gh *fakegithub.Server) (*Setup, *httptest.Server) {
	t.Helper()
	var s *Setup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.Handler().ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	var err error
	s, err = New(Config{
		APIURL: gh.URL, WebURL: gh.URL, PublicURL: srv.URL, Dir: filepath.Join(t.TempDir(), "app"),
		Manifest: pullwright.AppManifest(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, srv
}

func token(t *testing.T, s *Setup) string {
	t.Helper()
	b, err := os.ReadFile(s.TokenPath())
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

var (
	formAction    = regexp.MustCompile(`<form method="post" action="([^"]+)">\s*<input type="hidden" name="manifest" value="([^"]+)">`)
	noRedirects   = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	conversionsOf = func(gh *fakegithub.Server) int {
		n := 0
		for _, r := range gh.Requests() {
			if strings.HasPrefix(r.Path, "/app-manifests/") {
				n++
			}
		}
		return n
	}
)

// newBrowser is a client that keeps cookies, as a browser does.
func newBrowser(t *testing.T, redirects func(*http.Request, []*http.Request) error) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: redirects}
}

func post(t *testing.T, c *http.Client, to string, form url.Values) (int, string) {
	t.Helper()
	resp, err := c.PostForm(to, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The operator gives the setup token, names the organization, and creates
// the app on GitHub; GitHub sends the browser back, and the credentials
// are traded and saved for the bot.
func TestSetupCreatesTheApp(t *testing.T) {
	gh := fakegithub.New(t)
	s, srv := setupOn(t, gh)
	if fi, err := os.Stat(s.TokenPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("setup token file: %v %v", fi, err)
	}
	browser := newBrowser(t, nil)
	resp, err := browser.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), html.EscapeString(s.TokenPath())) {
		t.Fatalf("the first page = %d, without the token's file:\n%s", resp.StatusCode, page)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+gh.URL) {
		t.Errorf("CSP %q does not let the form go to GitHub only", csp)
	}

	code, body := post(t, browser, srv.URL+"/setup", url.Values{"token": {token(t, s)}, "org": {"acme"}})
	m := formAction.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("with the token = %d, no manifest form:\n%s", code, body)
	}
	action, manifest := html.UnescapeString(m[1]), html.UnescapeString(m[2])
	if !strings.HasPrefix(action, gh.URL+"/organizations/acme/settings/apps/new?state=") {
		t.Fatalf("the form posts to %s", action)
	}

	// GitHub's page: it creates the app and sends the browser back.
	code, body = post(t, browser, action, url.Values{"manifest": {manifest}})
	if code != http.StatusOK || !strings.Contains(body, "is created and its") {
		t.Fatalf("back from GitHub = %d:\n%s", code, body)
	}
	var c Credentials
	select {
	case c = <-s.Done():
	default:
		t.Fatal("Done has nothing after the return")
	}
	if c.AppID != gh.AppID || c.WebhookSecret != gh.WebhookSecret() || c.ClientID != gh.ClientID || c.ClientSecret != gh.ClientSecret ||
		string(c.PrivateKey) != string(gh.PrivateKeyPEM()) || len(c.SessionKey) != 64 {
		t.Errorf("credentials = %+v", c)
	}
	loaded, err := Load(s.cfg.Dir)
	if err != nil || loaded.AppID != c.AppID || loaded.WebhookSecret != c.WebhookSecret || string(loaded.PrivateKey) != string(c.PrivateKey) || loaded.SessionKey != c.SessionKey {
		t.Fatalf("Load = %+v, %v", loaded, err)
	}
	for _, name := range []string{envFile, keyFile} {
		if fi, err := os.Stat(filepath.Join(s.cfg.Dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", name, fi, err)
		}
	}
	if _, err := os.Stat(s.TokenPath()); !os.IsNotExist(err) {
		t.Errorf("the setup token outlived the setup: %v", err)
	}

	// What GitHub was sent: app-manifest.json with this bot's addresses.
	sent := gh.Manifests()
	if len(sent) != 1 || sent[0].Org != "acme" {
		t.Fatalf("manifests sent: %+v", sent)
	}
	var want map[string]any
	if err := json.Unmarshal(pullwright.AppManifest(), &want); err != nil {
		t.Fatal(err)
	}
	got := sent[0].JSON
	hook, _ := got["hook_attributes"].(map[string]any)
	if hook["url"] != srv.URL+"/webhook" || got["redirect_url"] != srv.URL+"/setup/done" ||
		!jsonEqual(got["callback_urls"], []any{srv.URL + "/console/callback"}) ||
		!jsonEqual(got["default_permissions"], want["default_permissions"]) || !jsonEqual(got["default_events"], want["default_events"]) {
		t.Errorf("manifest sent = %v", got)
	}

	// The flow ends once: its return again, or another, changes nothing.
	code, _ = post(t, browser, srv.URL+"/setup", url.Values{"token": {"anything"}})
	if code != http.StatusForbidden {
		t.Errorf("the setup after it ended = %d, want 403", code)
	}
	if err := Save(s.cfg.Dir, c); err == nil {
		t.Error("Save replaced the saved credentials")
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// What the setup refuses, and that it trades no code for them.
func TestSetupRefuses(t *testing.T) {
	gh := fakegithub.New(t)
	if _, err := New(Config{APIURL: gh.URL, WebURL: gh.URL, PublicURL: "http://bot.example", Dir: t.TempDir(), Manifest: pullwright.AppManifest()}); err == nil {
		t.Error("a setup page on plain http beyond loopback was allowed")
	}
	s, srv := setupOn(t, gh)
	browser := newBrowser(t, noRedirects)
	if code, _ := post(t, browser, srv.URL+"/setup", url.Values{"token": {"not-it"}}); code != http.StatusForbidden {
		t.Errorf("a wrong token = %d, want 403", code)
	}
	if code, _ := post(t, browser, srv.URL+"/setup", url.Values{"token": {token(t, s)}, "org": {"../admin"}}); code != http.StatusUnprocessableEntity {
		t.Errorf("a bad organization = %d, want 422", code)
	}
	get := func(path string) int {
		t.Helper()
		resp, err := browser.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/setup/done?code=abc&state=never-issued", "/setup/done?code=abc", "/webhook"} {
		want := http.StatusBadRequest
		if path == "/webhook" {
			want = http.StatusServiceUnavailable
		}
		if code := get(path); code != want {
			t.Errorf("GET %s = %d, want %d", path, code, want)
		}
	}
	// A code GitHub no longer knows (used, or over an hour old).
	_, body := post(t, browser, srv.URL+"/setup", url.Values{"token": {token(t, s)}})
	m := formAction.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no manifest form:\n%s", body)
	}
	state := strings.TrimPrefix(html.UnescapeString(m[1]), gh.URL+"/settings/apps/new?state=")
	if code := get("/setup/done?code=stale&state=" + url.QueryEscape(state)); code != http.StatusBadGateway {
		t.Errorf("a stale code = %d, want 502", code)
	}
	if n := conversionsOf(gh); n != 1 {
		t.Errorf("%d conversions asked, want only the stale code's", n)
	}
	// The right state from a browser that did not begin the flow.
	_, body = post(t, browser, srv.URL+"/setup", url.Values{"token": {token(t, s)}})
	other := strings.TrimPrefix(html.UnescapeString(formAction.FindStringSubmatch(body)[1]), gh.URL+"/settings/apps/new?state=")
	stranger := newBrowser(t, noRedirects)
	if resp, err := stranger.Get(srv.URL + "/setup/done?code=abc&state=" + url.QueryEscape(other)); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a state from another browser = %v %v, want 400", resp, err)
	} else {
		resp.Body.Close()
	}
	if n := conversionsOf(gh); n != 1 {
		t.Errorf("%d conversions asked after another browser's return, want 1", n)
	}
	// Its state was spent.
	if code := get("/setup/done?code=stale&state=" + url.QueryEscape(state)); code != http.StatusBadRequest {
		t.Errorf("a state used twice = %d, want 400", code)
	}
	if _, err := Load(s.cfg.Dir); err != ErrNoApp {
		t.Errorf("Load after refusals = %v, want ErrNoApp", err)
	}
}
