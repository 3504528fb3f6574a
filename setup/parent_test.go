package setup_test

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/internal/egresstest"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/setup"
)

// In a network whose only way out is its own proxy, setup fetches through
// the fence and then that parent, with its credentials: the fence here
// resolves no name at all (the module proxy's is the parent's alone), so
// the real go command's modules come through the parent or not at all,
// and the parent sees each request by name.
func TestPrepareThroughAParentProxy(t *testing.T) {
	image := sandboxtest.Image(t)
	host, served := fencetest.ModProxy(t)
	parent := egresstest.NewProxy(t, map[string]netip.Addr{"modproxy.test": netip.MustParseAddr("127.0.0.1")}, false)
	parent.Auth = "fence:s3cret"
	through, err := fence.NewParent(httpproxy.Config{HTTPProxy: parent.URLWith(parent.Auth), HTTPSProxy: parent.URLWith(parent.Auth)})
	if err != nil {
		t.Fatal(err)
	}
	repo := fmt.Sprintf("test/setup-parent-%d", os.Getpid())
	d := newDocker(t, repo, image)
	s := &setup.Setup{Runner: d, Resolver: fencetest.Names{}, Parent: through,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	p, err := s.Prepare(t.Context(), pullwright.SetupRequest{
		Repo: repo, Dir: module(t, ""), Timeout: 2 * time.Minute, // no Base: a cache of its own
		Setup: []string{"GOPROXY=http://" + host + " GOTOOLCHAIN=local go mod download"},
		Hosts: []string{host}, // and no allowed range: the fence dials no address itself
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(t.Context())
	if p.Record == nil || p.Record.Failed || served.Load() == 0 {
		t.Fatalf("setup through the parent: %+v (%d requests served)", p.Record, served.Load())
	}
	if len(p.Record.Reached) != 1 || p.Record.Reached[0] != host || len(p.Record.Blocked) != 0 {
		t.Errorf("setup reached %q and was refused %q; want %s only", p.Record.Reached, p.Record.Blocked, host)
	}
	asked := parent.Requests()
	if int64(len(asked)) != served.Load() {
		t.Errorf("the parent was asked %d requests, the module proxy served %d: not all went through it", len(asked), served.Load())
	}
	for _, a := range asked {
		if !strings.HasPrefix(a, "GET http://"+host+"/") {
			t.Errorf("the parent was asked %q; want module requests by name", a)
		}
	}
}

// Behind a proxy that inspects TLS, setup trusts the network's CA when
// the operator gives its bundle, and only then: the real go, pip and npm
// clients fetch from https:// registries through the fence and a parent
// that ends each tunnel's TLS with a certificate of the network's CA
// (each client trusting it through its own variable: SSL_CERT_FILE,
// PIP_CERT, NODE_EXTRA_CA_CERTS). Without the bundle each fails on that
// certificate.
func TestPrepareTrustsTheCABundleBehindAnInspectingParent(t *testing.T) {
	ca := egresstest.NewCA(t, "Pullwright Test Inspection CA")
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	if err := os.WriteFile(bundle, ca.PEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	lo := netip.MustParseAddr("127.0.0.1")
	type client struct {
		image  string
		hosts  []string
		files  map[string]string
		setup  []string
		served func() int64
		failed []string // what each client says without the bundle
	}
	clients := map[string]func(t *testing.T) client{
		"go": func(t *testing.T) client {
			host, served := fencetest.ModProxy(t)
			return client{
				image: sandboxtest.Image(t), hosts: []string{host}, files: fencetest.GoModule(""),
				setup:  []string{"GOPROXY=https://" + host + " GOTOOLCHAIN=local go mod download"},
				served: served.Load, failed: []string{"x509: certificate signed by unknown authority"},
			}
		},
		"pip and npm": func(t *testing.T) client {
			ix := fencetest.ServePython(t, fencetest.Package{Name: "greeting", Version: "1.0", Files: map[string]string{
				"greeting/__init__.py": "def hello(name):\n    return 'hello, ' + name\n",
			}})
			reg := fencetest.ServeNPM(t, fencetest.Package{Name: "leftpad", Version: "1.2.0", Files: map[string]string{
				"index.js": "module.exports = (s, n) => String(s).padStart(n, '0');\n",
			}})
			return client{
				image: sandboxtest.NodeAndPython(t), hosts: []string{ix.Host, reg.Host}, files: map[string]string{"README.md": "a project\n"},
				setup: []string{
					`python3 -m venv "$PULLWRIGHT_DEPS/venv"`,
					`"$PULLWRIGHT_DEPS/venv/bin/python" -m pip install --retries 0 --index-url https://` + ix.Host + `/simple/ greeting || echo "pip failed"`,
					"npm view leftpad version --registry https://" + reg.Host + "/ --fetch-retries 0 || echo 'npm failed'",
					`"$PULLWRIGHT_DEPS/venv/bin/python" -c 'import greeting' && echo "pip installed"`,
				},
				served: func() int64 { return int64(len(ix.Requests.Paths()) + len(reg.Requests.Paths())) },
				failed: []string{"CERTIFICATE_VERIFY_FAILED", "pip failed", "SELF_SIGNED_CERT_IN_CHAIN", "npm failed"},
			}
		},
	}
	for name, mk := range clients {
		t.Run(name, func(t *testing.T) {
			c := mk(t)
			names := map[string]netip.Addr{}
			for _, h := range c.hosts {
				n, _, _ := strings.Cut(h, ":")
				names[n] = lo
			}
			parent := egresstest.NewProxy(t, names, false)
			parent.Inspect = ca
			through, err := fence.NewParent(httpproxy.Config{HTTPProxy: parent.URL, HTTPSProxy: parent.URL})
			if err != nil {
				t.Fatal(err)
			}
			for _, withBundle := range []bool{true, false} {
				repo := fmt.Sprintf("test/setup-ca-%d-%s-%t", os.Getpid(), strings.ReplaceAll(name, " ", "-"), withBundle)
				fencetest.RemoveCaches(t, repo)
				cfg := runner.DockerConfig{Image: c.image, Forwarder: fencetest.Forwarder(t), Owner: repo,
					Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
				if withBundle {
					cfg.CABundle = bundle
				}
				d, err := runner.NewDocker(cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				s := &setup.Setup{Runner: d, Resolver: fencetest.Names{}, Parent: through, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
				before := c.served()
				p, err := s.Prepare(t.Context(), pullwright.SetupRequest{
					Repo: repo, Dir: write(t, c.files), Timeout: 3 * time.Minute, Setup: c.setup, Hosts: c.hosts,
				})
				if err != nil {
					t.Fatal(err)
				}
				p.Release(t.Context())
				if p.Record == nil {
					t.Fatal("no setup ran")
				}
				t.Logf("with the bundle %v: setup's output:\n%s", withBundle, p.Record.Output)
				failed := slices.ContainsFunc(c.failed, func(f string) bool { return strings.Contains(p.Record.Output, f) })
				if withBundle && (p.Record.Failed || failed || c.served() == before) {
					t.Fatalf("setup with the network's CA failed:\n%s", p.Record.Output)
				}
				if !withBundle {
					for _, f := range c.failed {
						if !strings.Contains(p.Record.Output, f) {
							t.Errorf("setup without the network's CA: the output lacks %q:\n%s", f, p.Record.Output)
						}
					}
					if c.served() != before {
						t.Errorf("without the CA, the registries were reached %d times", c.served()-before)
					}
				}
			}
			for _, a := range parent.Requests() {
				if !strings.HasPrefix(a, "CONNECT ") {
					t.Errorf("the parent was asked %q; want only tunnels", a)
				}
			}
		})
	}
}
