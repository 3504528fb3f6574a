package fence

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// A route carries the sandbox's connections to the proxy over one byte
// stream each way, as the forwarder's stdin and stdout do through the
// engine; the proxy's rules hold at its end.
func TestRouteCarriesConnectionsToTheProxy(t *testing.T) {
	registry := newBackend(t, true)
	elsewhere := newBackend(t, true)
	resolver := &names{table: map[string][]netip.Addr{"registry.test": {registry.addr()}, "elsewhere.test": {elsewhere.addr()}}}
	p, err := New(Policy{Hosts: []string{"registry.test:" + registry.port()}, AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		resolver, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	toBot, fromSandbox := io.Pipe()
	toSandbox, fromBot := io.Pipe()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var served, forwarded error
	wg.Go(func() { served = p.ServeRoute(ctx, pipe{toBot, fromBot}) })
	wg.Go(func() { forwarded = Forward(ctx, l, toSandbox, fromSandbox) })

	proxy := "http://" + l.Addr().String()
	var clients sync.WaitGroup
	for range 5 { // several connections at once share the session
		clients.Go(func() {
			resp, err := client(proxy, registry.Server).Get("https://registry.test:" + registry.port() + "/pkg")
			if err != nil {
				t.Errorf("through the route: %v", err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "served /pkg" {
				t.Errorf("through the route: %q", body)
			}
		})
	}
	clients.Wait()
	if _, err := client(proxy, elsewhere.Server).Get("https://elsewhere.test:" + elsewhere.port() + "/"); err == nil || elsewhere.hits.Load() != 0 {
		t.Fatalf("a host off the list: %v, %d hits", err, elsewhere.hits.Load())
	}
	events, _ := p.Events()
	if last := events[len(events)-1]; last.Allowed || !strings.Contains(last.String(), "blocked: elsewhere.test") {
		t.Fatalf("last event %s", last)
	}

	// The sandbox ends: its side of the stream closes, and both ends return.
	fromSandbox.Close()
	cancel()
	wg.Wait()
	if served != nil || forwarded != nil {
		t.Fatalf("ServeRoute: %v, Forward: %v", served, forwarded)
	}
	if registry.hits.Load() != 5 {
		t.Fatalf("registry hits %d, want 5", registry.hits.Load())
	}
}
