// Package sandbox builds the sandbox approved commands run in, once for
// every surface: serve and the Action (through app) and bot run
// (localrun). From the operator's configuration and the few settings a
// surface has of its own, it makes the runner (Docker, or Local with no
// isolation) and, with Docker, the setup that fetches a repository's
// dependencies through the fence: the forwarder fenced runs carry, the
// fence's parent proxy, the caches' limits, the addresses the fence
// refuses.
//
// It decides nothing about a command, and it does not contact the
// Docker engine: whether the engine answers, what to do when it does
// not, and which sandboxes left by an earlier run to remove are each
// surface's.
//
// Import rule: none of task, app or localrun.
package sandbox

import (
	"fmt"
	"log/slog"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/setup"
)

// Config is what a surface says about its sandbox. Everything the
// operator decides comes from Operator.
type Config struct {
	// Local runs commands without isolation (runner.Local): BOT_RUNNER=local,
	// bot run --runner local. Otherwise they run in Docker.
	Local bool
	// QuietLocal leaves warning about the local runner (and a CA bundle
	// it cannot use) to the surface, in its own words: bot run says it
	// at the terminal. Otherwise New logs it.
	QuietLocal bool
	// Path is the PATH of a local command ("": runner.DefaultPath).
	Path string
	// TempDir holds the runs' directories (runner.Local.TempDir,
	// runner.DockerConfig.TempDir).
	TempDir string

	// Operator is the operator's configuration: the largest workspace a
	// run gets (caps.disk), the dependency caches' limits and the fence's
	// parent proxy. nil is policy.DefaultOperator(), as for bot run,
	// which has no operator file.
	Operator *policy.Operator
	// ProxyEnv is the bot's own HTTPS_PROXY, HTTP_PROXY and NO_PROXY:
	// the parent proxy setups go out through when Operator names none.
	ProxyEnv httpproxy.Config
	// StrictParent makes a parent proxy the fence cannot use an error of
	// New (serve: the operator's configuration is wrong, and the bot does
	// not start). Otherwise Setup is nil and NoSetup says why.
	StrictParent bool
	// Resolver resolves the hosts setups ask for (nil: the system's).
	Resolver fence.Resolver

	// Image is the image of every run whose spec names none
	// (runner.DockerConfig.Image); "" chooses by language.
	Image string
	// Owner and Labels mark what the Docker runner makes
	// (runner.DockerConfig.Owner, Labels).
	Owner  string
	Labels map[string]string
	// NoPull makes a missing image a run that could not start instead
	// of a pull (runner.DockerConfig.NoPull).
	NoPull bool
	// Forwarder is the Linux build of the bot that fenced setups run to
	// reach the fence; "" is this process's own executable
	// (setup.Forwarder). Without one, setups do not run.
	Forwarder string
	// CABundle is a PEM file of certificates every Docker sandbox trusts
	// (runner.DockerConfig.CABundle); a file that is no bundle fails New.
	CABundle string

	// Logger is the surface's; the runner's and the setup's are made
	// from it, with their component.
	Logger *slog.Logger
}

// Sandbox is what runs approved commands, and with Docker what sets up a
// repository's dependencies before them.
type Sandbox struct {
	// Runner is Docker, or Local.
	Runner runner.Runner
	// Docker is the Docker runner; nil with Local.
	Docker *runner.Docker
	// Setup runs repositories' setups; nil with Local, or when setups
	// cannot run, NoSetup then saying why: no forwarder (setup.Forwarder's
	// error), or a parent proxy the fence cannot use (*ParentError).
	Setup   *setup.Setup
	NoSetup error
}

// ParentError is a parent proxy the fence cannot speak to, with where it
// came from.
type ParentError struct {
	// From names where the parent came from (policy.Fence.ParentProxyConfig).
	From string
	Err  error
}

func (e *ParentError) Error() string {
	return fmt.Sprintf("the parent proxy of setups' fence, from %s: %v; set fence.parent_proxy to one it can use, or to %q for none",
		e.From, e.Err, policy.NoParentProxy)
}

func (e *ParentError) Unwrap() error { return e.Err }

// New builds the sandbox cfg describes. It contacts no Docker engine.
func New(cfg Config) (*Sandbox, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	rlog := log.With("component", "runner")
	if cfg.Local {
		l := &runner.Local{TempDir: cfg.TempDir, Path: cfg.Path, Logger: rlog}
		if !cfg.QuietLocal {
			if cfg.CABundle != "" {
				rlog.Warn("the sandboxes' CA bundle is for Docker sandboxes; the local runner's commands trust what this machine trusts", "bundle", cfg.CABundle)
			}
			l = runner.NewLocal(cfg.TempDir, rlog)
			l.Path = cfg.Path
		}
		return &Sandbox{Runner: l}, nil
	}
	op := cfg.Operator
	if op == nil {
		op = policy.DefaultOperator()
	}
	fwd, fwdErr := setup.Forwarder(cfg.Forwarder)
	parent, parentErr := Parent(op.Fence, cfg.ProxyEnv, rlog)
	if parentErr != nil && cfg.StrictParent {
		return nil, parentErr
	}
	d, err := runner.NewDocker(runner.DockerConfig{
		Image:   cfg.Image,
		NoPull:  cfg.NoPull,
		TempDir: cfg.TempDir,
		Owner:   cfg.Owner,
		Labels:  cfg.Labels,
		// A repository's sandbox.disk is within caps.disk: the volume is
		// made as large as the cap allows, never larger.
		WorkspaceSize: op.DiskCap(),
		Forwarder:     fwd,
		CABundle:      cfg.CABundle,
		Logger:        rlog,
	})
	if err != nil {
		return nil, err
	}
	sb := &Sandbox{Runner: d, Docker: d}
	switch {
	case fwdErr != nil:
		sb.NoSetup = fwdErr
	case parentErr != nil:
		sb.NoSetup = parentErr
	default:
		keep, repoBytes, hostBytes := op.CacheLimits()
		sb.Setup = &setup.Setup{
			Runner:   d,
			Resolver: cfg.Resolver,
			Logger:   log.With("component", "setup"),
			Limits:   setup.Limits{Keep: keep, RepoBytes: repoBytes, HostBytes: hostBytes},
			Denied:   setup.OwnAddresses(),
			Parent:   parent,
		}
	}
	return sb, nil
}

// Close releases the Docker runner, if there is one.
func (s *Sandbox) Close() error {
	if s.Docker == nil {
		return nil
	}
	return s.Docker.Close()
}

// Parent is the network's own proxy that setups go out through
// (fence.Parent): the operator's fence.parent_proxy, or env, the bot's
// proxy environment, when the file names none; nil for none. One the
// fence cannot speak to is a *ParentError. The parent it takes is
// logged, without its password.
func Parent(f policy.Fence, env httpproxy.Config, log *slog.Logger) (*fence.Parent, error) {
	c, from := f.ParentProxyConfig(env)
	parent, err := fence.NewParent(c)
	if err != nil {
		return nil, &ParentError{From: from, Err: err}
	}
	if parent != nil {
		log.Info("setups go out through a parent proxy", "parent", parent.String(), "from", from)
	}
	return parent, nil
}
