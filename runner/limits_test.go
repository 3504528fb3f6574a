package runner

import (
	"reflect"
	"testing"

	"github.com/pullwright/pullwright"
)

func TestLimitsFor(t *testing.T) {
	d, err := newDocker(nil, DockerConfig{User: "1000:1000", WorkspaceSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const host = 4e9
	tests := []struct {
		name     string
		spec     pullwright.RunSpec
		hostCPUs int64
		want     limits
	}{
		{"defaults", pullwright.RunSpec{}, host, limits{network: "none", memory: DefaultMemory, nanoCPUs: DefaultNanoCPUs, disk: 64 << 20}},
		{"spec lowers", pullwright.RunSpec{Network: "bridge", Memory: 1 << 20, NanoCPUs: 5e8, Disk: 8 << 20}, host,
			limits{network: "bridge", memory: 1 << 20, nanoCPUs: 5e8, disk: 8 << 20}},
		{"disk at the cap", pullwright.RunSpec{Disk: 64 << 20}, host, limits{network: "none", memory: DefaultMemory, nanoCPUs: DefaultNanoCPUs, disk: 64 << 20}},
		// The operator's WorkspaceSize is a cap, not a default.
		{"disk above the cap", pullwright.RunSpec{Disk: 1 << 40}, host, limits{network: "none", memory: DefaultMemory, nanoCPUs: DefaultNanoCPUs, disk: 64 << 20}},
		{"CPUs above the host's", pullwright.RunSpec{NanoCPUs: 8e9}, host, limits{network: "none", memory: DefaultMemory, nanoCPUs: host, disk: 64 << 20}},
		{"host CPUs unknown", pullwright.RunSpec{NanoCPUs: 8e9}, 0, limits{network: "none", memory: DefaultMemory, nanoCPUs: 8e9, disk: 64 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := d.limitsFor(tt.spec, tt.hostCPUs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("limitsFor = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCheckCachesAndEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec pullwright.RunSpec
		ok   bool
	}{
		{"a cache and its variable", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Volume: "v", Target: "/deps", ReadOnly: true}}, Env: []string{"GOMODCACHE=/deps/files/go/mod"}}, true},
		{"no volume", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Target: "/deps"}}}, false},
		{"relative target", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Volume: "v", Target: "deps"}}}, false},
		{"unclean target", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Volume: "v", Target: "/deps/../workspace"}}}, false},
		{"over the workspace", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Volume: "v", Target: SandboxWorkdir}}}, false},
		{"inside the workspace", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Volume: "v", Target: SandboxWorkdir + "/node_modules"}}}, false},
		{"over /tmp", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Volume: "v", Target: "/tmp"}}}, false},
		{"over /var/tmp", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Volume: "v", Target: "/var/tmp"}}}, false},
		{"over the root", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Volume: "v", Target: "/"}}}, false},
		{"over the tools", pullwright.RunSpec{Caches: []pullwright.CacheMount{{Volume: "v", Target: ToolsDir}}}, false},
		{"an entry without a name", pullwright.RunSpec{Env: []string{"=x"}}, false},
		{"an entry without a value", pullwright.RunSpec{Env: []string{"X"}}, false},
	} {
		if err := checkLimits(tc.spec); (err == nil) != tc.ok {
			t.Errorf("%s: checkLimits = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
