package policy

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	units "github.com/docker/go-units"

	"github.com/pullwright/pullwright"
)

// Load decodes a repository's .github/pullwright.yml strictly. An empty
// file (or one with only comments) is a zero Config. Otherwise every
// problem is reported, with its line and key, as an *Errors: unknown keys,
// wrong types, values out of range, duplicate keys and YAML syntax errors.
func Load(data []byte) (*Config, error) {
	errs := &Errors{File: Path}
	c := &Config{lines: map[string]int{}}
	if root := parseYAML(data, errs); root != nil {
		d := decoder{errs: errs, lines: c.lines}
		d.decodeDocument(root, c)
		c.validate(errs)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// Line returns the line key (a dotted path such as "sandbox.memory") was
// written on, or 0 if the file does not set it.
func (c *Config) Line(key string) int {
	if c == nil {
		return 0
	}
	return c.lines[key]
}

func (c *Config) validate(errs *Errors) {
	at := func(key string) int { return c.lines[key] }
	for key, v := range map[string]string{
		"trigger.permission": c.Trigger.Permission, "approve.permission": c.Approve.Permission,
		"sandbox.network": c.Sandbox.Network, "model": c.Model, "branch_prefix": c.BranchPrefix,
		"label": c.Label,
	} {
		// "" is how Config says "not set"; written out, it is a mistake
		// (a value lost in editing) that would silently mean the default.
		if v == "" && at(key) > 0 {
			errs.add(at(key), key, "is empty; write a value, or leave the key out to use the default")
		}
	}
	checkWho(errs, at, "trigger", c.Trigger)
	for i, name := range c.MCP {
		if k := fmt.Sprintf("mcp[%d]", i); !mcpNameRE.MatchString(name) {
			errs.add(at(k), k, "%q is not an MCP server's name", shorten(name, 40))
		}
	}
	checkWho(errs, at, "approve", c.Approve.Who)
	for i, g := range c.ProtectedPaths {
		if k := fmt.Sprintf("protected_paths[%d]", i); at(k) > 0 && !ValidGlob(g) {
			errs.add(at(k), k, "%q is not a valid glob (use * within a directory, ** across directories)", shorten(g, 80))
		}
	}
	for i, r := range c.AutoApprove {
		if k := fmt.Sprintf("auto_approve[%d]", i); at(k) > 0 {
			checkAutoRule(errs, at, k, r)
		}
	}
	checkSetup(errs, at, c.Setup)
	checkInstructions(errs, at, c.Instructions)
	if len(c.SetupHosts) > maxSetupHosts {
		errs.add(at("setup_hosts"), "setup_hosts", "has %d hosts; at most %d (a wildcard such as *.mirror.example covers many)", len(c.SetupHosts), maxSetupHosts)
	}
	checkHostPatterns(errs, at, "setup_hosts", c.SetupHosts)
	checkImage(errs, at, "sandbox.image", c.Sandbox.Image)
	checkNetwork(errs, at, "sandbox.network", c.Sandbox.Network)
	checkSize(errs, at, "sandbox.memory", c.Sandbox.Memory, parseMemory)
	checkSize(errs, at, "sandbox.disk", c.Sandbox.Disk, parseDisk)
	if c.Sandbox.CPUs < 0 || (c.Sandbox.CPUs == 0 && at("sandbox.cpus") > 0) {
		errs.add(at("sandbox.cpus"), "sandbox.cpus", "%v is not a CPU quota: it must be more than 0 (e.g. 1.5)", c.Sandbox.CPUs)
	}
	checkCount(errs, at, "budget.max_turns", c.Budget.MaxTurns)
	checkCount(errs, at, "budget.max_tokens", c.Budget.MaxTokens)
	if c.Budget.MaxCostUSD < 0 || (c.Budget.MaxCostUSD == 0 && at("budget.max_cost_usd") > 0) {
		errs.add(at("budget.max_cost_usd"), "budget.max_cost_usd", "%v is not a budget: it must be more than 0 (leave it out to use the installation's default)", c.Budget.MaxCostUSD)
	}
	if c.Model != "" && !validModel(c.Model) {
		errs.add(at("model"), "model", "%q is not a model name", shorten(c.Model, 80))
	}
	if c.BranchPrefix != "" {
		if why := branchPrefixProblem(c.BranchPrefix); why != "" {
			errs.add(at("branch_prefix"), "branch_prefix", "%q cannot start a branch name: %s", shorten(c.BranchPrefix, 80), why)
		}
	}
	if strings.ContainsRune(c.TestCommand, 0) {
		errs.add(at("test_command"), "test_command", "contains a NUL character")
	}
	if at("require_passing") > 0 {
		// It is shown to approvers like any command, so it must be one
		// that can be shown faithfully.
		if strings.TrimSpace(c.RequirePassing) == "" {
			errs.add(at("require_passing"), "require_passing", "is empty; write the command that must pass, or leave the key out")
		} else if err := CheckCommand(c.RequirePassing); err != nil {
			errs.add(at("require_passing"), "require_passing", "%v", err)
		}
	}
	if c.Label != "" {
		if why := labelProblem(c.Label); why != "" {
			errs.add(at("label"), "label", "%q cannot be a label: %s", shorten(c.Label, 80), why)
		}
	}
}

// maxLabel is the longest label name GitHub accepts, in characters.
const maxLabel = 50

// labelProblem says why name can never be the name of a GitHub label, or
// "". A label that cannot exist would leave the trigger silently unusable.
func labelProblem(name string) string {
	switch {
	case utf8.RuneCountInString(name) > maxLabel:
		return fmt.Sprintf("GitHub's labels have at most %d characters", maxLabel)
	case strings.TrimSpace(name) != name:
		// GitHub trims a label's name, so the name as written would never
		// be the one a delivery carries.
		return "it starts or ends with white space"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "it holds a control character"
	}
	return ""
}

// permissions are GitHub's repository roles, lowest first.
var permissions = []string{"read", "triage", "write", "maintain", "admin"}

// Rank orders repository roles: 0 for none or a role it does not know
// (a custom role is not trusted until the operator maps it), then read 1,
// triage 2, write 3, maintain 4, admin 5.
func Rank(role string) int {
	for i, p := range permissions {
		if strings.EqualFold(role, p) {
			return i + 1
		}
	}
	return 0
}

func checkPermission(errs *Errors, line int, key, p string) {
	if p == "" || Rank(p) > 0 && p == strings.ToLower(p) {
		return
	}
	msg := fmt.Sprintf("%q is not a permission; use one of %s", shorten(p, 40), strings.Join(permissions, ", "))
	if s := suggest(p, permissions); s != "" {
		msg = fmt.Sprintf("%q is not a permission; did you mean %s?", shorten(p, 40), s)
	}
	errs.add(line, key, "%s", msg)
}

var (
	loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$`)
	teamRE  = regexp.MustCompile(`^(?:[A-Za-z0-9][A-Za-z0-9-]{0,38}/)?[A-Za-z0-9_.-]{1,100}$`)
)

func checkWho(errs *Errors, at func(string) int, path string, w Who) {
	checkPermission(errs, at(path+".permission"), path+".permission", w.Permission)
	for i, u := range w.Users {
		k := fmt.Sprintf("%s.users[%d]", path, i)
		switch {
		case at(k) == 0:
			// not decoded; reported already
		case strings.HasPrefix(u, "@"):
			errs.add(at(k), k, "write the login without @: %s", shorten(u[1:], 40))
		case !loginRE.MatchString(u):
			errs.add(at(k), k, "%q is not a GitHub login", shorten(u, 40))
		}
	}
	for i, t := range w.Teams {
		k := fmt.Sprintf("%s.teams[%d]", path, i)
		switch {
		case at(k) == 0:
		case strings.HasPrefix(t, "@"):
			errs.add(at(k), k, "write the team without @: %s", shorten(t[1:], 60))
		case !teamRE.MatchString(t):
			errs.add(at(k), k, "%q is not a team; write org/team-slug, or team-slug for a team of the repository's owner", shorten(t, 60))
		}
	}
}

func checkAutoRule(errs *Errors, at func(string) int, path string, r AutoRule) {
	line := at(path)
	cmd, pat := strings.TrimSpace(r.Command), r.Pattern
	switch {
	case cmd == "" && pat == "":
		errs.add(line, path, "needs a command (the exact command) or a pattern (a regular expression for the whole command)")
	case cmd != "" && pat != "":
		errs.add(line, path, "has both command and pattern; write two entries")
	case pat != "":
		if _, err := compileRule(pat); err != nil {
			errs.add(at(path+".pattern"), path+".pattern", "%q is not a regular expression: %s", shorten(pat, 80), strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
}

// Bounds of setup: a few commands a maintainer reads whole where they
// are shown, not a build script.
const (
	maxSetupSteps = 10
	maxSetupBytes = 4096
)

// checkSetup holds setup's commands to what an approved command is held
// to (CheckCommand): they run without a per-command approval, on the
// strength of being shown, so what is shown must be what runs.
func checkSetup(errs *Errors, at func(string) int, setup []string) {
	if len(setup) > maxSetupSteps {
		errs.add(at("setup"), "setup", "has %d commands; at most %d (join related ones with &&)", len(setup), maxSetupSteps)
	}
	for i, cmd := range setup {
		k := fmt.Sprintf("setup[%d]", i)
		if at(k) == 0 {
			continue // not decoded; reported already
		}
		switch {
		case strings.TrimSpace(cmd) == "":
			errs.add(at(k), k, "is empty; write a command, or remove the entry")
		case len(cmd) > maxSetupBytes:
			errs.add(at(k), k, "is %d bytes; a setup command is at most %d", len(cmd), maxSetupBytes)
		default:
			if err := CheckCommand(cmd); err != nil {
				errs.add(at(k), k, "%s", err.Error())
			}
		}
	}
}

// maxSetupHosts bounds setup_hosts: the hosts a repository's setup needs
// beyond the installation's are a few, and each is shown where setup's
// outcome is.
const maxSetupHosts = 20

// checkHostPatterns reports the entries of the list at key that are not
// host patterns the fence reads.
func checkHostPatterns(errs *Errors, at func(string) int, key string, hosts []string) {
	for i, h := range hosts {
		k := fmt.Sprintf("%s[%d]", key, i)
		if at(k) == 0 {
			continue // not decoded; reported already
		}
		if _, problem := parseHostPattern(h); problem != "" {
			errs.add(at(k), k, "%s", problem)
		}
	}
}

func checkImage(errs *Errors, at func(string) int, key, image string) {
	if image == "" && at(key) == 0 {
		return
	}
	if image == "" || strings.HasPrefix(image, "-") || strings.IndexFunc(image, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		errs.add(at(key), key, "%q is not an image name (like golang:1.26 or ghcr.io/org/image:tag)", shorten(image, 80))
	}
}

func checkNetwork(errs *Errors, at func(string) int, key, network string) {
	if network != "" && network != "none" && network != "bridge" {
		errs.add(at(key), key, "%q is not a network; use none (no network, the default) or bridge", shorten(network, 40))
	}
}

// checkSize reports a size key that parse refuses. Like every key, an
// absent one is "not set"; a written empty one is reported.
func checkSize(errs *Errors, at func(string) int, key, size string, parse func(string) (int64, error)) {
	if size == "" && at(key) == 0 {
		return
	}
	if _, err := parse(size); err != nil {
		errs.add(at(key), key, "%s", err.Error())
	}
}

func checkCount(errs *Errors, at func(string) int, key string, n int) {
	if n < 0 || (n == 0 && at(key) > 0) {
		errs.add(at(key), key, "%d is not a limit: it must be at least 1 (leave it out to use the default)", n)
	}
}

// sizeRE is the size syntax documented in the schema. go-units accepts a
// little more ("1.2.3", hexadecimal floats), which nobody means.
var sizeRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)? ?([kKmMgGtTpP]([iI]?[bB])?|[bB])?$`)

// minMemory is Docker's lower bound for a container's memory limit.
const minMemory = 6 << 20

// minDisk is the smallest workspace a repository may ask for. A tmpfs
// mounted with size=0 has no limit at all, so a size that rounds down to
// nothing must never get through; 1MiB is below any real checkout.
const minDisk = 1 << 20

// parseMemory reads a memory limit: a size (see parseSize) that Docker
// accepts for docker run --memory.
func parseMemory(s string) (int64, error) {
	n, err := parseSize(s)
	if err != nil {
		return 0, err
	}
	if n < minMemory {
		return 0, fmt.Errorf("%q is too small: a container needs at least 6MiB", s)
	}
	return n, nil
}

// parseDisk reads the size of the sandbox's workspace: a size (see
// parseSize) of at least minDisk.
func parseDisk(s string) (int64, error) {
	n, err := parseSize(s)
	if err != nil {
		return 0, err
	}
	if n < minDisk {
		return 0, fmt.Errorf("%q is too small: the workspace needs at least 1MiB", s)
	}
	return n, nil
}

// parseSize reads a size such as "2GiB", "512MiB" or "2g". Units are
// binary whatever their spelling, as for docker run --memory, so that
// memory and disk, written alike, mean alike.
func parseSize(s string) (int64, error) {
	notSize := fmt.Errorf("%q is not a size (write it like 2GiB or 512MiB)", shorten(s, 40))
	if !sizeRE.MatchString(s) {
		return 0, notSize
	}
	// RAMInBytes converts a float to int64, which wraps (or saturates,
	// depending on the CPU) above 8EiB; nobody means that much, so
	// refuse it first.
	digits := strings.TrimRight(s, "kKmMgGtTpPiIbB ")
	num, _ := strconv.ParseFloat(digits, 64)
	if unit := strings.TrimLeft(s[len(digits):], " "); unit != "" {
		num *= math.Pow(1024, float64(strings.IndexByte("bkmgtp", lower(unit[0]))))
	}
	if num >= 1<<62 {
		return 0, fmt.Errorf("%q is too large", shorten(s, 40))
	}
	n, err := units.RAMInBytes(s)
	if err != nil || n < 0 {
		return 0, notSize
	}
	return n, nil
}

// modelRE admits the names OpenAI-compatible servers use: "gpt-4.1-mini",
// "llama3.1:8b", "openrouter/anthropic/claude-3.5", "org@model+v2".
var modelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$`)

// maxPrice bounds a price, USD per million tokens.
const maxPrice = 1e6

func validModel(m string) bool { return modelRE.MatchString(m) }

// branchPrefixProblem applies git check-ref-format's rules to the start of
// a branch name; "" means the prefix is fine.
func branchPrefixProblem(p string) string {
	switch {
	case len(p) > 100:
		return "it is longer than 100 characters"
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "-"), strings.HasPrefix(p, "."):
		return "it may not start with " + p[:1]
	case strings.Contains(p, ".."):
		return "it may not contain .."
	case strings.Contains(p, "@{"):
		return "it may not contain @{"
	case strings.Contains(p, "//"):
		return "it may not contain //"
	case strings.Contains(p, "/."):
		return "no part between slashes may start with ."
	case strings.Contains(p, ".lock/"):
		return "no part between slashes may end with .lock"
	case p == "@":
		return "it may not be @"
	}
	for _, r := range p {
		switch {
		case r <= ' ' || r == 0x7f:
			return "it may not contain spaces or control characters"
		case strings.ContainsRune("~^:?*[\\", r):
			return fmt.Sprintf("it may not contain %c", r)
		}
	}
	return ""
}

// DefaultOperator is the operator configuration when no file is given:
// no network, modest sandboxes, and caps a single machine can bear.
func DefaultOperator() *Operator {
	return &Operator{
		Models: Models{Default: "gpt-4.1-mini"},
		Defaults: Limits{
			Network:     "none",
			Memory:      "2GiB",
			Disk:        "2GiB",
			CPUs:        2,
			Timeout:     Duration(10 * time.Minute),
			MaxTurns:    40,
			MaxTokens:   4_000_000, // MaxTurns requests at the agent's default context budget, 96k
			MaxWallTime: Duration(2 * time.Hour),
		},
		// Disk's cap is its default, unlike memory's: what a command
		// writes to its tmpfs workspace also counts against its memory,
		// so more disk than the default memory buys little, while the
		// engine's copy of the files, outside that limit, is bounded
		// only by this cap (Operator.DiskCap, the runner's largest
		// workspace).
		Caps: Limits{
			Network:     "none",
			Memory:      "8GiB",
			Disk:        "2GiB",
			CPUs:        4,
			Timeout:     Duration(time.Hour),
			MaxTurns:    200,
			MaxTokens:   20_000_000, // MaxTurns at the same 96k a request
			MaxWallTime: Duration(24 * time.Hour),
		},
		Rate:             Rate{ConcurrentTasks: 5, TasksPerHour: 30},
		LowestPermission: "write",
		// The toolchains' hosts are what the image was built to use;
		// nothing else is open until the operator names it.
		Fence:  Fence{ToolchainHosts: true},
		Caches: Caches{Keep: 3, RepoSize: "10GiB", HostSize: "50GiB"},
		lines:  map[string]int{},
	}
}

// LoadOperator decodes the operator's file as strictly as Load does a
// repository's, over DefaultOperator: a key the file does not set keeps
// its default. The *Errors it returns has an empty File; the caller, who
// knows the file's name, may set it.
func LoadOperator(data []byte) (*Operator, error) {
	errs := &Errors{}
	o := DefaultOperator()
	if root := parseYAML(data, errs); root != nil {
		d := decoder{errs: errs, lines: o.lines}
		d.decodeDocument(root, o)
		o.validate(errs)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *Operator) validate(errs *Errors) {
	at := func(key string) int { return o.lines[key] }
	for i, id := range o.Installations {
		if k := fmt.Sprintf("installations[%d]", i); at(k) > 0 && id <= 0 {
			errs.add(at(k), k, "%d is not an installation id", id)
		}
	}
	for i, org := range o.Organizations {
		if k := fmt.Sprintf("organizations[%d]", i); at(k) > 0 && (!loginRE.MatchString(org) || strings.HasSuffix(org, "]")) {
			errs.add(at(k), k, "%q is not an organization or user name", shorten(org, 40))
		}
	}
	for i, b := range o.AllowedBots {
		if k := fmt.Sprintf("allowed_bots[%d]", i); at(k) > 0 && !loginRE.MatchString(b) {
			errs.add(at(k), k, "%q is not a login (a bot's login looks like renovate[bot])", shorten(b, 40))
		}
	}
	if !validModel(o.Models.Default) {
		errs.add(at("models.default"), "models.default", "%q is not a model name", shorten(o.Models.Default, 80))
	}
	for i, m := range o.Models.Allowed {
		if k := fmt.Sprintf("models.allowed[%d]", i); at(k) > 0 && !validModel(m) {
			errs.add(at(k), k, "%q is not a model name", shorten(m, 80))
		}
	}
	for _, m := range slices.Sorted(maps.Keys(o.Prices)) {
		p, k := o.Prices[m], "prices["+strconv.Quote(m)+"]"
		if !validModel(m) {
			errs.add(at(k), k, "%q is not a model name", shorten(m, 80))
		}
		for _, f := range []struct {
			name  string
			price float64
		}{{"input", p.Input}, {"output", p.Output}, {"cached_input", p.CachedInput}} {
			switch {
			case f.price < 0:
				errs.add(at(k+"."+f.name), k+"."+f.name, "a price cannot be negative")
			case f.price > maxPrice:
				// Beyond any model's price: a typo, and one call would
				// cost more than a float counts (+Inf in the metrics).
				errs.add(at(k+"."+f.name), k+"."+f.name, "%v USD per million tokens is more than %v: a price is per million tokens", f.price, maxPrice)
			}
		}
	}
	for _, m := range slices.Sorted(maps.Keys(o.Models.Profiles)) {
		checkProfile(errs, at, "models.profiles["+strconv.Quote(m)+"]", m, o.Models.Profiles[m])
	}
	o.validateMCP(errs, at)
	o.validateLimits(errs, "defaults", o.Defaults)
	o.validateLimits(errs, "caps", o.Caps)
	if len(o.Defaults.Images) > 0 {
		errs.add(at("defaults.images"), "defaults.images", "images belong under caps (the images a repository may name); the default image is the runner's choice")
	}
	for i := range o.Caps.Images {
		if k := fmt.Sprintf("caps.images[%d]", i); at(k) > 0 {
			checkImage(errs, at, k, o.Caps.Images[i])
		}
	}
	o.validateDefaultsWithinCaps(errs)
	if o.Defaults.MaxCostUSD > 0 || o.Caps.MaxCostUSD > 0 {
		for _, m := range append([]string{o.Models.Default}, o.Models.Allowed...) {
			if _, ok := o.Prices[m]; !ok && validModel(m) {
				errs.add(at("prices"), "prices", "no price for %s, so a cost budget cannot be enforced for it; add prices.%s (input and output, USD per million tokens)", m, m)
			}
		}
	}
	if o.Rate.ConcurrentTasks < 1 {
		errs.add(at("rate.concurrent_tasks"), "rate.concurrent_tasks", "must be at least 1")
	}
	if o.Rate.TasksPerHour < 1 {
		errs.add(at("rate.tasks_per_hour"), "rate.tasks_per_hour", "must be at least 1")
	}
	checkHostPatterns(errs, at, "fence.hosts", o.Fence.Hosts)
	checkHostPatterns(errs, at, "fence.repository_hosts", o.Fence.RepositoryHosts)
	checkParentProxy(errs, at, o.Fence)
	if o.Caches.Keep < 1 {
		errs.add(at("caches.keep"), "caches.keep", "must be at least 1")
	}
	var sizes [2]int64
	for i, k := range []string{"caches.repo_size", "caches.host_size"} {
		v := []string{o.Caches.RepoSize, o.Caches.HostSize}[i]
		if v == "" {
			continue
		}
		n, err := parseSize(v)
		if err != nil {
			errs.add(at(k), k, "%v", err)
		} else if n == 0 {
			errs.add(at(k), k, "a cap of 0 would keep no cache; leave it out, or write \"\", for no cap")
		}
		sizes[i] = n
	}
	if sizes[0] > 0 && sizes[1] > 0 && sizes[0] > sizes[1] {
		errs.add(at("caches.repo_size"), "caches.repo_size", "is larger than caches.host_size, which caps every repository's caches together")
	}
	for i, n := range o.Fence.AllowedNets {
		if k := fmt.Sprintf("fence.allowed_nets[%d]", i); at(k) > 0 {
			if _, problem := parseAllowedNet(n); problem != "" {
				errs.add(at(k), k, "%s", problem)
			}
		}
	}
	if o.LowestPermission == "" {
		errs.add(at("lowest_permission"), "lowest_permission", "must be one of %s", strings.Join(permissions, ", "))
	} else {
		checkPermission(errs, at("lowest_permission"), "lowest_permission", o.LowestPermission)
	}
}

func (o *Operator) validateLimits(errs *Errors, path string, l Limits) {
	at := func(key string) int { return o.lines[key] }
	if l.Network == "" {
		errs.add(at(path+".network"), path+".network", "must be none or bridge")
	}
	checkNetwork(errs, at, path+".network", l.Network)
	if _, err := parseMemory(l.Memory); err != nil {
		errs.add(at(path+".memory"), path+".memory", "%s", err.Error())
	}
	if _, err := parseDisk(l.Disk); err != nil {
		errs.add(at(path+".disk"), path+".disk", "%s", err.Error())
	}
	if !(l.CPUs > 0) {
		errs.add(at(path+".cpus"), path+".cpus", "must be more than 0")
	}
	if l.Timeout <= 0 {
		errs.add(at(path+".timeout"), path+".timeout", "must be a positive duration like 10m")
	}
	if l.MaxTurns < 1 {
		errs.add(at(path+".max_turns"), path+".max_turns", "must be at least 1")
	}
	if l.MaxTokens < 1 {
		errs.add(at(path+".max_tokens"), path+".max_tokens", "must be at least 1")
	}
	if l.MaxWallTime <= 0 {
		errs.add(at(path+".max_wall_time"), path+".max_wall_time", "must be a positive duration like 2h")
	}
	if l.MaxCostUSD < 0 {
		errs.add(at(path+".max_cost_usd"), path+".max_cost_usd", "cannot be negative (0 means no limit)")
	}
}

// validateDefaultsWithinCaps compares only caps that are valid, which
// validateLimits has reported otherwise. It names the default's line when the file sets
// it (the usual mistake: a lower cap, and the built-in default left above
// it), else the cap's.
func (o *Operator) validateDefaultsWithinCaps(errs *Errors) {
	d, c := o.Defaults, o.Caps
	above := func(key, def, limit string) {
		line := o.lines["defaults."+key]
		if line == 0 {
			line = o.lines["caps."+key]
		}
		errs.add(line, "defaults."+key, "%s is above caps.%s (%s); lower the default or raise the cap", def, key, limit)
	}
	if networkRank(d.Network) > networkRank(c.Network) {
		above("network", d.Network, c.Network)
	}
	dm, err1 := parseMemory(d.Memory)
	cm, err2 := parseMemory(c.Memory)
	if err1 == nil && err2 == nil && dm > cm {
		above("memory", d.Memory, c.Memory)
	}
	dd, err1 := parseDisk(d.Disk)
	cd, err2 := parseDisk(c.Disk)
	if err1 == nil && err2 == nil && dd > cd {
		above("disk", d.Disk, c.Disk)
	}
	if c.CPUs > 0 && d.CPUs > c.CPUs {
		above("cpus", fmtFloat(d.CPUs), fmtFloat(c.CPUs))
	}
	if c.Timeout > 0 && d.Timeout > c.Timeout {
		above("timeout", d.Timeout.String(), c.Timeout.String())
	}
	if c.MaxTurns > 0 && d.MaxTurns > c.MaxTurns {
		above("max_turns", strconv.Itoa(d.MaxTurns), strconv.Itoa(c.MaxTurns))
	}
	if c.MaxTokens > 0 && d.MaxTokens > c.MaxTokens {
		above("max_tokens", strconv.Itoa(d.MaxTokens), strconv.Itoa(c.MaxTokens))
	}
	if c.MaxWallTime > 0 && d.MaxWallTime > c.MaxWallTime {
		above("max_wall_time", d.MaxWallTime.String(), c.MaxWallTime.String())
	}
	if c.MaxCostUSD > 0 && d.MaxCostUSD > c.MaxCostUSD {
		above("max_cost_usd", fmtUSD(d.MaxCostUSD), fmtUSD(c.MaxCostUSD))
	}
}

func networkRank(n string) int {
	if n == "bridge" {
		return 1
	}
	return 0
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func fmtUSD(f float64) string { return "$" + strconv.FormatFloat(f, 'f', 2, 64) }

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// checkProfile checks the operator's profile p of model m, at key k.
func checkProfile(errs *Errors, at func(string) int, k, m string, p pullwright.ModelProfile) {
	if !validModel(m) {
		errs.add(at(k), k, "%q is not a model name", shorten(m, 80))
	}
	if p.ContextWindow < 0 || (p.ContextWindow == 0 && at(k+".context_window") > 0) {
		errs.add(at(k+".context_window"), k+".context_window", "must be a number of tokens above 0 (e.g. 128000)")
	}
	if p.ContextShare < 0 || p.ContextShare > 1 || (p.ContextShare == 0 && at(k+".context_share") > 0) {
		errs.add(at(k+".context_share"), k+".context_share", "must be above 0 and at most 1 (e.g. 0.8: requests fill at most 80%% of the window)")
	}
	if p.MaxOutputTokens < 0 {
		errs.add(at(k+".max_output_tokens"), k+".max_output_tokens", "cannot be negative")
	}
	if v := p.TokenParameter; v != "" && v != "max_tokens" && v != "max_completion_tokens" {
		errs.add(at(k+".token_parameter"), k+".token_parameter", "%q is neither max_tokens nor max_completion_tokens", shorten(v, 40))
	}
	if v := p.SystemRole; v != "" && v != "system" && v != "developer" {
		errs.add(at(k+".system_role"), k+".system_role", "%q is neither system nor developer", shorten(v, 40))
	}
	if v := p.ReasoningEffort; v != "" && !validModel(v) {
		errs.add(at(k+".reasoning_effort"), k+".reasoning_effort", "%q is not an effort (low, medium, high)", shorten(v, 40))
	}
	if v := p.Deployment; v != "" && !validModel(v) {
		errs.add(at(k+".deployment"), k+".deployment", "%q is not a deployment name", shorten(v, 80))
	}
}
