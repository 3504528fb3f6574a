// Package ghapp is Pullwright's only door to the GitHub REST API.
//
// It owns GitHub App authentication (a JWT signed with the app key, exchanged
// through ghinstallation for per-installation tokens that are cached and
// refreshed), the few REST calls the bot makes (reactions, idempotent marker
// comments, issues with their comments, idempotent pull requests, also
// against forks, pull requests with their diffs and review threads,
// idempotent replies in review threads, check runs with requested-action
// buttons, collaborator permissions and team memberships, both cached for at
// most a minute, and file contents at a ref), the GraphQL REST lacks
// (marking a draft pull request ready for review, whether review threads
// are resolved), retries and rate-limit handling for every one of them, and
// GitHub Enterprise Server base URLs (REST at https://HOST/api/v3, GraphQL at
// https://HOST/api/graphql).
//
// It must not leak *github.Client or any other go-github type through its API:
// callers see the small structs declared here, so other packages stay
// testable with a few function fields. It must not log or return tokens,
// Authorization headers or the private key, must not read the environment
// (cmd/bot hands it a Config), and must not decide policy: who may do what is
// the policy package's business, ghapp only reports what GitHub says.
//
// It answers in the vocabulary of package pullwright, so that *App is
// task's GitHub port as it is, without knowing task.
//
// Import rule: none of policy or task.
package ghapp

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v88/github"

	"github.com/pullwright/pullwright"
)

// DefaultBaseURL is the REST API of github.com.
const DefaultBaseURL = "https://api.github.com"

const userAgent = "pullwright"

// Config configures an App. AppID and PrivateKey are required, unless
// Token is set.
type Config struct {
	AppID      int64
	PrivateKey []byte // PEM (PKCS#1 as GitHub issues it, or PKCS#8)
	// Token, when set, replaces the app's credentials: every call and every
	// git operation uses this one token, whatever the installation. It is
	// how the bot runs as a workflow step, with the job's GITHUB_TOKEN (or
	// a token the workflow made). Identity must then be set too.
	Token string
	// Identity is who Token acts as ("github-actions[bot]" for a workflow's
	// GITHUB_TOKEN); used only with Token.
	Identity  *pullwright.Identity
	BaseURL   string            // default "https://api.github.com"; GHES: "https://ghe.example.com/api/v3"
	Transport http.RoundTripper // base transport; default http.DefaultTransport
	Logger    *slog.Logger      // default slog.Default()

	// MaxRetries is how many times one request is retried; default 4,
	// negative disables retries.
	MaxRetries int
	// MinBackoff is the first backoff step when GitHub gives no wait; default 500ms.
	MinBackoff time.Duration
	// MaxWait is the longest Retry-After or rate-limit wait honoured; a longer
	// one makes the call fail at once. Default 60s.
	MaxWait time.Duration
	// CallTimeout bounds each exported call when ctx has no sooner deadline;
	// default 30s.
	CallTimeout time.Duration
	// PermissionTTL is how long a Permission or TeamMember answer is reused
	// for the same installation, repository or team, and user; default 30s.
	// A longer value is lowered to one minute, so that a user whose rights
	// were revoked loses them here within a minute. Negative disables the
	// cache. Errors are never cached.
	PermissionTTL time.Duration
	// Now is the clock of the permission cache; default time.Now. For tests.
	Now func() time.Time
	// ImageTest lets a test's loopback servers stand in for GitHub's
	// image hosts (images.go); nil, as in production, allows nothing
	// beyond GitHub's own hosts at public addresses.
	ImageTest *ImageTest
}

// App is a GitHub App client. It is safe for concurrent use.
type App struct {
	cfg  Config
	log  *slog.Logger
	base string // API base URL without trailing slash
	key  *rsa.PrivateKey
	rt   *retryTransport

	appClient  *github.Client // authenticated with the app JWT (nil with Config.Token)
	static     *installation  // the one client of Config.Token
	anonClient *github.Client // unauthenticated (public lookups)

	pageSize   int // per_page for list calls
	commentCap int // newest comments returned by Issue

	mu    sync.Mutex
	insts map[int64]*installation

	slugMu sync.Mutex
	slug   string

	idMu  sync.Mutex
	ident *pullwright.Identity

	answers *answerCache // Permission and TeamMember answers

	imgHosts     imageHosts      // where pictures may be fetched from
	imgTransport *http.Transport // their connections, judged by address
	imgDial      *imageDial      // the judge
}

type installation struct {
	tr *ghinstallation.Transport
	gh *github.Client
}

// New checks cfg and builds an App. It makes no network call.
func New(cfg Config) (*App, error) {
	var (
		key *rsa.PrivateKey
		err error
	)
	switch {
	case cfg.Token != "":
		if cfg.Identity == nil || cfg.Identity.Login == "" {
			return nil, errors.New("ghapp: a token needs the identity it acts as")
		}
	case cfg.AppID <= 0:
		return nil, errors.New("ghapp: missing GitHub App ID (GITHUB_APP_ID)")
	case len(cfg.PrivateKey) == 0:
		return nil, errors.New("ghapp: missing GitHub App private key (GITHUB_APP_PRIVATE_KEY)")
	default:
		if key, err = parseKey(cfg.PrivateKey); err != nil {
			return nil, fmt.Errorf("ghapp: GitHub App private key: %w", err)
		}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("ghapp: GitHub API base URL %q: want http(s)://host[/path]", cfg.BaseURL)
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = 4
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 60 * time.Second
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	switch {
	case cfg.PermissionTTL == 0:
		cfg.PermissionTTL = defaultPermissionTTL
	case cfg.PermissionTTL > maxPermissionTTL:
		cfg.Logger.Warn("permission cache TTL lowered to the maximum",
			slog.Duration("asked", cfg.PermissionTTL), slog.Duration("used", maxPermissionTTL))
		cfg.PermissionTTL = maxPermissionTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}

	a := &App{
		cfg:        cfg,
		log:        cfg.Logger,
		base:       base,
		key:        key,
		pageSize:   100,
		commentCap: 100,
		insts:      map[int64]*installation{},
		answers:    newAnswerCache(cfg.PermissionTTL, cfg.Now, maxAnswers),
	}
	a.rt = newRetryTransport(cfg.Transport, cfg.Logger, cfg.MaxRetries, cfg.MinBackoff, cfg.MaxWait)
	if a.imgHosts, err = newImageHosts(base, cfg.ImageTest); err != nil {
		return nil, fmt.Errorf("ghapp: %w", err)
	}
	if a.imgTransport, a.imgDial, err = newImageTransport(cfg.Transport, u, cfg.ImageTest); err != nil {
		return nil, fmt.Errorf("ghapp: %w", err)
	}

	if a.anonClient, err = a.newClient(a.rt); err != nil {
		return nil, err
	}
	if cfg.Token != "" {
		id := *cfg.Identity
		a.ident = &id
		// Marker comments are found by their author's app slug.
		a.slug = strings.TrimSuffix(strings.ToLower(id.Login), "[bot]")
		gh, err := a.newClient(&staticToken{next: a.rt, token: cfg.Token})
		if err != nil {
			return nil, err
		}
		a.static = &installation{gh: gh}
		return a, nil
	}
	atr := ghinstallation.NewAppsTransportFromPrivateKey(a.rt, cfg.AppID, key)
	atr.BaseURL = base
	if a.appClient, err = a.newClient(atr); err != nil {
		return nil, err
	}
	return a, nil
}

// staticToken authenticates every request with one token.
type staticToken struct {
	next  http.RoundTripper
	token string
}

func (s *staticToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.token)
	return s.next.RoundTrip(r)
}

// newClient builds a go-github client over rt. go-github's own rate-limit
// short-circuit is disabled: it would fail calls that the retry transport is
// allowed to wait out (see retry.go), so the transport is the single policy.
func (a *App) newClient(rt http.RoundTripper) (*github.Client, error) {
	u := a.base + "/"
	c, err := github.NewClient(
		github.WithTransport(rt),
		github.WithURLs(&u, &u),
		github.WithDisableRateLimitCheck(),
		github.WithUserAgent(userAgent),
	)
	if err != nil {
		return nil, fmt.Errorf("ghapp: GitHub client for %s: %w", a.base, err)
	}
	return c, nil
}

func parseKey(b []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("not PEM encoded (expected -----BEGIN RSA PRIVATE KEY-----)")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("PEM block %q is neither a PKCS#1 nor a PKCS#8 private key", block.Type)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, GitHub Apps use RSA keys", k)
	}
	return rk, nil
}

// installation returns the cached transport and client of one installation.
// Each installation gets its own AppsTransport: ghinstallation writes to the
// AppsTransport while refreshing a token, so sharing one would race.
func (a *App) installation(id int64) (*installation, error) {
	if a.static != nil {
		// A token reaches what it reaches: the installation (absent from
		// a workflow's events) does not choose it.
		return a.static, nil
	}
	if id <= 0 {
		return nil, fmt.Errorf("invalid installation id %d", id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if in, ok := a.insts[id]; ok {
		return in, nil
	}
	atr := ghinstallation.NewAppsTransportFromPrivateKey(a.rt, a.cfg.AppID, a.key)
	atr.BaseURL = a.base
	tr := ghinstallation.NewFromAppsTransport(atr, id)
	gh, err := a.newClient(tr)
	if err != nil {
		return nil, err
	}
	in := &installation{tr: tr, gh: gh}
	a.insts[id] = in
	return in, nil
}

func (a *App) client(id int64) (*github.Client, error) {
	in, err := a.installation(id)
	if err != nil {
		return nil, err
	}
	return in.gh, nil
}

// callCtx bounds one exported call by CallTimeout unless ctx ends sooner.
func (a *App) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.cfg.CallTimeout)
}

// Token returns an installation access token, for git over HTTPS
// (x-access-token:<token>). Tokens are cached per installation and refreshed
// a minute before they expire. Never log the result.
func (a *App) Token(ctx context.Context, installationID int64) (string, error) {
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	if a.cfg.Token != "" {
		return a.cfg.Token, nil
	}
	in, err := a.installation(installationID)
	if err != nil {
		return "", fmt.Errorf("installation token for installation %d: %w", installationID, err)
	}
	tok, err := in.tr.Token(ctx)
	if err != nil {
		// ghinstallation leaves the body of a refused refresh open.
		var he *ghinstallation.HTTPError
		if errors.As(err, &he) && he.Response != nil && he.Response.Body != nil {
			_ = he.Response.Body.Close()
		}
		return "", fmt.Errorf("installation token for installation %d: %w", installationID, err)
	}
	return tok, nil
}

// ErrNotInstalled is RepoInstallation's answer for a repository the app
// is not installed on.
var ErrNotInstalled = errors.New("the app is not installed on the repository")

// RepoInstallation returns the id of the app's installation on owner/name
// (GET /repos/{owner}/{repo}/installation, with the app's JWT), or 0 with
// one token (Config.Token), which has no installation.
func (a *App) RepoInstallation(ctx context.Context, owner, name string) (int64, error) {
	if a.cfg.Token != "" {
		return 0, nil
	}
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	in, _, err := a.appClient.Apps.GetRepositoryInstallation(ctx, owner, name)
	switch {
	case apiNotFound(err):
		return 0, fmt.Errorf("installation on %s/%s: %w", owner, name, ErrNotInstalled)
	case err != nil:
		return 0, fmt.Errorf("installation on %s/%s: %w", owner, name, err)
	case in.GetID() == 0:
		return 0, fmt.Errorf("installation on %s/%s: GitHub returned no id", owner, name)
	case in.SuspendedAt != nil:
		// GitHub sends a suspended installation no deliveries and gives
		// it no tokens: to the bot it is not installed.
		return 0, fmt.Errorf("installation on %s/%s is suspended: %w", owner, name, ErrNotInstalled)
	}
	return in.GetID(), nil
}

// Identity returns the app's bot identity: GET /app (JWT) for the slug, then
// GET /users/{slug}[bot] for the bot user's id. The lookup is made without
// credentials; if the server refuses that (GitHub Enterprise in private
// mode), it is repeated with a token of the app's first installation. The
// result is cached after the first success.
func (a *App) Identity(ctx context.Context) (pullwright.Identity, error) {
	a.idMu.Lock()
	defer a.idMu.Unlock()
	if a.ident != nil {
		return *a.ident, nil
	}
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	slug, err := a.appSlug(ctx)
	if err != nil {
		return pullwright.Identity{}, fmt.Errorf("app identity: %w", err)
	}
	login := slug + "[bot]"
	u, _, err := a.anonClient.Users.Get(ctx, url.PathEscape(login))
	if s := StatusCode(err); s == http.StatusUnauthorized || s == http.StatusForbidden || s == http.StatusNotFound {
		u, err = a.userViaInstallation(ctx, login)
	}
	if err != nil {
		return pullwright.Identity{}, fmt.Errorf("app identity: look up user %s: %w", login, err)
	}
	id := pullwright.Identity{
		Login: login,
		Name:  login,
		Email: fmt.Sprintf("%d+%s@users.noreply.github.com", u.GetID(), login),
		ID:    u.GetID(),
	}
	a.ident = &id
	return id, nil
}

func (a *App) userViaInstallation(ctx context.Context, login string) (*github.User, error) {
	insts, _, err := a.appClient.Apps.ListInstallations(ctx, &github.ListOptions{PerPage: 1})
	if err != nil {
		return nil, fmt.Errorf("list installations: %w", err)
	}
	if len(insts) == 0 {
		return nil, errors.New("user lookup needs authentication and the app has no installation")
	}
	gh, err := a.client(insts[0].GetID())
	if err != nil {
		return nil, err
	}
	u, _, err := gh.Users.Get(ctx, url.PathEscape(login))
	return u, err
}

// appSlug returns the app's slug from GET /app, cached after first success.
func (a *App) appSlug(ctx context.Context) (string, error) {
	a.slugMu.Lock()
	defer a.slugMu.Unlock()
	if a.slug != "" {
		return a.slug, nil
	}
	app, _, err := a.appClient.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("get app: %w", err)
	}
	if app.GetSlug() == "" {
		return "", errors.New("get app: GitHub returned no slug")
	}
	a.slug = app.GetSlug()
	return a.slug, nil
}

// apiNotFound reports whether GitHub answered the API call itself with 404.
// A 404 while minting the installation token (an installation that does
// not exist) is not one: it must not read as "no such file" or "not a
// member".
func apiNotFound(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound
}

// StatusCode returns the HTTP status GitHub answered for a failed call, or 0
// when err carries none (network error, cancelled context, ...).
func StatusCode(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	var rle *github.RateLimitError
	if errors.As(err, &rle) && rle.Response != nil {
		return rle.Response.StatusCode
	}
	var are *github.AbuseRateLimitError
	if errors.As(err, &are) && are.Response != nil {
		return are.Response.StatusCode
	}
	var re *RetryError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		return he.Response.StatusCode
	}
	return 0
}
