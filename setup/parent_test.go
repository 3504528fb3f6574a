package setup_test

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/internal/egresstest"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
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
