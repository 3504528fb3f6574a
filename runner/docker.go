package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
)

// Labels every container and workspace volume of the Docker runner carries.
// Spec.Labels are added as they are (the task package sets "pullwright.task"
// and "pullwright.request").
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
	// DefaultWorkspaceSize caps /workspace, the copy of the workspace
	// included; like /tmp it is memory.
	DefaultWorkspaceSize = 2 << 30 // 2 GiB
	DefaultSandboxUser   = "65534:65534"
	// SandboxWorkdir is where the copy of the workspace is mounted, and the
	// command's working directory.
	SandboxWorkdir = "/workspace"
)

// goAheadScript is the container's entry point: it waits for one line on
// stdin, which Run writes once the workspace is in /workspace, and only then
// runs the command, which comes as $1 so it is never part of a script. If
// stdin closes without that line (the copy failed), the command never runs.
// Before it, the spec's Prepare ($2, prepareStep).
const goAheadScript = `read -r _ && { ` + prepareStep + `exec /bin/sh -c "$1"; }`

// prepareStep runs RunSpec.Prepare, $2, when there is one: with no
// input and its output dropped (the command's output is the command's),
// and whatever its status, the command after it.
const prepareStep = `if [ -n "$2" ]; then /bin/sh -c "$2" </dev/null >/dev/null 2>&1; fi; `

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
	// TmpfsSize is the size of the writable /tmp in bytes, default 1 GiB,
	// and of /var/tmp beside it. What is written there counts against
	// Memory.
	TmpfsSize int64
	// WorkspaceSize is the size of /workspace in bytes, the copy of the
	// workspace included, default 2 GiB. What the command writes there
	// counts against Memory. It is also the cap on a Spec's Disk: a
	// smaller Disk replaces it for one run, a larger one is lowered to it.
	WorkspaceSize int64
	// User runs the command, as "uid:gid" (numeric, so no /etc/passwd
	// lookup is needed), and owns /workspace and every file of the copy.
	// Default: 65534:65534 (nobody) when the bot runs as root, otherwise
	// the bot's own uid:gid. Never root.
	User string
	// Runtime is the OCI runtime, e.g. "runsc" for gVisor; "" is Docker's
	// default (runc).
	Runtime string

	// Timeout applies to Specs without one; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxOutput applies to Specs without one; zero means DefaultMaxOutput.
	MaxOutput int

	// Owner, if not empty, is put on every container and workspace volume
	// as the label pullwright.owner, and CleanupOrphans then removes only
	// those with the same owner: set it when several bots share one Docker
	// host.
	Owner string
	// Labels are put on every container and volume the runner makes,
	// over a Spec's own (not on shared caches, which outlive it): what
	// names the process that made them, for RemoveLeftBehind.
	Labels map[string]string
	// TempDir, if set, is where CleanupOrphans removes the workspace
	// copies (pullwright-docker-*) that versions which bind-mounted them
	// left after a crash. The runner itself writes nothing there: the
	// workspace reaches the engine through its API.
	TempDir string
	// Forwarder is the path of a Linux build of the bot, copied into
	// fenced runs (RunSpec.Route) to carry their connections to the fence
	// ("bot fence-forward"); a dynamic build goes with its loader and
	// libraries (see LoadForwarder), which NewDocker finds. Without it a
	// fenced run is an error.
	Forwarder string
	// CABundle, if set, is a PEM file of certificates every sandbox
	// trusts, for a network that inspects TLS (see ca.go): NewDocker
	// reads and checks it once.
	CABundle string
	Logger   *slog.Logger
}

// Docker runs each approved command in a fresh container, locked down by
// default:
//
//   - the image: Spec.Image, else DockerConfig.Image, else by the
//     workspace's language (ImageFor); pulled if missing;
//   - a copy of Spec.Dir at /workspace, the working directory, owned by
//     the sandbox user, in a volume of its own (a 2 GiB tmpfs); removed
//     after the run, so the agent's workspace never changes (unless
//     Spec.KeepChanges asks for what the command changed: then the
//     copy is read back after a command that exited 0, see
//     RunResult.Changes);
//   - no network; 2 GiB of memory and no swap; 2 CPUs; 512 pids; a
//     read-only root file system with a 1 GiB tmpfs at /tmp and another
//     at /var/tmp (exec allowed, so `go test` can run its binaries); all
//     capabilities dropped; no-new-privileges; a non-root user; no Docker
//     logs kept (output is streamed and bounded);
//   - environment: only HOME=/tmp, TMPDIR=/tmp, GOCACHE=/tmp/gocache,
//     GOPATH=/tmp/go, CI=true and LANG=C.UTF-8 on top of the image's own
//     (e.g. its PATH), and with CABundle the variables that point each
//     ecosystem at it (ca.go); nothing of the bot's;
//   - /bin/sh -c Spec.Command, once the copy is in place (the image's
//     entry point is ignored).
//
// Otherwise the code inside sees what `docker run --network none` of the
// same image shows it, which test suites rightly expect: "localhost"
// resolves, the user's name is the image's /etc/passwd's, /dev, /proc,
// the ulimits and the image's variables are Docker's, and every place a
// plain container lets the user write is writable. What differs is on
// purpose: the user (never root), HOME, the read-only root, no
// capabilities, the variables above and the host name "sandbox";
// TestDockerLooksLikeAPlainContainer compares the two.
//
// Nothing a command writes reaches the host's disk: the root is read-only,
// and /workspace, /tmp and /var/tmp are memory-backed tmpfs with a size
// cap each (WorkspaceSize, TmpfsSize for both others). The kernel charges tmpfs pages to the cgroup
// of whoever writes them, so what the command writes there counts against
// its memory limit, and whichever comes first ends the writing: the cap
// (the write fails with "No space left on device") or the memory limit (an
// OOM kill). The copy of the workspace is written by the engine, so it is
// charged to the engine, not the command, and bounded by the cap. A full
// /workspace or /tmp is a result the agent sees: Run adds a note naming
// both caps to an output that says "No space left on device". A workspace
// larger than the cap is a failed Result that says so, and the command is
// not run.
//
// The copy reaches the engine through its API, as a tar stream into the
// running container's volume, never as a path on the bot's machine: a
// remote DOCKER_HOST works, and the bot needs no directory shared with the
// engine. The container waits on stdin for a go-ahead line that Run writes
// after the copy, so the command never sees a partial workspace; Spec.Timeout
// and Result.Duration count from that line.
//
// Spec.Network, Spec.Memory, Spec.NanoCPUs and Spec.Disk, when set, replace
// the network mode, memory limit, CPU quota and workspace size of
// DockerConfig for one run. The caller has already checked them against the
// operator's caps; Run still refuses a Network other than "", "none" or
// "bridge" (never host or container:<id>), lowers NanoCPUs to the host's
// CPUs, and lowers Disk to WorkspaceSize, the operator's cap, with a
// warning in the log (a workspace limit is no reason to fail a run the
// caller let through). Swap stays off (memory+swap = memory) and every tmpfs
// still counts against the memory limit, whichever limit applies.
//
// A timeout, an OOM kill, an image that cannot be pulled or a workspace
// that does not fit is a normal Result. Every container and its volume are
// removed once the run has ended, also on timeout and on ctx being done.
// The result does not wait for that: Run returns and the removal goes on in
// the background, except for a run that mounted caches (Spec.Caches), whose
// container is gone before Run returns, so that a cache can be removed
// right after. Close and CleanupOrphans wait for the removals under way,
// and CleanupOrphans removes those a crashed bot left.
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

	warned sync.Map  // create warnings already logged
	ca     []byte    // the certificates of CABundle, nil without one
	fwd    Forwarder // the files of cfg.Forwarder

	// removals are the removals of containers and volumes that Run left
	// to finish after it returned (see discard).
	removals sync.WaitGroup

	// onStarted, if set, is called when the command has been let go (the
	// workspace copied in); benchmarks use it to measure the time to start.
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
	if cfg.WorkspaceSize <= 0 {
		cfg.WorkspaceSize = DefaultWorkspaceSize
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
	d := &Docker{cli: cli, cfg: cfg, log: log}
	if cfg.CABundle != "" {
		if d.ca, err = LoadCABundle(cfg.CABundle); err != nil {
			return nil, err
		}
	}
	if cfg.Forwarder != "" {
		ctx, cancel := context.WithTimeout(context.Background(), forwarderLoadTimeout)
		defer cancel()
		if d.fwd, err = LoadForwarder(ctx, cfg.Forwarder); err != nil {
			return nil, fmt.Errorf("fence forwarder: %w", err)
		}
	}
	return d, nil
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

// Close waits for the removals of the runs that returned, then closes the
// Docker client.
func (d *Docker) Close() error {
	d.removals.Wait()
	return d.cli.Close()
}

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

// limits are the network, memory, CPU quota and workspace size of one run.
type limits struct {
	network  string
	memory   int64
	nanoCPUs int64
	disk     int64
	// imageVolumes are the paths the image declares as VOLUME.
	imageVolumes []string
}

// limitsFor applies s's limits over the configuration's, lowers the CPU
// quota to hostCPUs (if known), since Docker refuses a quota above the
// host's CPUs, and lowers the workspace size to WorkspaceSize, the
// operator's cap. s has passed checkLimits.
func (d *Docker) limitsFor(s pullwright.RunSpec, hostCPUs int64) limits {
	l := limits{network: d.cfg.NetworkMode, memory: d.cfg.Memory, nanoCPUs: d.cfg.NanoCPUs, disk: d.cfg.WorkspaceSize}
	if s.Network != "" {
		l.network = s.Network
	}
	if s.Memory > 0 {
		l.memory = s.Memory
	}
	if s.NanoCPUs > 0 {
		l.nanoCPUs = s.NanoCPUs
	}
	if s.Disk > 0 {
		l.disk = min(s.Disk, d.cfg.WorkspaceSize)
	}
	if hostCPUs > 0 && l.nanoCPUs > hostCPUs {
		l.nanoCPUs = hostCPUs
	}
	if s.Route != nil {
		l.network = NetworkNone // the fence is the only way out
	}
	return l
}

// Run creates a container with a workspace volume, copies s.Dir into it, runs
// s.Command there, and removes both, whatever happened (in the background
// unless the run mounted caches). See Docker.
func (d *Docker) Run(ctx context.Context, s pullwright.RunSpec) (pullwright.RunResult, error) {
	if s.Timeout <= 0 {
		s.Timeout = d.cfg.Timeout
	}
	if s.MaxOutput <= 0 {
		s.MaxOutput = d.cfg.MaxOutput
	}
	s = withDefaults(s)
	res := pullwright.RunResult{ExitCode: -1}
	if s.Dir == "" {
		return res, errors.New("run: no workspace directory")
	}
	if s.Command == "" {
		return res, errors.New("run: empty command")
	}
	if err := checkLimits(s); err != nil {
		return res, err
	}
	if (s.Route != nil || s.Bot) && d.cfg.Forwarder == "" {
		return res, errNoForwarder
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
	if s.Disk > lim.disk {
		// The caller was meant to check this: say so, but run within the cap.
		log.Warn("runner: workspace size lowered to the operator's cap", "disk", s.Disk, "cap", lim.disk)
	}
	volumes, err := d.ensureImage(ctx, log, image)
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("run: %w", ctx.Err())
		}
		log.Error("runner: image not available", "err", err)
		res.Output = fmt.Sprintf("not run: image %s is not available and could not be pulled: %v\n", image, err)
		res.NotStarted = true
		return res, nil
	}
	lim.imageVolumes = volumes
	return d.run(ctx, log, s, image, lim)
}

// maxLoggedCommand bounds what a log line keeps of a command: an
// approved command is at most 4096 bytes and its record keeps it whole,
// but a setup's script carries the build cache program's source.
const maxLoggedCommand = 1000

// loggedCommand is command as a log line keeps it.
func loggedCommand(command string) string {
	if len(command) <= maxLoggedCommand {
		return command
	}
	return strings.ToValidUTF8(command[:maxLoggedCommand], "") + fmt.Sprintf("… [%d bytes more]", len(command)-maxLoggedCommand)
}

// firstNonEmpty returns a, or b if a is empty.
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ensureImage pulls image unless the daemon has it, logging progress, and
// returns the volumes the image declares (see imageVolumes).
func (d *Docker) ensureImage(ctx context.Context, log *slog.Logger, image string) ([]string, error) {
	volumes, err := d.imageVolumes(ctx, image)
	if err == nil {
		return volumes, nil
	}
	if !cerrdefs.IsNotFound(err) {
		return nil, err
	}
	if d.cfg.NoPull {
		return nil, errors.New("it is not on the Docker host and pulling is disabled")
	}
	if err := d.pull(ctx, log, image); err != nil {
		return nil, err
	}
	return d.imageVolumes(ctx, image)
}

// imageVolumes lists the paths the image declares as VOLUME. The engine
// would give each an anonymous volume on its own disk, writable whatever
// the read-only root, where a command could write without the workspace's
// cap: the container mounts a capped tmpfs there instead.
func (d *Docker) imageVolumes(ctx context.Context, image string) ([]string, error) {
	img, err := d.cli.ImageInspect(ctx, image)
	if err != nil {
		return nil, err
	}
	var out []string
	if img.Config != nil {
		for p := range img.Config.Volumes {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// pull pulls image, logging progress.
func (d *Docker) pull(ctx context.Context, log *slog.Logger, image string) error {
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

// labels are what a run's container and volume carry.
func (d *Docker) labels(s pullwright.RunSpec) map[string]string {
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, d.cfg.Labels)
	labels[LabelManaged] = "true"
	if d.cfg.Owner != "" {
		labels[LabelOwner] = d.cfg.Owner
	}
	return labels
}

// runVolume is a volume of the run's own at target (its /workspace, a
// fenced run's tools): a tmpfs of size bytes whose root belongs to the
// sandbox user, so the command can write there without any chown, and whose
// pages are memory, never the engine host's disk. Like /tmp it is nosuid and
// nodev: a set-uid file or a device node in the copy must not become a way
// out. The engine makes it with the container, and as it has no name,
// removing the container with its volumes removes it: no call of its own
// either way. It carries the run's labels, so CleanupOrphans finds one that
// outlived its container.
func (d *Docker) runVolume(s pullwright.RunSpec, target string, size int64) mount.Mount {
	uid, gid, _ := parseUser(d.cfg.User)
	return d.tmpfsVolume(s, target, fmt.Sprintf("size=%d,uid=%d,gid=%d,mode=0700,nosuid,nodev", size, uid, gid))
}

// tmpfsVolume is a volume the engine makes with the container, and
// removes with it, at target: a tmpfs mounted with options o.
func (d *Docker) tmpfsVolume(s pullwright.RunSpec, target, o string) mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Target: target, VolumeOptions: &mount.VolumeOptions{
		NoCopy: true,
		Labels: d.labels(s),
		DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
			"type": "tmpfs", "device": "tmpfs", "o": o,
		}},
	}}
}

// containerConfig is what a run's container is created with.
func (d *Docker) containerConfig(s pullwright.RunSpec, image string, lim limits) client.ContainerCreateOptions {
	pids := d.cfg.PidsLimit
	return client.ContainerCreateOptions{
		Name: "pullwright-run-" + randomHex(6),
		Config: &container.Config{
			Image:        image,
			User:         d.cfg.User,
			Hostname:     "sandbox",
			Entrypoint:   []string{"/bin/sh", "-c", entryScript(s), "pullwright"},
			Cmd:          []string{s.Command, s.Prepare},
			WorkingDir:   SandboxWorkdir,
			Env:          append(sandboxEnv(s), d.caEnv()...),
			AttachStdin:  true,
			AttachStdout: true,
			AttachStderr: true,
			OpenStdin:    true,
			StdinOnce:    true,
			Labels:       d.labels(s),
			// No NetworkDisabled: network "none" is what isolates (a
			// loopback and nothing else), and with NetworkDisabled the
			// engine writes no /etc/hosts, so "localhost" does not
			// resolve where a test suite listens on it.
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    container.NetworkMode(lim.network),
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			Runtime:        d.cfg.Runtime,
			LogConfig:      container.LogConfig{Type: "none"},
			Tmpfs:          d.tmpfs(lim),
			// NoCopy: the workspace starts empty and gets the approved
			// files only, whatever the image has at that path.
			Mounts: d.mounts(s, lim),
			Resources: container.Resources{
				Memory:     lim.memory,
				MemorySwap: lim.memory,
				NanoCPUs:   lim.nanoCPUs,
				PidsLimit:  &pids,
			},
		},
	}
}

// sandboxEnv is the command's whole environment over the image's: none
// of the bot's, and for a fenced run the forwarder as its proxy.
func sandboxEnv(s pullwright.RunSpec) []string {
	env := []string{
		"HOME=/tmp", "TMPDIR=/tmp", "GOCACHE=/tmp/gocache", "GOPATH=/tmp/go",
		"CI=true", "LANG=C.UTF-8",
	}
	if s.Route != nil {
		env = append(env, proxyEnv()...)
	}
	return append(env, s.Env...)
}

// mounts are the run's volumes: its workspace, its caches, and a fenced
// run's tools.
// NoCopy: each starts empty and gets only what the runner copies in,
// whatever the image has at that path.
func (d *Docker) mounts(s pullwright.RunSpec, lim limits) []mount.Mount {
	m := []mount.Mount{d.runVolume(s, SandboxWorkdir, lim.disk)}
	for _, c := range s.Caches {
		m = append(m, mount.Mount{Type: mount.TypeVolume, Source: c.Volume, Target: c.Target, ReadOnly: c.ReadOnly,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	if d.needsTools(s) {
		m = append(m, d.toolsVolume(s))
	}
	if s.KeepChanges {
		// On the engine's disk: its contents outlive the container's
		// stop, when they are read. Removed with the container.
		m = append(m, mount.Mount{Type: mount.TypeVolume, Target: keepMount,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true, Labels: d.labels(s)}})
	}
	return m
}

// entryScript is the container's entry point for s.
func entryScript(s pullwright.RunSpec) string {
	if s.KeepChanges {
		return goAheadKeepScript
	}
	return goAheadScript
}

// forwarderVolumeSize holds the forwarder, the bot's binary, and a
// dynamic build's loader and C library.
const forwarderVolumeSize = 128 << 20

// tmpfs is the container's size-capped tmpfs mounts: /tmp and /var/tmp,
// writable as in a plain container though the root is not (suites and
// tools write temporary files to either), and each volume the image
// declares, which would otherwise be an uncapped volume on the engine's
// disk.
func (d *Docker) tmpfs(lim limits) map[string]string {
	opts := fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777", d.cfg.TmpfsSize)
	m := map[string]string{"/tmp": opts, "/var/tmp": opts}
	for _, p := range lim.imageVolumes {
		if p := path.Clean(p); p != SandboxWorkdir && m[p] == "" {
			m[p] = opts
		}
	}
	return m
}

// errWorkspaceTooBig reports a workspace larger than its volume.
var errWorkspaceTooBig = errors.New("the workspace is larger than the sandbox's workspace volume")

// errCopyEnded stops the tar writer once the engine has answered.
var errCopyEnded = errors.New("copy ended")

// copyIn sends the workspace at dir into the container's /workspace as a tar
// stream. It returns an error wrapping errWorkspaceTooBig if the files need
// more than size bytes. They are counted before they are sent, in the whole
// pages tmpfs stores them in, so an oversized workspace is cut short here
// rather than left to the engine, whose out-of-space answer can be lost to a
// broken pipe while the rest of the stream is still being written.
func (d *Docker) copyIn(ctx context.Context, id, dir string, size int64, links []pullwright.Link) error {
	uid, gid, _ := parseUser(d.cfg.User)
	page := int64(os.Getpagesize())
	left := size
	reserve := func(n int64) error {
		if left -= (n + page - 1) / page * page; left < 0 {
			return errWorkspaceTooBig
		}
		return nil
	}
	pr, pw := io.Pipe()
	tarred := make(chan error, 1)
	go func() {
		err := tarTree(ctx, dir, pw, uid, gid, reserve, links...)
		pw.CloseWithError(err)
		tarred <- err
	}()
	_, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{
		DestinationPath: SandboxWorkdir, Content: pr,
	})
	// The engine may answer before it has read everything: unblock the
	// writer, then wait for it.
	pr.CloseWithError(errCopyEnded)
	tarErr := <-tarred
	switch {
	case errors.Is(tarErr, errWorkspaceTooBig):
		return fmt.Errorf("copy workspace %s: %w", dir, tarErr)
	case tarErr != nil && !errors.Is(tarErr, errCopyEnded) && !errors.Is(tarErr, io.ErrClosedPipe):
		return fmt.Errorf("copy workspace %s: %w", dir, tarErr)
	case err != nil && strings.Contains(strings.ToLower(err.Error()), noSpaceMessage):
		// What the count misses: a larger page on the engine's host, or
		// symbolic links long enough for tmpfs to give them a page.
		return fmt.Errorf("copy workspace %s: %w: %w", dir, errWorkspaceTooBig, err)
	case err != nil:
		return fmt.Errorf("copy workspace %s into the container: %w", dir, err)
	}
	return nil
}

// discard removes a run's container with its volumes. The run's result is
// known by then and does not depend on it, so unless now is set it happens
// in the background, off the time the caller waits for; Close and
// CleanupOrphans wait for it. now is for a run that mounted volumes it does
// not own (caches): whoever owns them may remove them as soon as Run
// returns, and the engine would refuse while this container holds them.
func (d *Docker) discard(log *slog.Logger, id string, now bool) {
	if now {
		d.remove(log, id)
		return
	}
	d.removals.Go(func() { d.remove(log, id) })
}

// remove force-removes the container and its own volumes (runVolume), on a
// fresh context: it must happen also when the run's context is done.
func (d *Docker) remove(log *slog.Logger, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	start := time.Now()
	_, err := d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		log.Error("runner: remove container", "err", err)
		return
	}
	log.Debug("runner: removed", "remove_ms", time.Since(start).Milliseconds())
}

// CleanupOrphans removes every container and workspace volume this runner's
// configuration owns (label pullwright.managed=true and, if
// DockerConfig.Owner is set, the same pullwright.owner), running or not,
// and, if DockerConfig.TempDir is set, the workspace copies older versions
// left in it. Call it when the bot starts, before any run: whatever it finds
// was left by a bot that died. It returns how many containers it removed;
// a run's volumes go with its container, and one found without it (one the
// engine failed to remove with it, or an older version's named workspace
// volume) is removed and only logged.
func (d *Docker) CleanupOrphans(ctx context.Context) (int, error) {
	// A run's own removal still under way is no orphan: racing it would
	// only make the engine refuse one of the two.
	d.removals.Wait()
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
	// After the containers: a volume still mounted in one cannot go.
	vols, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: filters})
	if err != nil {
		errs = append(errs, fmt.Errorf("list workspace volumes: %w", err))
	}
	for _, v := range vols.Items {
		if _, cache := v.Labels[LabelCacheRepo]; cache {
			continue // a dependency cache outlives runs and the bot (setup evicts them)
		}
		_, err := d.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{})
		switch {
		case err == nil:
			d.log.Warn("runner: removed a workspace volume left behind", "volume", v.Name, "labels", v.Labels)
		case cerrdefs.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
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

// RemoveLeftBehind removes the containers (running or not, with their
// volumes) and the volumes other than caches that this runner's
// configuration owns (as CleanupOrphans finds them), that carry the label
// key, and for whose labels gone is true: what a process that was killed
// left, when several share an engine and an owner, so that CleanupOrphans
// would take the live ones' too. Nothing without the label is looked at.
// It returns how many containers it removed.
func (d *Docker) RemoveLeftBehind(ctx context.Context, key string, gone func(labels map[string]string) bool) (int, error) {
	filters := client.Filters{}.Add("label", LabelManaged+"=true").Add("label", key)
	if d.cfg.Owner != "" {
		filters = filters.Add("label", LabelOwner+"="+d.cfg.Owner)
	}
	// The engine's filters are the first guard, this the second: a
	// container is removed only if it carries every label it was listed
	// by.
	ours := func(labels map[string]string) bool {
		_, has := labels[key]
		return has && labels[LabelManaged] == "true" && (d.cfg.Owner == "" || labels[LabelOwner] == d.cfg.Owner) && gone(labels)
	}
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		return 0, fmt.Errorf("list sandbox containers: %w", err)
	}
	var errs []error
	n := 0
	for _, c := range list.Items {
		if !ours(c.Labels) {
			continue
		}
		_, err := d.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			n++
			d.log.Info("runner: removed a sandbox container left behind", "container", shortID(c.ID), "labels", c.Labels, "state", c.State)
		case cerrdefs.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("remove container %s: %w", shortID(c.ID), err))
		}
	}
	vols, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: filters})
	if err != nil {
		errs = append(errs, fmt.Errorf("list sandbox volumes: %w", err))
	}
	for _, v := range vols.Items {
		if _, cache := v.Labels[LabelCacheRepo]; cache || !ours(v.Labels) {
			continue
		}
		if _, err := d.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
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
