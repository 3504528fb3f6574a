package localrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/runner"
	box "github.com/pullwright/pullwright/sandbox"
	"github.com/pullwright/pullwright/setup"
)

// pingTimeout bounds the check that the Docker engine answers.
const pingTimeout = 10 * time.Second

// sandbox is the runner of a run and what to say about it.
// whereLocal is where the local runner runs a command.
const whereLocal = "UNSANDBOXED on this machine"

type sandbox struct {
	r     runner.Runner
	where string // "in the Docker sandbox", "UNSANDBOXED on this machine"
	// setup fetches the repository's dependencies before a command; nil
	// with the local runner, or without a forwarder (noSetup says why).
	setup   *setup.Setup
	noSetup string
	// hasImage asks the engine whether it holds an image; nil with the
	// local runner.
	hasImage func(ctx context.Context, image string) (bool, error)
	close    func()
}

// localWarning is printed when commands run without isolation.
const localWarning = `
WARNING: --runner local: approved commands run UNSANDBOXED on this machine, as you,
with your files, your network and your credentials. Approve only commands you
would type yourself. Use the Docker sandbox (the default) when you can.

`

// newSandbox builds the runner o.Runner names. Docker must answer: bot run
// never falls back to running commands without isolation.
func newSandbox(ctx context.Context, o Options, log *slog.Logger) (*sandbox, error) {
	local := o.Runner == RunnerLocal
	if local {
		fmt.Fprint(o.Stderr, localWarning)
	}
	self := thisProcess()
	// bot run has no operator file: the caches' limits are the default
	// operator's, and the parent proxy, if any, is the environment's.
	b, err := box.New(box.Config{
		// The warning is the one above, in words for a terminal.
		Local: local, QuietLocal: true, Path: o.Path, TempDir: o.TempDir,
		ProxyEnv: o.ProxyEnv, Resolver: o.Resolver,
		Image: o.DefaultImage, Owner: sandboxOwner,
		// Whatever this run leaves, if it is killed, the next one
		// removes (process.go).
		Labels: self.labels(),
		// The image is checked before the agent starts (checkImage); one
		// gone since is a run that could not start, not a download in
		// the middle of the work.
		NoPull:    true,
		Forwarder: o.Forwarder,
		CABundle:  o.CABundle,
		Logger:    log,
	})
	if err != nil {
		return nil, fmt.Errorf("docker sandbox: %w; to run commands unsandboxed instead, use --runner local", err)
	}
	if local {
		return &sandbox{r: b.Runner, where: whereLocal, close: func() {}}, nil
	}
	d := b.Docker
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := d.Ping(pctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("the Docker engine does not answer (%v): start it (docker info should work), "+
			"or run the approved commands unsandboxed on this machine with --runner local", err)
	}
	if n, err := removeLeftBehind(ctx, d, self); err != nil {
		log.Warn("bot run: " + err.Error())
	} else if n > 0 {
		fmt.Fprintf(o.Stderr, "Removed %d sandbox %s that a bot run which was killed left running.\n", n, words.Plural(n, "container", "containers"))
	}
	// The same engine as the runner's: both clients come from the
	// environment (DOCKER_HOST …).
	cli, err := client.New(client.FromEnv)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("docker sandbox: %w; to run commands unsandboxed instead, use --runner local", err)
	}
	sb := &sandbox{r: d, where: "in the Docker sandbox", setup: b.Setup, close: func() { d.Close(); cli.Close() },
		hasImage: func(ctx context.Context, image string) (bool, error) {
			_, err := cli.ImageInspect(ctx, image)
			if cerrdefs.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		}}
	var pe *box.ParentError
	switch {
	case b.NoSetup == nil:
	case errors.As(b.NoSetup, &pe):
		sb.noSetup = fmt.Sprintf("the repository's setup (fetching dependencies) will not run: its fence would go out through "+
			"your HTTPS_PROXY or HTTP_PROXY, and %v", pe.Err)
	default:
		sb.noSetup = fmt.Sprintf("the repository's setup (fetching dependencies) will not run: %v", b.NoSetup)
	}
	return sb, nil
}

// Test images of a Pullwright source checkout, built with no registry:
// what the error of a missing image offers besides a pull.
const (
	goImageScript     = "scripts/sandbox-image.sh"
	goImageTag        = "pullwright/sandbox-go:test"
	debianImageScript = "scripts/sandbox-image-debian.sh"
)

// checkImage makes sure the engine holds image before the agent starts:
// without it every approved command would fail, and the work would end
// with nothing verified. why says who chose the image, for the error.
func (sb *sandbox) checkImage(ctx context.Context, image, why string) error {
	if sb.hasImage == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ok, err := sb.hasImage(ctx, image)
	if err != nil {
		return fmt.Errorf("ask the Docker engine for the sandbox image %s: %w", image, err)
	}
	if ok {
		return nil
	}
	return fmt.Errorf("the sandbox image %s (%s) is not in the Docker engine, and bot run does not pull images. "+
		"Get it, then run again:\n"+
		"  docker pull %s\n"+
		"or, without a registry, build one in a Pullwright source checkout and name it with --image:\n"+
		"  %s   (busybox and this machine's Go toolchain: --image %s)\n"+
		"  %s   (Debian with Node and Python, as root)\n"+
		"or run the commands unsandboxed on this machine with --runner local",
		image, why, image, goImageScript, goImageTag, debianImageScript)
}
