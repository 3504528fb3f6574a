package sandbox_test

import (
	"bytes"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/sandbox"
	"github.com/pullwright/pullwright/setup"
)

// What New makes of each surface's settings: the runner, its image and
// limits, and with Docker the setup, its caches' limits and its fence's
// parent; or why setups will not run.
func TestNew(t *testing.T) {
	fwd := fencetest.Forwarder(t)
	operator := func(f func(op *policy.Operator)) *policy.Operator {
		op := policy.DefaultOperator()
		f(op)
		return op
	}
	socks := httpproxy.Config{HTTPSProxy: "socks5://fence:s3cret@env.test:1080"}
	badCA := filepath.Join(t.TempDir(), "corp-ca.pem")
	if err := os.WriteFile(badCA, []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type want struct {
		err string // in New's error; nothing else is checked then
		// The Docker runner's configuration; with Local none.
		local                   bool
		image, owner, forwarder string
		labels                  map[string]string
		noPull                  bool
		workspace               int64
		// The setup's limits and parent ("" none); noSetup is in
		// NoSetup's error, when setups do not run.
		limits  setup.Limits
		parent  string
		noSetup string
		// parentErr says NoSetup is a *ParentError.
		parentErr bool
	}
	defaultLimits := setup.Limits{Keep: 3, RepoBytes: 10 << 30, HostBytes: 50 << 30}
	for _, tc := range []struct {
		name string
		cfg  sandbox.Config
		want want
	}{
		{
			name: "serve with the default operator",
			cfg: sandbox.Config{Operator: policy.DefaultOperator(), StrictParent: true, Image: "pullwright/sandbox:1",
				Owner: "0123abcd", Forwarder: fwd},
			want: want{image: "pullwright/sandbox:1", owner: "0123abcd", forwarder: fwd, workspace: 2 << 30, limits: defaultLimits},
		},
		{
			name: "the operator's disk cap, caches and parent proxy",
			cfg: sandbox.Config{
				Operator: operator(func(op *policy.Operator) {
					op.Caps.Disk = "1GiB"
					op.Caches = policy.Caches{Keep: 5, RepoSize: "1GiB"}
					op.Fence.ParentProxy = "http://fence:s3cret@op.test:3128"
				}),
				ProxyEnv: httpproxy.Config{HTTPSProxy: "http://env.test:3128"}, StrictParent: true, Forwarder: fwd,
			},
			want: want{forwarder: fwd, workspace: 1 << 30, limits: setup.Limits{Keep: 5, RepoBytes: 1 << 30}, parent: "through http://op.test:3128"},
		},
		{
			name: "bot run: no operator file, the environment's proxy, its labels, no pull",
			cfg: sandbox.Config{ProxyEnv: httpproxy.Config{HTTPSProxy: "http://env.test:3128"}, Image: "img", Owner: "bot-run",
				Labels: map[string]string{"pullwright.run": "host/1"}, NoPull: true, Forwarder: fwd},
			want: want{image: "img", owner: "bot-run", labels: map[string]string{"pullwright.run": "host/1"}, noPull: true,
				forwarder: fwd, workspace: 2 << 30, limits: defaultLimits, parent: "https:// through http://env.test:3128"},
		},
		{
			name: "no forwarder",
			cfg:  sandbox.Config{Operator: policy.DefaultOperator(), StrictParent: true, Forwarder: filepath.Join(t.TempDir(), "no-such-bot")},
			want: want{workspace: 2 << 30, noSetup: "no-such-bot"},
		},
		{
			name: "a parent the fence cannot use, bot run",
			cfg:  sandbox.Config{ProxyEnv: socks, Forwarder: fwd},
			want: want{forwarder: fwd, workspace: 2 << 30, noSetup: "socks5:// is not a proxy the fence can use", parentErr: true},
		},
		{
			name: "a parent the fence cannot use, serve",
			cfg:  sandbox.Config{Operator: policy.DefaultOperator(), ProxyEnv: socks, StrictParent: true, Forwarder: fwd},
			want: want{err: `the parent proxy of setups' fence, from the bot's HTTPS_PROXY, HTTP_PROXY and NO_PROXY (fence.parent_proxy is not set): the proxy for https://: socks5:// is not a proxy the fence can use`},
		},
		{
			name: "a CA bundle that is no bundle",
			cfg:  sandbox.Config{Operator: policy.DefaultOperator(), CABundle: badCA, Forwarder: fwd},
			want: want{err: badCA},
		},
		{
			name: "local",
			cfg:  sandbox.Config{Local: true, QuietLocal: true, Path: "/opt/go/bin:/usr/bin", TempDir: "/tmp/runs", Image: "ignored", Forwarder: fwd},
			want: want{local: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			tc.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			sb, err := sandbox.New(tc.cfg)
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Fatalf("New = %v, want an error with %q", err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sb.Close() })
			if strings.Contains(logs.String(), "s3cret") {
				t.Errorf("the log shows the proxy's password: %s", logs.String())
			}
			if tc.want.local {
				l, ok := sb.Runner.(*runner.Local)
				switch {
				case !ok:
					t.Fatalf("Runner = %T, want *runner.Local", sb.Runner)
				case l.TempDir != tc.cfg.TempDir || l.Path != tc.cfg.Path:
					t.Errorf("Local in %q with PATH %q, want %q and %q", l.TempDir, l.Path, tc.cfg.TempDir, tc.cfg.Path)
				case sb.Docker != nil || sb.Setup != nil || sb.NoSetup != nil:
					t.Errorf("a local sandbox with Docker %v, setup %v (%v)", sb.Docker, sb.Setup, sb.NoSetup)
				}
				return
			}
			if sb.Docker == nil || sb.Runner != runner.Runner(sb.Docker) {
				t.Fatalf("Runner %T, Docker %v: want the Docker runner as both", sb.Runner, sb.Docker)
			}
			c := sb.Docker.Config()
			got := want{image: c.Image, owner: c.Owner, forwarder: c.Forwarder, labels: c.Labels, noPull: c.NoPull, workspace: c.WorkspaceSize}
			exp := tc.want
			if got.image != exp.image || got.owner != exp.owner || got.forwarder != exp.forwarder || !maps.Equal(got.labels, exp.labels) ||
				got.noPull != exp.noPull || got.workspace != exp.workspace {
				t.Errorf("Docker image %q owner %q forwarder %q labels %v no pull %v workspace %d,\nwant %q %q %q %v %v %d",
					got.image, got.owner, got.forwarder, got.labels, got.noPull, got.workspace,
					exp.image, exp.owner, exp.forwarder, exp.labels, exp.noPull, exp.workspace)
			}
			// Every run gets the runner's own limits: the operator's
			// configuration raises none of them.
			if c.NetworkMode != runner.DefaultNetworkMode || c.Memory != runner.DefaultMemory || c.NanoCPUs != runner.DefaultNanoCPUs ||
				c.PidsLimit != runner.DefaultPidsLimit || c.TmpfsSize != runner.DefaultTmpfsSize {
				t.Errorf("Docker limits network %q memory %d CPUs %d pids %d tmpfs %d, want the runner's defaults",
					c.NetworkMode, c.Memory, c.NanoCPUs, c.PidsLimit, c.TmpfsSize)
			}
			if exp.noSetup != "" {
				var pe *sandbox.ParentError
				switch {
				case sb.Setup != nil:
					t.Fatalf("a setup, want none because %q", exp.noSetup)
				case sb.NoSetup == nil || !strings.Contains(sb.NoSetup.Error(), exp.noSetup):
					t.Fatalf("NoSetup = %v, want %q", sb.NoSetup, exp.noSetup)
				case errors.As(sb.NoSetup, &pe) != exp.parentErr:
					t.Errorf("NoSetup = %v (%T), a parent's error: %v, want %v", sb.NoSetup, sb.NoSetup, !exp.parentErr, exp.parentErr)
				}
				return
			}
			s := sb.Setup
			if s == nil {
				t.Fatalf("no setup: %v", sb.NoSetup)
			}
			if s.Runner != sb.Docker {
				t.Errorf("the setup runs on %v, want the sandbox's Docker runner", s.Runner)
			}
			if s.Limits != exp.limits {
				t.Errorf("cache limits %+v, want %+v", s.Limits, exp.limits)
			}
			if !slices.Equal(s.Denied, setup.OwnAddresses()) {
				t.Errorf("the fence refuses %v, want this machine's addresses %v", s.Denied, setup.OwnAddresses())
			}
			switch {
			case exp.parent == "" && s.Parent != nil:
				t.Errorf("parent %v, want none", s.Parent)
			case exp.parent != "" && (s.Parent == nil || !strings.Contains(s.Parent.String(), exp.parent)):
				t.Errorf("parent %v, want %q", s.Parent, exp.parent)
			}
		})
	}
}

// The fence's parent is the operator's, else the bot's environment's; one
// the fence cannot speak to stops the start with where it came from, and
// the log says which parent it took, without its password.
func TestFenceParent(t *testing.T) {
	env := httpproxy.Config{HTTPSProxy: "http://fence:s3cret@env.test:3128"}
	for _, tc := range []struct {
		name  string
		fence policy.Fence
		env   httpproxy.Config
		want  string // in the log, or the error
		err   bool
	}{
		{"the environment's", policy.Fence{}, env, "https:// through http://env.test:3128", false},
		{"the operator's over the environment's", policy.Fence{ParentProxy: "http://fence:s3cret@op.test:3128"}, env, "through http://op.test:3128", false},
		{"none", policy.Fence{ParentProxy: policy.NoParentProxy}, env, "", false},
		{"neither", policy.Fence{}, httpproxy.Config{}, "", false},
		{"socks in the environment", policy.Fence{}, httpproxy.Config{HTTPSProxy: "socks5://fence:s3cret@env.test:1080"},
			`the parent proxy of setups' fence, from the bot's HTTPS_PROXY, HTTP_PROXY and NO_PROXY (fence.parent_proxy is not set): the proxy for https://: socks5:// is not a proxy the fence can use`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			p, err := sandbox.Parent(tc.fence, tc.env, slog.New(slog.NewTextHandler(&logs, nil)))
			switch {
			case tc.err:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `or to "none"`) {
					t.Fatalf("Parent = %v, want an error with %q", err, tc.want)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want == "" && (p != nil || logs.Len() > 0):
				t.Fatalf("Parent = %v (log %q), want none", p, logs.String())
			case tc.want != "" && (p == nil || !strings.Contains(logs.String(), tc.want)):
				t.Fatalf("Parent = %v, log %q; want it to say %q", p, logs.String(), tc.want)
			}
			if strings.Contains(logs.String(), "s3cret") || err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the password shows: %q %v", logs.String(), err)
			}
		})
	}
}
