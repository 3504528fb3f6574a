package policy

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright"
)

// Operator is the configuration of whoever runs the bot (a YAML file given
// to serve --config): what it serves, the defaults, and the caps that no
// repository can exceed.
type Operator struct {
	// Installations and Organizations, when not empty, are the only ones
	// served: deliveries from others are acknowledged and ignored. When
	// both are set, a delivery must pass both.
	Installations []int64  `yaml:"installations" json:"installations"`
	Organizations []string `yaml:"organizations" json:"organizations"`
	// AllowedBots are bot logins ("renovate[bot]", or "renovate") whose
	// comments are heard; every other bot is ignored. Their permission is
	// still asked.
	AllowedBots []string `yaml:"allowed_bots" json:"allowed_bots"`
	// Models: the default, and the ones a repository may choose (the
	// default is always allowed).
	Models Models `yaml:"models" json:"models"`
	// Prices are USD per million tokens, by model, for cost budgets.
	Prices map[string]Price `yaml:"prices" json:"prices"`
	// Defaults apply where a repository sets nothing.
	Defaults Limits `yaml:"defaults" json:"defaults"`
	// Caps bound what a repository may set. MaxCostUSD 0 means no cap; with
	// a cap and no default, the cap is every task's budget.
	Caps Limits `yaml:"caps" json:"caps"`
	// Rate limits per installation.
	Rate Rate `yaml:"rate" json:"rate"`
	// LowestPermission is the lowest role a repository may let trigger or
	// approve (default write).
	LowestPermission string `yaml:"lowest_permission" json:"lowest_permission"`
	// Fence is where setup, the step that fetches dependencies, may
	// connect.
	Fence Fence `yaml:"fence" json:"fence"`
	// Caches bound the dependency caches setup keeps on the Docker
	// engine's disk.
	Caches Caches `yaml:"caches" json:"caches"`
	// MCP lists the MCP servers whose tools repositories may ask for.
	MCP MCP `yaml:"mcp" json:"mcp"`

	lines map[string]int
}

// Fence is the operator's part of setup's allow-list. Setup reaches the
// hosts the image's toolchains are configured with (when ToolchainHosts),
// Hosts, and the repository's setup_hosts that are within Hosts; never
// the bot's own addresses, and a non-public address only in AllowedNets.
type Fence struct {
	// Hosts are host patterns as the fence reads them ("mirror.example",
	// "*.mirror.example", an address; each optionally with ":port"),
	// open to every repository's setup beyond the toolchains' own, and
	// the cap of what a repository's setup_hosts may name.
	Hosts []string `yaml:"hosts" json:"hosts"`
	// RepositoryHosts are host patterns a repository's setup_hosts may
	// name besides Hosts, open only to the repositories that ask for
	// them: a private registry one team needs.
	RepositoryHosts []string `yaml:"repository_hosts" json:"repository_hosts"`
	// AllowedNets are the non-public ranges setup may reach (an internal
	// mirror on a private address), in canonical form ("10.20.0.0/16").
	// Every other address that is not public is refused, even for an
	// allowed name.
	AllowedNets []string `yaml:"allowed_nets" json:"allowed_nets"`
	// ToolchainHosts allows the hosts the image's package managers are
	// configured with (read from the image when setup runs; see
	// deps.ToolchainProbe). Default true (in DefaultOperator, and so in
	// LoadOperator; a zero Operator built in code has it false); false
	// leaves setup only Hosts, for an installation that wants every host
	// written down.
	ToolchainHosts bool `yaml:"toolchain_hosts" json:"toolchain_hosts"`
	// ParentProxy is the network's own proxy, which setup's connections
	// go out through once the fence allowed them, for a network whose
	// only way out is a proxy: "http://proxy.corp.example:3128" (or
	// https://, with "user:password@" when it wants credentials). "none"
	// goes direct whatever the bot's environment says; "" (the default)
	// takes the bot's HTTPS_PROXY, HTTP_PROXY and NO_PROXY. Never in
	// JSON: it may carry a password.
	ParentProxy string `yaml:"parent_proxy" json:"-"`
	// ParentNoProxy are the hosts setup reaches directly rather than
	// through ParentProxy, as NO_PROXY writes them ("corp.example" for
	// it and every name under it, ".corp.example" for the names under
	// it, "10.0.0.0/8" for addresses in the range, a host:port).
	ParentNoProxy []string `yaml:"parent_no_proxy" json:"parent_no_proxy"`
}

// NoParentProxy is the ParentProxy that turns the environment's off.
const NoParentProxy = "none"

// ParentProxyConfig is the parent proxy of the fence as net/http's
// proxy variables would say it: ParentProxy for tunnels and plain
// requests with ParentNoProxy, or, when the file names none, env, the
// bot's own HTTPS_PROXY, HTTP_PROXY and NO_PROXY read at start. from
// names where it came from, for errors and the log; an empty config
// means no parent.
func (f Fence) ParentProxyConfig(env httpproxy.Config) (c httpproxy.Config, from string) {
	switch f.ParentProxy {
	case NoParentProxy:
		return httpproxy.Config{}, "fence.parent_proxy"
	case "":
		env.CGI = false
		return env, "the bot's HTTPS_PROXY, HTTP_PROXY and NO_PROXY (fence.parent_proxy is not set)"
	}
	return httpproxy.Config{HTTPProxy: f.ParentProxy, HTTPSProxy: f.ParentProxy, NoProxy: strings.Join(f.ParentNoProxy, ",")}, "fence.parent_proxy"
}

// Caches bound the dependency caches: beyond them, the least recently
// used go first (a cache a run holds stays).
type Caches struct {
	// Keep is how many ready caches a repository keeps (default 3).
	Keep int `yaml:"keep" json:"keep"`
	// RepoSize caps one repository's caches, HostSize all of them on the
	// engine ("10GiB"); "" is no cap.
	RepoSize string `yaml:"repo_size" json:"repo_size"`
	HostSize string `yaml:"host_size" json:"host_size"`
}

// CacheLimits are Caches in numbers: keep, and the caps in bytes (0: no
// cap).
func (o *Operator) CacheLimits() (keep int, repoBytes, hostBytes int64) {
	if o == nil {
		d := DefaultOperator()
		o = d
	}
	repoBytes, _ = parseSize(o.Caches.RepoSize)
	hostBytes, _ = parseSize(o.Caches.HostSize)
	keep = o.Caches.Keep
	if keep <= 0 {
		keep = DefaultOperator().Caches.Keep
	}
	return keep, repoBytes, hostBytes
}

// Models is the operator's model choice.
type Models struct {
	Default string   `yaml:"default" json:"default"`
	Allowed []string `yaml:"allowed" json:"allowed"`
	// Profiles say, by model, how the agent talks to it: context window,
	// parameters, reasoning (pullwright.ModelProfile).
	Profiles map[string]pullwright.ModelProfile `yaml:"profiles" json:"profiles"`
}

// Price is what a model costs, in USD per million tokens.
type Price = pullwright.Price

// Limits are sandbox and budget bounds, as defaults or as caps.
type Limits struct {
	// Images, in Caps only: the images a repository may name; empty means
	// any. (The image of a repository that names none is the runner's
	// choice, which the operator controls anyway.)
	Images      []string `yaml:"images" json:"images"`
	Network     string   `yaml:"network" json:"network"` // none or bridge
	Memory      string   `yaml:"memory" json:"memory"`
	Disk        string   `yaml:"disk" json:"disk"`
	CPUs        float64  `yaml:"cpus" json:"cpus"`
	Timeout     Duration `yaml:"timeout" json:"timeout"`
	MaxTurns    int      `yaml:"max_turns" json:"max_turns"`
	MaxTokens   int      `yaml:"max_tokens" json:"max_tokens"`
	MaxWallTime Duration `yaml:"max_wall_time" json:"max_wall_time"`
	MaxCostUSD  float64  `yaml:"max_cost_usd" json:"max_cost_usd"`
}

// Rate bounds the work of one installation.
type Rate struct {
	// ConcurrentTasks is how many fix tasks may be active at once.
	ConcurrentTasks int `yaml:"concurrent_tasks" json:"concurrent_tasks"`
	// TasksPerHour is how many fix tasks may start in any hour.
	TasksPerHour int `yaml:"tasks_per_hour" json:"tasks_per_hour"`
}

// Settings are the rules of one task: a repository's Config resolved
// against the Operator. They are stored with the task, so a task keeps the
// rules it started under across restarts.
type Settings struct {
	Trigger     Who        `json:"trigger"`
	Approve     Approvers  `json:"approve"`
	Protected   []string   `json:"protected"`
	AutoApprove []AutoRule `json:"auto_approve,omitempty"`
	Sandbox     Sandbox    `json:"sandbox"`
	// MemoryBytes and DiskBytes are Sandbox.Memory and Sandbox.Disk
	// parsed. A task stored before disk existed has DiskBytes 0, which a
	// runner takes as its own default.
	MemoryBytes int64 `json:"memory_bytes"`
	DiskBytes   int64 `json:"disk_bytes"`
	// Setup is the repository's setup commands as written: nil when it
	// names none, so that the defaults for the ecosystems found in the
	// tree apply; empty when it asks for none. Not omitted when empty,
	// so that a stored task keeps that difference.
	Setup []string `json:"setup"`
	// Instructions are the repository's instructions as written, nil and
	// empty kept apart as in Setup (see InstructionFiles).
	Instructions []string `json:"instructions"`
	// The fence of setup: see SetupHosts, FenceNets and ToolchainHosts.
	// FenceHosts and FenceAllowedNets are the operator's fence.hosts and
	// fence.allowed_nets, RepoSetupHosts the repository's setup_hosts
	// (each within FenceHosts), and NoToolchainHosts the operator's
	// fence.toolchain_hosts: false or the repository's
	// setup_toolchain_hosts: false (either turns them off; neither can
	// turn them on against the other). It is stored negated so that a task
	// stored before the fence existed gets the default, the toolchains'
	// hosts, as it gets the default setup and disk.
	FenceHosts       []string       `json:"fence_hosts,omitempty"`
	RepoSetupHosts   []string       `json:"setup_hosts,omitempty"`
	FenceAllowedNets []netip.Prefix `json:"fence_nets,omitempty"`
	NoToolchainHosts bool           `json:"no_toolchain_hosts,omitempty"`
	TestCommand      string         `json:"test_command,omitempty"`
	RequirePassing   string         `json:"require_passing,omitempty"`
	MaxTurns         int            `json:"max_turns"`
	MaxTokens        int            `json:"max_tokens"`
	MaxWallTime      time.Duration  `json:"max_wall_time"`
	MaxCostUSD       float64        `json:"max_cost_usd,omitempty"`
	Model            string         `json:"model"`
	Price            Price          `json:"price"`
	// Priced is set when the operator has a price for Model.
	Priced bool `json:"priced,omitempty"`
	// Profile is the operator's profile of Model.
	Profile pullwright.ModelProfile `json:"profile,omitzero"`
	// BranchPrefix starts the bot's branch names, as written (usually
	// ending in "/" or "-"); default "agent/".
	BranchPrefix string `json:"branch_prefix"`
	// Label is the issue label that starts a fix (default "pullwright").
	// A task stored before labels started tasks has "": TriggerLabel
	// reads that as the default.
	Label string `json:"label,omitempty"`
	// MCP are the MCP servers the task's agent may call (ToolServers).
	MCP []ToolServer `json:"mcp,omitempty"`
}

// TriggerLabel is the label that starts a fix under s: Label, or the
// default for settings stored before the key existed.
func (s Settings) TriggerLabel() string { return first(s.Label, DefaultLabel) }

// SetupHosts are the host patterns setup may reach besides the
// toolchains' (ToolchainHosts): the operator's, then the repository's,
// each once.
func (s Settings) SetupHosts() []string {
	var out []string
	for _, h := range append(slices.Clone(s.FenceHosts), s.RepoSetupHosts...) {
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// FenceNets are the non-public ranges setup may reach, in CIDR form.
func (s Settings) FenceNets() []string {
	var out []string
	for _, p := range s.FenceAllowedNets {
		out = append(out, p.String())
	}
	return out
}

// RunSpec is a run of command on the files in dir within these settings'
// sandbox: the image, network, memory, disk, CPUs and timeout, as the
// runner takes them. Every approved run is resolved here, whoever asks.
func (s Settings) RunSpec(dir, command string, labels map[string]string) pullwright.RunSpec {
	return pullwright.RunSpec{
		Dir: dir, Command: command, Labels: labels,
		Image: s.Sandbox.Image, Network: s.Sandbox.Network,
		Memory: s.MemoryBytes, Disk: s.DiskBytes, NanoCPUs: int64(s.Sandbox.CPUs * 1e9),
		Timeout: s.Sandbox.Timeout.D(),
	}
}

// SetupRequest is the setup the run of spec needs, for the repository
// named repo: the repository's setup and its fence, with the run's image
// and limits. base holds the files that alone may fill a shared cache
// (pullwright.SetupRequest.Base). The image's own toolchain hosts are the
// operator's to trust: a repository that names its image may widen its
// fence with them only when the image is among trusted (caps.images).
func (s Settings) SetupRequest(repo, base string, spec pullwright.RunSpec, labels map[string]string, trusted []string) pullwright.SetupRequest {
	trustedImage := s.Sandbox.Image == "" || slices.Contains(trusted, s.Sandbox.Image)
	return pullwright.SetupRequest{
		Repo: repo, Dir: spec.Dir, Base: base, Image: spec.Image, ImageTrusted: trustedImage, Setup: s.Setup,
		Hosts: s.SetupHosts(), Nets: slices.Clone(s.FenceAllowedNets),
		ToolchainHosts: s.ToolchainHosts() && trustedImage,
		Memory:         spec.Memory, Disk: spec.Disk, NanoCPUs: spec.NanoCPUs, Timeout: spec.Timeout,
		Labels: labels,
	}
}

// ToolchainHosts reports whether setup may reach the hosts the image's
// package managers are configured with.
func (s Settings) ToolchainHosts() bool { return !s.NoToolchainHosts }

// DiskCap is caps.disk in bytes: the largest workspace a sandbox is made
// with, whatever a repository asks. 0 when no cap is set.
func (o *Operator) DiskCap() int64 {
	if o == nil || o.Caps.Disk == "" {
		return 0
	}
	n, err := parseDisk(o.Caps.Disk)
	if err != nil {
		return 0 // LoadOperator refuses it; the runner's own default then holds
	}
	return n
}
