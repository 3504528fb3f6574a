package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Labels every container of the Docker runner carries. Spec.Labels are added
// as they are (the task package sets "pullwright.task" and
// "pullwright.request").
const (
	LabelManaged = "pullwright.managed" // "true"
	LabelOwner   = "pullwright.owner"   // DockerConfig.Owner, if set
)

// Defaults of DockerConfig's zero values.
const (
	DefaultNetworkMode = "none"
	DefaultMemory      = 2 << 30 // 2 GiB, and as much memory+swap: no swap
	DefaultNanoCPUs    = 2e9     // 2 CPUs
	DefaultPidsLimit   = 512
	DefaultTmpfsSize   = 1 << 30 // 1 GiB; tmpfs pages count against Memory
	DefaultSandboxUser = "65534:65534"
	// SandboxWorkdir is where the copy of the workspace is mounted, and the
	// command's working directory.
	SandboxWorkdir = "/workspace"
)

// cleanupTimeout bounds the clean-up calls (kill, inspect, remove) that run
// on a fresh context after the run's context is done.
const cleanupTimeout = 30 * time.Second

// DockerConfig is what the operator sets for the Docker runner. Every zero
// value means the default named on the field. Per-repository settings are
// meant to lower these, never to raise them.
type DockerConfig struct {
	// Image, if not empty, is the image for every run whose Spec names
	// none (BOT_SANDBOX_IMAGE). Otherwise ImageFor detects the language.
	Image string
	// FallbackImage is used when nothing names an image and no language is
	// detected; "" means DefaultImage.
	FallbackImage string
	// NoPull makes a missing image a failed Result instead of a pull.
	NoPull bool

	// NetworkMode: "none" (default). Anything else gives the command a
	// network; only for operators who know why. A Spec's Network replaces
	// it for one run.
	NetworkMode string
	// Memory is the memory limit in bytes, default 2 GiB. Swap is always
	// off: MemorySwap is set equal to Memory. A Spec's Memory replaces it
	// for one run.
	Memory int64
	// NanoCPUs is the CPU quota in billionths of a CPU, default 2 CPUs. It
	// is lowered to the Docker host's CPU count if that is smaller. A
	// Spec's NanoCPUs replaces it for one run (and is lowered the same way).
	NanoCPUs int64
	// PidsLimit bounds processes and threads in the container, default 512.
	PidsLimit int64
	// TmpfsSize is the size of the writable /tmp in bytes, default 1 GiB.
	// What is written there counts against Memory.
	TmpfsSize int64
	// User runs the command, as "uid:gid" (numeric, so no /etc/passwd
	// lookup is needed). Default: 65534:65534 (nobody) when the bot runs as
	// root, which then chowns the workspace copy to it; otherwise the bot's
	// own uid:gid, which already owns the copy and can remove whatever the
	// command creates. Never root.
	User string
	// Runtime is the OCI runtime, e.g. "runsc" for gVisor; "" is Docker's
	// default (runc).
	Runtime string

	// Timeout applies to Specs without one; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxOutput applies to Specs without one; zero means DefaultMaxOutput.
	MaxOutput int

	// Owner, if not empty, is put on every container as the label
	// pullwright.owner, and CleanupOrphans then removes only containers
	// with the same owner: set it when several bots share one Docker host.
	Owner string
	// TempDir is where workspace copies are made (and, if set, where
	// CleanupOrphans removes copies left by a crash). The Docker daemon
	// must see the same path: with a remote DOCKER_HOST it has to be a
	// directory shared with that host. "" means os.TempDir().
	TempDir string
	Logger  *slog.Logger
}

// Docker runs each approved command in a fresh container, locked down by
// default:
//
//   - the image: Spec.Image, else DockerConfig.Image, else by the
//     workspace's language (ImageFor); pulled if missing;
//   - a copy of Spec.Dir, owned by the sandbox user, bind-mounted read-write
//     at /workspace, the working directory; removed after the run, so the
//     agent's workspace never changes;
//   - no network; 2 GiB of memory and no swap; 2 CPUs; 512 pids; a
//     read-only root file system with a 1 GiB tmpfs at /tmp (exec allowed,
//     so `go test` can run its binaries); all capabilities dropped;
//     no-new-privileges; a non-root user; no Docker logs kept (output is
//     streamed and bounded, so a command cannot fill the host's disk);
//   - environment: only HOME=/tmp, TMPDIR=/tmp, GOCACHE=/tmp/gocache,
//     GOPATH=/tmp/go, CI=true and LANG=C.UTF-8 on top of the image's own
//     (e.g. its PATH); nothing of the bot's;
//   - /bin/sh -c Spec.Command as the entry point (the image's is ignored).
//
// Spec.Network, Spec.Memory and Spec.NanoCPUs, when set, replace the
// network mode, memory limit and CPU quota of DockerConfig for one run. The
// caller has already checked them against the operator's caps; Run still
// refuses a Network other than "", "none" or "bridge" (never host or
// container:<id>), and lowers NanoCPUs to the host's CPUs. Swap stays off
// (memory+swap = memory) and /tmp's tmpfs still counts against the memory
// limit, whichever limit applies.
//
// A timeout, an OOM kill or an image that cannot be pulled is a normal
// Result. Every container is removed when Run returns, also on timeout and
// on ctx being done; CleanupOrphans removes those a crashed bot left.
//
// A Docker is safe for concurrent use. Its Docker client comes from the
// environment (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH,
// DOCKER_API_VERSION) unless options are given to NewDocker.
type Docker struct {
	cli *client.Client
	cfg DockerConfig
	log *slog.Logger

	hostMu      sync.Mutex
	hostChecked bool
	hostErr     error
	hostCPUs    int64 // the host's CPUs in billionths, 0 if the daemon did not say

	warned sync.Map // create warnings already logged

	// onStarted, if set, is called when the container has been started;
	// benchmarks use it to measure the time to start.
	onStarted func()
}

var _ Runner = (*Docker)(nil)

// NewDocker returns a Docker runner using a client made from opts, or from
// the environment if there are none. It does not contact the daemon; Ping
// and CleanupOrphans do.
func NewDocker(cfg DockerConfig, opts ...client.Opt) (*Docker, error) {
	if len(opts) == 0 {
		opts = []client.Opt{client.FromEnv}
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return newDocker(cli, cfg)
}

func newDocker(cli *client.Client, cfg DockerConfig) (*Docker, error) {
	if cfg.NetworkMode == "" {
		cfg.NetworkMode = DefaultNetworkMode
	}
	if cfg.Memory <= 0 {
		cfg.Memory = DefaultMemory
	}
	if cfg.NanoCPUs <= 0 {
		cfg.NanoCPUs = DefaultNanoCPUs
	}
	if cfg.PidsLimit <= 0 {
		cfg.PidsLimit = DefaultPidsLimit
	}
	if cfg.TmpfsSize <= 0 {
		cfg.TmpfsSize = DefaultTmpfsSize
	}
	if cfg.User == "" {
		if os.Geteuid() == 0 {
			cfg.User = DefaultSandboxUser
		} else {
			cfg.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
		}
	}
	uid, _, err := parseUser(cfg.User)
	if err != nil {
		return nil, err
	}
	if uid == 0 {
		return nil, errors.New("docker runner: the sandbox user must not be root (uid 0)")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Docker{cli: cli, cfg: cfg, log: log}, nil
}

// parseUser parses "uid:gid".
func parseUser(u string) (uid, gid int, err error) {
	us, gs, ok := strings.Cut(u, ":")
	if ok {
		uid, err = strconv.Atoi(us)
		if err == nil {
			gid, err = strconv.Atoi(gs)
		}
	}
	if !ok || err != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("docker runner: user %q is not numeric uid:gid", u)
	}
	return uid, gid, nil
}

// Config returns the configuration with its defaults filled in.
func (d *Docker) Config() DockerConfig { return d.cfg }

// Close closes the Docker client.
func (d *Docker) Close() error { return d.cli.Close() }

// Ping checks that the Docker daemon answers.
func (d *Docker) Ping(ctx context.Context) error {
	if _, err := d.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// checkHost asks the daemon, once, whether it can enforce the limits, and
// returns the host's CPU count in billionths of a CPU (0 if unknown), the
// most a CPU quota may be. A daemon that cannot limit memory or pids is
// refused: the sandbox would be weaker than configured.
func (d *Docker) checkHost(ctx context.Context) (int64, error) {
	d.hostMu.Lock()
	defer d.hostMu.Unlock()
	if d.hostChecked {
		return d.hostCPUs, d.hostErr
	}
	info, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return 0, fmt.Errorf("docker info: %w", err) // asked again next time
	}
	d.hostChecked = true
	switch {
	case !info.Info.MemoryLimit:
		d.hostErr = errors.New("docker: the daemon cannot enforce memory limits; refusing to run sandboxes")
	case !info.Info.PidsLimit:
		d.hostErr = errors.New("docker: the daemon cannot enforce pids limits; refusing to run sandboxes")
	}
	if !info.Info.SwapLimit {
		d.log.Warn("runner: the Docker host cannot limit swap; the memory limit holds only if the host has no swap")
	}
	d.hostCPUs = max(int64(info.Info.NCPU)*1e9, 0)
	if d.hostCPUs > 0 && d.cfg.NanoCPUs > d.hostCPUs {
		d.log.Warn("runner: CPU limit lowered to the Docker host's CPU count", "cpus", info.Info.NCPU)
	}
	return d.hostCPUs, d.hostErr
}

// limits are the network, memory and CPU quota of one run.
type limits struct {
	network  string
	memory   int64
	nanoCPUs int64
}

// limitsFor applies s's limits over the configuration's, and lowers the CPU
// quota to hostCPUs (if known): Docker refuses a quota above the host's CPUs.
// s has passed checkLimits.
func (d *Docker) limitsFor(s Spec, hostCPUs int64) limits {
	l := limits{network: d.cfg.NetworkMode, memory: d.cfg.Memory, nanoCPUs: d.cfg.NanoCPUs}
	if s.Network != "" {
		l.network = s.Network
	}
	if s.Memory > 0 {
		l.memory = s.Memory
	}
	if s.NanoCPUs > 0 {
		l.nanoCPUs = s.NanoCPUs
	}
	if hostCPUs > 0 && l.nanoCPUs > hostCPUs {
		l.nanoCPUs = hostCPUs
	}
	return l
}

// Run copies s.Dir, runs s.Command in a new container on the copy, and
// removes both, whatever happened. See Docker.
func (d *Docker) Run(ctx context.Context, s Spec) (Result, error) {
	if s.Timeout <= 0 {
		s.Timeout = d.cfg.Timeout
	}
	if s.MaxOutput <= 0 {
		s.MaxOutput = d.cfg.MaxOutput
	}
	s = s.withDefaults()
	res := Result{ExitCode: -1}
	if s.Dir == "" {
		return res, errors.New("run: no workspace directory")
	}
	if s.Command == "" {
		return res, errors.New("run: empty command")
	}
	if err := s.checkLimits(); err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("run: %w", err)
	}
	image := ImageFor(s.Dir, firstNonEmpty(s.Image, d.cfg.Image), d.cfg.FallbackImage)
	log := d.log.With(labelAttrs(s.Labels)...).With("image", image)

	hostCPUs, err := d.checkHost(ctx)
	if err != nil {
		return res, err
	}
	lim := d.limitsFor(s, hostCPUs)
	if err := d.ensureImage(ctx, log, image); err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("run: %w", ctx.Err())
		}
		log.Error("runner: image not available", "err", err)
		res.Output = fmt.Sprintf("not run: image %s is not available and could not be pulled: %v\n", image, err)
		return res, nil
	}

	_, work, remove, err := copyWorkspace(ctx, log, d.cfg.TempDir, "pullwright-docker-", s.Dir)
	if err != nil {
		return res, err
	}
	defer remove()
	if err := d.handOver(work); err != nil {
		return res, fmt.Errorf("prepare workspace copy: %w", err)
	}
	abs, err := filepath.Abs(work)
	if err != nil {
		return res, err
	}
	return d.run(ctx, log, s, lim, d.containerConfig(s, image, abs, lim))
}

// firstNonEmpty returns a, or b if a is empty.
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// handOver makes the workspace copy writable by the sandbox user: chown when
// the bot can, else (the sandbox user is not the bot's) world-writable.
func (d *Docker) handOver(dir string) error {
	uid, gid, _ := parseUser(d.cfg.User)
	if os.Geteuid() == 0 {
		return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		})
	}
	if uid == os.Getuid() {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil || info.Mode()&fs.ModeSymlink != 0 {
			return err
		}
		mode := info.Mode().Perm() | 0o666
		if info.IsDir() || info.Mode()&0o111 != 0 {
			mode |= 0o111
		}
		return os.Chmod(p, mode|info.Mode()&(fs.ModeSetgid|fs.ModeSticky))
	})
}

// ensureImage pulls image unless the daemon has it, logging progress.
func (d *Docker) ensureImage(ctx context.Context, log *slog.Logger, image string) error {
	_, err := d.cli.ImageInspect(ctx, image)
	if err == nil {
		return nil
	}
	if !cerrdefs.IsNotFound(err) {
		return err
	}
	if d.cfg.NoPull {
		return errors.New("it is not on the Docker host and pulling is disabled")
	}
	log.Info("runner: pulling image")
	start := time.Now()
	resp, err := d.cli.ImagePull(ctx, image, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer resp.Close()
	lastLog := time.Time{}
	for msg, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return err
		}
		if msg.Error != nil {
			return errors.New(msg.Error.Message)
		}
		// Per-layer progress lines come many times a second: log the
		// others, and progress at most every 5 seconds.
		if msg.Progress != nil && msg.Progress.Total > 0 {
			if time.Since(lastLog) < 5*time.Second {
				continue
			}
			lastLog = time.Now()
			log.Info("runner: pulling image", "layer", msg.ID, "status", msg.Status,
				"current", msg.Progress.Current, "total", msg.Progress.Total)
			continue
		}
		log.Info("runner: pulling image", "layer", msg.ID, "status", msg.Status)
	}
	log.Info("runner: pulled image", "duration", time.Since(start))
	return nil
}

// containerConfig is what a run's container is created with.
func (d *Docker) containerConfig(s Spec, image, work string, lim limits) client.ContainerCreateOptions {
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManaged] = "true"
	if d.cfg.Owner != "" {
		labels[LabelOwner] = d.cfg.Owner
	}
	pids := d.cfg.PidsLimit
	return client.ContainerCreateOptions{
		Name: "pullwright-run-" + randomHex(6),
		Config: &container.Config{
			Image:      image,
			User:       d.cfg.User,
			Hostname:   "sandbox",
			Entrypoint: []string{"/bin/sh", "-c"},
			Cmd:        []string{s.Command},
			WorkingDir: SandboxWorkdir,
			Env: []string{
				"HOME=/tmp", "TMPDIR=/tmp", "GOCACHE=/tmp/gocache", "GOPATH=/tmp/go",
				"CI=true", "LANG=C.UTF-8",
			},
			AttachStdout:    true,
			AttachStderr:    true,
			Labels:          labels,
			NetworkDisabled: lim.network == NetworkNone,
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    container.NetworkMode(lim.network),
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			Runtime:        d.cfg.Runtime,
			LogConfig:      container.LogConfig{Type: "none"},
			Tmpfs: map[string]string{
				"/tmp": fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777", d.cfg.TmpfsSize),
			},
			Mounts: []mount.Mount{{
				Type: mount.TypeBind, Source: work, Target: SandboxWorkdir,
				BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
			}},
			Resources: container.Resources{
				Memory:     lim.memory,
				MemorySwap: lim.memory,
				NanoCPUs:   lim.nanoCPUs,
				PidsLimit:  &pids,
			},
		},
	}
}

// run creates, starts and waits for the container; see Run.
func (d *Docker) run(ctx context.Context, log *slog.Logger, s Spec, lim limits, opts client.ContainerCreateOptions) (Result, error) {
	res := Result{ExitCode: -1}
	created, err := d.cli.ContainerCreate(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("run: %w", ctx.Err())
		}
		return res, fmt.Errorf("create container: %w", err)
	}
	id := created.ID
	log = log.With("container", shortID(id))
	for _, w := range created.Warnings {
		if _, seen := d.warned.LoadOrStore(w, true); !seen {
			log.Warn("runner: Docker warning", "warning", w)
		}
	}
	defer d.remove(log, id)

	// Attach before starting, so no output is missed, and register the
	// wait before starting, so the exit is not missed either. Both live on
	// a context of their own: after a timeout or cancel they are still
	// needed to see the container end.
	streamCtx, cancelStream := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStream()
	attach, err := d.cli.ContainerAttach(streamCtx, id, client.ContainerAttachOptions{
		Stream: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		return res, fmt.Errorf("attach to container: %w", err)
	}
	defer attach.Close()
	out := newBoundedOutput(s.MaxOutput)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		// One writer for both streams keeps them in the order the daemon
		// saw them; boundedOutput never fails a write.
		_, _ = stdcopy.StdCopy(out, out, attach.Reader)
	}()
	wait := d.cli.ContainerWait(streamCtx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})

	log.Info("runner: start", "command", s.Command, "timeout", s.Timeout,
		"network", lim.network, "memory", lim.memory, "nano_cpus", lim.nanoCPUs)
	start := time.Now()
	if _, err := d.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("run: %w", ctx.Err())
		}
		return res, fmt.Errorf("start container: %w", err)
	}
	if d.onStarted != nil {
		d.onStarted()
	}

	timer := time.NewTimer(s.Timeout)
	defer timer.Stop()
	var (
		killed, cancelled bool
		waitErr           error
	)
	select {
	case <-wait.Result:
	case waitErr = <-wait.Error:
	case <-timer.C:
		killed = true
	case <-ctx.Done():
		killed, cancelled = true, true
	}
	if killed {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		if _, err := d.cli.ContainerKill(kctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !cerrdefs.IsNotFound(err) {
			log.Warn("runner: kill container", "err", err)
		}
		cancel()
		select {
		case <-wait.Result:
		case waitErr = <-wait.Error:
		case <-time.After(cleanupTimeout):
			waitErr = errors.New("container did not stop after SIGKILL")
		}
	}
	res.Duration = time.Since(start)
	// The stream ends when the container's last process is gone; give the
	// daemon a moment to flush it.
	select {
	case <-copied:
	case <-time.After(defaultWaitDelay):
		attach.Close()
		<-copied
	}

	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	inspect, inspectErr := d.cli.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
	cancel()
	var state *container.State
	if inspectErr == nil && inspect.Container.State != nil {
		state = inspect.Container.State
	}
	if state == nil || state.Running {
		if waitErr == nil {
			waitErr = inspectErr
		}
		if waitErr == nil {
			waitErr = errors.New("container still running")
		}
		return res, fmt.Errorf("wait for container: %w", waitErr)
	}
	res.OOMKilled = state.OOMKilled
	res.TimedOut = killed && !cancelled
	if !killed {
		res.ExitCode = state.ExitCode
	}
	switch {
	case cancelled:
		out.ensureNewline()
		fmt.Fprintf(out, "[cancelled: %v]\n", ctx.Err())
	case res.TimedOut:
		out.ensureNewline()
		fmt.Fprintf(out, "[timed out after %s]\n", s.Timeout)
	}
	if res.OOMKilled {
		out.ensureNewline()
		fmt.Fprintf(out, "[killed: out of memory (the sandbox's limit is %s)]\n", formatBytes(lim.memory))
	}
	res.Output, res.Truncated = out.String()

	log.Info("runner: end", "command", s.Command, "exit_code", res.ExitCode,
		"duration", res.Duration, "timed_out", res.TimedOut, "oom_killed", res.OOMKilled,
		"cancelled", cancelled, "output_bytes", out.total, "truncated", res.Truncated)
	if cancelled {
		return res, fmt.Errorf("run %q: %w", s.Command, ctx.Err())
	}
	return res, nil
}

// remove force-removes the container, on a fresh context: it must happen
// also when the run's context is done.
func (d *Docker) remove(log *slog.Logger, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_, err := d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		log.Error("runner: remove container", "err", err)
	}
}

// CleanupOrphans removes every container this runner's configuration owns
// (label pullwright.managed=true and, if DockerConfig.Owner is set, the same
// pullwright.owner), running or not, and, if DockerConfig.TempDir is set,
// the workspace copies left in it. Call it when the bot starts, before any
// run: whatever it finds was left by a bot that died. It returns how many
// containers it removed.
func (d *Docker) CleanupOrphans(ctx context.Context) (int, error) {
	filters := client.Filters{}.Add("label", LabelManaged+"=true")
	if d.cfg.Owner != "" {
		filters = filters.Add("label", LabelOwner+"="+d.cfg.Owner)
	}
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		return 0, fmt.Errorf("list sandbox containers: %w", err)
	}
	var errs []error
	n := 0
	for _, c := range list.Items {
		_, err := d.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			n++
			d.log.Warn("runner: removed a sandbox container left behind", "container", shortID(c.ID),
				"labels", c.Labels, "state", c.State)
		case cerrdefs.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("remove container %s: %w", shortID(c.ID), err))
		}
	}
	if d.cfg.TempDir != "" {
		dirs, _ := filepath.Glob(filepath.Join(d.cfg.TempDir, "pullwright-docker-*"))
		for _, dir := range dirs {
			if err := removeTree(dir); err != nil {
				errs = append(errs, fmt.Errorf("remove workspace copy: %w", err))
			}
		}
	}
	return n, errors.Join(errs...)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// formatBytes is e.g. "2 GiB" or "64 MiB".
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
