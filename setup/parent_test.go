package setup_test

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
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
// the operator gives its bundle, and only then: the real go command
// fetches from an https:// module proxy through the fence and a parent
// that ends each tunnel's TLS with a certificate of the network's CA.
// Without the bundle the same setup fails on that certificate.
func TestPrepareTrustsTheCABundleBehindAnInspectingParent(t *testing.T) {
	image := sandboxtest.Image(t)
	host, served := fencetest.ModProxy(t)
	ca := egresstest.NewCA(t, "Pullwright Test Inspection CA")
	parent := egresstest.NewProxy(t, map[string]netip.Addr{"modproxy.test": netip.MustParseAddr("127.0.0.1")}, false)
	parent.Inspect = ca
	through, err := fence.NewParent(httpproxy.Config{HTTPProxy: parent.URL, HTTPSProxy: parent.URL})
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	if err := os.WriteFile(bundle, ca.PEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, bundle string
		ok           bool
	}{{"with the bundle", bundle, true}, {"without", "", false}} {
		t.Run(tc.name, func(t *testing.T) {
			repo := fmt.Sprintf("test/setup-ca-%d-%t", os.Getpid(), tc.ok)
			fencetest.RemoveCaches(t, repo)
			d, err := runner.NewDocker(runner.DockerConfig{Image: image, Forwarder: fencetest.Forwarder(t), Owner: repo, CABundle: tc.bundle,
				Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			s := &setup.Setup{Runner: d, Resolver: fencetest.Names{}, Parent: through, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
			before := served.Load()
			p, err := s.Prepare(t.Context(), pullwright.SetupRequest{
				Repo: repo, Dir: module(t, ""), Timeout: 2 * time.Minute,
				Setup: []string{"GOPROXY=https://" + host + " GOTOOLCHAIN=local go mod download"},
				Hosts: []string{host},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release(t.Context())
			if p.Record == nil {
				t.Fatal("no setup ran")
			}
			if tc.ok && (p.Record.Failed || served.Load() == before) {
				t.Fatalf("setup with the network's CA failed: %+v", p.Record)
			}
			if !tc.ok && (!p.Record.Failed || !strings.Contains(p.Record.Output, "certificate signed by unknown authority")) {
				t.Fatalf("setup without the network's CA: %+v; want it to fail on the certificate", p.Record)
			}
			if asked := parent.Requests(); len(asked) == 0 || asked[len(asked)-1] != "CONNECT "+host {
				t.Errorf("the parent was asked %q; want tunnels to %s", asked, host)
			}
		})
	}
}
