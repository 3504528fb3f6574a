package setup

import (
	"slices"
	"testing"
	"time"

	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/runner"
)

func TestEvictions(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	c := func(volume, repo string, ready int, mb int64) runner.ReadyCache {
		return runner.ReadyCache{Volume: volume, Repo: repo, ReadyAt: at(ready), Bytes: mb << 20}
	}
	tests := []struct {
		name   string
		all    []runner.ReadyCache
		used   map[string]time.Time
		held   []string // by runs
		limits Limits
		want   []string
	}{
		{"under every limit", []runner.ReadyCache{c("a1", "a", 1, 10), c("b1", "b", 2, 10)}, nil, nil, Limits{Keep: 3, RepoBytes: 100 << 20, HostBytes: 100 << 20}, nil},
		{"keep counts per repository, oldest out", []runner.ReadyCache{c("a1", "a", 1, 1), c("a2", "a", 2, 1), c("a3", "a", 3, 1), c("b1", "b", 0, 1)},
			nil, nil, Limits{Keep: 2}, []string{"a1"}},
		{"a use counts, not only when it was made", []runner.ReadyCache{c("a1", "a", 1, 1), c("a2", "a", 2, 1), c("a3", "a", 3, 1)},
			map[string]time.Time{"a1": at(9)}, nil, Limits{Keep: 2}, []string{"a2"}},
		{"a use older than the cache's readiness is not its last", []runner.ReadyCache{c("a1", "a", 5, 1), c("a2", "a", 2, 1)},
			map[string]time.Time{"a1": at(0)}, nil, Limits{Keep: 1}, []string{"a2"}},
		{"repository bytes: least recent out until it fits", []runner.ReadyCache{c("a1", "a", 1, 40), c("a2", "a", 2, 40), c("a3", "a", 3, 40), c("b1", "b", 0, 90)},
			nil, nil, Limits{Keep: 5, RepoBytes: 100 << 20}, []string{"a1"}},
		{"the current cache stays, even alone over the cap", []runner.ReadyCache{c("a1", "a", 1, 40), c("a2", "a", 2, 300)},
			map[string]time.Time{"a1": at(5)}, []string{"a2"}, Limits{Keep: 5, RepoBytes: 100 << 20}, []string{"a1"}},
		{"host bytes across repositories, least recent first", []runner.ReadyCache{c("a1", "a", 1, 40), c("b1", "b", 2, 40), c("c1", "c", 3, 40)},
			map[string]time.Time{"a1": at(4)}, nil, Limits{Keep: 5, HostBytes: 90 << 20}, []string{"b1"}},
		{"keep then host", []runner.ReadyCache{c("a1", "a", 1, 40), c("a2", "a", 2, 40), c("b1", "b", 3, 40)},
			nil, []string{"b1"}, Limits{Keep: 1, HostBytes: 50 << 20}, []string{"a1", "a2"}},
		{"an unknown size is over a cap on bytes", []runner.ReadyCache{{Volume: "a1", Repo: "a", ReadyAt: at(3), Bytes: -1}, c("a2", "a", 2, 10)},
			nil, nil, Limits{Keep: 5, RepoBytes: 10 << 20}, []string{"a1"}},
		{"an unknown size is over the host's cap", []runner.ReadyCache{{Volume: "a1", Repo: "a", ReadyAt: at(3), Bytes: -1}, c("b1", "b", 2, 10)},
			nil, nil, Limits{Keep: 5, HostBytes: 10 << 20}, []string{"a1"}},
		{"an unknown size a run holds stays and counts nothing", []runner.ReadyCache{{Volume: "a1", Repo: "a", ReadyAt: at(3), Bytes: -1}, c("a2", "a", 2, 10)},
			nil, []string{"a1"}, Limits{Keep: 5, RepoBytes: 10 << 20}, nil},
		{"with no cap on bytes an unknown size is kept", []runner.ReadyCache{{Volume: "a1", Repo: "a", ReadyAt: at(3), Bytes: -1}},
			nil, nil, Limits{Keep: 5}, nil},
		{"every cache a run holds stays, not only the newest", []runner.ReadyCache{c("a1", "a", 1, 1), c("a2", "a", 2, 1), c("a3", "a", 3, 1)},
			nil, []string{"a1", "a3"}, Limits{Keep: 1}, []string{"a2"}},
		{"a tie is broken by name", []runner.ReadyCache{c("x", "a", 1, 1), c("y", "a", 1, 1)}, nil, nil, Limits{Keep: 1}, []string{"y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held := map[string]bool{}
			for _, v := range tt.held {
				held[v] = true
			}
			got := Evictions(tt.all, tt.used, held, tt.limits)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Evictions = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPreparedHosts(t *testing.T) {
	p := prepared{Events: []fence.Event{
		{Host: "mirror.test", Port: 443, Allowed: true},
		{Host: "evil.test", Port: 443},
		{Host: "mirror.test", Port: 443, Allowed: true},
		{Host: "fd00::5", Port: 8443, Allowed: true},
		{Host: "evil.test", Port: 443},
		{Host: "evil.test", Port: 80},
	}}
	reached, blocked := p.Hosts()
	if !slices.Equal(reached, []string{"mirror.test:443", "[fd00::5]:8443"}) || !slices.Equal(blocked, []string{"evil.test:443", "evil.test:80"}) {
		t.Errorf("Hosts() = %q, %q", reached, blocked)
	}
}
