package pullwright

import "time"

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
