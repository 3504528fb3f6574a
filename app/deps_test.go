package app

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright/policy"
)

// The fence's parent is the operator's, else the bot's environment's; one
// the fence cannot speak to stops the start with where it came from, and
// the log says which parent it took, without its password.
func TestFenceParent(t *testing.T) {
	t.Parallel()
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
			p, err := fenceParent(tc.fence, tc.env, slog.New(slog.NewTextHandler(&logs, nil)))
			switch {
			case tc.err:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `or to "none"`) {
					t.Fatalf("fenceParent = %v, want an error with %q", err, tc.want)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want == "" && (p != nil || logs.Len() > 0):
				t.Fatalf("fenceParent = %v (log %q), want none", p, logs.String())
			case tc.want != "" && (p == nil || !strings.Contains(logs.String(), tc.want)):
				t.Fatalf("fenceParent = %v, log %q; want it to say %q", p, logs.String(), tc.want)
			}
			if strings.Contains(logs.String(), "s3cret") || err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the password shows: %q %v", logs.String(), err)
			}
		})
	}
}

// A CA bundle for the sandboxes that is no bundle stops the bot at start,
// naming the file.
func TestNewRefusesABadCABundle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "corp-ca.pem")
	if err := os.WriteFile(bad, []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(t.Context(), Config{
		Token: "t", OpenAIKey: "k", Runner: "docker", SandboxCABundle: bad,
		DatabaseURL: "sqlite://" + filepath.Join(dir, "bot.db"), WorkDir: filepath.Join(dir, "work"),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "CA bundle") {
		t.Fatalf("New = %v, want an error naming %s", err, bad)
	}
}
