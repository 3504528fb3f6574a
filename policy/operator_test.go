package policy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http/httpproxy"
)

func TestDefaultOperator(t *testing.T) {
	o := DefaultOperator()
	want := &Operator{
		Models: Models{Default: "gpt-4.1-mini"},
		Defaults: Limits{Network: "none", Memory: "2GiB", Disk: "2GiB", CPUs: 2, Timeout: Duration(10 * time.Minute),
			MaxTurns: 40, MaxTokens: 4000000, MaxWallTime: Duration(2 * time.Hour)},
		Caps: Limits{Network: "none", Memory: "8GiB", Disk: "2GiB", CPUs: 4, Timeout: Duration(time.Hour),
			MaxTurns: 200, MaxTokens: 20000000, MaxWallTime: Duration(24 * time.Hour)},
		Rate:             Rate{ConcurrentTasks: 5, TasksPerHour: 30},
		LowestPermission: "write",
		Fence:            Fence{ToolchainHosts: true},
		Caches:           Caches{Keep: 3, RepoSize: "10GiB", HostSize: "50GiB"},
		lines:            map[string]int{},
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("DefaultOperator() =\n%+v\nwant\n%+v", o, want)
	}
	// Each call is a fresh value: changing one must not change the next.
	o.Caps.Images = append(o.Caps.Images, "x")
	if len(DefaultOperator().Caps.Images) != 0 {
		t.Error("DefaultOperator shares state between calls")
	}
	// The defaults pass the checks a file is held to.
	errs := &Errors{}
	DefaultOperator().validate(errs)
	if err := errs.err(); err != nil {
		t.Errorf("DefaultOperator does not validate: %v", err)
	}
}

func TestLoadOperatorOverlaysDefaults(t *testing.T) {
	o, err := LoadOperator([]byte(`
installations: [42, 43]
organizations: [acme]
allowed_bots: ["renovate[bot]", dependabot]
models:
  allowed: [gpt-4.1, o3]
prices:
  gpt-4.1-mini: {input: 0.4, output: 1.6}
  gpt-4.1: {input: 2, output: 8}
  o3: {input: 2, output: 8}
defaults:
  memory: 1GiB
  disk: 512MiB
  max_cost_usd: 1
caps:
  network: bridge
  images: [golang:1.26, node:22]
  disk: 4GiB
  max_cost_usd: 5
rate:
  tasks_per_hour: 10
lowest_permission: maintain
fence:
  hosts: ["*.mirror.test", "git.corp.test:8443"]
  allowed_nets: [10.20.0.0/16, "fd00:1::/64"]
  toolchain_hosts: false
  parent_proxy: "http://fence:pass@proxy.corp.test:3128"
  parent_no_proxy: [corp.test, 10.0.0.0/8]
caches:
  keep: 2
  repo_size: 2GiB
  host_size: ""
`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultOperator()
	want.Installations = []int64{42, 43}
	want.Organizations = []string{"acme"}
	want.AllowedBots = []string{"renovate[bot]", "dependabot"}
	want.Models.Allowed = []string{"gpt-4.1", "o3"}
	want.Prices = map[string]Price{"gpt-4.1-mini": {Input: 0.4, Output: 1.6}, "gpt-4.1": {Input: 2, Output: 8}, "o3": {Input: 2, Output: 8}}
	want.Defaults.Memory = "1GiB"
	want.Defaults.Disk = "512MiB"
	want.Caps.Disk = "4GiB"
	want.Defaults.MaxCostUSD = 1
	want.Caps.Network = "bridge"
	want.Caps.Images = []string{"golang:1.26", "node:22"}
	want.Caps.MaxCostUSD = 5
	want.Rate.TasksPerHour = 10
	want.LowestPermission = "maintain"
	want.Fence = Fence{Hosts: []string{"*.mirror.test", "git.corp.test:8443"}, AllowedNets: []string{"10.20.0.0/16", "fd00:1::/64"},
		ParentProxy: "http://fence:pass@proxy.corp.test:3128", ParentNoProxy: []string{"corp.test", "10.0.0.0/8"}}
	want.Caches = Caches{Keep: 2, RepoSize: "2GiB"}
	o.lines, want.lines = nil, nil
	if !reflect.DeepEqual(o, want) {
		t.Errorf("got\n%+v\nwant\n%+v", o, want)
	}
	if keep, repo, host := o.CacheLimits(); keep != 2 || repo != 2<<30 || host != 0 {
		t.Errorf("CacheLimits() = %d, %d, %d; want 2, 2GiB, no cap", keep, repo, host)
	}
}

func TestLoadOperatorEmpty(t *testing.T) {
	for _, in := range []string{"", "# defaults\n", "defaults:\ncaps:\n"} {
		o, err := LoadOperator([]byte(in))
		if err != nil {
			t.Fatalf("LoadOperator(%q): %v", in, err)
		}
		o.lines = nil
		want := DefaultOperator()
		want.lines = nil
		if !reflect.DeepEqual(o, want) {
			t.Errorf("LoadOperator(%q) = %+v, want the defaults", in, o)
		}
	}
}

func TestLoadOperatorErrors(t *testing.T) {
	tests := []struct {
		name string
		yml  string
		want []string
	}{
		{"unknown key", "cap:\n  memory: 1GiB\n", []string{"line 1: cap: unknown key; did you mean caps?"}},
		{"unknown nested key", "rate:\n  task_per_hour: 3\n", []string{"line 2: rate.task_per_hour: unknown key; did you mean tasks_per_hour?"}},
		{"default above a lowered cap", "caps:\n  memory: 1GiB\n  cpus: 1\n", []string{
			"line 2: defaults.memory: 2GiB is above caps.memory (1GiB); lower the default or raise the cap",
			"line 3: defaults.cpus: 2 is above caps.cpus (1); lower the default or raise the cap",
		}},
		{"default disk above a lowered cap", "caps:\n  disk: 1GiB\n", []string{
			"line 2: defaults.disk: 2GiB is above caps.disk (1GiB); lower the default or raise the cap",
		}},
		{"disk default above its cap, both written", "defaults:\n  disk: 3g\ncaps:\n  disk: 2g\n", []string{
			"line 2: defaults.disk: 3g is above caps.disk (2g); lower the default or raise the cap",
		}},
		{"default above its cap, both written", "defaults:\n  timeout: 2h\n  max_wall_time: 48h\n", []string{
			"line 2: defaults.timeout: 2h is above caps.timeout (1h); lower the default or raise the cap",
			"line 3: defaults.max_wall_time: 48h is above caps.max_wall_time (24h); lower the default or raise the cap",
		}},
		{"default network above cap", "defaults:\n  network: bridge\n", []string{"line 2: defaults.network: bridge is above caps.network (none); lower the default or raise the cap"}},
		{"budgets above caps", "defaults:\n  max_turns: 201\n  max_tokens: 25000000\n  max_cost_usd: 10\ncaps:\n  max_cost_usd: 5\nprices:\n  gpt-4.1-mini: {input: 1, output: 1}\n", []string{
			"line 2: defaults.max_turns: 201 is above caps.max_turns (200); lower the default or raise the cap",
			"line 3: defaults.max_tokens: 25000000 is above caps.max_tokens (20000000); lower the default or raise the cap",
			"line 4: defaults.max_cost_usd: $10.00 is above caps.max_cost_usd ($5.00); lower the default or raise the cap",
		}},
		{"cost without price", "caps:\n  max_cost_usd: 5\nmodels:\n  allowed: [o3]\nprices:\n  o3: {input: 2, output: 8}\n", []string{
			"line 5: prices: no price for gpt-4.1-mini, so a cost budget cannot be enforced for it; add prices.gpt-4.1-mini (input and output, USD per million tokens)",
		}},
		{"cost without any prices", "defaults:\n  max_cost_usd: 1\n", []string{
			"prices: no price for gpt-4.1-mini, so a cost budget cannot be enforced for it; add prices.gpt-4.1-mini (input and output, USD per million tokens)",
		}},
		{"negative prices", "prices:\n  m1:\n    input: -1\n    output: -2\n", []string{
			"line 3: prices[\"m1\"].input: a price cannot be negative",
			"line 4: prices[\"m1\"].output: a price cannot be negative",
		}},
		{"bad profiles", "models:\n  profiles:\n    o3:\n      context_window: 0\n      context_share: 1.5\n      token_parameter: max_tokenz\n      system_role: user\n      reasoning_effort: 'very high'\n      max_output_tokens: -1\n    'a b': {}\nprices:\n  o3: {cached_input: -1}\n", []string{
			"line 4: models.profiles[\"o3\"].context_window: must be a number of tokens above 0 (e.g. 128000)",
			"line 5: models.profiles[\"o3\"].context_share: must be above 0 and at most 1 (e.g. 0.8: requests fill at most 80% of the window)",
			`line 6: models.profiles["o3"].token_parameter: "max_tokenz" is neither max_tokens nor max_completion_tokens`,
			`line 7: models.profiles["o3"].system_role: "user" is neither system nor developer`,
			`line 8: models.profiles["o3"].reasoning_effort: "very high" is not an effort (low, medium, high)`,
			"line 9: models.profiles[\"o3\"].max_output_tokens: cannot be negative",
			`line 10: models.profiles["a b"]: "a b" is not a model name`,
			`line 12: prices["o3"].cached_input: a price cannot be negative`,
		}},
		{"images not a yes or no", "models:\n  profiles:\n    o3:\n      images: screenshots\n", []string{
			`line 4: models.profiles["o3"].images: expected true or false, got the text "screenshots"`,
		}},
		{"duplicate price", "prices:\n  m1: {input: 1}\n  m1: {input: 2}\n", []string{`line 3: prices["m1"]: set twice (first on line 2); keep one`}},
		{"bad model names", "models:\n  default: ''\n  allowed: ['a b', '-x']\n", []string{
			`line 2: models.default: "" is not a model name`,
			`line 3: models.allowed[0]: "a b" is not a model name`,
			`line 3: models.allowed[1]: "-x" is not a model name`,
		}},
		{"bad limits", "defaults:\n  network: host\n  memory: 1TB-ish\n  cpus: 0\n  max_turns: 0\n  max_tokens: -1\n  max_cost_usd: -1\n", []string{
			`line 2: defaults.network: "host" is not a network; use none (no network, the default) or bridge`,
			`line 3: defaults.memory: "1TB-ish" is not a size (write it like 2GiB or 512MiB)`,
			"line 4: defaults.cpus: must be more than 0",
			"line 5: defaults.max_turns: must be at least 1",
			"line 6: defaults.max_tokens: must be at least 1",
			"line 7: defaults.max_cost_usd: cannot be negative (0 means no limit)",
		}},
		{"bad disk", "defaults:\n  disk: 1TB-ish\ncaps:\n  disk: 512k\n", []string{
			`line 2: defaults.disk: "1TB-ish" is not a size (write it like 2GiB or 512MiB)`,
			`line 4: caps.disk: "512k" is too small: the workspace needs at least 1MiB`,
		}},
		{"empty disk", "defaults:\n  disk: ''\n", []string{
			`line 2: defaults.disk: "" is not a size (write it like 2GiB or 512MiB)`,
		}},
		{"number for disk", "caps:\n  disk: 4096\n", []string{
			"line 2: caps.disk: expected a size like 2GiB or 512MiB, got the number 4096",
		}},
		{"images in defaults", "defaults:\n  images: [golang:1.26]\ncaps:\n  images: ['', 'a b']\n", []string{
			"line 2: defaults.images: images belong under caps (the images a repository may name); the default image is the runner's choice",
			`line 4: caps.images[0]: "" is not an image name (like golang:1.26 or ghcr.io/org/image:tag)`,
			`line 4: caps.images[1]: "a b" is not an image name (like golang:1.26 or ghcr.io/org/image:tag)`,
		}},
		{"rate", "rate:\n  concurrent_tasks: 0\n  tasks_per_hour: -1\n", []string{
			"line 2: rate.concurrent_tasks: must be at least 1",
			"line 3: rate.tasks_per_hour: must be at least 1",
		}},
		{"lowest permission", "lowest_permission: ''\n", []string{"line 1: lowest_permission: must be one of read, triage, write, maintain, admin"}},
		{"lowest permission typo", "lowest_permission: maintainer\n", []string{`line 1: lowest_permission: "maintainer" is not a permission; did you mean maintain?`}},
		{"ids and names", "installations: [0, x]\norganizations: ['a b']\nallowed_bots: ['@renovate']\n", []string{
			"line 1: installations[0]: 0 is not an installation id",
			`line 1: installations[1]: expected a whole number, got the text "x"`,
			`line 2: organizations[0]: "a b" is not an organization or user name`,
			`line 3: allowed_bots[0]: "@renovate" is not a login (a bot's login looks like renovate[bot])`,
		}},
		{"fence", "fence:\n  hosts: [mirror.test, 'http://mirror.test', 'mirror.test:65536']\n  allowed_nets: [10.20.0.0/16, 10.20.1.5/16, 10.20.0.5, 0.0.0.0/0, '::/0', '::ffff:10.0.0.0/104', 'fd00::/8']\n  toolchain_hosts: 'no'\n", []string{
			`line 2: fence.hosts[1]: "http://mirror.test" is not a host pattern: write a host name (mirror.example), "*." and a domain (*.mirror.example), or an address (10.0.0.5, fd00::5), each optionally with ":port"`,
			`line 2: fence.hosts[2]: "mirror.test:65536": the port must be a number from 1 to 65535`,
			`line 3: fence.allowed_nets[1]: "10.20.1.5/16" has bits set past its /16; write the range as 10.20.0.0/16, or the one address as 10.20.1.5/32`,
			`line 3: fence.allowed_nets[2]: "10.20.0.5" is not an address range; write it like 10.20.0.0/16 or fd00:1::/64 (one address: 10.20.0.5/32)`,
			`line 3: fence.allowed_nets[3]: "0.0.0.0/0" is every address; name the ranges the mirrors are on`,
			`line 3: fence.allowed_nets[4]: "::/0" is every address; name the ranges the mirrors are on`,
			`line 3: fence.allowed_nets[5]: "::ffff:10.0.0.0/104" is an IPv4 range written as IPv6; write it as 10.0.0.0/8`,
			`line 4: fence.toolchain_hosts: expected true or false, got the text "no"`,
		}},
		{"caches", "caches:\n  keep: 0\n  repo_size: 20GiB\n  host_size: 10GiB\n", []string{
			"line 2: caches.keep: must be at least 1",
			"line 3: caches.repo_size: is larger than caches.host_size, which caps every repository's caches together",
		}},
		{"cache sizes", "caches:\n  repo_size: lots\n  host_size: 0GiB\n", []string{
			`line 2: caches.repo_size: "lots" is not a size (write it like 2GiB or 512MiB)`,
			`line 3: caches.host_size: a cap of 0 would keep no cache; leave it out, or write "", for no cap`,
		}},
		{"fence repository hosts", "fence:\n  repository_hosts: ['http://x.test']\n", []string{
			`line 2: fence.repository_hosts[0]: "http://x.test" is not a host pattern: write a host name (mirror.example), "*." and a domain (*.mirror.example), or an address (10.0.0.5, fd00::5), each optionally with ":port"`,
		}},
		{"unknown fence key", "fence:\n  host: [mirror.test]\n", []string{"line 2: fence.host: unknown key; did you mean hosts?"}},
		// A proxy's password is never quoted back.
		{"parent proxy", "fence:\n  parent_proxy: 'socks5://fence:s3cret@proxy.test:1080'\n", []string{
			"line 2: fence.parent_proxy: socks5:// is not a proxy the fence can use: it speaks HTTP to its parent, at an http:// or https:// URL",
		}},
		{"parent proxy without a scheme", "fence:\n  parent_proxy: 'proxy.test:3128'\n", []string{
			`line 2: fence.parent_proxy: is not a URL; write it like http://proxy.corp.example:3128 (or "none" for no parent proxy)`,
		}},
		{"parent proxy that does not parse", "fence:\n  parent_proxy: 'http://fence:s3cret@[::1'\n", []string{
			`line 2: fence.parent_proxy: is not a URL; write it like http://proxy.corp.example:3128 (or "none" for no parent proxy)`,
		}},
		{"parent proxy with a path", "fence:\n  parent_proxy: 'http://fence:s3cret@proxy.test:3128/x'\n  parent_no_proxy: ['a b', '']\n", []string{
			"line 2: fence.parent_proxy: http://proxy.test:3128 has a path, query or fragment; a proxy is only a scheme, a host and a port",
			`line 3: fence.parent_no_proxy[0]: "a b" is not a host, a domain, an address or a range as NO_PROXY writes them (corp.example, .corp.example, 10.0.0.0/8, host:port)`,
			`line 3: fence.parent_no_proxy[1]: "" is not a host, a domain, an address or a range as NO_PROXY writes them (corp.example, .corp.example, 10.0.0.0/8, host:port)`,
		}},
		{"no proxy without a parent", "fence:\n  parent_proxy: none\n  parent_no_proxy: [corp.test]\n", []string{
			"line 3: fence.parent_no_proxy: names the hosts reached without fence.parent_proxy, but there is none here (the environment's NO_PROXY goes with the environment's proxies)",
		}},
		{"a list", "- caps\n", []string{"line 1: the file must be a set of keys and values (like model: gpt-4.1-mini), not a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := LoadOperator([]byte(tt.yml))
			var errs *Errors
			if !errors.As(err, &errs) || o != nil {
				t.Fatalf("LoadOperator(%q) = %v, %v; want only *Errors", tt.yml, o, err)
			}
			if got := err.Error(); got != strings.Join(tt.want, "\n") {
				t.Errorf("LoadOperator(%q):\ngot\n\t%s\nwant\n\t%s", tt.yml, strings.ReplaceAll(got, "\n", "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

func TestServes(t *testing.T) {
	tests := []struct {
		installations []int64
		orgs          []string
		id            int64
		owner         string
		want          bool
	}{
		{nil, nil, 1, "anyone", true},
		{[]int64{1, 2}, nil, 2, "x", true},
		{[]int64{1, 2}, nil, 3, "x", false},
		{nil, []string{"Acme"}, 9, "acme", true},
		{nil, []string{"acme"}, 9, "acme-evil", false},
		{[]int64{1}, []string{"acme"}, 1, "acme", true},
		{[]int64{1}, []string{"acme"}, 1, "other", false},
		{[]int64{1}, []string{"acme"}, 2, "acme", false},
	}
	for _, tt := range tests {
		o := &Operator{Installations: tt.installations, Organizations: tt.orgs}
		if got := o.Serves(tt.id, tt.owner); got != tt.want {
			t.Errorf("Serves(%d, %q) with %v %v = %v, want %v", tt.id, tt.owner, tt.installations, tt.orgs, got, tt.want)
		}
	}
}

func TestBotAllowed(t *testing.T) {
	o := &Operator{AllowedBots: []string{"renovate[bot]", "Dependabot"}}
	for login, want := range map[string]bool{
		"renovate[bot]":       true,
		"Renovate[BOT]":       true,
		"renovate":            true,
		"dependabot[bot]":     true,
		"github-actions[bot]": false,
		"renovate-evil[bot]":  false,
		"":                    false,
		"[bot]":               false,
	} {
		if got := o.BotAllowed(login); got != want {
			t.Errorf("BotAllowed(%q) = %v, want %v", login, got, want)
		}
	}
	if (&Operator{}).BotAllowed("renovate[bot]") {
		t.Error("no allowed bots, yet one is allowed")
	}
}

// The operator's parent proxy takes the place of the bot's environment,
// "none" turns both off, and without either there is none.
func TestParentProxyConfig(t *testing.T) {
	env := httpproxy.Config{HTTPSProxy: "http://env.test:3128", HTTPProxy: "http://env.test:3129", NoProxy: ".corp.test", CGI: true}
	for _, tc := range []struct {
		fence Fence
		env   httpproxy.Config
		want  httpproxy.Config
		from  string
	}{
		{Fence{}, env, httpproxy.Config{HTTPSProxy: "http://env.test:3128", HTTPProxy: "http://env.test:3129", NoProxy: ".corp.test"}, "HTTPS_PROXY"},
		{Fence{}, httpproxy.Config{}, httpproxy.Config{}, "HTTPS_PROXY"},
		{Fence{ParentProxy: "none"}, env, httpproxy.Config{}, "fence.parent_proxy"},
		{Fence{ParentProxy: "https://p.test", ParentNoProxy: []string{"a.test", "10.0.0.0/8"}}, env,
			httpproxy.Config{HTTPSProxy: "https://p.test", HTTPProxy: "https://p.test", NoProxy: "a.test,10.0.0.0/8"}, "fence.parent_proxy"},
	} {
		got, from := tc.fence.ParentProxyConfig(tc.env)
		if got != tc.want || !strings.Contains(from, tc.from) {
			t.Errorf("%+v.ParentProxyConfig = %+v from %q, want %+v from %q", tc.fence, got, from, tc.want, tc.from)
		}
	}
}

// A profile's images reach the settings of a repository on that model,
// and only of one on that model.
func TestProfileImagesResolve(t *testing.T) {
	o, err := LoadOperator([]byte("models:\n  default: gpt-4.1\n  allowed: [text-only]\n  profiles:\n    gpt-4.1:\n      images: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := o.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Profile.Images {
		t.Errorf("the default model's profile lost images: %+v", s.Profile)
	}
	cfg, err := Load([]byte("model: text-only\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err = o.Resolve(cfg); err != nil {
		t.Fatal(err)
	}
	if s.Profile.Images {
		t.Errorf("a model without images in its profile takes them: %+v", s.Profile)
	}
}
