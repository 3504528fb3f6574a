// Package console is the web console of `bot serve` for maintainers and
// operators: sign-in with GitHub (a GitHub App's user authorization),
// server-rendered pages of the tasks, and a JSON API over the same data.
// GitHub is its only source of identity and permission: a person sees the
// tasks of the repositories GitHub says their own token can read, asked
// of GitHub and cached for at most a minute. It must not decide
// permission itself, render untrusted text as HTML (every page goes
// through html/template under a strict Content-Security-Policy), or keep
// state in memory that another replica would need (sessions are sealed
// cookies). See docs/console.md.
//
// It reads the store through task's interfaces and asks GitHub for an
// installation through a port that app fills, so it reaches neither a
// store's driver nor ghapp, nor the packages that do a task's work.
//
// Import rule: none of ghapp, agent, repo, runner, setup, task/sqlite or
// task/postgres.
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pullwright/pullwright/task"
)

// Store is what the console reads of the task store, and Record, with
// which its buttons record their answers as deliveries do (actions.go).
type Store interface {
	Get(ctx context.Context, id int64) (*task.Task, error)
	Record(ctx context.Context, d task.Delivery, t *task.Task) error
	task.Lister
}

// Config is what the console needs. cmd/bot fills it from the environment
// through app.Config (docs/console.md).
type Config struct {
	Store Store
	// APIURL is GitHub's REST base URL; the web flow's pages are at
	// WebURL(APIURL).
	APIURL string
	// PublicURL is where people reach the bot: the OAuth callback is
	// PublicURL + "/console/callback". A plain http:// address turns the
	// cookies' Secure flag off, for development only.
	PublicURL string
	// ClientID and ClientSecret are the GitHub App's OAuth credentials.
	ClientID, ClientSecret string
	// SessionKey seals the cookies; at least MinSessionKey bytes.
	SessionKey []byte
	// SessionTTL is how long a sign-in lasts (default and most 8h, the
	// life of GitHub's user tokens, whose refresh is not done yet).
	SessionTTL time.Duration
	// PermissionTTL is how long a permission answer is reused (default
	// 30s, at most a minute, as for the comment commands).
	PermissionTTL time.Duration
	// Installations finds the app's installation on a repository, for
	// POST /api/tasks; nil refuses that endpoint.
	Installations Installations
	// Serves reports whether the operator serves an installation and its
	// account (policy.Operator.Serves), as the webhook asks of every
	// delivery; nil serves all.
	Serves func(installationID int64, owner string) bool
	// TraceURL, when set, links a task's trace id in the operator's
	// tracing UI: an http(s) address in which {trace_id} stands for the
	// id (BOT_TRACE_URL).
	TraceURL string
	// HTTPClient calls GitHub (default: one with no global state).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock of sessions and caches; default time.Now.
	Now func() time.Time
	// Demo serves `bot demo`: everyone who reaches the console is let in
	// as the person "demo", with no GitHub, who may read every task and
	// is shown the buttons, and whose answers are refused as a demo's.
	// No client credentials or session key are needed; the caller binds
	// it to loopback.
	Demo bool
}

// demoLogin is who a demo console lets in.
const demoLogin = "demo"

const (
	maxSessionTTL    = 8 * time.Hour
	signInTTL        = 10 * time.Minute
	maxPermissionTTL = time.Minute
	// pageSize is how many tasks a page lists, and maxScan how many a page
	// looks at before it stops short: a person who can read few of many
	// repositories gets a short page and a link on, not a slow one.
	pageSize = 50
	maxScan  = 500
	// maxRepos is how many distinct repositories one list request asks
	// GitHub about: each may be a call made with the person's token, and
	// a store of tasks of many repositories must not turn one request
	// into hundreds. The list is cut there, with a link on.
	maxRepos = 50
	// maxTotalRepos is how many distinct repositories one request for
	// the spend totals asks GitHub about: more than a list's, since a
	// sum cut short is less use than a page, and within what one token
	// keeps in the permission cache (maxScan).
	maxTotalRepos = 200
	// requestBudget bounds the time one request spends on the store and
	// GitHub together, however many checks it needs.
	requestBudget = 20 * time.Second
)

// Console serves the console's pages and API.
type Console struct {
	cfg      Config
	log      *slog.Logger
	gh       *github
	cookies  cookies
	callback string
	pages    map[string]*template.Template
	static   fs.FS
	now      func() time.Time
	budget   time.Duration // requestBudget; shorter in tests
	// totalRepos is maxTotalRepos, totalScan maxTotalScan; fewer in tests.
	totalRepos, totalScan int
	// sums counts the sums of spend being computed (maxSums).
	sums streamCount
	// streamPoll is how often a live stream reads its task; shorter in tests.
	streamPoll time.Duration
	// streams counts the open live streams, per person and in all.
	streams streamCount
	// demo is Config.Demo, and demoCSRF the demo person's CSRF token.
	demo     bool
	demoCSRF string
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New checks cfg and builds the console.
func New(cfg Config) (*Console, error) {
	if cfg.Store == nil {
		return nil, errors.New("console: no store")
	}
	if cfg.Demo && len(cfg.SessionKey) == 0 {
		// A demo's forms still carry a CSRF token, sealed like any other.
		cfg.SessionKey = []byte(rand.Text() + rand.Text())
	}
	if !cfg.Demo && (cfg.ClientID == "" || cfg.ClientSecret == "") {
		return nil, errors.New("console: GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET are needed to sign in with GitHub")
	}
	pub, err := url.Parse(strings.TrimRight(cfg.PublicURL, "/"))
	if err != nil || (pub.Scheme != "https" && pub.Scheme != "http") || pub.Host == "" {
		return nil, fmt.Errorf("console: BOT_PUBLIC_URL %q: want https://host[/path]", cfg.PublicURL)
	}
	if cfg.TraceURL != "" {
		u, err := url.Parse(strings.ReplaceAll(cfg.TraceURL, "{trace_id}", "0"))
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !strings.Contains(cfg.TraceURL, "{trace_id}") {
			return nil, fmt.Errorf("console: BOT_TRACE_URL %q: want an http(s) address holding {trace_id}", cfg.TraceURL)
		}
	}
	sealer, err := newSealer(cfg.SessionKey)
	if err != nil {
		return nil, fmt.Errorf("console: BOT_SESSION_KEY: %w", err)
	}
	web, err := WebURL(cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL <= 0 || cfg.SessionTTL > maxSessionTTL {
		cfg.SessionTTL = maxSessionTTL
	}
	if cfg.PermissionTTL <= 0 {
		cfg.PermissionTTL = 30 * time.Second
	}
	cfg.PermissionTTL = min(cfg.PermissionTTL, maxPermissionTTL)
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: githubTimeout}
	}
	pages := map[string]*template.Template{}
	for _, p := range []string{"signin", "tasks", "task", "spend", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", p, err)
		}
		pages[p] = t
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if pub.Scheme == "http" && !cfg.Demo {
		cfg.Logger.Warn("console on plain http: its cookies are not Secure; for development only", "public_url", pub.String())
	}
	return &Console{
		demo: cfg.Demo, demoCSRF: rand.Text(),
		cfg: cfg, log: cfg.Logger, now: cfg.Now, pages: pages, static: static, budget: requestBudget, totalRepos: maxTotalRepos, totalScan: maxTotalScan,
		sums: streamCount{limit: maxSums, perPerson: 1}, streamPoll: streamPoll,
		cookies:  cookies{secure: pub.Scheme == "https", sealer: sealer},
		callback: pub.String() + "/console/callback",
		gh: &github{
			api: strings.TrimRight(cfg.APIURL, "/"), web: web,
			clientID: cfg.ClientID, clientSecret: cfg.ClientSecret,
			client: cfg.HTTPClient, permissionTTL: cfg.PermissionTTL, now: cfg.Now,
			roles: map[string]cached{}, users: map[string]cached{}, maxCacheAnswer: 10000, maxPerToken: maxScan,
			demo: cfg.Demo,
		},
	}, nil
}

// apiRoutes are the JSON API's endpoints, as docs/openapi.yaml describes
// them (its test holds both to each other).
func (c *Console) apiRoutes() map[string]func(http.ResponseWriter, *http.Request, *caller) {
	return map[string]func(http.ResponseWriter, *http.Request, *caller){
		"GET /api/tasks":                  c.apiTasks,
		"POST /api/tasks":                 c.apiStart,
		"GET /api/tasks/{id}":             c.apiTask,
		"GET /api/spend":                  c.apiSpend,
		"GET /api/tasks/{id}/events":      c.apiEvents,
		"POST /api/tasks/{id}/cancel":     c.apiCancel,
		"POST /api/requests/{id}/approve": c.apiAnswer("approve"),
		"POST /api/requests/{id}/reject":  c.apiAnswer("reject"),
	}
}

// Handler serves /console/… and /api/…; the caller routes those prefixes
// here.
func (c *Console) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /console/{$}", c.page(c.tasksPage))
	m.HandleFunc("GET /console/tasks/{id}", c.page(c.taskPage))
	m.HandleFunc("GET /console/spend", c.page(c.spendPage))
	m.HandleFunc("GET /console/signin", c.signInPage)
	m.HandleFunc("GET /console/login", c.login)
	m.HandleFunc("GET /console/callback", c.callbackPage)
	m.HandleFunc("POST /console/logout", c.logout)
	m.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(c.static)))
	m.HandleFunc("POST /console/tasks/{id}/{verb}", c.page(c.actionPage))
	for pattern, h := range c.apiRoutes() {
		m.HandleFunc(pattern, c.api(h))
	}
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) { c.fail(w, r, http.StatusNotFound, "No such page.") })
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) { apiError(w, http.StatusNotFound, "not found") })
	return secureHeaders(m)
}

// secureHeaders sets what every answer of the console carries. The policy
// allows nothing but the console's own stylesheet and script file (the
// task page's live updates, static/live.js), and connections to the
// console itself: no inline script or style, no eval, no frames, forms
// posting only to the console; whatever text slipped past escaping could
// not run or load anything.
func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		// Task pages' addresses name repositories; other sites need not learn them.
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// caller is who a request comes from, and the token to ask GitHub with.
type caller struct {
	Login string
	ID    int64
	token string
	csrf  string // "" for a caller with a token: it posts no forms
	// viaToken is a caller who sent their own token in Authorization:
	// no cookie another site could ride, so no CSRF token either.
	viaToken bool
}

// fromSession reads the signed-in person, if the cookie is ours and alive.
func (c *Console) fromSession(r *http.Request) (*caller, bool) {
	if c.demo {
		return &caller{Login: demoLogin, ID: 1, csrf: c.demoCSRF}, true
	}
	var s session
	if !c.cookies.get(r, sessionCookie, &s) || c.now().Unix() >= s.Expires || s.Token == "" {
		return nil, false
	}
	return &caller{Login: s.Login, ID: s.ID, token: s.Token, csrf: s.CSRF}, true
}

// page guards a page: signed in, or off to the sign-in page.
func (c *Console) page(h func(http.ResponseWriter, *http.Request, *caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		who, ok := c.fromSession(r)
		if !ok {
			http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
			return
		}
		h(w, r, who)
	}
}

// signInPage offers the way in, and nothing else.
func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.fromSession(r); ok {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", nil, nil)
}

// login starts the web flow: a fresh state, kept sealed in this browser
// and sent to GitHub, which hands it back with the code.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.demo {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	st := oauthState{State: rand.Text(), Expires: c.now().Add(signInTTL).Unix()}
	if err := c.cookies.set(w, stateCookie, st, signInTTL); err != nil {
		c.log.ErrorContext(r.Context(), "console: start sign-in", "err", err)
		c.fail(w, r, http.StatusInternalServerError, "Signing in failed.")
		return
	}
	http.Redirect(w, r, c.gh.authorizeURL(c.callback, st.State), http.StatusFound)
}

// callbackPage ends the web flow: the state must be this browser's, the
// code is traded for the person's token, and GitHub says whose it is.
func (c *Console) callbackPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var st oauthState
	ok := c.cookies.get(r, stateCookie, &st)
	c.cookies.clear(w, stateCookie)
	q := r.URL.Query()
	switch {
	case !ok || c.now().Unix() >= st.Expires || !sameSecret(st.State, q.Get("state")):
		// A forged callback (login CSRF), or one too late: sign in again.
		c.log.WarnContext(ctx, "console: sign-in refused: state missing, expired or not this browser's")
		c.fail(w, r, http.StatusBadRequest, "This sign-in was not started here, or took too long. Sign in again.")
		return
	case q.Get("error") != "":
		c.log.InfoContext(ctx, "console: sign-in denied on GitHub", "error", q.Get("error"))
		c.fail(w, r, http.StatusForbidden, "GitHub did not authorize the sign-in.")
		return
	}
	token, err := c.gh.exchange(ctx, q.Get("code"), c.callback)
	if err != nil {
		c.log.WarnContext(ctx, "console: sign-in failed", "err", err)
		c.fail(w, r, http.StatusBadGateway, "GitHub did not confirm the sign-in. Sign in again.")
		return
	}
	u, err := c.gh.whoami(ctx, token)
	if err != nil {
		c.log.WarnContext(ctx, "console: sign-in failed", "err", err)
		c.fail(w, r, http.StatusBadGateway, "GitHub did not confirm the sign-in. Sign in again.")
		return
	}
	s := session{Login: u.Login, ID: u.ID, Token: token, CSRF: rand.Text(), Expires: c.now().Add(c.cfg.SessionTTL).Unix()}
	if err := c.cookies.set(w, sessionCookie, s, c.cfg.SessionTTL); err != nil {
		c.log.ErrorContext(ctx, "console: keep session", "err", err)
		c.fail(w, r, http.StatusInternalServerError, "Signing in failed.")
		return
	}
	c.log.InfoContext(ctx, "console: signed in", "login", u.Login, "user_id", u.ID)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// logout ends the session. It changes state, so it needs the session's
// CSRF token: another site must not sign people out.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if c.demo {
		// No one to sign out, and no token to revoke.
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	who, ok := c.fromSession(r)
	if !ok {
		http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
		return
	}
	if !c.csrfOK(r, who) {
		c.fail(w, r, http.StatusForbidden, "This form has expired or was not sent from the console. Reload the page and try again.")
		return
	}
	c.cookies.clear(w, sessionCookie)
	// The cookie's token is revoked on GitHub: clearing the cookie alone
	// would leave any copy of it a working session for hours. A failure
	// is logged, and the person is signed out of this browser anyway.
	if err := c.gh.revoke(r.Context(), who.token); err != nil {
		c.log.WarnContext(r.Context(), "console: sign-out could not revoke the token on GitHub", "login", who.Login, "err", err)
	}
	c.log.InfoContext(r.Context(), "console: signed out", "login", who.Login)
	http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
}

// csrfOK checks a form's token against the session's.
func (c *Console) csrfOK(r *http.Request, who *caller) bool {
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<16)
	return sameSecret(who.csrf, r.PostFormValue("csrf"))
}

// fail renders an error page that says only what the person may know.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	who, _ := c.fromSession(r)
	c.render(w, r, status, "error", who, map[string]any{"Message": msg})
}

// render writes a page, buffered, so that a template failing halfway is
// an error page and not half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, who *caller, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["Who"] = who
	data["Demo"] = c.demo
	if who != nil {
		data["CSRF"] = who.csrf
	}
	var b strings.Builder
	if err := c.pages[page].Execute(&b, data); err != nil {
		c.log.ErrorContext(r.Context(), "console: render", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// Stylesheet is the console's stylesheet, for the pages of `bot serve`
// served before the console exists (the first-run setup, package
// appmanifest), so that they look the same.
func Stylesheet() []byte {
	b, err := staticFS.ReadFile("static/style.css")
	if err != nil {
		// Embedded at build time: it is there.
		panic(err)
	}
	return b
}
