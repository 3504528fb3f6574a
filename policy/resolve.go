package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// defaultBranchPrefix starts the bot's branch names when a repository
// sets none.
const defaultBranchPrefix = "agent/"

// DefaultLabel is the issue label that starts a task when a repository
// names none.
const DefaultLabel = "pullwright"

// Resolve turns a repository's Config (nil when it has no file) into the
// Settings a task runs under: what the repository asks for, checked
// against the operator's caps, and the operator's defaults for the rest.
// A repository asking for more than the caps allow gets an *Errors naming
// its line, rather than silently less: a maintainer who wrote 16GiB would
// otherwise debug an out-of-memory test run without knowing why.
//
// A cap left at zero (possible only in an Operator built in code, since
// LoadOperator requires every cap but the cost one) means no cap.
func (o *Operator) Resolve(c *Config) (Settings, error) {
	if o == nil {
		o = DefaultOperator()
	}
	if c == nil {
		c = &Config{}
	}
	r := resolver{o: o, c: c, errs: &Errors{File: Path}}
	s := r.settings()
	if err := r.errs.err(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

type resolver struct {
	o    *Operator
	c    *Config
	errs *Errors
}

// above reports a repository value beyond the operator's cap.
func (r *resolver) above(key, value, limit string) {
	r.errs.add(r.c.Line(key), key, "%s is above this installation's cap of %s", value, limit)
}

func (r *resolver) settings() Settings {
	o, c := r.o, r.c
	var s Settings

	lowest := o.LowestPermission
	if Rank(lowest) == 0 {
		lowest = "write"
	}
	s.Trigger = r.who("trigger", c.Trigger, lowest)
	s.Approve = Approvers{Who: r.who("approve", c.Approve.Who, lowest), ExcludeRequester: c.Approve.ExcludeRequester}
	s.Protected = protectedPaths(c.ProtectedPaths)
	s.AutoApprove = slices.Clone(c.AutoApprove)
	s.TestCommand = c.TestCommand
	s.RequirePassing = strings.TrimSpace(c.RequirePassing)
	s.Setup = slices.Clone(c.Setup)
	s.Instructions = slices.Clone(c.Instructions)
	r.fence(&s)

	s.Sandbox.Image = c.Sandbox.Image
	if img := c.Sandbox.Image; img != "" && len(o.Caps.Images) > 0 && !slices.Contains(o.Caps.Images, img) {
		r.errs.add(c.Line("sandbox.image"), "sandbox.image", "%s is not one of the images this installation allows (%s)", img, strings.Join(o.Caps.Images, ", "))
	}

	s.Sandbox.Network = first(c.Sandbox.Network, o.Defaults.Network, "none")
	if s.Sandbox.Network == "bridge" && o.Caps.Network != "bridge" {
		r.errs.add(c.Line("sandbox.network"), "sandbox.network", "bridge is not allowed by this installation, whose sandboxes have no network")
	}

	s.Sandbox.Memory, s.MemoryBytes = r.size("sandbox.memory", c.Sandbox.Memory, o.Defaults.Memory, o.Caps.Memory, parseMemory)
	s.Sandbox.Disk, s.DiskBytes = r.size("sandbox.disk", c.Sandbox.Disk, o.Defaults.Disk, o.Caps.Disk, parseDisk)

	s.Sandbox.CPUs = firstNonZero(c.Sandbox.CPUs, o.Defaults.CPUs)
	if o.Caps.CPUs > 0 && s.Sandbox.CPUs > o.Caps.CPUs {
		r.above("sandbox.cpus", fmtFloat(s.Sandbox.CPUs), fmtFloat(o.Caps.CPUs))
	}
	s.Sandbox.Timeout = firstNonZero(c.Sandbox.Timeout, o.Defaults.Timeout)
	if o.Caps.Timeout > 0 && s.Sandbox.Timeout > o.Caps.Timeout {
		r.above("sandbox.timeout", fmtDuration(s.Sandbox.Timeout.D()), fmtDuration(o.Caps.Timeout.D()))
	}

	s.MaxTurns = firstNonZero(c.Budget.MaxTurns, o.Defaults.MaxTurns)
	if o.Caps.MaxTurns > 0 && s.MaxTurns > o.Caps.MaxTurns {
		r.above("budget.max_turns", fmt.Sprint(s.MaxTurns), fmt.Sprint(o.Caps.MaxTurns))
	}
	s.MaxTokens = firstNonZero(c.Budget.MaxTokens, o.Defaults.MaxTokens)
	if o.Caps.MaxTokens > 0 && s.MaxTokens > o.Caps.MaxTokens {
		r.above("budget.max_tokens", fmt.Sprint(s.MaxTokens), fmt.Sprint(o.Caps.MaxTokens))
	}
	s.MaxWallTime = firstNonZero(c.Budget.MaxWallTime, o.Defaults.MaxWallTime).D()
	if o.Caps.MaxWallTime > 0 && s.MaxWallTime > o.Caps.MaxWallTime.D() {
		r.above("budget.max_wall_time", fmtDuration(s.MaxWallTime), fmtDuration(o.Caps.MaxWallTime.D()))
	}

	s.Model = first(c.Model, o.Models.Default)
	allowed := c.Model == "" || c.Model == o.Models.Default || slices.Contains(o.Models.Allowed, c.Model)
	if !allowed {
		r.errs.add(c.Line("model"), "model", "%s is not a model this installation allows (allowed: %s)", c.Model, strings.Join(append([]string{o.Models.Default}, o.Models.Allowed...), ", "))
	}
	price, priced := o.Prices[s.Model]
	s.Price, s.Priced = price, priced
	s.Profile = o.Models.Profiles[s.Model]

	// A repository may lower the cost budget but not lift it: with a cap
	// and no default, the cap is the budget.
	s.MaxCostUSD = firstNonZero(c.Budget.MaxCostUSD, o.Defaults.MaxCostUSD, o.Caps.MaxCostUSD)
	if o.Caps.MaxCostUSD > 0 && s.MaxCostUSD > o.Caps.MaxCostUSD {
		r.above("budget.max_cost_usd", fmtUSD(s.MaxCostUSD), fmtUSD(o.Caps.MaxCostUSD))
	}
	if s.MaxCostUSD > 0 && !priced && s.Model != "" && allowed {
		key := "model"
		if c.Model == "" && c.Budget.MaxCostUSD > 0 {
			key = "budget.max_cost_usd"
		}
		r.errs.add(c.Line(key), key, "a cost budget of %s cannot be enforced: this installation has no price for the model %s", fmtUSD(s.MaxCostUSD), s.Model)
	}

	s.BranchPrefix = first(c.BranchPrefix, defaultBranchPrefix)
	s.Label = first(c.Label, DefaultLabel)
	return s
}

// fence resolves where setup may connect: the operator's fence, the
// repository's setup_hosts, each of which must be within the operator's
// hosts or repository_hosts, and its setup_toolchain_hosts, which may
// turn the image's toolchains' hosts off. A repository may ask for hosts
// only from those lists, never widen them: each allowed host is a way
// out for what setup can read.
func (r *resolver) fence(s *Settings) {
	o, c := r.o, r.c
	s.FenceHosts = slices.Clone(o.Fence.Hosts)
	// The repository may turn the toolchains' hosts off, never on.
	s.NoToolchainHosts = !o.Fence.ToolchainHosts
	if on := c.SetupToolchainHosts; on != nil {
		switch {
		case !*on:
			s.NoToolchainHosts = true
		case !o.Fence.ToolchainHosts:
			const k = "setup_toolchain_hosts"
			r.errs.add(c.Line(k), k, "true is not allowed: this installation's setup reaches only the hosts it lists (its fence.toolchain_hosts is false); leave the key out")
		}
	}
	for _, n := range o.Fence.AllowedNets {
		// LoadOperator refuses a bad one; one in an Operator built in
		// code is left out, which only narrows what setup reaches.
		if p, problem := parseAllowedNet(n); problem == "" {
			s.FenceAllowedNets = append(s.FenceAllowedNets, p)
		}
	}
	s.RepoSetupHosts = slices.Clone(c.SetupHosts)
	allowed := append(slices.Clone(o.Fence.Hosts), o.Fence.RepositoryHosts...)
	for i, h := range c.SetupHosts {
		k := fmt.Sprintf("setup_hosts[%d]", i)
		switch {
		case hostWithin(h, allowed):
		case len(allowed) == 0:
			r.errs.add(c.Line(k), k, "%s is not allowed: this installation lists no hosts for setup, so a repository can add none", h)
		case len(o.Fence.Hosts) == 0:
			// repository_hosts are not named to every repository: one
			// team's registry is no other's business.
			r.errs.add(c.Line(k), k, "%s is not within the hosts this installation allows for setup", h)
		default:
			more := ""
			if len(o.Fence.RepositoryHosts) > 0 {
				more = ", or others it allows on request"
			}
			r.errs.add(c.Line(k), k, "%s is not within the hosts this installation allows for setup (%s%s)", h, strings.Join(o.Fence.Hosts, ", "), more)
		}
	}
}

// size resolves a size setting: the repository's value, else the
// operator's default, checked against the cap. It returns the value as
// written and in bytes; "" and 0 when neither sets it, which only an
// Operator built in code can do.
func (r *resolver) size(key, repo, def, limit string, parse func(string) (int64, error)) (string, int64) {
	v := first(repo, def)
	if v == "" {
		return "", 0
	}
	n, err := parse(v)
	if err != nil {
		// Load and LoadOperator have checked it; an Operator built in
		// code may not have been.
		r.errs.add(r.c.Line(key), key, "%s", err.Error())
	} else if capN, err := parse(limit); err == nil && n > capN {
		r.above(key, v, limit)
	}
	return v, n
}

// who resolves a trigger or approve rule: the permission defaults to
// write, or to the operator's lowest permission when that is higher, and
// a repository may not go below the operator's lowest.
func (r *resolver) who(path string, w Who, lowest string) Who {
	out := Who{Permission: w.Permission, Users: slices.Clone(w.Users), Teams: slices.Clone(w.Teams)}
	if out.Permission == "" {
		out.Permission = "write"
		if Rank(lowest) > Rank(out.Permission) {
			out.Permission = lowest
		}
		return out
	}
	if Rank(out.Permission) < Rank(lowest) {
		key := path + ".permission"
		r.errs.add(r.c.Line(key), key, "%s is below the lowest permission this installation lets trigger or approve (%s)", out.Permission, lowest)
	}
	return out
}

// protectedPaths is the repository's list, or the defaults, and in either
// case the paths no repository can open: its workflows (which run with
// its secrets) and this configuration file (which decides what the agent
// may do). Duplicates are dropped as ProtectedBy would see them.
func protectedPaths(repo []string) []string {
	list := repo
	if list == nil {
		list = DefaultProtected
	}
	out := make([]string, 0, len(list)+len(AlwaysProtected))
	seen := map[string]bool{}
	for _, g := range append(slices.Clone(list), AlwaysProtected...) {
		k := strings.ToLower(strings.Trim(g, "/"))
		if !seen[k] {
			seen[k] = true
			out = append(out, g)
		}
	}
	return out
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstNonZero[T int | float64 | Duration](vals ...T) T {
	for _, v := range vals {
		if v != 0 {
			return v
		}
	}
	return 0
}

// fmtDuration writes 1h rather than time's 1h0m0s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
