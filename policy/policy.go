// Package policy holds the rules a task runs under: the repository's
// .github/pullwright.yml (decoded strictly, with errors that name the line
// and key), the operator's caps that a repository cannot exceed, and the
// decisions made from them — who may trigger and approve, which paths the
// agent may not touch, which commands run without asking and what a task
// may spend. What of an issue the model may read is package untrusted's.
// It does no I/O beyond what it is handed: callers read the files and ask
// GitHub, and pass the answers in (the answer to "is this person in that
// team?" as a function, so that GitHub is asked only when a rule needs it).
//
// Import rule: only pullwright, untrusted and internal/words.
package policy

import "time"

// Path is where a repository keeps its configuration, read from the
// default branch only.
const Path = ".github/pullwright.yml"

// Config is a repository's .github/pullwright.yml as written. Zero values
// mean "not set": Resolve fills them from the operator's defaults.
type Config struct {
	// Trigger is who may start a task.
	Trigger Who `yaml:"trigger" json:"trigger"`
	// Approve is who may answer execution requests.
	Approve Approvers `yaml:"approve" json:"approve"`
	// ProtectedPaths are globs (with **) the agent may not create, edit or
	// delete. When set they replace the defaults, but Path and
	// .github/workflows/** stay protected whatever the file says.
	ProtectedPaths []string `yaml:"protected_paths" json:"protected_paths"`
	// AutoApprove lists commands that run without asking. Off by default.
	AutoApprove []AutoRule `yaml:"auto_approve" json:"auto_approve"`
	Sandbox     Sandbox    `yaml:"sandbox" json:"sandbox"`
	// Setup is the shell commands that fetch the repository's
	// dependencies before approved commands run. nil (not written) lets
	// the defaults for the ecosystems found apply; an empty list asks for
	// no setup at all.
	Setup []string `yaml:"setup" json:"setup"`
	// SetupHosts are host patterns setup may reach beyond the
	// installation's own list, each within the installation's
	// fence.hosts (see Fence).
	SetupHosts []string `yaml:"setup_hosts" json:"setup_hosts"`
	// SetupToolchainHosts false keeps setup off the hosts the image's
	// package managers are configured with (public registries, as a
	// rule): it then reaches only the installation's fence.hosts and
	// SetupHosts, a private mirror. nil (not written) and true leave the
	// installation's choice (fence.toolchain_hosts); a repository can
	// only narrow it, so true where the installation has it off is an
	// error.
	SetupToolchainHosts *bool `yaml:"setup_toolchain_hosts" json:"setup_toolchain_hosts"`
	// TestCommand is a hint for the agent: how this repository is tested.
	TestCommand string `yaml:"test_command" json:"test_command"`
	// RequirePassing is a command that must pass on a fix's final commit
	// before its pull request is ready for review: the task asks for it
	// (through the approval rules, or auto_approve) until it passes, and
	// the pull request stays a draft meanwhile.
	RequirePassing string `yaml:"require_passing" json:"require_passing"`
	// Instructions are the files the agent is given as the maintainers'
	// guidance, read from the default branch (see InstructionFiles). nil
	// (not written) means DefaultInstructions; an empty list, none.
	Instructions []string `yaml:"instructions" json:"instructions"`
	Budget       Budget   `yaml:"budget" json:"budget"`
	// Model overrides the operator's default model; it must be one the
	// operator allows.
	Model string `yaml:"model" json:"model"`
	// BranchPrefix starts the names of the bot's branches (default "agent/").
	BranchPrefix string `yaml:"branch_prefix" json:"branch_prefix"`
	// Label is the issue label that starts a fix when someone allowed to
	// trigger adds it, and cancels the running fix when it is
	// removed (default "pullwright").
	Label string `yaml:"label" json:"label"`
	// MCP names the operator's MCP servers whose tools the agent may use
	// here (Operator.ToolServers): a repository asks, the operator allows.
	MCP []string `yaml:"mcp" json:"mcp"`

	// lines maps a key path ("sandbox.memory") to its line in the file,
	// so that Resolve can name the line of a value above a cap.
	lines map[string]int
}

// Who is a rule for a group of people: everyone whose permission on the
// repository is at least Permission and, when Users or Teams are given,
// who is one of Users or a member of one of Teams.
type Who struct {
	// Permission is the lowest role admitted: read, triage, write,
	// maintain or admin. Default write.
	Permission string `yaml:"permission" json:"permission"`
	// Users are logins (case-insensitive).
	Users []string `yaml:"users" json:"users"`
	// Teams are "org/team-slug", or "team-slug" in the repository's owner.
	Teams []string `yaml:"teams" json:"teams"`
}

// Approvers is who may answer execution requests.
type Approvers struct {
	Who `yaml:",inline" json:",inline"`
	// ExcludeRequester: the person who asked for the task may not approve
	// its commands (four eyes). Off by default.
	ExcludeRequester bool `yaml:"exclude_requester" json:"exclude_requester"`
}

// AutoRule is one auto_approve entry: exactly one of Command (the exact
// command) or Pattern (an RE2 expression matched against the whole
// command).
type AutoRule struct {
	Command string `yaml:"command,omitempty" json:"command,omitempty"`
	Pattern string `yaml:"pattern,omitempty" json:"pattern,omitempty"`
}

// Sandbox is how approved commands run, within the operator's caps.
type Sandbox struct {
	// Image is the container image; empty lets the runner choose.
	Image string `yaml:"image" json:"image"`
	// Network is none (default) or bridge.
	Network string `yaml:"network" json:"network"`
	// Memory is a size such as "2GiB" or "512MiB".
	Memory string `yaml:"memory" json:"memory"`
	// Disk is the size of the sandbox's writable workspace (/workspace,
	// the copy of the files included), written like Memory. It is a
	// size-capped tmpfs, so a command that fills it gets "no space left
	// on device", a result the agent sees and can act on, rather than
	// filling the engine's disk.
	Disk string `yaml:"disk" json:"disk"`
	// CPUs is the CPU quota, e.g. 1.5.
	CPUs float64 `yaml:"cpus" json:"cpus"`
	// Timeout is the limit of one command, e.g. "10m".
	Timeout Duration `yaml:"timeout" json:"timeout"`
}

// Budget bounds one task.
type Budget struct {
	MaxTurns    int      `yaml:"max_turns" json:"max_turns"`
	MaxTokens   int      `yaml:"max_tokens" json:"max_tokens"`
	MaxWallTime Duration `yaml:"max_wall_time" json:"max_wall_time"`
	// MaxCostUSD is computed from the operator's per-model prices.
	MaxCostUSD float64 `yaml:"max_cost_usd" json:"max_cost_usd"`
}

// Duration is a time.Duration written as "10m" or "1h30m".
type Duration time.Duration
