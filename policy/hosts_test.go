package policy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/fence"
)

// TestHostPatterns: what a configuration file may write as a host, and
// that every pattern accepted here is one the fence accepts too, so that
// a file that loads cannot stop setup from starting.
func TestHostPatterns(t *testing.T) {
	tests := []struct {
		pattern string
		problem string // substring; "" for a valid pattern
	}{
		{"mirror.test", ""},
		{"Mirror.TEST", ""},
		{"a-b.mirror.test", ""},
		{"localhost", ""},
		{"*.mirror.test", ""},
		{"*.test", ""},
		{"mirror.test:8443", ""},
		{"*.mirror.test:443", ""},
		{"mirror.test:080", ""},
		{"10.0.0.5", ""},
		{"10.0.0.5:3000", ""},
		{"[10.0.0.5]:3000", ""},
		{"fd00::5", ""},
		{"[fd00::5]:80", ""},
		{"x" + strings.Repeat(".abcdefgh", 27), ""}, // 244 bytes

		{"", "is not a host pattern"},
		{"*", "is not a host pattern"},
		{"*.", "is not a host pattern"},
		{"*.*.test", "is not a host pattern"},
		{"a.*.test", "is not a host pattern"},
		{"**.test", "is not a host pattern"},
		{"mirror.test.", "is not a host pattern"},
		{".mirror.test", "is not a host pattern"},
		{"a..test", "is not a host pattern"},
		{"-a.test", "is not a host pattern"},
		{"a-.test", "is not a host pattern"},
		{"a_b.test", "is not a host pattern"},
		{"a b.test", "is not a host pattern"},
		{" mirror.test", "is not a host pattern"},
		{"https://mirror.test", "is not a host pattern"},
		{"mirror.test/simple", "is not a host pattern"},
		{"user@mirror.test", "is not a host pattern"},
		{"mirror.test:", "is not a host pattern"},
		{"mirror.test:x", "is not a host pattern"},
		{"mirror.test:+80", "is not a host pattern"},
		{"mirror.test:0", "the port must be a number from 1 to 65535"},
		{"mirror.test:65536", "the port must be a number from 1 to 65535"},
		{"mirror.test:99999999999999999999", "the port must be a number from 1 to 65535"},
		{"*.0.5", "is not a host pattern"},
		{"*.10.0.0.5", "is not a host pattern"},
		{"1.2.3", "is not a host pattern"},
		{"[mirror.test]:80", "is not a host pattern"},
		{"[fd00::5]", "is not a host pattern"},
		{"fe80::1%eth0", "is not a host pattern"},
		{"[fe80::1%eth0]:80", "is not a host pattern"},
		{strings.Repeat("a", 64) + ".test", "is not a host pattern"},
		{"x" + strings.Repeat(".abcdefgh", 29), "is not a host pattern"}, // 262 bytes
	}
	for _, tt := range tests {
		_, problem := parseHostPattern(tt.pattern)
		switch {
		case tt.problem == "" && problem != "":
			t.Errorf("parseHostPattern(%q): %s", tt.pattern, problem)
		case tt.problem != "" && !strings.Contains(problem, tt.problem):
			t.Errorf("parseHostPattern(%q) = %q, want %q", tt.pattern, problem, tt.problem)
		case tt.problem == "":
			if _, err := fence.New(fence.Policy{Hosts: []string{tt.pattern}}, nil, nil); err != nil {
				t.Errorf("%q loads here but the fence refuses it: %v", tt.pattern, err)
			}
		}
	}
}

func TestHostWithin(t *testing.T) {
	operator := []string{"*.mirror.test", "git.corp.test:8443", "pkg.corp.test:443", "pkg.corp.test:80", "10.0.0.5", "[fd00::5]:3000", "not a pattern"}
	tests := []struct {
		host string
		want bool
	}{
		{"a.mirror.test", true},
		{"A.Mirror.Test", true},
		{"a.b.mirror.test", true},
		{"a.mirror.test:443", true},
		{"a.mirror.test:80", true},
		{"*.mirror.test", true},
		{"*.b.mirror.test", true},
		{"*.mirror.test:443", true},
		{"git.corp.test:8443", true},
		{"pkg.corp.test", true}, // 443 and 80, each by an entry of its own
		{"10.0.0.5", true},
		{"10.0.0.5:443", true},
		{"[fd00:0::5]:3000", true},

		{"mirror.test", false}, // a wildcard does not cover its domain
		{"amirror.test", false},
		{"a.mirror.test:8443", false},
		{"*.test", false},
		{"*.mirror.test:8443", false},
		{"git.corp.test", false},
		{"git.corp.test:443", false},
		{"*.corp.test:8443", false},
		{"a.git.corp.test:8443", false},
		{"10.0.0.6", false},
		{"10.0.0.5:3000", false},
		{"fd00::5", false},
		{"not a pattern", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := hostWithin(tt.host, operator); got != tt.want {
			t.Errorf("hostWithin(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
	if hostWithin("a.mirror.test", nil) {
		t.Error("a host is within an empty list")
	}
}

func TestParseAllowedNet(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		problem string
	}{
		{"10.20.0.0/16", "10.20.0.0/16", ""},
		{"10.20.0.5/32", "10.20.0.5/32", ""},
		{"127.0.0.0/8", "127.0.0.0/8", ""},
		{"fd00:1::/64", "fd00:1::/64", ""},
		{"::1/128", "::1/128", ""},
		{"10.20.1.5/16", "", "has bits set past its /16; write the range as 10.20.0.0/16, or the one address as 10.20.1.5/32"},
		{"fd00:1::5/64", "", "write the range as fd00:1::/64, or the one address as fd00:1::5/128"},
		{"10.20.0.5", "", "is not an address range"},
		{"10.20.0.0/33", "", "is not an address range"},
		{"10.20.0.0/16 ", "", "is not an address range"},
		{"", "", "is not an address range"},
		{"fe80::/10%eth0", "", "is not an address range"},
		{"0.0.0.0/0", "", "is every address"},
		{"::/0", "", "is every address"},
		{"::ffff:10.20.0.0/112", "", "write it as 10.20.0.0/16"},
	}
	for _, tt := range tests {
		got, problem := parseAllowedNet(tt.in)
		switch {
		case tt.problem == "" && (problem != "" || got.String() != tt.want):
			t.Errorf("parseAllowedNet(%q) = %v, %q; want %s", tt.in, got, problem, tt.want)
		case tt.problem != "" && !strings.Contains(problem, tt.problem):
			t.Errorf("parseAllowedNet(%q) = %q, want %q", tt.in, problem, tt.problem)
		}
	}
}

// TestResolveFence: the operator's fence and the repository's setup_hosts
// reach the Settings, read back the same once stored with the task.
func TestResolveFence(t *testing.T) {
	tests := []struct {
		name      string
		operator  string
		repo      string
		hosts     []string
		nets      []string
		toolchain bool
	}{
		{"defaults", "", "", nil, nil, true},
		{"operator's fence", "fence:\n  hosts: ['*.mirror.test', 'git.corp.test:8443']\n  allowed_nets: [10.20.0.0/16, 'fd00:1::/64']\n  toolchain_hosts: false\n", "",
			[]string{"*.mirror.test", "git.corp.test:8443"}, []string{"10.20.0.0/16", "fd00:1::/64"}, false},
		{"toolchain hosts written out", "fence:\n  toolchain_hosts: true\n", "", nil, nil, true},
		{"repository's hosts within it", "fence:\n  hosts: ['*.mirror.test', 'git.corp.test:8443']\n", "setup_hosts: [a.mirror.test, 'git.corp.test:8443']\n",
			[]string{"*.mirror.test", "git.corp.test:8443", "a.mirror.test"}, nil, true},
		// repository_hosts are open only to the repositories that ask.
		{"repository hosts, asked for", "fence:\n  hosts: [mirror.test]\n  repository_hosts: ['*.team.test']\n", "setup_hosts: [npm.team.test]\n",
			[]string{"mirror.test", "npm.team.test"}, nil, true},
		// A repository that keeps its setup off public registries:
		// only its mirror, within the installation's hosts.
		{"toolchain hosts turned off by the repository", "fence:\n  hosts: ['*.mirror.test']\n", "setup_hosts: [wheels.mirror.test]\nsetup_toolchain_hosts: false\n",
			[]string{"*.mirror.test", "wheels.mirror.test"}, nil, false},
		{"toolchain hosts left on by the repository", "", "setup_toolchain_hosts: true\n", nil, nil, true},
		{"toolchain hosts off in both", "fence:\n  toolchain_hosts: false\n", "setup_toolchain_hosts: false\n", nil, nil, false},
		{"repository hosts, not asked for", "fence:\n  hosts: [mirror.test]\n  repository_hosts: ['*.team.test']\n", "",
			[]string{"mirror.test"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, back, b := resolveAndStore(t, tt.operator, tt.repo)
			for name, s := range map[string]Settings{"resolved": s, "stored": back} {
				if got := s.SetupHosts(); !reflect.DeepEqual(got, tt.hosts) {
					t.Errorf("%s: SetupHosts() = %q, want %q", name, got, tt.hosts)
				}
				if got := s.FenceNets(); !reflect.DeepEqual(got, tt.nets) {
					t.Errorf("%s: FenceNets() = %q, want %q", name, got, tt.nets)
				}
				if got := s.ToolchainHosts(); got != tt.toolchain {
					t.Errorf("%s: ToolchainHosts() = %v, want %v", name, got, tt.toolchain)
				}
			}
			if !reflect.DeepEqual(back, s) {
				t.Errorf("stored as %s, read back as %+v", b, back)
			}
		})
	}
	// A task stored before the fence existed gets the default: the
	// toolchains' hosts, and nothing else.
	var old Settings
	if err := json.Unmarshal([]byte(`{"model":"gpt-4.1-mini","setup":null}`), &old); err != nil {
		t.Fatal(err)
	}
	if !old.ToolchainHosts() || old.SetupHosts() != nil || old.FenceNets() != nil {
		t.Errorf("old task: %+v", old)
	}
}

// TestSetupRequestToolchainHosts: the setup request a run gets reaches the
// image's toolchains' hosts only when neither the installation nor the
// repository turned them off, and only for the installation's image or
// one it trusts.
func TestSetupRequestToolchainHosts(t *testing.T) {
	trusted := []string{"golang:1.26"}
	tests := []struct {
		name     string
		operator string
		repo     string
		want     bool
	}{
		{"defaults", "", "", true},
		{"the repository turns them off", "", "setup_toolchain_hosts: false\n", false},
		{"the repository writes the default", "", "setup_toolchain_hosts: true\n", true},
		{"the installation turns them off", "fence:\n  toolchain_hosts: false\n", "", false},
		{"off, for the repository's own image", "", "sandbox:\n  image: golang:1.26\nsetup_toolchain_hosts: false\n", false},
		{"a trusted image of the repository's", "", "sandbox:\n  image: golang:1.26\n", true},
		{"an image of the repository's own", "", "sandbox:\n  image: example.com/img:1\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, stored, _ := resolveAndStore(t, tt.operator, tt.repo)
			for name, s := range map[string]Settings{"resolved": s, "stored": stored} {
				spec := s.RunSpec(t.TempDir(), "go test ./...", nil)
				req := s.SetupRequest("acme/widget", "", spec, nil, trusted)
				if req.ToolchainHosts != tt.want {
					t.Errorf("%s: SetupRequest.ToolchainHosts = %v, want %v", name, req.ToolchainHosts, tt.want)
				}
				// Only the image the repository named alone is not trusted
				// (setup measures its cache elsewhere).
				if trustedImage := !strings.Contains(tt.repo, "example.com/img"); req.ImageTrusted != trustedImage {
					t.Errorf("%s: SetupRequest.ImageTrusted = %v, want %v", name, req.ImageTrusted, trustedImage)
				}
			}
		})
	}
}

// resolveAndStore resolves the repository's file repo within the
// operator's file operator ("" for the defaults), and reads the settings
// back as a task stored with them does: the resolved settings, the stored
// ones, and their JSON.
func resolveAndStore(t *testing.T, operator, repo string) (resolved, stored Settings, data []byte) {
	t.Helper()
	o := DefaultOperator()
	if operator != "" {
		o = mustOperator(t, operator)
	}
	resolved, err := o.Resolve(mustLoad(t, repo))
	if err != nil {
		t.Fatal(err)
	}
	if data, err = json.Marshal(resolved); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &stored); err != nil {
		t.Fatal(err)
	}
	return resolved, stored, data
}
