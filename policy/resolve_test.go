package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, yml string) *Config {
	t.Helper()
	c, err := Load([]byte(yml))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func mustOperator(t *testing.T, yml string) *Operator {
	t.Helper()
	o, err := LoadOperator([]byte(yml))
	if err != nil {
		t.Fatalf("LoadOperator: %v", err)
	}
	return o
}

func TestResolveNoFile(t *testing.T) {
	want := Settings{
		Trigger:     Who{Permission: "write"},
		Approve:     Approvers{Who: Who{Permission: "write"}},
		Protected:   []string{".github/workflows/**", ".github/pullwright.yml"},
		Sandbox:     Sandbox{Network: "none", Memory: "2GiB", Disk: "2GiB", CPUs: 2, Timeout: Duration(10 * time.Minute)},
		MemoryBytes: 2 << 30,
		DiskBytes:   2 << 30,
		MaxTurns:    40, MaxTokens: 4000000, MaxWallTime: 2 * time.Hour,
		Model:        "gpt-4.1-mini",
		BranchPrefix: "agent/",
		Label:        "pullwright",
	}
	for name, c := range map[string]*Config{"nil": nil, "empty": mustLoad(t, "")} {
		s, err := DefaultOperator().Resolve(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", name, s, want)
		}
	}
	// A nil operator is the default one.
	var o *Operator
	if s, err := o.Resolve(nil); err != nil || !reflect.DeepEqual(s, want) {
		t.Errorf("nil operator: %+v, %v", s, err)
	}
}

func TestResolveRepositoryValues(t *testing.T) {
	o := mustOperator(t, `
models:
  allowed: [gpt-4.1]
prices:
  gpt-4.1: {input: 2, output: 8}
  gpt-4.1-mini: {input: 0.4, output: 1.6}
caps:
  network: bridge
  images: [golang:1.26]
  disk: 8GiB
  max_cost_usd: 10
`)
	c := mustLoad(t, `
trigger:
  permission: admin
  users: [alice]
approve:
  teams: [acme/core]
  exclude_requester: true
protected_paths: ["secrets/**", ".github/workflows/**", ".GitHub/Pullwright.yml"]
auto_approve:
  - command: make test
sandbox:
  image: golang:1.26
  network: bridge
  memory: 8GiB
  disk: 8GiB
  cpus: 4
  timeout: 1h
setup:
  - make deps
test_command: make test
budget:
  max_turns: 200
  max_tokens: 4000000
  max_wall_time: 24h
  max_cost_usd: 2.5
model: gpt-4.1
branch_prefix: pw-
label: fix me
`)
	s, err := o.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		Trigger:     Who{Permission: "admin", Users: []string{"alice"}},
		Approve:     Approvers{Who: Who{Permission: "write", Teams: []string{"acme/core"}}, ExcludeRequester: true},
		Protected:   []string{"secrets/**", ".github/workflows/**", ".GitHub/Pullwright.yml"},
		AutoApprove: []AutoRule{{Command: "make test"}},
		Sandbox:     Sandbox{Image: "golang:1.26", Network: "bridge", Memory: "8GiB", Disk: "8GiB", CPUs: 4, Timeout: Duration(time.Hour)},
		MemoryBytes: 8 << 30,
		DiskBytes:   8 << 30,
		Setup:       []string{"make deps"},
		TestCommand: "make test",
		MaxTurns:    200, MaxTokens: 4000000, MaxWallTime: 24 * time.Hour, MaxCostUSD: 2.5,
		Model: "gpt-4.1", Price: Price{Input: 2, Output: 8}, Priced: true,
		BranchPrefix: "pw-",
		Label:        "fix me",
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	// Settings are stored as JSON with the task.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("JSON round trip: %v\n%+v\n%s", err, back, b)
	}
}

// TestResolveSetup: setup is the repository's, as written, and "not
// written" (the defaults) stays apart from "none", also once the Settings
// are stored with the task and read back.
func TestResolveSetup(t *testing.T) {
	tests := []struct {
		name string
		yml  string
		want []string
		json string
	}{
		{"no file's setup: the defaults", "", nil, `null`},
		{"a null setup: the defaults", "setup:\n", nil, `null`},
		{"no setup at all", "setup: []\n", []string{}, `[]`},
		{"commands", "setup:\n  - go mod download\n  - make deps\n", []string{"go mod download", "make deps"}, `["go mod download","make deps"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := DefaultOperator().Resolve(mustLoad(t, tt.yml))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Setup, tt.want) || (s.Setup == nil) != (tt.want == nil) {
				t.Errorf("Setup = %#v, want %#v", s.Setup, tt.want)
			}
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"setup":`+tt.json) {
				t.Errorf("stored as %s, want \"setup\":%s", b, tt.json)
			}
			var back Settings
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if (back.Setup == nil) != (tt.want == nil) || !reflect.DeepEqual(back.Setup, tt.want) {
				t.Errorf("read back as %#v, want %#v", back.Setup, tt.want)
			}
		})
	}
	// A task stored before setup existed has the defaults.
	var old Settings
	if err := json.Unmarshal([]byte(`{"model":"gpt-4.1-mini"}`), &old); err != nil || old.Setup != nil {
		t.Errorf("old task: Setup = %#v, %v; want nil", old.Setup, err)
	}
}

func TestResolveDisk(t *testing.T) {
	tests := []struct {
		name      string
		operator  string
		yml       string
		want      string
		wantBytes int64
	}{
		{"built-in default", "", "", "2GiB", 2 << 30},
		{"repository lowers it", "", "sandbox:\n  disk: 512MiB\n", "512MiB", 512 << 20},
		{"at the built-in cap", "", "sandbox: {disk: 2g}\n", "2g", 2 << 30},
		{"the smallest", "", "sandbox:\n  disk: 1MiB\n", "1MiB", 1 << 20},
		{"operator's default", "defaults:\n  disk: 1GiB\n", "", "1GiB", 1 << 30},
		{"under a raised cap", "caps:\n  disk: 8GiB\n", "sandbox:\n  disk: 6GiB\n", "6GiB", 6 << 30},
		// The workspace is charged to memory too, but the two are set
		// apart: whichever is reached first stops the writing.
		{"not bounded by memory", "", "sandbox:\n  memory: 1GiB\n  disk: 2GiB\n", "2GiB", 2 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOperator()
			if tt.operator != "" {
				o = mustOperator(t, tt.operator)
			}
			s, err := o.Resolve(mustLoad(t, tt.yml))
			if err != nil {
				t.Fatal(err)
			}
			if s.Sandbox.Disk != tt.want || s.DiskBytes != tt.wantBytes {
				t.Errorf("Disk %q, DiskBytes %d; want %q, %d", s.Sandbox.Disk, s.DiskBytes, tt.want, tt.wantBytes)
			}
		})
	}
}

func TestResolveProtected(t *testing.T) {
	always := []string{".github/workflows/**", Path}
	tests := []struct {
		yml  string
		want []string
	}{
		{"", always},
		{"protected_paths: []", always},
		{"protected_paths: [docs/**]", append([]string{"docs/**"}, always...)},
		{"protected_paths: [docs/**, docs/**, /.github/workflows/**/]", append([]string{"docs/**", "/.github/workflows/**/"}, Path)},
	}
	for _, tt := range tests {
		s, err := DefaultOperator().Resolve(mustLoad(t, tt.yml))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s.Protected, tt.want) {
			t.Errorf("%q: Protected = %q, want %q", tt.yml, s.Protected, tt.want)
		}
		for _, p := range []string{".github/workflows/ci.yml", ".github/pullwright.yml", ".GITHUB/PULLWRIGHT.YML"} {
			if _, ok := s.Protects(p); !ok {
				t.Errorf("%q: %s is not protected", tt.yml, p)
			}
		}
	}
	// Resolve must not change the package's lists.
	if !reflect.DeepEqual(AlwaysProtected, always) || !reflect.DeepEqual(DefaultProtected, always) {
		t.Errorf("AlwaysProtected = %q, DefaultProtected = %q", AlwaysProtected, DefaultProtected)
	}
}

func TestResolveErrors(t *testing.T) {
	const f = ".github/pullwright.yml:"
	priced := `
models:
  allowed: [gpt-4.1, local-llama]
prices:
  gpt-4.1: {input: 2, output: 8}
  gpt-4.1-mini: {input: 0.4, output: 1.6}
  local-llama: {input: 0, output: 0}
caps:
  images: [golang:1.26, node:22]
  max_cost_usd: 5
lowest_permission: maintain
`
	tests := []struct {
		name     string
		operator string
		yml      string
		want     []string
	}{
		{"memory", "", "sandbox:\n  memory: 16GiB\n", []string{f + "2: sandbox.memory: 16GiB is above this installation's cap of 8GiB"}},
		{"disk", "", "sandbox:\n  disk: 4GiB\n", []string{f + "2: sandbox.disk: 4GiB is above this installation's cap of 2GiB"}},
		{"disk just above the cap", "", "sandbox:\n  disk: 2049MiB\n", []string{f + "2: sandbox.disk: 2049MiB is above this installation's cap of 2GiB"}},
		{"disk above a lowered cap", "caps:\n  disk: 1GiB\ndefaults:\n  disk: 512MiB\n", "sandbox:\n  disk: 1.5g\n", []string{f + "2: sandbox.disk: 1.5g is above this installation's cap of 1GiB"}},
		{"everything above the caps", "", `sandbox:
  network: bridge
  memory: 9g
  disk: 3g
  cpus: 4.5
  timeout: 61m
budget:
  max_turns: 201
  max_tokens: 20000001
  max_wall_time: 25h
`, []string{
			f + "2: sandbox.network: bridge is not allowed by this installation, whose sandboxes have no network",
			f + "3: sandbox.memory: 9g is above this installation's cap of 8GiB",
			f + "4: sandbox.disk: 3g is above this installation's cap of 2GiB",
			f + "5: sandbox.cpus: 4.5 is above this installation's cap of 4",
			f + "6: sandbox.timeout: 1h1m is above this installation's cap of 1h",
			f + "8: budget.max_turns: 201 is above this installation's cap of 200",
			f + "9: budget.max_tokens: 20000001 is above this installation's cap of 20000000",
			f + "10: budget.max_wall_time: 25h is above this installation's cap of 24h",
		}},
		{"setup host without operator hosts", "", "setup_hosts: [mirror.test]\n", []string{f + "1: setup_hosts[0]: mirror.test is not allowed: this installation lists no hosts for setup, so a repository can add none"}},
		{"setup hosts beyond the operator's", "fence:\n  hosts: ['*.mirror.test', 'git.corp.test:8443', '10.0.0.5']\n", "setup_hosts:\n  - a.mirror.test\n  - mirror.test\n  - a.mirror.test:8443\n  - git.corp.test\n  - '*.corp.test:8443'\n  - 10.0.0.6\n", []string{
			f + "3: setup_hosts[1]: mirror.test is not within the hosts this installation allows for setup (*.mirror.test, git.corp.test:8443, 10.0.0.5)",
			f + "4: setup_hosts[2]: a.mirror.test:8443 is not within the hosts this installation allows for setup (*.mirror.test, git.corp.test:8443, 10.0.0.5)",
			f + "5: setup_hosts[3]: git.corp.test is not within the hosts this installation allows for setup (*.mirror.test, git.corp.test:8443, 10.0.0.5)",
			f + "6: setup_hosts[4]: *.corp.test:8443 is not within the hosts this installation allows for setup (*.mirror.test, git.corp.test:8443, 10.0.0.5)",
			f + "7: setup_hosts[5]: 10.0.0.6 is not within the hosts this installation allows for setup (*.mirror.test, git.corp.test:8443, 10.0.0.5)",
		}},
		{"setup host beyond both lists", "fence:\n  hosts: [mirror.test]\n  repository_hosts: ['*.team.test']\n", "setup_hosts: [team.test]\n", []string{
			f + "1: setup_hosts[0]: team.test is not within the hosts this installation allows for setup (mirror.test, or others it allows on request)",
		}},
		{"setup host beyond the ones on request", "fence:\n  repository_hosts: ['*.team.test']\n", "setup_hosts: [team.test]\n", []string{
			f + "1: setup_hosts[0]: team.test is not within the hosts this installation allows for setup",
		}},
		// A repository may turn the toolchains' hosts off, never on.
		{"toolchain hosts the installation turned off", "fence:\n  toolchain_hosts: false\n", "setup:\n  - go mod download\nsetup_toolchain_hosts: true\n", []string{
			f + "3: setup_toolchain_hosts: true is not allowed: this installation's setup reaches only the hosts it lists (its fence.toolchain_hosts is false); leave the key out",
		}},
		{"image", priced, "sandbox:\n  image: ubuntu\n", []string{f + "2: sandbox.image: ubuntu is not one of the images this installation allows (golang:1.26, node:22)"}},
		{"model", priced, "model: o3\n", []string{f + "1: model: o3 is not a model this installation allows (allowed: gpt-4.1-mini, gpt-4.1, local-llama)"}},
		{"model not allowed by default", "", "model: gpt-4.1\n", []string{f + "1: model: gpt-4.1 is not a model this installation allows (allowed: gpt-4.1-mini)"}},
		{"cost above cap", priced, "budget:\n  max_cost_usd: 6\n", []string{f + "2: budget.max_cost_usd: $6.00 is above this installation's cap of $5.00"}},
		{"cost budget without price", "", "budget:\n  max_cost_usd: 1\n", []string{f + "2: budget.max_cost_usd: a cost budget of $1.00 cannot be enforced: this installation has no price for the model gpt-4.1-mini"}},
		{"permission below lowest", priced, "trigger:\n  permission: write\napprove:\n  permission: triage\n", []string{
			f + "2: trigger.permission: write is below the lowest permission this installation lets trigger or approve (maintain)",
			f + "4: approve.permission: triage is below the lowest permission this installation lets trigger or approve (maintain)",
		}},
		{"read below default lowest", "", "trigger:\n  permission: read\n", []string{f + "2: trigger.permission: read is below the lowest permission this installation lets trigger or approve (write)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOperator()
			if tt.operator != "" {
				o = mustOperator(t, tt.operator)
			}
			s, err := o.Resolve(mustLoad(t, tt.yml))
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Resolve = %+v, %v; want *Errors", s, err)
			}
			if got := err.Error(); got != strings.Join(tt.want, "\n") {
				t.Errorf("got\n\t%s\nwant\n\t%s", strings.ReplaceAll(got, "\n", "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

func TestResolveOperatorChoices(t *testing.T) {
	o := mustOperator(t, `
models:
  default: local-llama
prices:
  local-llama: {input: 0, output: 0}
  gpt-4.1-mini: {input: 0.4, output: 1.6}
defaults:
  network: bridge
  max_cost_usd: 0
caps:
  network: bridge
  max_cost_usd: 3
lowest_permission: maintain
`)
	s, err := o.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Model != "local-llama" || s.Price != (Price{}) {
		t.Errorf("Model %q Price %+v", s.Model, s.Price)
	}
	// With a cap and no default, the cap is the budget.
	if s.MaxCostUSD != 3 {
		t.Errorf("MaxCostUSD = %v, want the cap 3", s.MaxCostUSD)
	}
	if s.Sandbox.Network != "bridge" {
		t.Errorf("Network = %q, want the operator's default bridge", s.Sandbox.Network)
	}
	// The default permission rises to the operator's lowest.
	if s.Trigger.Permission != "maintain" || s.Approve.Permission != "maintain" {
		t.Errorf("permissions %q %q, want maintain", s.Trigger.Permission, s.Approve.Permission)
	}
	// A repository may lower the cost budget.
	s, err = o.Resolve(mustLoad(t, "budget:\n  max_cost_usd: 0.5\n"))
	if err != nil || s.MaxCostUSD != 0.5 {
		t.Errorf("lowered budget: %v, %v", s.MaxCostUSD, err)
	}
	// A model without a price needs no price when there is no budget.
	s, err = mustOperator(t, "models: {default: m}\n").Resolve(nil)
	if err != nil || s.Model != "m" || s.MaxCostUSD != 0 {
		t.Errorf("unpriced model without budget: %+v, %v", s, err)
	}
}

// An Operator built in code, without LoadOperator's checks, must still
// not admit everyone or panic.
func TestResolveOperatorInCode(t *testing.T) {
	s, err := (&Operator{}).Resolve(mustLoad(t, "sandbox:\n  memory: 64GiB\n  disk: 64GiB\n  cpus: 64\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Trigger.Permission != "write" || s.Approve.Permission != "write" || s.Sandbox.Network != "none" || s.MemoryBytes != 64<<30 || s.DiskBytes != 64<<30 {
		t.Errorf("%+v", s)
	}
	// Without a default either, no disk is asked for: the runner's own
	// default applies.
	if s, err := (&Operator{}).Resolve(nil); err != nil || s.Sandbox.Disk != "" || s.DiskBytes != 0 {
		t.Errorf("no disk anywhere: %q %d, %v", s.Sandbox.Disk, s.DiskBytes, err)
	}
	// LoadOperator refuses a cost cap with an unpriced model; in code, it
	// is Resolve that refuses it.
	o := DefaultOperator()
	o.Models.Allowed = []string{"local"}
	o.Caps.MaxCostUSD = 5
	o.Prices = map[string]Price{"gpt-4.1-mini": {Input: 1, Output: 1}}
	_, err = o.Resolve(mustLoad(t, "model: local\n"))
	if got, want := fmt.Sprint(err), ".github/pullwright.yml:1: model: a cost budget of $5.00 cannot be enforced: this installation has no price for the model local"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	o = &Operator{Defaults: Limits{Memory: "lots"}}
	if _, err := o.Resolve(nil); err == nil {
		t.Error("an unparsable default memory resolved")
	}
	o = &Operator{Defaults: Limits{Disk: "0"}}
	if _, err := o.Resolve(nil); err == nil {
		t.Error("a default disk of 0, which a tmpfs takes as no limit, resolved")
	}
}

func TestCost(t *testing.T) {
	s := Settings{Price: Price{Input: 2, Output: 8}}
	for _, tt := range []struct {
		in, out int
		want    float64
	}{{0, 0, 0}, {1_000_000, 0, 2}, {0, 1_000_000, 8}, {500_000, 250_000, 3}, {1, 1, 0.00001}} {
		if got := s.Cost(tt.in, tt.out); got < tt.want-1e-12 || got > tt.want+1e-12 {
			t.Errorf("Cost(%d, %d) = %v, want %v", tt.in, tt.out, got, tt.want)
		}
	}
	if (Settings{}).Cost(1e6, 1e6) != 0 {
		t.Error("no price, yet a cost")
	}
}
