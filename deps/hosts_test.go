package deps

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/fence"
)

// checkPatterns holds every parser's promise: sorted, no duplicates, and
// each entry an exact "host:port" the fence accepts, never a wildcard.
func checkPatterns(t *testing.T, got []string) {
	t.Helper()
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("%q is not sorted and unique", got)
	}
	for _, h := range got {
		if strings.Contains(h, "*") || !strings.Contains(h, ":") {
			t.Errorf("%q is not an exact host:port", h)
		}
	}
	if _, err := fence.New(fence.Policy{Hosts: got}, nil, nil); err != nil {
		t.Errorf("the fence refuses %q: %v", got, err)
	}
}

func TestGoHosts(t *testing.T) {
	tests := []struct {
		name                        string
		goproxy, gosumdb, goprivate string
		want                        []string
	}{
		{"proxy then direct", "https://goproxy.mirror.test,direct", "sum.mirror.test", "", []string{"goproxy.mirror.test:443", "sum.mirror.test:443"}},
		{"fallback on any error, own port", "https://a.test|https://b.test:8443", "off", "", []string{"a.test:443", "b.test:8443"}},
		{"http proxy", "http://goproxy.mirror.test/mod/,direct", "off", "", []string{"goproxy.mirror.test:80"}},
		{"no scheme is https", "goproxy.mirror.test/x", "off", "", []string{"goproxy.mirror.test:443"}},
		{"port on a scheme-less entry", "goproxy.mirror.test:3000", "off", "", []string{"goproxy.mirror.test:3000"}},
		{"nothing after direct", "https://a.test,direct,https://never.test", "off", "", []string{"a.test:443"}},
		{"nothing after off", "https://a.test|off|https://never.test", "off", "", []string{"a.test:443"}},
		{"off", "off", "off", "", nil},
		{"direct: version-control hosts are not allowed", "direct", "off", "", nil},
		{"direct, with a checksum database", "direct", "sum.mirror.test", "", []string{"sum.mirror.test:443"}},
		{"off keeps the checksum database", "off", "sum.mirror.test", "", []string{"sum.mirror.test:443"}},
		{"empty entries and spaces", " , https://a.test ,, ", "off", "", []string{"a.test:443"}},
		{"file proxy names no host", "file:///srv/goproxy,https://a.test", "off", "", []string{"a.test:443"}},
		{"credentials stay out", "https://user:secret@a.test/", "off", "", []string{"a.test:443"}},
		{"case and final dot", "https://GoProxy.Mirror.Test./", "off", "", []string{"goproxy.mirror.test:443"}},
		{"address literals", "http://10.0.0.5:3000,https://[fd00::1]/", "off", "", []string{"10.0.0.5:3000", "[fd00::1]:443"}},
		{"duplicates", "https://a.test,https://a.test/other|https://a.test:443", "a.test", "", []string{"a.test:443"}},
		{"checksum database with a key", "off", "sum.mirror.test+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ly", "", []string{"sum.mirror.test:443"}},
		{"checksum database with a path and port", "off", "sum.mirror.test:8443/db+abc", "", []string{"sum.mirror.test:8443"}},
		{"checksum database at its own URL: only that URL", "off", "sum.mirror.test+abc https://sumproxy.mirror.test/x", "", []string{"sumproxy.mirror.test:443"}},
		{"checksum database over http", "off", "sum.mirror.test+abc http://10.1.2.3:8080", "", []string{"10.1.2.3:8080"}},
		{"GOPRIVATE adds no host", "https://a.test,direct", "off", "git.corp.test/*,*.internal.test", []string{"a.test:443"}},

		// What the go command itself would refuse gives no host.
		{"unknown scheme", "ftp://a.test,https://b.test", "off", "", []string{"b.test:443"}},
		{"no host", "https://,https:///x", "off", "", nil},
		{"bad port", "https://a.test:0,https://b.test:99999,https://c.test:x", "off", "", nil},
		{"wildcard host", "https://*.a.test", "off", "", nil},
		{"a bare word", "noproxy", "off", "", nil},
		{"too many checksum fields", "off", "sum.mirror.test+abc https://x.test extra", "", nil},
		{"checksum URL of another scheme", "off", "sum.mirror.test+abc file:///db", "", nil},
		{"empty", "", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GoHosts(tt.goproxy, tt.gosumdb, tt.goprivate)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("GoHosts(%q, %q, %q) = %q, want %q", tt.goproxy, tt.gosumdb, tt.goprivate, got, tt.want)
			}
			checkPatterns(t, got)
		})
	}
}

func TestNPMHosts(t *testing.T) {
	tests := []struct {
		registry string
		want     []string
	}{
		{"http://npm.mirror.test:4873/", []string{"npm.mirror.test:4873"}},
		{"https://npm.mirror.test/", []string{"npm.mirror.test:443"}},
		{"https://npm.mirror.test/api/npm/", []string{"npm.mirror.test:443"}},
		{"  https://npm.mirror.test  ", []string{"npm.mirror.test:443"}},
		{"http://[::1]:4873", []string{"[::1]:4873"}},
		{"", nil},
		{"undefined", nil},
		{"npm.mirror.test", nil}, // npm needs the scheme
		{"https://", nil},
		{"https://npm.mirror.test:65536/", nil},
		{"https://npm mirror.test/", nil},
	}
	for _, tt := range tests {
		got := NPMHosts(tt.registry)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("NPMHosts(%q) = %q, want %q", tt.registry, got, tt.want)
		}
		checkPatterns(t, got)
	}
}

func TestPipHosts(t *testing.T) {
	tests := []struct {
		name   string
		index  string
		extras []string
		want   []string
	}{
		{"index", "https://pip.mirror.test/simple", nil, []string{"pip.mirror.test:443"}},
		{"index and extras", "https://pip.mirror.test/simple", []string{"http://wheels.mirror.test:8080/simple", "https://pip.mirror.test/other/"},
			[]string{"pip.mirror.test:443", "wheels.mirror.test:8080"}},
		{"several extras in one value", "https://pip.mirror.test/simple", []string{"https://a.test/simple https://b.test/simple\nhttps://c.test/"},
			[]string{"a.test:443", "b.test:443", "c.test:443", "pip.mirror.test:443"}},
		{"no index: extras only", "", []string{"https://a.test/simple"}, []string{"a.test:443"}},
		{"none", "", nil, nil},
		{"a local directory is no host", "file:///srv/wheels", []string{"/srv/more"}, nil},
		{"malformed entries are skipped", "https://pip.mirror.test:0/simple", []string{"%zz", "https://ok.test/simple"}, []string{"ok.test:443"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PipHosts(tt.index, tt.extras)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PipHosts(%q, %q) = %q, want %q", tt.index, tt.extras, got, tt.want)
			}
			checkPatterns(t, got)
		})
	}
}

func TestToolchainProbe(t *testing.T) {
	for _, eco := range []Ecosystem{Go, NPM, PNPM, Yarn, Python} {
		cmd, ok := ToolchainProbe(eco)
		if !ok || cmd == "" {
			t.Errorf("ToolchainProbe(%s) = %q, %v; want a command", eco, cmd, ok)
		}
	}
	if cmd, ok := ToolchainProbe(Cargo); ok || cmd != "" {
		t.Errorf("ToolchainProbe(cargo) = %q, %v; Cargo's registry is not read", cmd, ok)
	}
	// The Go probe prints what ParseProbe reads, in that order.
	if cmd, _ := ToolchainProbe(Go); !strings.HasSuffix(cmd, "go env GOPROXY GOSUMDB GOPRIVATE") {
		t.Errorf("Go probe %q does not print GOPROXY, GOSUMDB and GOPRIVATE", cmd)
	}
}

func TestParseProbe(t *testing.T) {
	tests := []struct {
		name    string
		eco     Ecosystem
		output  string
		want    []string
		wantErr string
	}{
		{"go", Go, "https://goproxy.mirror.test,direct\nsum.mirror.test\n\n", []string{"goproxy.mirror.test:443", "sum.mirror.test:443"}, ""},
		{"go with GOPRIVATE", Go, "https://goproxy.mirror.test,direct\noff\ngit.corp.test\n", []string{"goproxy.mirror.test:443"}, ""},
		{"go, CRLF", Go, "https://a.test\r\noff\r\n\r\n", []string{"a.test:443"}, ""},
		{"go, all off", Go, "off\noff\n\n", nil, ""},
		{"go, too few lines", Go, "https://a.test\noff\n", nil, "go env printed 2 lines, want 3"},
		{"go, nothing", Go, "", nil, "go env printed 0 lines"},
		{"go, too many lines", Go, "a\nb\nc\nd\n", nil, "go env printed 4 lines"},
		{"npm", NPM, "http://npm.mirror.test:4873/\n", []string{"npm.mirror.test:4873"}, ""},
		{"pnpm", PNPM, "https://npm.mirror.test/\n", []string{"npm.mirror.test:443"}, ""},
		{"yarn", Yarn, "https://npm.mirror.test", []string{"npm.mirror.test:443"}, ""},
		{"npm, nothing", NPM, "", nil, `npm printed "", want one line`},
		{"npm, empty line", NPM, "\n", nil, `npm printed "\n", want one line`},
		{"npm, blank line", NPM, " \n", nil, "want one line"},
		{"npm, two lines", NPM, "https://a.test/\nhttps://b.test/\n", nil, "want one line"},
		{"npm, not a URL", NPM, "undefined\n", nil, ""},
		{"python", Python, "https://pip.mirror.test/simple\nhttps://extra.mirror.test/simple\n", []string{"extra.mirror.test:443", "pip.mirror.test:443"}, ""},
		{"python, index only", Python, "https://pip.mirror.test/simple\n", []string{"pip.mirror.test:443"}, ""},
		{"python, no index", Python, "\n", nil, ""},
		{"python, nothing", Python, "", nil, "pip printed nothing"},
		{"cargo", Cargo, "anything\n", nil, `no toolchain probe for "cargo"`},
		{"unknown", Ecosystem("maven"), "x\n", nil, `no toolchain probe for "maven"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProbe(tt.eco, tt.output)
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("ParseProbe(%s, %q) error = %v, want %q", tt.eco, tt.output, err, tt.wantErr)
			case tt.wantErr == "" && err != nil:
				t.Fatalf("ParseProbe(%s, %q): %v", tt.eco, tt.output, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseProbe(%s, %q) = %q, want %q", tt.eco, tt.output, got, tt.want)
			}
			checkPatterns(t, got)
		})
	}
}
