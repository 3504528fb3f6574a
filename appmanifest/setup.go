// Package appmanifest is the first-run setup of `bot serve`: a page that
// creates the bot's GitHub App from app-manifest.json through GitHub's
// manifest flow (as Probot does) and saves the app's id, private key,
// webhook secret and client credentials in the operator's directory
// (BOT_APP_DIR), from which every later start reads them.
//
// Whoever finishes the flow owns the app the bot then trusts, so the page
// is not open to whoever reaches the address first: it asks for a setup
// token that only the operator can read, in a file of that directory.
package appmanifest

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	// tokenFile holds the setup token while there is no app.
	tokenFile = "setup-token"
	// stateTTL is how long a started flow may take: GitHub keeps the
	// code for an hour.
	stateTTL = time.Hour
	// maxStates bounds the flows started and not finished.
	maxStates = 32
	// exchangeTimeout bounds the call that trades the code.
	exchangeTimeout = 30 * time.Second
	// stateCookie holds the state in the browser that began the flow:
	// a state alone, seen in a history or a proxy's log, must not let
	// someone else's app come back as this bot's.
	stateCookie = "pullwright_setup"
)

// Config is what the setup needs.
type Config struct {
	// APIURL is GitHub's REST base URL; the manifest is posted to its
	// web pages (github.com, or https://HOST for GitHub Enterprise).
	APIURL string
	// WebURL is GitHub's web address for APIURL.
	WebURL string
	// PublicURL is where people and GitHub reach the bot: the app's
	// webhook, the flow's return and the console's callback are under it.
	PublicURL string
	// Dir is where the credentials are saved (BOT_APP_DIR); a relative
	// one is made absolute, since the page names it to a shell started
	// elsewhere.
	Dir string
	// Started is how the bot was started, which decides the one way the
	// page gives to read the token file.
	Started Start
	// Hostname is the bot's host name: in a container, its id unless
	// --hostname set it, which docker cp takes.
	Hostname string
	// Exposed, when not "", warns that Dir is in a git work tree that
	// does not ignore it.
	Exposed string
	// Manifest is app-manifest.json.
	Manifest []byte
	// Stylesheet is the console's stylesheet, served at
	// /setup/style.css so that the first page a person meets looks like
	// the console they meet next; nil serves the pages unstyled.
	Stylesheet []byte
	HTTPClient *http.Client
	Logger     *slog.Logger
	Now        func() time.Time
}

// Start is how the bot was started: the setup token is read differently
// on the machine, from a container's engine and from a pod.
type Start string

const (
	// StartLocal is a process of the user's, started from a shell (go
	// run, the binary): the zero value.
	StartLocal Start = ""
	// StartSystemd is a service of systemd, as deploy/pullwright.service.
	StartSystemd Start = "systemd"
	// StartContainer is a container of Docker or Podman, such as the
	// image the Dockerfile builds, which has no shell.
	StartContainer Start = "container"
	// StartKubernetes is a pod's container.
	StartKubernetes Start = "kubernetes"
)

// Setup serves the first-run pages until an app is created.
type Setup struct {
	cfg      Config
	manifest string // the manifest with this bot's addresses, JSON
	token    string
	pages    *template.Template
	// asks is what the app will ask for, read from the manifest.
	asks asks
	// unreachable says why GitHub cannot reach PublicURL, or is "".
	unreachable string

	mu       sync.Mutex
	states   map[string]time.Time // flows started: state → expiry
	finished bool
	done     chan Credentials
}

// ownerName is GitHub's rule for an account name, loosely.
var ownerName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)

// codeShape is what a manifest code may look like before it goes into a URL.
var codeShape = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// New prepares the setup: the manifest with this bot's addresses, and a
// new setup token in Dir (see TokenPath).
func New(cfg Config) (*Setup, error) {
	pub, err := url.Parse(strings.TrimRight(cfg.PublicURL, "/"))
	if err != nil || (pub.Scheme != "https" && pub.Scheme != "http") || pub.Host == "" || pub.RawQuery != "" {
		return nil, fmt.Errorf("setup: BOT_PUBLIC_URL %q: want https://host[/path], where GitHub can reach the bot", cfg.PublicURL)
	}
	if pub.Scheme == "http" && !loopback(pub.Hostname()) {
		// The token, the state and the code would cross the network
		// in clear.
		return nil, fmt.Errorf("setup: BOT_PUBLIC_URL %q: the setup page needs https (plain http only on this machine's loopback)", cfg.PublicURL)
	}
	cfg.PublicURL = pub.String()
	if cfg.Dir == "" || cfg.WebURL == "" || cfg.APIURL == "" {
		return nil, errors.New("setup: the directory and GitHub's addresses are needed")
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: exchangeTimeout}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var m map[string]any
	if err := json.Unmarshal(cfg.Manifest, &m); err != nil {
		return nil, fmt.Errorf("setup: app-manifest.json: %w", err)
	}
	asked, err := asksOf(m)
	if err != nil {
		return nil, fmt.Errorf("setup: app-manifest.json: %w", err)
	}
	hook, _ := m["hook_attributes"].(map[string]any)
	if hook == nil {
		hook = map[string]any{"active": true}
	}
	hook["url"] = cfg.PublicURL + "/webhook"
	m["hook_attributes"] = hook
	m["redirect_url"] = cfg.PublicURL + "/setup/done"
	m["callback_urls"] = []string{cfg.PublicURL + "/console/callback"}
	manifest, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if fi, err := os.Stat(cfg.Dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		cfg.Logger.Warn("setup: the app's directory can be read by others than the bot's user; the private key will be in it", "dir", cfg.Dir, "mode", fi.Mode().Perm().String())
	}
	token := rand.Text()
	// Through a new file: one already there (or a link someone put
	// there) keeps neither its mode nor its target.
	if err := writeNew(cfg.Dir, tokenFile, []byte(token+"\n"), true); err != nil {
		return nil, fmt.Errorf("setup: write the setup token: %w", err)
	}
	pages, err := template.New("setup").Parse(pagesHTML)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	why := unreachable(pub)
	if why != "" {
		// A warning, not a refusal: a tunnel or a proxy may forward the
		// address, and the flow itself runs in the person's browser.
		cfg.Logger.Warn("setup: GitHub cannot reach BOT_PUBLIC_URL as it is written; the app's webhook deliveries will not arrive unless something forwards them", "public_url", cfg.PublicURL, "why", why)
	}
	return &Setup{
		cfg: cfg, manifest: string(manifest), token: token, pages: pages, asks: asked, unreachable: why,
		states: map[string]time.Time{}, done: make(chan Credentials, 1),
	}, nil
}

// TokenPath is the file holding the setup token the page asks for.
func (s *Setup) TokenPath() string { return filepath.Join(s.cfg.Dir, tokenFile) }

// TokenCommand is the command that prints the setup token, for how the
// bot was started.
func (s *Setup) TokenCommand() string {
	path := s.TokenPath()
	switch s.cfg.Started {
	case StartSystemd:
		return "sudo cat " + path
	case StartContainer:
		return "docker cp " + s.container() + ":" + path + " - | tar -xO"
	case StartKubernetes:
		return "kubectl debug -it POD --image=busybox --target=pullwright -- cat /proc/1/root" + path
	}
	return "cat " + path
}

// container is the name docker cp is given: the container's host name,
// which is its id unless --hostname set it (docs/deploy.md sets it to
// the container's name, pullwright).
func (s *Setup) container() string {
	if s.cfg.Hostname != "" {
		return s.cfg.Hostname
	}
	return "pullwright"
}

// Done delivers the credentials once they are saved.
func (s *Setup) Done() <-chan Credentials { return s.done }

// Handler serves the setup pages, and /healthz and /readyz (ready: the
// setup page is what this bot serves now).
func (s *Setup) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /setup", s.start)
	m.HandleFunc("POST /setup", s.begin)
	m.HandleFunc("GET /setup/done", s.finish)
	if s.cfg.Stylesheet != nil {
		m.HandleFunc("GET /setup/style.css", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
			_, _ = w.Write(s.cfg.Stylesheet)
		})
	}
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/setup", http.StatusSeeOther)
	})
	ok := func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok (setting up)") }
	m.HandleFunc("GET /healthz", ok)
	m.HandleFunc("GET /readyz", ok)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// GitHub's ping of the new app may come before the bot runs
		// with it; it can be redelivered.
		http.Error(w, "this bot has no GitHub App yet: open /setup", http.StatusServiceUnavailable)
	})
	web := s.cfg.WebURL
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// The one form that leaves goes to GitHub's page for new apps.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action 'self' "+web+"; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		m.ServeHTTP(w, r)
	})
}

type pageData struct {
	Page      string // "token", "create", "done", "error"
	Message   string
	Action    string // the form's address at GitHub
	Manifest  string
	TokenPath string
	App       Credentials
	Install   string
	// Styled links the stylesheet; Asks is what the app will ask for;
	// Unreachable and PublicURL warn of an address GitHub cannot reach.
	Styled      bool
	Asks        asks
	Unreachable string
	PublicURL   string
	// Started, TokenCommand and Container say how to read the token;
	// Exposed warns of a directory git would commit.
	Started      Start
	TokenCommand string
	Container    string
	Exposed      string
}

func (s *Setup) render(w http.ResponseWriter, status int, d pageData) {
	d.TokenPath = s.TokenPath()
	d.Styled, d.Asks = s.cfg.Stylesheet != nil, s.asks
	d.Unreachable, d.PublicURL = s.unreachable, s.cfg.PublicURL
	d.Started, d.TokenCommand, d.Container, d.Exposed = s.cfg.Started, s.TokenCommand(), s.container(), s.cfg.Exposed
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := s.pages.Execute(w, d); err != nil {
		s.cfg.Logger.Error("setup: render", "err", err)
	}
}

func (s *Setup) isFinished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished
}

// start is the first page: the setup token, and the account to create the
// app in.
func (s *Setup) start(w http.ResponseWriter, r *http.Request) {
	if s.isFinished() {
		s.render(w, http.StatusOK, pageData{Page: "error", Message: "The GitHub App is created; this bot is starting with it."})
		return
	}
	s.render(w, http.StatusOK, pageData{Page: "token"})
}

// begin checks the setup token and gives the form that posts the manifest
// to GitHub, with a state of its own.
func (s *Setup) begin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<14)
	given := strings.TrimSpace(r.PostFormValue("token"))
	if subtle.ConstantTimeCompare([]byte(given), []byte(s.token)) != 1 {
		s.cfg.Logger.Warn("setup: a wrong setup token was given", "remote", r.RemoteAddr)
		s.render(w, http.StatusForbidden, pageData{Page: "token", Message: "That is not the setup token. It is in the file named below, on the bot's machine."})
		return
	}
	org := strings.TrimSpace(r.PostFormValue("org"))
	if org != "" && !ownerName.MatchString(org) {
		s.render(w, http.StatusUnprocessableEntity, pageData{Page: "token", Message: "That is not an organization's name."})
		return
	}
	state := rand.Text()
	now := s.cfg.Now()
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		s.render(w, http.StatusConflict, pageData{Page: "error", Message: "The GitHub App is created already."})
		return
	}
	for k, exp := range s.states {
		if !now.Before(exp) || len(s.states) >= maxStates {
			delete(s.states, k)
		}
	}
	s.states[state] = now.Add(stateTTL)
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name: stateCookie, Value: state, Path: "/setup", MaxAge: int(stateTTL / time.Second),
		HttpOnly: true, Secure: strings.HasPrefix(s.cfg.PublicURL, "https://"),
		// Lax: the return from GitHub is a top-level navigation.
		SameSite: http.SameSiteLaxMode,
	})
	action := s.cfg.WebURL + "/settings/apps/new"
	if org != "" {
		action = s.cfg.WebURL + "/organizations/" + url.PathEscape(org) + "/settings/apps/new"
	}
	action += "?state=" + url.QueryEscape(state)
	s.render(w, http.StatusOK, pageData{Page: "create", Action: action, Manifest: s.manifest})
}

// finish is where GitHub sends the browser back: it trades the code for
// the app's credentials and saves them.
func (s *Setup) finish(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state, code := q.Get("state"), q.Get("code")
	ck, _ := r.Cookie(stateCookie)
	if ck == nil || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(state)) != 1 {
		// Not the browser that began this flow.
		state = ""
	}
	now := s.cfg.Now()
	s.mu.Lock()
	exp, known := s.states[state]
	delete(s.states, state) // a state works once
	finished := s.finished
	s.mu.Unlock()
	switch {
	case finished:
		s.render(w, http.StatusConflict, pageData{Page: "error", Message: alreadyDone})
		return
	case state == "" || !known || !now.Before(exp):
		// Not a flow this page started in this browser, or one started
		// over an hour ago.
		s.render(w, http.StatusBadRequest, pageData{Page: "error", Message: "This return from GitHub is not one this browser started here, or it came too late. Start again from the setup page; delete the app GitHub created, if it did."})
		return
	case !codeShape.MatchString(code):
		s.render(w, http.StatusBadRequest, pageData{Page: "error", Message: "GitHub sent no code back. Start again from the setup page."})
		return
	}
	// Not cancelled with the request: GitHub may have spent the code
	// already, and the credentials exist only in its answer.
	c, err := s.exchange(context.WithoutCancel(r.Context()), code)
	if err != nil {
		s.cfg.Logger.Error("setup: trade the manifest's code", "err", err)
		s.render(w, http.StatusBadGateway, pageData{Page: "error", Message: "GitHub did not hand over the new app's credentials: " + err.Error() + ". Start again from the setup page; delete the app GitHub may have created."})
		return
	}
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		s.render(w, http.StatusConflict, pageData{Page: "error", Message: alreadyDone + " The app " + c.Slug + " that this return created was not saved: delete it on GitHub."})
		return
	}
	if err := Save(s.cfg.Dir, c); err != nil {
		s.mu.Unlock()
		s.cfg.Logger.Error("setup: save", "err", err)
		s.render(w, http.StatusInternalServerError, pageData{Page: "error", Message: "The app was created on GitHub but its credentials could not be saved: " + err.Error()})
		return
	}
	s.finished = true
	s.mu.Unlock()
	_ = os.Remove(s.TokenPath())
	s.cfg.Logger.Info("setup: the GitHub App is created and saved", "app_id", c.AppID, "slug", c.Slug, "owner", c.Owner, "dir", s.cfg.Dir)
	s.done <- c
	d := pageData{Page: "done", App: c}
	if strings.HasPrefix(c.HTMLURL, s.cfg.WebURL+"/") {
		d.Install = strings.TrimRight(c.HTMLURL, "/") + "/installations/new"
	}
	s.render(w, http.StatusOK, d)
}

// alreadyDone is what a late or second return is told: the app the bot
// runs with is the one whose owner the log names.
const alreadyDone = "The setup is over: another return from GitHub finished it. Check the app's owner in the bot's log (\"setup: the GitHub App is created\") and on GitHub."

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// exchange is POST /app-manifests/{code}/conversions: GitHub answers the
// new app's credentials, once, within an hour of its creation.
func (s *Setup) exchange(ctx context.Context, code string) (Credentials, error) {
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(s.cfg.APIURL, "/")+"/app-manifests/"+url.PathEscape(code)+"/conversions", nil)
	if err != nil {
		return Credentials{}, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		// The URL holds the code, which anyone could trade for the
		// app's key within the hour: it goes into no log or page.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Credentials{}, fmt.Errorf("ask GitHub: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return Credentials{}, fmt.Errorf("GitHub answered %s (a code works once, for an hour)", resp.Status)
	}
	var v struct {
		ID            int64  `json:"id"`
		Slug          string `json:"slug"`
		HTMLURL       string `json:"html_url"`
		ClientID      string `json:"client_id"`
		ClientSecret  string `json:"client_secret"`
		WebhookSecret string `json:"webhook_secret"`
		PEM           string `json:"pem"`
		Owner         struct {
			Login string `json:"login"`
		} `json:"owner"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil {
		return Credentials{}, fmt.Errorf("read GitHub's answer: %w", err)
	}
	key, err := newSessionKey()
	if err != nil {
		return Credentials{}, err
	}
	c := Credentials{
		AppID: v.ID, Slug: v.Slug, HTMLURL: v.HTMLURL, WebhookSecret: v.WebhookSecret,
		ClientID: v.ClientID, ClientSecret: v.ClientSecret, SessionKey: key, PrivateKey: []byte(v.PEM),
		Owner: v.Owner.Login,
	}
	if err := c.check(); err != nil {
		return Credentials{}, fmt.Errorf("GitHub's answer: %w", err)
	}
	return c, nil
}

const pagesHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pullwright setup</title>{{if .Styled}}
<link rel="stylesheet" href="/setup/style.css">{{end}}</head>
<body>
<header><span class="brand">Pullwright</span><span>first-run setup</span></header>
<main>
<h1>Create the GitHub App</h1>
{{if .Message}}<p role="alert" class="notice warning">{{.Message}}</p>{{end}}
{{if and .Unreachable (ne .Page "done")}}<p class="notice warning" id="unreachable"><strong>GitHub cannot reach <code>{{.PublicURL}}</code>:</strong>
{{.Unreachable}}. The app will be created, but GitHub's webhook deliveries will not arrive unless a tunnel or
proxy forwards that address to this bot. Set <code>BOT_PUBLIC_URL</code> to the public https address
GitHub reaches the bot at, and restart it.</p>{{end}}
{{if .Exposed}}<p class="notice warning" id="exposed"><strong>The app's secrets would be committed:</strong>
{{.Exposed}}.</p>{{end}}
{{if eq .Page "token"}}
<p>This bot has no GitHub App yet. It creates one from <code>app-manifest.json</code> through GitHub's
manifest flow: GitHub asks you to name the app and creates it in your account, or in an
organization you own; this bot saves its credentials and starts with them.</p>
<form method="post" action="/setup">
<p><label>Setup token <input type="password" name="token" autocomplete="off" required></label></p>
<p><label>Organization (empty: your own account) <input type="text" name="org" autocomplete="off"></label></p>
<p><button type="submit">Continue</button></p>
</form>
<section id="token-file">
<h2>Where the setup token is</h2>
<p>The bot wrote it to <code>{{.TokenPath}}</code> on its own machine, readable by the bot's user only,
and never logs it: whoever finishes this setup owns the app the bot will trust.</p>
{{if eq .Started "systemd"}}<p>As a systemd service, the bot's user is the unit's
(<code>pullwright</code> in <code>deploy/pullwright.service</code>); print it with</p>
<pre>{{.TokenCommand}}</pre>
{{else if eq .Started "container"}}<p>The bot runs in a container. The bot's image has no shell and no
<code>cat</code>, so <code>docker exec</code> cannot print the file; copy it out through the engine,
from the host (<code>{{.Container}}</code> is this container's host name, which is its id unless
<code>--hostname</code> set it; <code>docker ps</code> names it):</p>
<pre>{{.TokenCommand}}</pre>
<p>or read it on the host, in the directory or volume mounted there.</p>
{{else if eq .Started "kubernetes"}}<p>The bot runs in a pod. <code>kubectl exec</code> and
<code>kubectl cp</code> need a shell or <code>tar</code> the image lacks; an ephemeral container that
shares the bot's processes can read it (<code>POD</code> is the bot's pod, <code>pullwright</code> the
container's name in <code>deploy/kubernetes.yaml</code> and the Helm chart):</p>
<pre>{{.TokenCommand}}</pre>
{{else}}<p>In a terminal on this machine, as the user that started the bot:</p>
<pre>{{.TokenCommand}}</pre>
{{end}}</section>
{{else if eq .Page "create"}}
<p>The next button posts the app's manifest (its permissions, events and this bot's addresses) to
GitHub, which asks you to name the app and create it.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<p><button type="submit" class="button">Create the GitHub App on GitHub</button></p>
</form>
{{else if eq .Page "done"}}
<p>The GitHub App {{.App.Slug}} (id {{.App.AppID}}, owned by {{.App.Owner}}) is created and its
credentials are saved. This bot is starting with it.</p>
{{if .Install}}<p>Next: <a class="button" href="{{.Install}}">install the app</a> on the repositories it may work on.</p>{{end}}
{{end}}
{{if or (eq .Page "token") (eq .Page "create")}}
<section id="asks">
<h2>What the app will ask for</h2>
<p>From <code>app-manifest.json</code>; GitHub shows the same before it creates the app, and asks
each account that installs it.</p>
<table>
<thead><tr><th>Permission</th><th>Access</th></tr></thead>
<tbody>{{range .Asks.Permissions}}<tr><td><code>{{.Name}}</code></td><td>{{.Access}}</td></tr>{{end}}</tbody>
</table>
<p>Events it subscribes to: {{range $i, $e := .Asks.Events}}{{if $i}}, {{end}}<code>{{$e}}</code>{{end}}.</p>
</section>
{{end}}
</main>
</body></html>
`

// asks is what the app's manifest asks GitHub for: its permissions and
// the events it subscribes to.
type asks struct {
	Permissions []permission
	Events      []string
}

type permission struct{ Name, Access string }

// asksOf reads the permissions and events of manifest m, permissions by
// name.
func asksOf(m map[string]any) (asks, error) {
	var a asks
	perms, _ := m["default_permissions"].(map[string]any)
	for name, v := range perms {
		access, ok := v.(string)
		if !ok {
			return asks{}, fmt.Errorf("default_permissions.%s: want read or write", name)
		}
		a.Permissions = append(a.Permissions, permission{Name: name, Access: access})
	}
	slices.SortFunc(a.Permissions, func(x, y permission) int { return strings.Compare(x.Name, y.Name) })
	events, _ := m["default_events"].([]any)
	for _, v := range events {
		e, ok := v.(string)
		if !ok {
			return asks{}, errors.New("default_events: want names")
		}
		a.Events = append(a.Events, e)
	}
	if len(a.Permissions) == 0 || len(a.Events) == 0 {
		return asks{}, errors.New("no default_permissions or default_events")
	}
	return a, nil
}

// cgnat is the shared address space of carriers' NAT (RFC 6598), as
// unreachable from outside as a private range.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// unreachable says why GitHub could never deliver to pub as written, or
// returns "" for an address it may reach. It reads only the address: a
// name is not resolved, since what it resolves to here is not what
// GitHub sees.
func unreachable(pub *url.URL) string {
	host := strings.ToLower(strings.TrimSuffix(pub.Hostname(), "."))
	var why []string
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		switch {
		case ip.IsLoopback():
			why = append(why, host+" is a loopback address, this machine's own")
		case ip.IsPrivate() || cgnat.Contains(ip):
			why = append(why, host+" is a private address, reachable only inside its network")
		case ip.IsLinkLocalUnicast() || ip.IsUnspecified():
			why = append(why, host+" is not an address of this machine on the internet")
		}
	} else {
		switch {
		case host == "localhost" || strings.HasSuffix(host, ".localhost"):
			why = append(why, host+" is this machine's own name")
		case !strings.Contains(host, "."):
			why = append(why, host+" is a name without a domain, which only the local network resolves")
		case strings.HasSuffix(host, ".local") || strings.HasSuffix(host, ".internal") ||
			strings.HasSuffix(host, ".lan") || strings.HasSuffix(host, ".home.arpa"):
			why = append(why, host+" is a name of the local network")
		}
	}
	if pub.Scheme != "https" {
		why = append(why, "it is plain http, not https")
	}
	return strings.Join(why, "; ")
}
