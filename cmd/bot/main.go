// Command bot is Pullwright: a GitHub App that turns "/agent fix …" comments
// into pull requests. See README.md.
//
//	bot serve        run the webhook server and the workers
//	bot action       run as a GitHub Actions step
//	bot run          work on a local checkout
//	bot check        check a repository's configuration file
//	bot healthcheck  ask a running serve's /healthz
//	bot demo         the console over recorded tasks, on loopback
//	bot version      print the version and what this binary can do
//
// The binary carries nothing made for tests: no fake of GitHub or the
// model, no test server, no helper of tests.
//
// Import rule: none of inert/inerttest, internal/botproc,
// internal/browsertest, internal/difftest, internal/egresstest,
// internal/fakegithub, internal/fakellm, internal/fencetest,
// internal/gitserver, internal/golden, internal/mcptest, internal/otlptest,
// internal/pgtest, internal/prereq, internal/replay, internal/sandboxtest,
// internal/syncbuf, internal/testclock, internal/testimage, task/storetest
// or task/tasktest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/buildcache"
	"github.com/pullwright/pullwright/policy"

	"github.com/pullwright/pullwright/tracing"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bot:", err)
		os.Exit(exitStatus(err))
	}
}

const usage = `usage: bot <command> [flags]

commands:
  serve        run the webhook server and the task workers
  action       run as a GitHub Actions step (see action.yml, docs/action.md)
  run          work on a local checkout, no GitHub App needed ("bot run -h")
  check        check a repository's .github/pullwright.yml as the bot reads it ("bot check -h")
  healthcheck  ask a running serve's /healthz (the image's HEALTHCHECK)
  demo         the console over a few recorded tasks, no GitHub App or model needed
  version      print the version and what this binary can do (also --version)

Configuration comes from environment variables; a flag of the same name in
kebab case overrides one (GITHUB_APP_ID → --github-app-id). Run
"bot serve -h" for the list.`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "version", "--version":
		return printVersion(ctx, stdout)
	case "serve":
		return serve(ctx, args[1:], getenv, stderr)
	case "action":
		return runAction(ctx, getenv, stderr)
	case "healthcheck":
		return healthcheck(ctx, getenv, stdout)
	case "demo":
		return runDemo(ctx, args[1:], stderr)
	case "run":
		return runLocal(ctx, args[1:], getenv, os.Stdin, stdout, stderr)
	case "check":
		return check(args[1:], getenv, stdout, stderr)
	case "fence-forward":
		return fenceForward(ctx, os.Stdin, stdout, stderr)
	case "gocache":
		return buildcache.Main(args[1:], stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// setting is one configuration variable and its flag.
type setting struct {
	env, help, def string
	secret         bool
	value          *string
}

func (s *setting) flagName() string {
	return strings.ReplaceAll(strings.ToLower(s.env), "_", "-")
}

// settings declares every variable of the contract, registers its flag on
// fs, and returns a lookup of the final values (flag over environment over
// default).
func settings(fs *flag.FlagSet, getenv func(string) string) func(env string) string {
	list := []*setting{
		{env: "BOT_ADDR", def: app.DefaultAddr, help: "listen address of serve"},
		{env: "BOT_DATABASE_URL", def: app.DefaultDatabaseURL, help: "sqlite:///path/file.db or postgres://user:password@host/database"},
		{env: "BOT_COMMAND", def: app.DefaultCommand, help: "the comment command word"},
		{env: "GITHUB_APP_ID", help: "GitHub App id"},
		{env: "GITHUB_APP_PRIVATE_KEY", secret: true, help: "GitHub App private key (PEM)"},
		{env: "GITHUB_APP_PRIVATE_KEY_PATH", help: "file holding the GitHub App private key"},
		{env: "GITHUB_WEBHOOK_SECRET", secret: true, help: "webhook HMAC secret (required)"},
		{env: "GITHUB_API_URL", def: app.DefaultAPIURL, help: "REST base URL (GitHub Enterprise: https://HOST/api/v3)"},
		{env: "OPENAI_API_KEY", secret: true, help: "key of the OpenAI-compatible endpoint"},
		{env: "OPENAI_BASE_URL", help: "OpenAI-compatible base URL (default OpenAI's); with OPENAI_API_TYPE=azure, the resource's endpoint https://NAME.openai.azure.com"},
		{env: "OPENAI_API_TYPE", def: "openai", help: "openai (OpenAI and compatible servers) or azure (Azure OpenAI: api-key header, deployments)"},
		{env: "OPENAI_API_VERSION", help: "Azure OpenAI's api-version, e.g. 2024-10-21 (required with OPENAI_API_TYPE=azure)"},
		{env: "BOT_MODEL", def: app.DefaultModel, help: "model name"},
		{env: "BOT_RUNNER", def: app.DefaultRunner, help: "docker or local (no isolation)"},
		{env: "BOT_SANDBOX_IMAGE", help: "sandbox image when the repository names none"},
		{env: "BOT_SANDBOX_CA_BUNDLE", help: "PEM file of the certificates every sandbox trusts (SSL_CERT_FILE and the like), for a network that inspects TLS: the public roots and the network's own"},
		{env: "BOT_WORKDIR", help: "directory for task workspaces (default $TMPDIR/pullwright)"},
		{env: "BOT_WORKERS", def: "4", help: "tasks worked on at once"},
		{env: "BOT_LEASE", def: "1m", help: "how long a worker's claim on a task lasts unrenewed: a task whose bot died is taken up again after it"},
		{env: "BOT_APPROVAL_TIMEOUT", def: "24h", help: "how long an execution request waits for /approve or /reject before it counts as rejected"},
		{env: "BOT_LOG_FORMAT", def: "json", help: "json or text"},
		{env: "BOT_PUBLIC_URL", help: "address people reach the console at, e.g. https://bot.example.com (console; see docs/console.md)"},
		{env: "GITHUB_CLIENT_ID", help: "the GitHub App's client id, for the console's sign-in"},
		{env: "GITHUB_CLIENT_SECRET", secret: true, help: "the GitHub App's client secret, for the console's sign-in"},
		{env: "BOT_TRACE_URL", help: "address of a trace in your tracing UI, {trace_id} standing for the id, e.g. https://grafana.example.com/explore?traceId={trace_id}: the console links each task's trace (traces need OTEL_EXPORTER_OTLP_ENDPOINT; docs/deploy.md#traces)"},
		{env: "BOT_SESSION_KEY", secret: true, help: "at least 32 random bytes sealing the console's cookies"},
		{env: "BOT_APP_DIR", help: "directory of the GitHub App's credentials: with no GITHUB_APP_ID, serve reads them there, or on the first run serves a setup page that creates the app from app-manifest.json and saves them there (docs/deploy.md); unset, the user's configuration directory's pullwright/app (~/.config/pullwright/app), or the systemd unit's state directory's app, and none in a container"},
		{env: "BOT_CONFIG", help: "operator configuration file (YAML): caps, defaults, allowed models, prices, rates, served installations; see docs/configuration.md"},
	}
	byEnv := map[string]*setting{}
	for _, s := range list {
		v := getenv(s.env)
		if v == "" {
			v = s.def
		}
		s.value = new(string)
		help := s.help + " (env " + s.env + ")"
		if s.secret {
			help += "; prefer the environment: flags show up in process lists"
			fs.StringVar(s.value, s.flagName(), v, help)
			// A secret's value must not be printed as a flag default.
			fs.Lookup(s.flagName()).DefValue = ""
		} else {
			fs.StringVar(s.value, s.flagName(), v, help)
		}
		byEnv[s.env] = s
	}
	// "serve --config FILE" is how operators will write it.
	fs.StringVar(byEnv["BOT_CONFIG"].value, "config", *byEnv["BOT_CONFIG"].value, "same as --bot-config")
	return func(env string) string { return *byEnv[env].value }
}

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	get := settings(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := logger(get("BOT_LOG_FORMAT"), stderr)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	get, err := withAppDir(ctx, get, thisHost(getenv), log)
	if err != nil && ctx.Err() != nil {
		// Stopped during the setup, as serve stops: not a failure.
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := config(get)
	if err != nil {
		return err
	}
	cfg.Logger = log
	cfg.ProxyEnv = proxyEnv(getenv)
	tp, stopTracing, err := tracing.New(ctx, getenv, buildVersion(), log)
	if err != nil {
		return err
	}
	// Flushed after the workers stopped, whatever the signal did to ctx.
	defer stopTracing(context.WithoutCancel(ctx))
	cfg.Tracer = tp
	a, err := app.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	return a.Serve(ctx, ln)
}

func logger(format string, w io.Writer) *slog.Logger {
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, nil))
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}

// config turns settings into app.Config, checking what can be checked
// before anything starts.
func config(get func(string) string) (app.Config, error) {
	cfg := app.Config{
		Getenv:           get,
		Addr:             get("BOT_ADDR"),
		DatabaseURL:      get("BOT_DATABASE_URL"),
		Command:          get("BOT_COMMAND"),
		WebhookSecret:    get("GITHUB_WEBHOOK_SECRET"),
		APIURL:           strings.TrimRight(get("GITHUB_API_URL"), "/"),
		OpenAIKey:        get("OPENAI_API_KEY"),
		OpenAIBaseURL:    get("OPENAI_BASE_URL"),
		Model:            get("BOT_MODEL"),
		OpenAIAPIType:    get("OPENAI_API_TYPE"),
		OpenAIAPIVersion: get("OPENAI_API_VERSION"),
		Runner:           get("BOT_RUNNER"),
		SandboxImage:     get("BOT_SANDBOX_IMAGE"),
		SandboxCABundle:  get("BOT_SANDBOX_CA_BUNDLE"),
		WorkDir:          get("BOT_WORKDIR"),
		PublicURL:        strings.TrimRight(get("BOT_PUBLIC_URL"), "/"),
		TraceURL:         get("BOT_TRACE_URL"),
		ClientID:         get("GITHUB_CLIENT_ID"),
		ClientSecret:     get("GITHUB_CLIENT_SECRET"),
		SessionKey:       []byte(get("BOT_SESSION_KEY")),
	}
	if err := checkEndpoint(cfg.OpenAIAPIType, cfg.OpenAIAPIVersion, cfg.OpenAIBaseURL); err != nil {
		return cfg, err
	}
	if cfg.WebhookSecret == "" {
		return cfg, errors.New("GITHUB_WEBHOOK_SECRET is not set: serve refuses to accept unsigned deliveries")
	}
	id, err := strconv.ParseInt(get("GITHUB_APP_ID"), 10, 64)
	if err != nil || id <= 0 {
		return cfg, fmt.Errorf("GITHUB_APP_ID=%q: want the app's numeric id", get("GITHUB_APP_ID"))
	}
	cfg.AppID = id
	switch key, path := get("GITHUB_APP_PRIVATE_KEY"), get("GITHUB_APP_PRIVATE_KEY_PATH"); {
	case key != "":
		cfg.PrivateKey = []byte(key)
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("read GITHUB_APP_PRIVATE_KEY_PATH: %w", err)
		}
		cfg.PrivateKey = b
	default:
		return cfg, errors.New("set GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_PATH")
	}
	if d, err := time.ParseDuration(get("BOT_APPROVAL_TIMEOUT")); err != nil || d <= 0 {
		return cfg, fmt.Errorf("BOT_APPROVAL_TIMEOUT=%q: want a duration such as 24h or 90m", get("BOT_APPROVAL_TIMEOUT"))
	} else {
		cfg.ApprovalTimeout = d
	}
	if d, err := time.ParseDuration(get("BOT_LEASE")); err != nil || d < 3*time.Second {
		return cfg, fmt.Errorf("BOT_LEASE=%q: want a duration of at least 3s, such as 1m", get("BOT_LEASE"))
	} else {
		cfg.Lease = d
	}
	if path := get("BOT_CONFIG"); path != "" {
		op, err := operatorFile(path, cfg.Model)
		if err != nil {
			return cfg, err
		}
		cfg.Operator = op
	}
	if n, err := strconv.Atoi(get("BOT_WORKERS")); err != nil || n < 1 {
		return cfg, fmt.Errorf("BOT_WORKERS=%q: want a positive number", get("BOT_WORKERS"))
	} else {
		cfg.Workers = n
	}
	return cfg, nil
}

// operatorFile reads the operator file at path as bot serve does: with
// model (BOT_MODEL) as the default model unless the file names one, or
// model is "".
func operatorFile(path, model string) (*policy.Operator, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the operator configuration: %w", err)
	}
	op, err := policy.LoadOperator(b)
	var list *policy.Errors
	if errors.As(err, &list) {
		list.File = path // so that each line reads "FILE:LINE: key: problem"
	}
	if err != nil {
		return nil, fmt.Errorf("operator configuration %s:\n%w", path, err)
	}
	if model != "" && op.Models.Default == policy.DefaultOperator().Models.Default {
		op.Models.Default = model
	}
	return op, nil
}

// proxyEnv is the bot's own proxy environment as net/http reads it (the
// lower-case spelling first), read once here: the parent proxy setups go
// out through when the operator's file names none.
func proxyEnv(getenv func(string) string) httpproxy.Config {
	either := func(names ...string) string {
		for _, n := range names {
			if v := getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	return httpproxy.Config{
		HTTPProxy:  either("http_proxy", "HTTP_PROXY"),
		HTTPSProxy: either("https_proxy", "HTTPS_PROXY"),
		NoProxy:    either("no_proxy", "NO_PROXY"),
	}
}

// checkEndpoint checks the model endpoint's settings before anything
// starts, naming the variables to set.
func checkEndpoint(apiType, version, baseURL string) error {
	t, err := agent.ParseAPIType(apiType)
	if err != nil {
		return fmt.Errorf("OPENAI_API_TYPE: %w", err)
	}
	if t != agent.APITypeAzure {
		return nil
	}
	if version == "" {
		return errors.New("OPENAI_API_VERSION is not set: Azure OpenAI (OPENAI_API_TYPE=azure) needs its api-version, for instance 2024-10-21")
	}
	if baseURL == "" {
		return errors.New("OPENAI_BASE_URL is not set: with OPENAI_API_TYPE=azure it is the resource's endpoint, https://NAME.openai.azure.com")
	}
	return nil
}
