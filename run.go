package pullwright

import (
	"context"
	"io"
	"net/netip"
	"time"
)

// RunResult is what an approved command did. A command that fails, times
// out or is killed is a normal RunResult, not an error.
type RunResult struct {
	// ExitCode is the command's exit status, or -1 if it never exited
	// normally (killed by a signal outside a container; timed out,
	// cancelled, or, in a container, the image could not be had or the
	// workspace did not fit in the sandbox). In a container the shell is
	// process 1 and a command killed by signal n exits 128+n as a shell
	// reports it (137 for SIGKILL, and so for OOMKilled).
	ExitCode int `json:"exit_code"`
	// Output is stdout and stderr interleaved in the order they were
	// written, bounded, with the middle cut when it is too long. A note
	// such as "[timed out after 10m0s]" or "[killed by signal 9 (SIGKILL)]"
	// is written at the end, within the same bound.
	Output string `json:"output"`
	// Truncated reports that the middle of the output was cut.
	Truncated bool `json:"truncated,omitempty"`
	// TimedOut reports that the run's timeout elapsed and the command was
	// killed.
	TimedOut bool `json:"timed_out,omitempty"`
	// OOMKilled reports that the sandbox killed the command for exceeding
	// its memory limit.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// Duration is how long the command ran, from start until it and its
	// process group were gone. It does not include copying the workspace.
	Duration time.Duration `json:"duration"`
	// NotStarted reports that the command never started (the image could
	// not be had, the files did not fit, the setup or the sandbox failed):
	// Output says why, and ExitCode is -1. Set by whoever decided it, never
	// read from the output, which a command writes.
	NotStarted bool `json:"not_started,omitempty"`
	// Changes are the files the command changed in its copy of the
	// workspace, when its spec asked to keep them (RunSpec.KeepChanges)
	// and it exited 0: regular files added, changed or deleted, with
	// their new contents, in path order. What a runner could not bring
	// back is listed with Refused set. KeptNote says why nothing is
	// listed when nothing could be (the command failed, too many files
	// changed); it is empty when every change is listed.
	Changes  []FileChange `json:"changes,omitempty"`
	KeptNote string       `json:"kept_note,omitempty"`
}

// FileChange is one file a run changed in its copy of the workspace.
type FileChange struct {
	// Path is slash-separated, relative to the workspace.
	Path string `json:"path"`
	// Deleted is true when the file is gone; Content and Executable then
	// say nothing.
	Deleted    bool   `json:"deleted,omitempty"`
	Executable bool   `json:"executable,omitempty"`
	Content    []byte `json:"content,omitempty"`
	// Refused says why the change is not brought back (a symbolic link,
	// a file too large), if it is not.
	Refused string `json:"refused,omitempty"`
}

// CacheMount is a volume a run mounts at Target (an absolute path outside
// the workspace): a repository's dependency cache, read-only for an
// approved run.
type CacheMount struct {
	Volume   string
	Target   string
	ReadOnly bool
}

// Link is a symbolic link a run's workspace gets at Name, a
// slash-separated path in the workspace, pointing at Target: how a run
// finds a node_modules that setup left in a cache.
type Link struct {
	Name, Target string
}

// RunSpec is one run in a sandbox, as the runner carries it out: an
// approved command on the files of the commit a person approved, or a
// repository's setup behind the fence. It is resolved once from the
// repository's settings (policy.Settings.RunSpec) and taken as it is by
// runner's backends; setup adds its caches, environment and links.
type RunSpec struct {
	// Dir is the workspace to run in. The runner works on a copy of it and
	// never changes the original.
	Dir string
	// Command is run with /bin/sh -c.
	Command string
	// Timeout is the wall-clock limit for the command (not for copying the
	// workspace); zero or negative means the runner's default.
	Timeout time.Duration
	// MaxOutput is how many bytes of output are kept; zero or negative means
	// the runner's default. Beyond it the first and last MaxOutput/2 bytes
	// are kept and the middle is replaced by "\n[… N bytes cut …]\n".
	MaxOutput int
	// Image is the container image to run in, for container backends: the
	// repository's configured image, if any. Empty lets the backend choose.
	// The local backend ignores it.
	Image string
	// Labels identify the run (task id, request id) in logs and, for
	// container backends, as container labels. They are not passed to the
	// command.
	Labels map[string]string

	// Network, Memory, NanoCPUs and Disk are this run's sandbox limits:
	// the repository's settings, already checked against the operator's
	// caps. A zero value means the backend's default; a set value
	// replaces it. Network is "", "none" or "bridge"; Memory is in bytes;
	// NanoCPUs is in billionths of a CPU; Disk is the size of the workspace
	// in the sandbox in bytes (the copy included). The local backend
	// ignores all four: it has no isolation to apply them to.
	Network  string
	Memory   int64
	NanoCPUs int64
	Disk     int64

	// Caches are volumes the run mounts beside its workspace: a setup run
	// fills a repository's dependency cache, approved runs read it
	// (ReadOnly). Env is added to the command's environment (after the
	// runner's own), to point the tools at them; it must hold nothing of
	// the bot's. Links are symbolic links put in the sandbox's copy of the
	// workspace where the tree has nothing of that name and has the
	// directory it would be in: how a run finds what setup left in a cache
	// for the working directory (a node_modules). Prepare, if set, is a
	// command of the bot's own that readies what a cache gives the run (a
	// Go build cache directory in the run's /tmp, buildcache.Prepare):
	// the sandbox runs it with /bin/sh -c just before Command, in the same
	// container and as the same user, its output discarded; whether it
	// succeeds or not, Command runs next, so a failed Prepare costs the
	// command its warm cache, never its run. Only setup sets it. The local
	// backend ignores all four.
	Caches  []CacheMount
	Env     []string
	Links   []Link
	Prepare string

	// Route, if set, makes the run fenced: it has no network whatever
	// Network says, and its processes reach hosts only through a
	// forwarder the runner starts in the sandbox, whose connections go to
	// Route (fence.Proxy enforces its allow-list there). Only setup sets
	// it; the local backend refuses it.
	Route Route

	// Bot puts the bot's own binary in the sandbox, as a fenced run gets
	// it for its forwarder (with a dynamic build's loader and libraries),
	// root's and read-only, for the command to copy: how setup gives a
	// cache the program that links its Go build cache for each run, which
	// nothing then compiles. Only setup sets it; the local backend ignores it.
	Bot bool

	// KeepChanges asks the runner for what the command changed in its
	// copy of the workspace (RunResult.Changes), which is otherwise
	// thrown away with the copy. Only an approved request that said so
	// sets it.
	KeepChanges bool
}

// Route is how a fenced run reaches the network: the runner hands it the
// byte stream of the forwarder it starts in the sandbox
// (fence.Proxy.ServeRoute serves it).
type Route interface {
	ServeRoute(ctx context.Context, conn io.ReadWriteCloser) error
}

// SetupRequest is one approved run's need for its repository's
// dependencies: the repository's setup, behind the fence, into a cache the
// run then reads. It is resolved once from the repository's settings
// (policy.Settings.SetupRequest) and taken as it is by setup.
type SetupRequest struct {
	// Repo names the repository's caches: "owner/name", or for bot run
	// "local:<path>".
	Repo string
	// Dir holds the files to run, as the run gets them. Base holds the
	// files of the commit that alone may fill a cache the repository's
	// tasks share (the default branch's, a pull request's base's), ""
	// when there are none to trust. A setup runs code of the files it
	// runs on, not only the manifests its key covers: so a shared cache is
	// filled from Base alone, and only when Dir's manifests are Base's;
	// otherwise the setup runs on Dir into a cache of the run's own,
	// removed by Release.
	Dir, Base string
	// Image is the run's image ("" lets the runner choose).
	// ImageTrusted says the operator trusts it (the runner's choice, one
	// of caps.images, bot run's user's own): what runs in an image the
	// repository named alone may lie, so the cache is measured elsewhere.
	Image        string
	ImageTrusted bool
	// Setup is the repository's setup (nil: the defaults per ecosystem).
	Setup []string
	// Hosts and Nets are where the setup may connect beyond the image's
	// toolchain hosts (with ToolchainHosts): host patterns, and
	// non-public ranges. The bot's own addresses are never among them.
	Hosts          []string
	Nets           []netip.Prefix
	ToolchainHosts bool
	// The setup run's limits, as the approved run's.
	Memory, Disk, NanoCPUs int64
	Timeout                time.Duration
	Labels                 map[string]string
}

// SetupResult is what an approved run gets from its setup: the caches and
// environment to run with, and the record of a setup that ran.
type SetupResult struct {
	// Key is the setup plan's cache key; Steps its steps, none when the
	// files need no setup.
	Key   string
	Steps []string
	// Caches, Env, Links and Prepare go into the approved run's RunSpec.
	Caches  []CacheMount
	Env     []string
	Links   []Link
	Prepare string
	// Record is set when a setup ran for this run; Record.Failed then
	// means the command must not run on a half-filled cache.
	Record *SetupRecord
	// Private is true when the cache is the run's own (SetupRequest.Base).
	Private bool
	// Measured is set when the engine's ready caches were measured (after
	// a setup filled one): CacheBytes is what they hold together, after
	// Evicted were removed.
	Measured   bool
	CacheBytes int64
	Evicted    []string
	// Release frees what the run alone used (its hold on a shared cache,
	// a private cache); call it once, when the run ended. Never nil.
	Release func(context.Context)
}

// SetupRecord is a setup that ran before an approved command: what it ran,
// how it ended, and what the fence let through or refused. It is kept
// with the request's record and shown in the status.
type SetupRecord struct {
	Steps    []string      `json:"steps"`
	ExitCode int           `json:"exit_code"`
	Failed   bool          `json:"failed,omitempty"`
	Duration time.Duration `json:"duration"`
	// Output is the setup's output, bounded.
	Output string `json:"output,omitempty"`
	// Reached and Blocked are the fence's "host:port" of each kind.
	Reached []string `json:"reached,omitempty"`
	Blocked []string `json:"blocked,omitempty"`
}
