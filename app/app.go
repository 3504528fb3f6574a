// Package app wires Pullwright's packages into the running bot: the store,
// the GitHub App client, the agent, the webhook handler and the worker pool.
// It holds no logic of its own beyond construction and the HTTP routes;
// cmd/bot turns the environment into a Config and calls it.
package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/console"
	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/ghapp"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/sandbox"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/postgres"
	"github.com/pullwright/pullwright/task/sqlite"
	"github.com/pullwright/pullwright/webhook"

	"github.com/pullwright/pullwright/tracing"
	"go.opentelemetry.io/otel/trace"
)

// Config is everything the bot needs to run. cmd/bot fills it from the
// environment (see README.md for the variables).
type Config struct {
	Addr          string
	DatabaseURL   string
	Command       string
	AppID         int64
	PrivateKey    []byte
	WebhookSecret string
	APIURL        string
	OpenAIKey     string
	OpenAIBaseURL string
	// OpenAIAPIType is "openai" (or "") or "azure", and OpenAIAPIVersion
	// Azure's api-version (agent.Config.APIType, APIVersion).
	OpenAIAPIType, OpenAIAPIVersion string
	Model                           string
	Runner                          string
	SandboxImage                    string
	// SandboxCABundle is a PEM file of certificates every Docker
	// sandbox trusts (BOT_SANDBOX_CA_BUNDLE; runner.DockerConfig.CABundle),
	// for a network that inspects TLS; checked at start.
	SandboxCABundle string
	// Forwarder is the Linux build of the bot fenced setups run to reach
	// the fence (its "fence-forward"); "" means this bot's own executable,
	// static or not (a dynamic one goes with its loader and libraries,
	// runner.LoadForwarder). Without one, repositories' setups do not run.
	Forwarder string
	// FenceResolver resolves the hosts setups ask for (nil: the system's);
	// for tests, whose hosts have names nothing else knows.
	FenceResolver fence.Resolver
	// ProxyEnv is the bot's own HTTPS_PROXY, HTTP_PROXY and NO_PROXY,
	// read once at start: the proxy setups go out through when the
	// operator's file names none (fence.parent_proxy).
	ProxyEnv httpproxy.Config
	// Getenv reads the bot's environment when an MCP server is called: the
	// operator's file names the variables that hold the servers'
	// credentials (mcp.servers.*.headers_from_env). nil reads none.
	Getenv func(string) string
	// MCPTransport carries the calls to MCP servers (nil: the default
	// transport); for tests.
	MCPTransport http.RoundTripper
	// ImageTest lets a test's loopback servers stand in for GitHub's
	// image hosts (ghapp.Config.ImageTest); nil in production.
	ImageTest *ghapp.ImageTest
	// WorkDir holds the task workspaces.
	WorkDir string
	// Workers is how many tasks run at once.
	Workers int

	// Tuning, mostly for tests; zero means the package default.
	Poll        time.Duration
	Lease       time.Duration
	MaxAttempts int
	Backoff     func(n int) time.Duration
	MaxTurns    int
	MaxTokens   int
	// LLMRetries is how often one model call is retried on 429 and 5xx
	// (0: the agent's default, negative: never).
	LLMRetries  int
	GitHubRetry time.Duration
	GitTimeout  time.Duration
	// ApprovalTimeout is how long an execution request waits (default 24h).
	ApprovalTimeout time.Duration
	// Operator is the operator's configuration (serve --config): caps,
	// defaults, allowed models, rates, served installations. Nil means
	// policy.DefaultOperator with Model as the default model.
	Operator *policy.Operator
	// PermissionTTL is how long a permission answer is cached (at most 1m).
	PermissionTTL time.Duration
	// PermissionClock is the clock the GitHub client's permission cache
	// counts PermissionTTL on (ghapp.Config.Now; the console's keeps
	// time.Now); nil is time.Now. For tests.
	PermissionClock func() time.Time
	// Token, when set, is the one GitHub token the bot acts with instead
	// of the App's credentials (bot action, with the job's token), and
	// TokenIdentity who it acts as (default: github-actions[bot]). AppID,
	// PrivateKey and WebhookSecret are then not needed.
	Token         string
	TokenIdentity *pullwright.Identity
	// LocalPath is the PATH of commands run with Runner "local" (default
	// runner.DefaultPath).
	LocalPath string

	// The console (docs/console.md) is served when ClientID, ClientSecret,
	// SessionKey and PublicURL are all set; with some but not all, New
	// refuses to start rather than serve without it quietly.
	PublicURL              string
	ClientID, ClientSecret string
	SessionKey             []byte

	Logger *slog.Logger
	// Tracer, when set, traces every task (package tracing); nil traces
	// nothing. TraceURL links a trace id from the console
	// (console.Config.TraceURL).
	Tracer   trace.TracerProvider
	TraceURL string

	// store, when set, is an open store that New uses instead of opening
	// DatabaseURL (RunAction's, which it also restores saved tasks into).
	// New owns it from the call on: the App closes it, or New if it fails.
	store task.Store
}

// Defaults of the contract (docs/architecture.md, "Contract").
const (
	DefaultAddr        = ":8080"
	DefaultDatabaseURL = "sqlite://./pullwright.db"
	DefaultCommand     = "/agent"
	DefaultAPIURL      = "https://api.github.com"
	DefaultModel       = "gpt-4.1-mini"
	DefaultRunner      = "docker"
)

// App is the wired bot.
type App struct {
	cfg     Config
	log     *slog.Logger
	store   task.Store
	pool    *task.Pool
	webhook *webhook.Handler
	github  *ghapp.App
	metrics *metrics
	console *console.Console // nil when not configured
	closers []func() error
}

// New checks cfg and builds the bot. It opens the store but starts nothing.
func New(ctx context.Context, cfg Config) (_ *App, err error) {
	store := cfg.store
	defer func() {
		// On failure the store is closed here, once, whether it was handed
		// in or opened below.
		if err != nil && store != nil {
			err = errors.Join(err, store.Close())
		}
	}()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	setDefaults(&cfg)
	switch {
	case cfg.Token != "":
		if cfg.TokenIdentity == nil {
			id := ActionsIdentity()
			cfg.TokenIdentity = &id
		}
		if cfg.WebhookSecret == "" {
			// Nothing arrives over HTTP in this mode; the handler only
			// decides events read from a file. A secret nobody knows
			// keeps its HTTP side shut all the same.
			cfg.WebhookSecret = rand.Text()
		}
	case cfg.WebhookSecret == "":
		return nil, errors.New("GITHUB_WEBHOOK_SECRET is empty: refusing to accept unsigned deliveries")
	case cfg.AppID == 0:
		return nil, errors.New("GITHUB_APP_ID is not set")
	case len(cfg.PrivateKey) == 0:
		return nil, errors.New("GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_PATH is not set")
	}
	switch cfg.Runner {
	case "docker", "local":
	default:
		return nil, fmt.Errorf("BOT_RUNNER=%q: want docker or local", cfg.Runner)
	}
	log := cfg.Logger
	op, err := operator(cfg)
	if err != nil {
		return nil, err
	}

	gh, err := ghapp.New(ghapp.Config{
		AppID:         cfg.AppID,
		PrivateKey:    cfg.PrivateKey,
		BaseURL:       cfg.APIURL,
		Logger:        log.With("component", "ghapp"),
		MinBackoff:    cfg.GitHubRetry,
		PermissionTTL: cfg.PermissionTTL,
		Now:           cfg.PermissionClock,
		Token:         cfg.Token,
		Identity:      cfg.TokenIdentity,
		ImageTest:     cfg.ImageTest,
	})
	if err != nil {
		return nil, fmt.Errorf("github app: %w", err)
	}
	llm, err := agent.New(agent.Config{
		BaseURL:      cfg.OpenAIBaseURL,
		APIKey:       cfg.OpenAIKey,
		APIType:      cfg.OpenAIAPIType,
		APIVersion:   cfg.OpenAIAPIVersion,
		Model:        op.Models.Default,
		MaxTurns:     cfg.MaxTurns,
		MaxTokens:    cfg.MaxTokens,
		MaxRetries:   cfg.LLMRetries,
		Getenv:       cfg.Getenv,
		MCPTransport: cfg.MCPTransport,
		Logger:       log.With("component", "agent"),
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o700); err != nil {
		return nil, fmt.Errorf("create work dir %s: %w", cfg.WorkDir, err)
	}
	if store == nil {
		// Through s, not store: a failed open may return a nil pointer in
		// a non-nil interface, which the deferred Close must not see.
		s, err := OpenStore(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, err
		}
		store = s
	}

	a := &App{cfg: cfg, log: log, store: store, github: gh, metrics: newMetrics(store, log.With("component", "metrics"))}
	sb, deps, err := a.sandbox(ctx, op)
	if err != nil {
		return nil, err
	}
	flow := &task.Flow{
		Store:           store,
		GitHub:          gh,
		Pictures:        gh,
		Agent:           metered{model{llm}, a.metrics},
		Workspaces:      workspaces{},
		Dir:             cfg.WorkDir,
		BranchName:      repo.BranchName,
		Operator:        op,
		Unisolated:      cfg.Runner == "local",
		Command:         cfg.Command,
		GitTimeout:      cfg.GitTimeout,
		Runner:          timed{sb, a.metrics},
		Deps:            deps,
		Tools:           toolCaller{getenv: cfg.Getenv, transport: cfg.MCPTransport, log: log.With("component", "mcp")},
		Logger:          log.With("component", "task"),
		ApprovalTimeout: cfg.ApprovalTimeout,
	}
	a.pool = &task.Pool{
		Store:       store,
		Steps:       flow,
		Logger:      log.With("component", "worker"),
		Workers:     cfg.Workers,
		Lease:       cfg.Lease,
		Poll:        cfg.Poll,
		MaxAttempts: cfg.MaxAttempts,
		Backoff:     cfg.Backoff,
		Observe:     a.metrics.observe,
	}
	if cfg.Tracer != nil {
		a.pool.Tracer = cfg.Tracer.Tracer(tracing.Name)
	}
	var deliveries trace.Tracer
	if cfg.Tracer != nil {
		deliveries = cfg.Tracer.Tracer(tracing.Name)
	}
	a.webhook, err = webhook.New(webhook.Config{
		Tracer:      deliveries,
		Secret:      []byte(cfg.WebhookSecret),
		Command:     cfg.Command,
		BotLogin:    a.botLogin(ctx),
		AllowedBots: botLogins(op.AllowedBots),
		Serves:      op.Serves,
		OneToken:    cfg.Token != "",
		Recorder:    notifying{store, a.pool},
		Observe:     a.metrics.delivery,
		Logger:      log.With("component", "webhook"),
	})
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	if a.console, err = consoleOf(cfg, store, a.pool, installations{gh}, op.Serves, log); err != nil {
		return nil, err
	}
	if a.console != nil {
		flow.ConsoleURL = cfg.PublicURL
	}
	return a, nil
}

// consoleOf builds the console when it is configured, nil when none of
// its settings is.
func consoleOf(cfg Config, store task.Store, pool *task.Pool, inst console.Installations, serves func(int64, string) bool, log *slog.Logger) (*console.Console, error) {
	set := 0
	for _, v := range []bool{cfg.ClientID != "", cfg.ClientSecret != "", len(cfg.SessionKey) > 0, cfg.PublicURL != ""} {
		if v {
			set++
		}
	}
	switch set {
	case 0:
		return nil, nil
	case 4:
	default:
		return nil, errors.New("console: set all of GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET, BOT_SESSION_KEY and BOT_PUBLIC_URL, or none")
	}
	lister, ok := store.(console.Store)
	if !ok {
		return nil, fmt.Errorf("console: the store %T cannot list tasks", store)
	}
	return console.New(console.Config{
		Store: notifyingConsole{lister, pool}, APIURL: cfg.APIURL, PublicURL: cfg.PublicURL,
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, SessionKey: cfg.SessionKey, TraceURL: cfg.TraceURL,
		PermissionTTL: cfg.PermissionTTL, Installations: inst, Serves: serves, Logger: log.With("component", "console"),
	})
}

// installations gives the console the app's installation on a repository,
// in the console's terms.
type installations struct{ gh *ghapp.App }

func (i installations) RepoInstallation(ctx context.Context, owner, name string) (int64, error) {
	id, err := i.gh.RepoInstallation(ctx, owner, name)
	if errors.Is(err, ghapp.ErrNotInstalled) {
		return 0, fmt.Errorf("%w: %w", console.ErrNotInstalled, err)
	}
	return id, err
}

// operator is the operator's configuration with the environment's model
// and the tests' budget knobs folded in.
func operator(cfg Config) (*policy.Operator, error) {
	op := cfg.Operator
	if op == nil {
		op = policy.DefaultOperator()
		op.Models.Default = cfg.Model
	} else {
		c := *op
		op = &c
	}
	if cfg.MaxTurns > 0 {
		op.Defaults.MaxTurns = cfg.MaxTurns
		op.Caps.MaxTurns = max(op.Caps.MaxTurns, cfg.MaxTurns)
	}
	if cfg.MaxTokens > 0 {
		op.Defaults.MaxTokens = cfg.MaxTokens
		op.Caps.MaxTokens = max(op.Caps.MaxTokens, cfg.MaxTokens)
	}
	// A task resolves the defaults whenever a repository has no file; an
	// operator file whose defaults break its own caps is refused now.
	if _, err := op.Resolve(nil); err != nil {
		return nil, fmt.Errorf("operator configuration: %w", err)
	}
	return op, nil
}

// botLogins spells the operator's allowed bots as GitHub sends them: the
// file may name "renovate" for "renovate[bot]".
func botLogins(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		if !strings.HasSuffix(strings.ToLower(n), "[bot]") {
			n += "[bot]"
		}
		out = append(out, n)
	}
	return out
}

func setDefaults(c *Config) {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Addr, DefaultAddr)
	def(&c.DatabaseURL, DefaultDatabaseURL)
	def(&c.Command, DefaultCommand)
	def(&c.APIURL, DefaultAPIURL)
	def(&c.Model, DefaultModel)
	def(&c.Runner, DefaultRunner)
	def(&c.WorkDir, filepath.Join(os.TempDir(), "pullwright"))
}

// sandbox builds the runner BOT_RUNNER names. Docker is checked and
// cleared of containers a crashed bot left behind; a daemon that does not
// answer is logged loudly, and each approved command then gets a result
// saying the sandbox failed: the bot never falls back to running commands
// without isolation.
//
// With Docker it also returns what runs repositories' setups, unless the
// bot has no binary that can forward their connections from a sandbox
// (setup.Forwarder): then approved commands run without their
// dependencies, as the log says.
func (a *App) sandbox(ctx context.Context, op *policy.Operator) (task.Runner, task.Dependencies, error) {
	log := a.log.With("component", "runner")
	dir := filepath.Join(a.cfg.WorkDir, "runs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create %s: %w", dir, err)
	}
	sb, err := sandbox.New(sandbox.Config{
		Local: a.cfg.Runner == "local", Path: a.cfg.LocalPath, TempDir: dir,
		Operator: op, ProxyEnv: a.cfg.ProxyEnv, StrictParent: true, Resolver: a.cfg.FenceResolver,
		Image: a.cfg.SandboxImage, Owner: sandboxOwner(dir), Forwarder: a.cfg.Forwarder, CABundle: a.cfg.SandboxCABundle,
		Logger: a.log,
	})
	var pe *sandbox.ParentError
	switch {
	case errors.As(err, &pe):
		return nil, nil, err
	case err != nil:
		return nil, nil, fmt.Errorf("docker sandbox: %w", err)
	case sb.Docker == nil:
		return sb.Runner, nil, nil
	}
	a.closers = append(a.closers, sb.Close)
	var deps task.Dependencies
	if sb.Setup != nil {
		deps = meteredSetup{sb.Setup, a.metrics}
	} else {
		log.Warn("repositories' setups will not run: no binary to forward their connections to the fence", "err", sb.NoSetup)
	}
	d := sb.Docker
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.Ping(pctx); err != nil {
		log.Error("the Docker engine does not answer: approved commands will fail until it does", "err", err)
		return d, deps, nil
	}
	if n, err := d.CleanupOrphans(pctx); err != nil {
		log.Error("remove sandboxes left by an earlier run", "err", err)
	} else if n > 0 {
		log.Warn("removed sandboxes left by an earlier run", "containers", n)
	}
	return d, deps, nil
}

// sandboxOwner names this bot's sandboxes on a Docker host that others may
// share (replicas, other bots, tests): the host name and the work
// directory, stable across restarts, so that the clean-up at start removes
// what this bot left and nothing of anyone else's.
func sandboxOwner(dir string) string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\x00" + dir))
	return hex.EncodeToString(sum[:8])
}

// botLogin asks GitHub who the app is, so that the webhook ignores the
// app's own comments by name. Failing that, comments are still ignored by
// their Bot sender type and by the marker every bot comment carries.
func (a *App) botLogin(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	id, err := a.github.Identity(ctx)
	if err != nil {
		a.log.Warn("could not read the app's identity; its comments are still ignored by sender type and marker", "err", err)
		return ""
	}
	a.log.Info("github app identity", "login", id.Login)
	return id.Login
}

// openTimeout bounds opening a Postgres store: connecting and migrating.
const openTimeout = time.Minute

// OpenStore opens the store a database URL names.
func OpenStore(ctx context.Context, url string) (task.Store, error) {
	switch {
	case strings.HasPrefix(url, "sqlite://"):
		path := strings.TrimPrefix(url, "sqlite://")
		if path == "" {
			return nil, fmt.Errorf("database URL %q names no file", url)
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("create database directory %s: %w", dir, err)
			}
		}
		return sqlite.Open(ctx, path)
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		// A server that does not answer must not hold the start for ever:
		// the bot fails, and its supervisor restarts it.
		ctx, cancel := context.WithTimeout(ctx, openTimeout)
		defer cancel()
		s, err := postgres.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	// Only the scheme: the rest may hold a password.
	scheme, _, _ := strings.Cut(url, "://")
	return nil, fmt.Errorf("database URL of scheme %q: want sqlite:///path/file.db or postgres://user:password@host/database", scheme)
}

// notifying wakes a worker as soon as a delivery created a task, so work
// starts without waiting for the next poll. The handler itself starts no
// goroutine: Notify only drops a token in a channel.
type notifying struct {
	task.Store
	pool *task.Pool
}

func (n notifying) Record(ctx context.Context, d task.Delivery, t *task.Task) error {
	return recordAndWake(ctx, n.Store, n.pool, d, t)
}

// recordAndWake records d and t, and wakes a worker if that made a task.
func recordAndWake(ctx context.Context, s interface {
	Record(context.Context, task.Delivery, *task.Task) error
}, pool *task.Pool, d task.Delivery, t *task.Task) error {
	err := s.Record(ctx, d, t)
	if err == nil && t != nil {
		pool.Notify()
	}
	return err
}

// notifyingConsole wakes a worker when a console button recorded a task,
// as notifying does for a delivery.
type notifyingConsole struct {
	console.Store
	pool *task.Pool
}

func (n notifyingConsole) Record(ctx context.Context, d task.Delivery, t *task.Task) error {
	return recordAndWake(ctx, n.Store, n.pool, d, t)
}

// Handler serves the bot's HTTP endpoints.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /webhook", a.metrics.webhook(a.webhook))
	mux.Handle("GET /metrics", a.metrics.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", a.ready)
	if a.console != nil {
		h := a.console.Handler()
		mux.Handle("/console/", h)
		mux.Handle("/api/", h)
	}
	return mux
}

// ready answers 200 when the store answers and the GitHub App's
// credentials can sign a token (no call to GitHub: its outages must not
// take the bot out of its load balancer), 503 with a short reason
// otherwise; the details are only logged.
func (a *App) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := a.store.Get(ctx, 0); err != nil && !errors.Is(err, task.ErrNotFound) {
		a.log.ErrorContext(ctx, "readiness: store", "err", err)
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	}
	if err := a.github.Ready(); err != nil {
		a.log.ErrorContext(ctx, "readiness: github credentials", "err", err)
		http.Error(w, "github credentials unusable", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// Serve runs the HTTP server on ln and the workers until ctx ends, then
// shuts both down: in-flight requests get a grace period, and a task being
// worked on is released to continue at the next start.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Go(func() {
		// Workers that cannot run (a queue that does not start) must stop
		// the bot, not leave it taking deliveries nobody works on.
		if err := a.pool.Run(ctx); err != nil && ctx.Err() == nil {
			errc <- fmt.Errorf("workers: %w", err)
		}
	})
	wg.Go(func() {
		a.log.Info("listening", "addr", ln.Addr().String())
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("serve http: %w", err)
		}
	})
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdown); serr != nil && err == nil {
		err = fmt.Errorf("shut down http: %w", serr)
	}
	stop()
	wg.Wait()
	return err
}

// RunWorkers runs only the worker pool until ctx ends.
func (a *App) RunWorkers(ctx context.Context) error { return a.pool.Run(ctx) }

// Store is the bot's store, for tests and tools that inspect tasks.
func (a *App) Store() task.Store { return a.store }

// Close releases the store.
func (a *App) Close() error {
	err := a.store.Close()
	for _, c := range a.closers {
		err = errors.Join(err, c())
	}
	return err
}
