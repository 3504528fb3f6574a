package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/localrun"
)

const runUsage = `usage: bot run [flags] "instructions"

Runs the agent on a local checkout, with any OpenAI-compatible endpoint and
no GitHub App. It works in a clone of HEAD; each command the agent wants to
run is asked at the terminal (y, n REASON, or a to approve that exact command
for the rest of the run) and runs in the Docker sandbox; the work ends as a
commit on a new local branch. Your current branch and files are not touched.

Environment: OPENAI_API_KEY (may be empty for Ollama), OPENAI_BASE_URL,
OPENAI_API_TYPE and OPENAI_API_VERSION (Azure OpenAI), BOT_MODEL, BOT_RUNNER,
BOT_SANDBOX_IMAGE, BOT_CONFIG. Example with Ollama:

  OPENAI_BASE_URL=http://localhost:11434/v1 BOT_MODEL=qwen2.5-coder \
    bot run "fix the off-by-one in pagination, keep the public API"

Without a terminal (a script, CI), only the commands named with --yes-to
run, and the list, not you, is named as their approver. When the agent
changes a dependency manifest, a command's setup installs the changed
manifests first: the list approves that only with --yes-to-setup.

Flags may come before or after the instructions; -- ends the flags.

Exit status: 0 when the work is verified (the last run of each command on
the final commit passed), 3 when the agent finished but it is not, 1 when
the run did not start, stopped early or failed.

flags:`

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ", ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// runLocal is "bot run".
func runLocal(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := runOptions(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	o.Stdin, o.Stdout, o.Stderr = stdin, stdout, stderr
	ctx, stop := interrupts(ctx, stderr, o.Runner != localrun.RunnerLocal)
	defer stop()
	res, err := localrun.Run(ctx, o)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	// A script reads whether the work was verified from the status alone:
	// a finished run whose final commit nothing passed on is not a success.
	if why := res.Unverified(); why != "" {
		return &exitError{status: exitNotVerified, err: fmt.Errorf("run: the work is not verified: %s", why)}
	}
	return nil
}

// exitNotVerified is bot run's exit status when the agent finished but
// nothing verifies the work; 1 stays every error's (the run did not
// start, stopped early or failed), and 0 is verified work.
const exitNotVerified = 3

// exitError ends the process with its status instead of 1.
type exitError struct {
	status int
	err    error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitStatus is the process's exit status for err, which is not nil.
func exitStatus(err error) int {
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.status
	}
	return 1
}

// runOptions turns the flags and environment of "bot run" into
// localrun.Options; usage and flag errors go to stderr.
func runOptions(args []string, getenv func(string) string, stderr io.Writer) (localrun.Options, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, runUsage)
		fs.PrintDefaults()
	}
	var o localrun.Options
	// With --runner local, commands find the user's toolchains.
	o.Path = getenv("PATH")
	var yesTo, fenceHosts, fenceNets stringList
	var config string
	fs.StringVar(&o.Repo, "repo", ".", "the checkout to work on (any directory in it)")
	fs.StringVar(&o.Runner, "runner", orDefault(getenv("BOT_RUNNER"), localrun.RunnerDocker),
		"where approved commands run: docker (sandbox) or local (NO isolation, as you) (env BOT_RUNNER)")
	fs.Var(&yesTo, "yes-to", "a command that runs without asking (exact match; repeatable); with input that is not a terminal, every other command is rejected")
	fs.BoolVar(&o.YesToSetup, "yes-to-setup", false, "let the --yes-to list also approve a command whose setup first installs dependency manifests the agent changed (go.mod, a lockfile): "+
		"that setup runs the changed manifests' install with network through the fence, unread (its diff is printed); without it such a command is asked, or rejected with no terminal")
	fs.StringVar(&o.Model, "model", getenv("BOT_MODEL"), "model name (env BOT_MODEL; default: the repository's, else "+localrun.DefaultModel+")")
	fs.StringVar(&o.BaseURL, "base-url", getenv("OPENAI_BASE_URL"), "OpenAI-compatible base URL, e.g. http://localhost:11434/v1 for Ollama (env OPENAI_BASE_URL; default OpenAI's)")
	fs.StringVar(&o.APIType, "api-type", getenv("OPENAI_API_TYPE"), "openai (default), or azure for Azure OpenAI (--base-url is then the resource's endpoint) (env OPENAI_API_TYPE)")
	fs.StringVar(&o.APIVersion, "api-version", getenv("OPENAI_API_VERSION"), "Azure OpenAI's api-version, e.g. 2024-10-21; required with --api-type azure (env OPENAI_API_VERSION)")
	fs.StringVar(&o.CABundle, "ca-bundle", getenv("BOT_SANDBOX_CA_BUNDLE"), "PEM file of the certificates the sandbox trusts, for a network that inspects TLS: the public roots and the network's own (env BOT_SANDBOX_CA_BUNDLE)")
	fs.StringVar(&o.Image, "image", "", "sandbox image for every command, over the repository's sandbox.image (default: BOT_SANDBOX_IMAGE, else by language)")
	fs.StringVar(&o.Branch, "branch", "", "name of the new branch (default pullwright/<instructions>)")
	fs.DurationVar(&o.CallTimeout, "call-timeout", localrun.DefaultCallTimeout, "limit of one model call, retries included")
	fs.BoolVar(&o.Verbose, "v", false, "log more")
	fs.StringVar(&config, "config", getenv("BOT_CONFIG"), "bot serve's operator configuration file, whose prices show what the run cost (env BOT_CONFIG)")
	fs.Var(&fenceHosts, "fence-host", "a host (name[:port], *.name) the repository's setup may reach besides those the image's package managers name (repeatable)")
	fs.Var(&fenceNets, "fence-net", "a private range (CIDR) the setup may reach, for a mirror on a private address (repeatable)")

	// Flags may follow the instructions: parse, take a word, parse on.
	var words []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			words = append(words, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		words, args = append(words, rest[0]), rest[1:]
	}
	o.Instructions = strings.TrimSpace(strings.Join(words, " "))
	if o.Instructions == "" {
		fs.Usage()
		return o, errors.New("run: no instructions given")
	}
	o.YesTo = yesTo
	for _, n := range fenceNets {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return o, fmt.Errorf("run: --fence-net %q: not a range in CIDR form (10.20.0.0/16): %w", n, err)
		}
		o.FenceNets = append(o.FenceNets, p.Masked().String())
	}
	o.FenceHosts = fenceHosts
	if config != "" {
		prices, err := operatorPrices(config)
		if err != nil {
			return o, fmt.Errorf("run: %w", err)
		}
		o.Prices = prices
	}
	o.APIKey = getenv("OPENAI_API_KEY")
	o.DefaultImage = getenv("BOT_SANDBOX_IMAGE")
	o.ProxyEnv = proxyEnv(getenv)
	if err := checkEndpoint(o.APIType, o.APIVersion, o.BaseURL); err != nil {
		return o, fmt.Errorf("run: %w", err)
	}
	if o.APIKey == "" && o.BaseURL == "" {
		return o, errors.New("run: OPENAI_API_KEY is not set: set it to use OpenAI, or point OPENAI_BASE_URL (--base-url) " +
			"at another OpenAI-compatible endpoint, such as Ollama's http://localhost:11434/v1")
	}
	return o, nil
}

// operatorPrices reads the operator file at path, as bot serve would, for
// its prices: the rest of it governs a service, not a local run.
func operatorPrices(path string) (map[string]pullwright.Price, error) {
	op, err := operatorFile(path, "")
	if err != nil {
		return nil, err
	}
	return op.Prices, nil
}

// quitCleanupTimeout bounds the removal of the run's sandboxes when it
// quits at once.
const quitCleanupTimeout = 10 * time.Second

// interrupts cancels ctx at the first Ctrl-C (or SIGTERM, or SIGHUP when
// the terminal goes away), so that the run stops, removes its sandboxes
// and saves its work, and exits at the second, after removing the
// sandboxes at once. (A run killed outright leaves them to the next bot
// run, which removes them.)
func interrupts(ctx context.Context, stderr io.Writer, sandboxes bool) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-sig:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "\nStopping: saving the work so far on the new branch (Ctrl-C again to quit at once).")
		cancel()
		select {
		case <-sig:
			if sandboxes {
				rctx, rcancel := context.WithTimeout(context.Background(), quitCleanupTimeout)
				if _, err := localrun.RemoveSandboxes(rctx); err != nil {
					fmt.Fprintf(stderr, "Quit: some sandbox containers may be left running (the next bot run removes them): %v\n", err)
				}
				rcancel()
			}
			fmt.Fprintln(stderr, "Quit: the temporary workspace may be left in the temporary directory (pullwright-run-*).")
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		<-finished
		cancel()
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
