package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/internal/golden"
)

// loadErr returns Load's problems as "line: key: msg" lines, failing the
// test if Load succeeded or returned something other than *Errors.
func loadErr(t *testing.T, yml string) []string {
	t.Helper()
	c, err := Load([]byte(yml))
	if err == nil {
		t.Fatalf("Load(%q) = %+v, nil; want errors", yml, c)
	}
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load(%q) error %T %v; want *Errors", yml, err, err)
	}
	if c != nil {
		t.Errorf("Load(%q) returned a Config with its errors", yml)
	}
	return strings.Split(err.Error(), "\n")
}

func TestLoadEmpty(t *testing.T) {
	for _, in := range []string{"", "   \n\t\n", "# nothing yet\n# at all\n", "---\n", "~\n", "null\n"} {
		c, err := Load([]byte(in))
		if err != nil {
			t.Errorf("Load(%q): %v", in, err)
			continue
		}
		c.lines = nil
		if !reflect.DeepEqual(*c, Config{}) {
			t.Errorf("Load(%q) = %+v, want zero Config", in, *c)
		}
	}
}

func TestLoadValid(t *testing.T) {
	tests := []struct {
		name string
		yml  string
		want Config
	}{
		{
			name: "everything",
			yml: `# yaml-language-server: $schema=https://example.com/pullwright.schema.json
trigger:
  permission: maintain
  users: [alice, Bob-2]
  teams: [acme/core, reviewers]
approve:
  permission: write
  teams: [acme/release]
  exclude_requester: true
protected_paths:
  - "deploy/**"
  - "*.pem"
auto_approve:
  - command: go test ./...
  - pattern: 'go test( -run \w+)? \./\.\.\.'
sandbox:
  image: golang:1.26
  network: bridge
  memory: 4GiB
  disk: 1GiB
  cpus: 1.5
  timeout: 15m
setup:
  - go mod download
  - |
    go install gotest.tools/gotestsum@v1.12.0 &&
      gotestsum --version
setup_hosts: [git.mirror.test, "*.wheels.mirror.test:8443", "10.0.0.5:3000", "[fd00::5]:80"]
test_command: go test ./...
budget:
  max_turns: 60
  max_tokens: 1_000_000
  max_wall_time: 1h30m
  max_cost_usd: 2.5
model: gpt-4.1
branch_prefix: bots/pullwright-
label: "agent: fix"
`,
			want: Config{
				Trigger:        Who{Permission: "maintain", Users: []string{"alice", "Bob-2"}, Teams: []string{"acme/core", "reviewers"}},
				Approve:        Approvers{Who: Who{Permission: "write", Teams: []string{"acme/release"}}, ExcludeRequester: true},
				ProtectedPaths: []string{"deploy/**", "*.pem"},
				AutoApprove:    []AutoRule{{Command: "go test ./..."}, {Pattern: `go test( -run \w+)? \./\.\.\.`}},
				Sandbox:        Sandbox{Image: "golang:1.26", Network: "bridge", Memory: "4GiB", Disk: "1GiB", CPUs: 1.5, Timeout: Duration(15 * time.Minute)},
				Setup:          []string{"go mod download", "go install gotest.tools/gotestsum@v1.12.0 &&\n  gotestsum --version\n"},
				SetupHosts:     []string{"git.mirror.test", "*.wheels.mirror.test:8443", "10.0.0.5:3000", "[fd00::5]:80"},
				TestCommand:    "go test ./...",
				Budget:         Budget{MaxTurns: 60, MaxTokens: 1_000_000, MaxWallTime: Duration(90 * time.Minute), MaxCostUSD: 2.5},
				Model:          "gpt-4.1", BranchPrefix: "bots/pullwright-", Label: "agent: fix",
			},
		},
		{
			name: "flow style and memory spellings",
			yml:  `{sandbox: {memory: 2g, cpus: 2}, protected_paths: []}`,
			want: Config{Sandbox: Sandbox{Memory: "2g", CPUs: 2}, ProtectedPaths: []string{}},
		},
		{
			name: "disk spellings",
			yml:  "sandbox: {disk: 512m}\n",
			want: Config{Sandbox: Sandbox{Disk: "512m"}},
		},
		{
			name: "null values mean not set",
			yml:  "trigger:\nsandbox:\n  memory:\n  disk:\n  image: ~\nmodel: null\nsetup:\n",
			want: Config{},
		},
		{
			// Written empty, setup turns the defaults off: not the same
			// as leaving it out.
			name: "no setup at all",
			yml:  "setup: []\n",
			want: Config{Setup: []string{}},
		},
		{
			// As for setup, an empty list is not the same as none written:
			// it reads no instruction files at all.
			name: "no instructions at all",
			yml:  "instructions: []\n",
			want: Config{Instructions: []string{}},
		},
		{
			name: "instructions of one's own",
			yml:  "instructions: [AGENTS.md, docs/agents.md, /CLAUDE.md]\n",
			want: Config{Instructions: []string{"AGENTS.md", "docs/agents.md", "/CLAUDE.md"}},
		},
		{
			name: "setup at its bounds",
			yml:  "setup: [a, b, c, d, e, f, g, h, i, 'j\tk']\n",
			want: Config{Setup: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j\tk"}},
		},
		{
			name: "anchors and aliases",
			yml:  "trigger: &who\n  teams: [acme/core]\napprove: *who\n",
			want: Config{Trigger: Who{Teams: []string{"acme/core"}}, Approve: Approvers{Who: Who{Teams: []string{"acme/core"}}}},
		},
		{
			name: "a bot in users",
			yml:  "trigger:\n  users: ['renovate[bot]']\n",
			want: Config{Trigger: Who{Users: []string{"renovate[bot]"}}},
		},
		{
			name: "windows line endings",
			yml:  "model: gpt-4.1\r\nsandbox:\r\n  memory: 512MiB\r\n",
			want: Config{Model: "gpt-4.1", Sandbox: Sandbox{Memory: "512MiB"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load([]byte(tt.yml))
			if err != nil {
				t.Fatal(err)
			}
			c.lines = nil
			if !reflect.DeepEqual(*c, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *c, tt.want)
			}
		})
	}
}

func TestLoadRecordsLines(t *testing.T) {
	c, err := Load([]byte("model: gpt-4.1\n\nsandbox:\n  memory: 4GiB\n  disk: 1GiB\nauto_approve:\n  - command: make\n  - pattern: go .*\nsetup:\n  - go mod download\n  - make deps\n"))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{"model": 1, "sandbox": 3, "sandbox.memory": 4, "sandbox.disk": 5, "auto_approve": 6, "auto_approve[0]": 7, "auto_approve[0].command": 7, "budget": 0, "setup": 9, "setup[0]": 10, "setup[1]": 11} {
		if got := c.Line(key); got != want {
			t.Errorf("Line(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	const f = ".github/pullwright.yml:"
	tests := []struct {
		name string
		yml  string
		want []string
	}{
		// Keys.
		{"unknown key, close", "protected_path: [a]\n", []string{f + "1: protected_path: unknown key; did you mean protected_paths?"}},
		{"unknown key, case", "Model: x\n", []string{f + "1: Model: unknown key; did you mean model?"}},
		{"unknown nested key", "sandbox:\n  memroy: 2GiB\n", []string{f + "2: sandbox.memroy: unknown key; did you mean memory?"}},
		{"unknown nested key, disk", "sandbox:\n  dsik: 2GiB\n", []string{f + "2: sandbox.dsik: unknown key; did you mean disk?"}},
		{"unknown inline key", "approve:\n  exclude_requestor: true\n  user: [a]\n", []string{
			f + "2: approve.exclude_requestor: unknown key; did you mean exclude_requester?",
			f + "3: approve.user: unknown key; did you mean users?",
		}},
		{"unknown key, far", "colour: blue\n", []string{f + "1: colour: unknown key (known here: trigger, approve, protected_paths, auto_approve, sandbox, setup, setup_hosts, setup_toolchain_hosts, test_command, require_passing, instructions, budget, model, branch_prefix, label, mcp)"}},
		{"unknown key in a list item", "auto_approve:\n  - cmd: make\n", []string{f + "2: auto_approve[0].cmd: unknown key (known here: command, pattern)"}},
		{"duplicate key", "model: a\nsandbox: {}\nmodel: b\n", []string{f + "3: model: set twice (first on line 1); keep one"}},
		{"duplicate nested key", "sandbox:\n  cpus: 1\n  cpus: 2\n", []string{f + "3: sandbox.cpus: set twice (first on line 2); keep one"}},
		{"merge key", "base: &b {model: x}\n<<: *b\n", []string{f + "1: base: unknown key (known here: trigger, approve, protected_paths, auto_approve, sandbox, setup, setup_hosts, setup_toolchain_hosts, test_command, require_passing, instructions, budget, model, branch_prefix, label, mcp)", f + "2: merge keys (<<) are not supported; write the keys out"}},
		{"non-string key", "[a]: b\n", []string{f + "1: keys must be plain names, got a list"}},
		{"empty require_passing", "require_passing: \"  \"\n", []string{f + "1: require_passing: is empty; write the command that must pass, or leave the key out"}},
		{"require_passing that cannot be shown", "require_passing: \"make test\\u202e\"\n", []string{f + "1: require_passing: byte 9 of the command is U+202E, a character that does not show as itself to the person who approves it"}},

		// Types.
		{"top level list", "- model: x\n", []string{f + "1: the file must be a set of keys and values (like model: gpt-4.1-mini), not a list"}},
		{"top level text", "hello\n", []string{f + `1: the file must be a set of keys and values (like model: gpt-4.1-mini), not the text "hello"`}},
		{"string for list", "trigger:\n  users: alice\n", []string{f + `2: trigger.users: expected a list, got the text "alice" (write one item per line, each starting with "- ", or [a, b])`}},
		{"list for string", "model: [a, b]\n", []string{f + "1: model: expected text, got a list"}},
		{"mapping for string", "model:\n  name: x\n", []string{f + "2: model: expected text, got keys and values"}},
		{"number for string", "model: 4.1\n", []string{f + `1: model: expected text, got the number 4.1 (put it in quotes if you mean the text: "4.1")`}},
		{"string for mapping", "sandbox: big\n", []string{f + `1: sandbox: expected keys and values (each on its own line below, indented), got the text "big"`}},
		{"string for bool", "approve:\n  exclude_requester: yes\n", []string{f + `2: approve.exclude_requester: expected true or false, got the text "yes"`}},
		{"number for bool", "approve:\n  exclude_requester: 1\n", []string{f + "2: approve.exclude_requester: expected true or false, got the number 1"}},
		{"fraction for int", "budget:\n  max_turns: 1.5\n", []string{f + "2: budget.max_turns: expected a whole number, got the number 1.5"}},
		{"text for int", "budget:\n  max_tokens: lots\n", []string{f + `2: budget.max_tokens: expected a whole number, got the text "lots"`}},
		{"huge int", "budget:\n  max_tokens: 99999999999999999999999\n", []string{f + "2: budget.max_tokens: expected a whole number, got the number 99999999999999999999999"}},
		{"text for float", "sandbox:\n  cpus: two\n", []string{f + `2: sandbox.cpus: expected a number, got the text "two"`}},
		{"quoted number for float", "sandbox:\n  cpus: '2'\n", []string{f + `2: sandbox.cpus: expected a number, got the text "2"`}},
		{"nan", "sandbox:\n  cpus: .nan\n", []string{f + "2: sandbox.cpus: expected a finite number, got .nan"}},
		{"inf", "budget:\n  max_cost_usd: .inf\n", []string{f + "2: budget.max_cost_usd: expected a finite number, got .inf"}},
		{"number for memory", "sandbox:\n  memory: 512\n", []string{f + "2: sandbox.memory: expected a size like 2GiB or 512MiB, got the number 512"}},
		{"number for disk", "sandbox:\n  disk: 2048\n", []string{f + "2: sandbox.disk: expected a size like 2GiB or 512MiB, got the number 2048"}},
		{"list for disk", "sandbox:\n  disk: [1g]\n", []string{f + "2: sandbox.disk: expected a size like 2GiB or 512MiB, got a list"}},
		{"list item of wrong type", "protected_paths:\n  - a/**\n  - 7\n", []string{f + `3: protected_paths[1]: expected text, got the number 7 (put it in quotes if you mean the text: "7")`}},
		{"auto_approve item not a mapping", "auto_approve:\n  - go test ./...\n", []string{f + `2: auto_approve[0]: expected keys and values, got the text "go test ./...": write it as - command: go test ./... (the exact command), or as - pattern: REGEXP (a regular expression for the whole command)`}},
		{"auto_approve items as text", "auto_approve: [npm test, 'pytest -q # fast', 7]\n", []string{
			f + `1: auto_approve[0]: expected keys and values, got the text "npm test": write it as - command: npm test (the exact command), or as - pattern: REGEXP (a regular expression for the whole command)`,
			f + `1: auto_approve[1]: expected keys and values, got the text "pytest -q # fast": write it as - command: 'pytest -q # fast' (the exact command), or as - pattern: REGEXP (a regular expression for the whole command)`,
			f + `1: auto_approve[2]: expected keys and values, got the number 7: write it as - command: "7" (the exact command), or as - pattern: REGEXP (a regular expression for the whole command)`,
		}},
		{"custom tag", "model: !env MODEL\n", []string{f + `1: model: expected text, got "MODEL" (tagged !env)`}},

		// Values.
		{"permission", "trigger:\n  permission: writ\napprove:\n  permission: owner\n", []string{
			f + `2: trigger.permission: "writ" is not a permission; did you mean write?`,
			f + `4: approve.permission: "owner" is not a permission; use one of read, triage, write, maintain, admin`,
		}},
		{"permission case", "trigger:\n  permission: Write\n", []string{f + `2: trigger.permission: "Write" is not a permission; did you mean write?`}},
		{"users and teams", "trigger:\n  users: ['@alice', 'a b', '-x']\n  teams: ['@acme/core', 'a/b/c', '']\n", []string{
			f + "2: trigger.users[0]: write the login without @: alice",
			f + `2: trigger.users[1]: "a b" is not a GitHub login`,
			f + `2: trigger.users[2]: "-x" is not a GitHub login`,
			f + "3: trigger.teams[0]: write the team without @: acme/core",
			f + `3: trigger.teams[1]: "a/b/c" is not a team; write org/team-slug, or team-slug for a team of the repository's owner`,
			f + `3: trigger.teams[2]: "" is not a team; write org/team-slug, or team-slug for a team of the repository's owner`,
		}},
		{"network", "sandbox:\n  network: host\n", []string{f + `2: sandbox.network: "host" is not a network; use none (no network, the default) or bridge`}},
		{"memory", "sandbox:\n  memory: lots\n", []string{f + `2: sandbox.memory: "lots" is not a size (write it like 2GiB or 512MiB)`}},
		{"memory zero", "sandbox:\n  memory: 0GiB\n", []string{f + `2: sandbox.memory: "0GiB" is too small: a container needs at least 6MiB`}},
		{"memory negative", "sandbox:\n  memory: -1g\n", []string{f + `2: sandbox.memory: "-1g" is not a size (write it like 2GiB or 512MiB)`}},
		{"memory bytes", "sandbox:\n  memory: '512'\n", []string{f + `2: sandbox.memory: "512" is too small: a container needs at least 6MiB`}},
		{"memory exabytes", "sandbox:\n  memory: 16EiB\n", []string{f + `2: sandbox.memory: "16EiB" is not a size (write it like 2GiB or 512MiB)`}},
		{"memory overflow", "sandbox:\n  memory: 99999999999P\n", []string{f + `2: sandbox.memory: "99999999999P" is too large`}},
		{"memory odd", "sandbox:\n  memory: 1.2.3g\n", []string{f + `2: sandbox.memory: "1.2.3g" is not a size (write it like 2GiB or 512MiB)`}},
		{"memory empty", "sandbox:\n  memory: ''\n", []string{f + `2: sandbox.memory: "" is not a size (write it like 2GiB or 512MiB)`}},
		{"disk", "sandbox:\n  disk: lots\n", []string{f + `2: sandbox.disk: "lots" is not a size (write it like 2GiB or 512MiB)`}},
		{"disk zero", "sandbox:\n  disk: 0GiB\n", []string{f + `2: sandbox.disk: "0GiB" is too small: the workspace needs at least 1MiB`}},
		{"disk below the minimum", "sandbox:\n  disk: 1023KiB\n", []string{f + `2: sandbox.disk: "1023KiB" is too small: the workspace needs at least 1MiB`}},
		{"disk negative", "sandbox:\n  disk: -1g\n", []string{f + `2: sandbox.disk: "-1g" is not a size (write it like 2GiB or 512MiB)`}},
		{"disk overflow", "sandbox:\n  disk: 99999999999P\n", []string{f + `2: sandbox.disk: "99999999999P" is too large`}},
		{"disk empty", "sandbox:\n  disk: ''\n", []string{f + `2: sandbox.disk: "" is not a size (write it like 2GiB or 512MiB)`}},
		{"memory and disk minimums", "sandbox:\n  memory: 5MiB\n  disk: 1MiB\n", []string{f + `2: sandbox.memory: "5MiB" is too small: a container needs at least 6MiB`}},
		{"cpus", "sandbox:\n  cpus: 0\n", []string{f + "2: sandbox.cpus: 0 is not a CPU quota: it must be more than 0 (e.g. 1.5)"}},
		{"cpus negative", "sandbox:\n  cpus: -2\n", []string{f + "2: sandbox.cpus: -2 is not a CPU quota: it must be more than 0 (e.g. 1.5)"}},
		{"duration bare number", "sandbox:\n  timeout: 600\n", []string{f + `2: sandbox.timeout: "600" is not a duration (write it like 10m or 1h30m)`}},
		{"duration words", "budget:\n  max_wall_time: ten minutes\n", []string{f + `2: budget.max_wall_time: "ten minutes" is not a duration (write it like 10m or 1h30m)`}},
		{"duration zero", "sandbox:\n  timeout: 0s\n", []string{f + `2: sandbox.timeout: "0s" is not a positive duration (write it like 10m or 1h30m)`}},
		{"duration negative", "sandbox:\n  timeout: -5m\n", []string{f + `2: sandbox.timeout: "-5m" is not a positive duration (write it like 10m or 1h30m)`}},
		{"duration list", "sandbox:\n  timeout: [5m]\n", []string{f + "2: sandbox.timeout: expected a duration like 10m or 1h30m, got a list"}},
		{"budgets", "budget:\n  max_turns: -1\n  max_tokens: 0\n  max_cost_usd: -0.5\n", []string{
			f + "2: budget.max_turns: -1 is not a limit: it must be at least 1 (leave it out to use the default)",
			f + "3: budget.max_tokens: 0 is not a limit: it must be at least 1 (leave it out to use the default)",
			f + "4: budget.max_cost_usd: -0.5 is not a budget: it must be more than 0 (leave it out to use the installation's default)",
		}},
		{"auto_approve", "auto_approve:\n  - command: make\n    pattern: make .*\n  - {}\n  - command: '  '\n  - pattern: 'go test ('\n", []string{
			f + "2: auto_approve[0]: has both command and pattern; write two entries",
			f + "4: auto_approve[1]: needs a command (the exact command) or a pattern (a regular expression for the whole command)",
			f + "5: auto_approve[2]: needs a command (the exact command) or a pattern (a regular expression for the whole command)",
			f + "6: auto_approve[3].pattern: \"go test (\" is not a regular expression: missing closing ): `go test (`",
		}},
		{"glob", "protected_paths: ['docs/**', '[a-', ' ']\n", []string{
			f + `1: protected_paths[1]: "[a-" is not a valid glob (use * within a directory, ** across directories)`,
			f + `1: protected_paths[2]: " " is not a valid glob (use * within a directory, ** across directories)`,
		}},
		{"empty values", "model: ''\ntrigger:\n  permission: ''\nsandbox:\n  network: \"\"\n  image: ''\nbranch_prefix: ''\n", []string{
			f + "1: model: is empty; write a value, or leave the key out to use the default",
			f + "3: trigger.permission: is empty; write a value, or leave the key out to use the default",
			f + "5: sandbox.network: is empty; write a value, or leave the key out to use the default",
			f + `6: sandbox.image: "" is not an image name (like golang:1.26 or ghcr.io/org/image:tag)`,
			f + "7: branch_prefix: is empty; write a value, or leave the key out to use the default",
		}},
		{"model", "model: 'gpt 4'\n", []string{f + `1: model: "gpt 4" is not a model name`}},
		{"instructions not plain paths", "instructions:\n  - docs/*.md\n  - ../AGENTS.md\n  - ''\n  - docs/\n", []string{
			f + `2: instructions[0]: "docs/*.md" is not a plain path: write it with / and without wildcards (a file name such as AGENTS.md already applies in every directory)`,
			f + `3: instructions[1]: "../AGENTS.md" is not a clean path from the repository root (no ./, .., // or trailing /)`,
			f + `4: instructions[2]: "" is not a file path`,
			f + `5: instructions[3]: "docs/" is not a clean path from the repository root (no ./, .., // or trailing /)`,
		}},
		{"instructions too many", "instructions: [" + strings.Repeat("a.md, ", 20) + "b.md]\n", []string{f + "1: instructions: has 21 files; at most 20 (a file name such as AGENTS.md already covers every directory)"}},
		{"setup not a list", "setup: go mod download\n", []string{f + `1: setup: expected a list, got the text "go mod download" (write one item per line, each starting with "- ", or [a, b])`}},
		{"setup item not text", "setup:\n  - go mod download\n  - {run: make}\n", []string{f + "3: setup[1]: expected text, got keys and values"}},
		{"setup too many", "setup: [a, b, c, d, e, f, g, h, i, j, k]\n", []string{f + "1: setup: has 11 commands; at most 10 (join related ones with &&)"}},
		{"setup empty commands", "setup:\n  - ''\n  - '   '\n  - make deps\n", []string{
			f + "2: setup[0]: is empty; write a command, or remove the entry",
			f + "3: setup[1]: is empty; write a command, or remove the entry",
		}},
		{"setup too long", "setup:\n  - '" + strings.Repeat("echo x\n\n", 586) + "'\n", []string{f + "2: setup[0]: is 4102 bytes; a setup command is at most 4096"}},
		{"setup hides what runs", "setup:\n  - \"go mod download \\u202e; curl x\"\n  - \"make\\u200bdeps\"\n  - \"npm ci" + strings.Repeat(" ", 40) + "&& curl x\"\n  - \"echo \\x1b[2J\"\n", []string{
			f + "2: setup[0]: byte 16 of the command is U+202E, a character that does not show as itself to the person who approves it",
			f + "3: setup[1]: byte 4 of the command is U+200B, a character that does not show as itself to the person who approves it",
			f + "4: setup[2]: byte 46 of the command follows 40 spaces, which would push it out of sight of the person who approves it",
			f + "5: setup[3]: byte 5 of the command is U+001B, a character that does not show as itself to the person who approves it",
		}},
		{"setup line too long", "setup:\n  - 'echo " + strings.Repeat("x", 1000) + "'\n", []string{f + "2: setup[0]: a line of the command is longer than 1000 bytes, too long to be read whole where it is approved; split it"}},
		{"setup hosts", "setup_hosts:\n  - mirror.test\n  - https://mirror.test/\n  - '*.mirror.test:0'\n  - '*'\n  - mirror.test.\n  - 7\n  - '*.0.5'\n  - '[mirror.test]:80'\n  - 'fe80::1%eth0'\n", []string{
			f + `3: setup_hosts[1]: "https://mirror.test/" is not a host pattern: write a host name (mirror.example), "*." and a domain (*.mirror.example), or an address (10.0.0.5, fd00::5), each optionally with ":port"`,
			f + `4: setup_hosts[2]: "*.mirror.test:0": the port must be a number from 1 to 65535`,
			f + `5: setup_hosts[3]: "*" is not a host pattern: write a host name (mirror.example), "*." and a domain (*.mirror.example), or an address (10.0.0.5, fd00::5), each optionally with ":port"`,
			f + `6: setup_hosts[4]: "mirror.test." is not a host pattern: write a host name (mirror.example), "*." and a domain (*.mirror.example), or an address (10.0.0.5, fd00::5), each optionally with ":port"`,
			f + `7: setup_hosts[5]: expected text, got the number 7 (put it in quotes if you mean the text: "7")`,
			f + `8: setup_hosts[6]: "*.0.5" is not a host pattern: write a host name (mirror.example), "*." and a domain (*.mirror.example), or an address (10.0.0.5, fd00::5), each optionally with ":port"`,
			f + `9: setup_hosts[7]: "[mirror.test]:80" is not a host pattern: write a host name (mirror.example), "*." and a domain (*.mirror.example), or an address (10.0.0.5, fd00::5), each optionally with ":port"`,
			f + `10: setup_hosts[8]: "fe80::1%eth0" is not a host pattern: write a host name (mirror.example), "*." and a domain (*.mirror.example), or an address (10.0.0.5, fd00::5), each optionally with ":port"`,
		}},
		{"too many setup hosts", "setup_hosts: [" + strings.Repeat("a.test, ", 20) + "b.test]\n", []string{f + "1: setup_hosts: has 21 hosts; at most 20 (a wildcard such as *.mirror.example covers many)"}},
		{"setup hosts not a list", "setup_hosts: mirror.test\n", []string{f + `1: setup_hosts: expected a list, got the text "mirror.test" (write one item per line, each starting with "- ", or [a, b])`}},
		{"image", "sandbox:\n  image: 'golang latest'\n", []string{f + `2: sandbox.image: "golang latest" is not an image name (like golang:1.26 or ghcr.io/org/image:tag)`}},

		// Syntax.
		{"syntax error", "model: [a\nsandbox: {}\n", []string{f + "1: invalid YAML: did not find expected ',' or ']'"}},
		{"tab indentation", "sandbox:\n\tmemory: 2GiB\n", []string{f + "2: invalid YAML: found character that cannot start any token (YAML does not allow tabs for indentation; use spaces)"}},
		{"two documents", "model: a\n---\nmodel: b\n", []string{f + "2: the file holds more than one YAML document (a line with ---); keep all settings in one"}},
		{"merge keys", "<<: {model: x}\n", []string{f + "1: merge keys (<<) are not supported; write the keys out"}},
		{"unknown anchor", "model: x\nbudget: *nope\n", []string{f + "2: invalid YAML: unknown anchor 'nope' referenced"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadErr(t, tt.yml)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Load(%q):\ngot\n\t%s\nwant\n\t%s", tt.yml, strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

func TestLoadLabel(t *testing.T) {
	for _, l := range []string{"pullwright", "good first fix", "🤖 bot", "status: ready", strings.Repeat("é", 50)} {
		if _, err := Load([]byte("label: '" + l + "'\n")); err != nil {
			t.Errorf("label %q: %v", l, err)
		}
	}
	for l, why := range map[string]string{
		strings.Repeat("x", 51): "at most 50",
		" bot":                  "white space",
		"bot ":                  "white space",
		"a\tb":                  "control",
		"":                      "is empty",
	} {
		got := loadErr(t, "label: \""+strings.ReplaceAll(l, "\t", `\t`)+"\"\n")
		if len(got) != 1 || !strings.Contains(got[0], "label") || !strings.Contains(got[0], why) {
			t.Errorf("label %q: %q, want a problem mentioning %q", l, got, why)
		}
	}
}

func TestLoadBranchPrefix(t *testing.T) {
	for _, p := range []string{"agent/", "bots/pullwright-", "a", "x_y.z/"} {
		if _, err := Load([]byte("branch_prefix: '" + p + "'\n")); err != nil {
			t.Errorf("branch_prefix %q: %v", p, err)
		}
	}
	for p, why := range map[string]string{
		"a b":     "spaces",
		"a..b":    "..",
		"a~":      "~",
		"a^":      "^",
		"a:b":     ":",
		"a?":      "?",
		"a*":      "*",
		"a[":      "[",
		`a\b`:     `\`,
		"/a":      "start with /",
		"-a":      "start with -",
		".a":      "start with .",
		"a//b":    "//",
		"a/.b":    "start with .",
		"x.lock/": ".lock",
		"a@{b":    "@{",
		"a\tb":    "control",
		"@":       "@",
	} {
		got := loadErr(t, "branch_prefix: \""+strings.ReplaceAll(strings.ReplaceAll(p, `\`, `\\`), "\t", `\t`)+"\"\n")
		if len(got) != 1 || !strings.Contains(got[0], "cannot start a branch name") || !strings.Contains(got[0], why) {
			t.Errorf("branch_prefix %q: %q, want a problem mentioning %q", p, got, why)
		}
	}
}

func TestLoadTooLarge(t *testing.T) {
	got := loadErr(t, "test_command: "+strings.Repeat("x", maxFileSize)+"\n")
	if len(got) != 1 || !strings.Contains(got[0], "a configuration file is at most") {
		t.Errorf("got %q", got)
	}
}

func TestLoadCollectsAtMostTwenty(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		b.WriteString("unknown_key_number_" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ": 1\n")
	}
	got := loadErr(t, b.String())
	if len(got) != 21 || got[20] != ".github/pullwright.yml: (and 10 more problems not shown)" {
		t.Errorf("got %d lines, last %q", len(got), got[len(got)-1])
	}
}

// TestLoadAliases: aliases are followed, but cannot make Load visit more
// than maxNodes values, nor loop.
func TestLoadAliases(t *testing.T) {
	bomb := `a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
protected_paths: *g
auto_approve: [*g]
`
	wide := "x: &x {command: make}\nauto_approve: [" + strings.Repeat("*x,", maxNodes) + "*x]\n"
	self := "trigger: &t {users: *t}\n"
	for name, in := range map[string]string{"bomb": bomb, "wide": wide, "self": self} {
		t.Run(name, func(t *testing.T) {
			done := make(chan []string, 1)
			go func() { _, err := Load([]byte(in)); done <- strings.Split(fmt.Sprint(err), "\n") }()
			select {
			case got := <-done:
				if len(got) == 0 || got[0] == "<nil>" {
					t.Errorf("Load succeeded")
				}
				if name == "wide" && !strings.Contains(strings.Join(got, "\n"), "too large") {
					t.Errorf("got %q, want a too-large problem", got)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Load did not return")
			}
		})
	}
}

func TestErrorsMarkdown(t *testing.T) {
	e := &Errors{File: Path, List: []Error{
		{Line: 3, Key: "trigger.teams[0]", Msg: "write the team without @: acme/core"},
		{Line: 7, Key: "x`y", Msg: "\"`rm -rf`\" is not <b>valid</b> [link](http://x) *here*"},
		{Key: "model", Msg: "no line"},
	}, More: 2}
	want := "- `.github/pullwright.yml` line 3, `trigger.teams[0]`: write the team without @&#8203;: acme/core\n" +
		"- `.github/pullwright.yml` line 7, `xˋy`: \"\\`rm -rf\\`\" is not \\<b\\>valid\\</b\\> \\[link\\](http://x) \\*here\\*\n" +
		"- `.github/pullwright.yml`, `model`: no line\n" +
		"- … and 2 more problems not shown\n"
	if got := e.Markdown(); got != want {
		t.Errorf("Markdown:\n%s\nwant\n%s", got, want)
	}
	op := &Errors{List: []Error{{Line: 2, Key: "caps.memory", Msg: "m"}, {Msg: "whole file"}}}
	if got, want := op.Error(), "line 2: caps.memory: m\nwhole file"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := op.Markdown(), "- line 2, `caps.memory`: m\n- whole file\n"; got != want {
		t.Errorf("Markdown() = %q, want %q", got, want)
	}
}

// TestLoadGolden loads each testdata/load/*.yml and compares the report,
// as a log line and as a comment, with its .golden file. Refresh with
// go test ./policy -run TestLoadGolden -update.
func TestLoadGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/load/*.yml")
	if len(files) == 0 {
		t.Fatal("no testdata/load/*.yml")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if strings.HasPrefix(filepath.Base(file), "operator-") {
				_, err = LoadOperator(data)
			} else {
				_, err = Load(data)
			}
			var errs *Errors
			switch {
			case err == nil:
				got = "ok\n"
			case errors.As(err, &errs):
				got = err.Error() + "\n\n" + errs.Markdown()
			default:
				t.Fatalf("error %T: %v", err, err)
			}
			golden.Check(t, strings.TrimSuffix(file, ".yml")+".golden", got)
		})
	}
}

func TestDuration(t *testing.T) {
	d := Duration(90 * time.Minute)
	if d.D() != 90*time.Minute || d.String() != "1h30m" {
		t.Errorf("D() = %v, String() = %q", d.D(), d.String())
	}
	for _, tt := range []struct {
		d    Duration
		json string
	}{{0, `"0s"`}, {Duration(10 * time.Minute), `"10m"`}, {Duration(time.Hour), `"1h"`}, {Duration(1500 * time.Millisecond), `"1.5s"`}} {
		b, err := json.Marshal(tt.d)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%v) = %s, %v; want %s", time.Duration(tt.d), b, err, tt.json)
		}
		var back Duration
		if err := json.Unmarshal(b, &back); err != nil || back != tt.d {
			t.Errorf("Unmarshal(%s) = %v, %v", b, back, err)
		}
	}
	var x Duration
	if err := json.Unmarshal([]byte(`"10m0s"`), &x); err != nil || x.D() != 10*time.Minute {
		t.Errorf(`Unmarshal("10m0s") = %v, %v`, x, err)
	}
	for _, bad := range []string{`600`, `"ten"`, `{}`} {
		if err := json.Unmarshal([]byte(bad), &x); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}

// TestConfigJSONRoundTrip: a Config (and so the Settings made from it)
// can be stored as JSON and read back unchanged.
func TestConfigJSONRoundTrip(t *testing.T) {
	c, err := Load([]byte("sandbox:\n  timeout: 15m\nbudget:\n  max_wall_time: 2h\napprove:\n  permission: admin\n  exclude_requester: true\nsetup: [go mod download]\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	c.lines = nil
	if !reflect.DeepEqual(*c, back) {
		t.Errorf("round trip:\n%+v\n%+v\n%s", *c, back, b)
	}
}
