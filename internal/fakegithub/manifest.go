package fakegithub

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// GitHub's app-manifest flow: a form posted to /settings/apps/new (or an
// organisation's) with the manifest, which GitHub shows to the signed-in
// person, who names the app and creates it; GitHub then sends the browser
// to the manifest's redirect_url with a code, which the app trades, once
// and within an hour, for its credentials at
// POST /app-manifests/{code}/conversions. The fake creates the app at
// once, as the person pressing "Create" would, as this fake's own app: the
// credentials handed back (AppID, PrivateKeyPEM, ClientID, ClientSecret)
// are the ones the rest of the fake accepts.

// manifestCodeTTL is how long GitHub keeps a manifest's code.
const manifestCodeTTL = time.Hour

// Manifest is an app manifest GitHub was sent, and where it was posted.
type Manifest struct {
	Org  string // "" for a personal account's app
	JSON map[string]any
}

type manifestCode struct {
	m       Manifest
	expires time.Time
}

// Manifests returns the manifests posted so far, oldest first.
func (s *Server) Manifests() []Manifest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.manifests)
}

// WebhookSecret returns the webhook secret the conversion handed out ("" before).
func (s *Server) WebhookSecret() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhookSecret
}

func (s *Server) newApp(w http.ResponseWriter, r *http.Request) {
	page := func(status int, msg string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<html><body>%s</body></html>", html.EscapeString(msg))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.PostFormValue("manifest")), &m); err != nil {
		page(http.StatusUnprocessableEntity, "Invalid GitHub App configuration: the manifest is not JSON.")
		return
	}
	// What GitHub requires of a manifest: url, and hook_attributes.url.
	hook, _ := m["hook_attributes"].(map[string]any)
	if u, _ := m["url"].(string); u == "" || hook == nil || hook["url"] == nil {
		page(http.StatusUnprocessableEntity, "Invalid GitHub App configuration: url and hook_attributes.url are required.")
		return
	}
	back, err := url.Parse(fmt.Sprint(m["redirect_url"]))
	if err != nil || !back.IsAbs() {
		page(http.StatusUnprocessableEntity, "Invalid GitHub App configuration: redirect_url is not a URL.")
		return
	}
	code := randomToken("")[:20]
	s.mu.Lock()
	mf := Manifest{Org: r.PathValue("org"), JSON: m}
	s.manifests = append(s.manifests, mf)
	s.manifestCodes[code] = manifestCode{m: mf, expires: time.Now().Add(manifestCodeTTL)}
	s.mu.Unlock()
	q := back.Query()
	q.Set("code", code)
	if st := r.URL.Query().Get("state"); st != "" {
		q.Set("state", st)
	}
	back.RawQuery = q.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (s *Server) convertManifest(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	s.mu.Lock()
	c, ok := s.manifestCodes[code]
	delete(s.manifestCodes, code) // a code works once
	if ok && time.Now().Before(c.expires) {
		s.webhookSecret = randomToken("")
	}
	secret := s.webhookSecret
	s.mu.Unlock()
	if !ok || !time.Now().Before(c.expires) {
		notFound(w)
		return
	}
	owner := c.m.Org
	if owner == "" {
		owner = "octocat"
	}
	name, _ := c.m.JSON["name"].(string)
	writeJSON(w, http.StatusCreated, map[string]any{
		"id": s.AppID, "slug": s.AppSlug, "node_id": "A_kwDOfake", "name": name,
		"owner":          map[string]any{"login": owner},
		"html_url":       HTMLBase + "/apps/" + s.AppSlug,
		"client_id":      s.ClientID,
		"client_secret":  s.ClientSecret,
		"webhook_secret": secret,
		"pem":            string(s.PrivateKeyPEM()),
		"permissions":    c.m.JSON["default_permissions"],
		"events":         c.m.JSON["default_events"],
	})
}
