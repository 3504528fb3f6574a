package pullwright_test

import (
	"math"
	"testing"

	"github.com/pullwright/pullwright"
)

func TestSpend(t *testing.T) {
	o3 := pullwright.Price{Input: 2, Output: 8, CachedInput: 0.5}
	tests := []struct {
		name  string
		add   func(s *pullwright.Spend)
		usd   float64
		shown string
	}{
		{"nothing yet", func(*pullwright.Spend) {}, 0, "0 tokens"},
		{"priced", func(s *pullwright.Spend) {
			s.Add("o3", 10_000, 4_000, 1_000, false, o3, true)
			s.Add("o3", 20_000, 0, 2_000, false, o3, true)
		}, (26_000*2 + 4_000*0.5 + 3_000*8) / 1e6, "33,000 tokens · $0.078"},
		{"cheap is not free", func(s *pullwright.Spend) {
			s.Add("mini", 1_000, 0, 10, false, pullwright.Price{Input: 0.15, Output: 0.6}, true)
		}, (1_000*0.15 + 10*0.6) / 1e6, "1,010 tokens · $0.0002"},
		{"no usage reported", func(s *pullwright.Spend) {
			s.Add("o3", 1_000_000, 0, 100_000, true, o3, true)
		}, 2.8, "about 1,100,000 tokens · about $2.80 (estimated: the model endpoint reports no usage)"},
		{"no price", func(s *pullwright.Spend) {
			s.Add("local", 500, 0, 50, false, pullwright.Price{}, false)
		}, 0, "550 tokens · cost unknown (no price for local)"},
		{"one model of two without a price", func(s *pullwright.Spend) {
			s.Add("o3", 1_000_000, 0, 0, false, o3, true)
			s.Add("local", 500, 0, 50, false, pullwright.Price{}, false)
		}, 2, "1,000,550 tokens · about $2.00 (estimated: no price for local)"},
		{"a free model the operator priced at 0", func(s *pullwright.Spend) {
			s.Add("local", 500, 0, 50, false, pullwright.Price{}, true)
		}, 0, "550 tokens · $0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s pullwright.Spend
			tc.add(&s)
			if got := s.USD(); math.Abs(got-tc.usd) > 1e-9 {
				t.Errorf("USD = %v, want %v", got, tc.usd)
			}
			if got := s.String(); got != tc.shown {
				t.Errorf("String = %q\n want %q", got, tc.shown)
			}
			var merged pullwright.Spend
			merged.Merge(s)
			merged.Merge(s)
			if math.Abs(merged.USD()-2*tc.usd) > 1e-9 || merged.Tokens() != 2*s.Tokens() || merged.Calls() != 2*s.Calls() {
				t.Errorf("merged twice: %+v, want twice %+v", merged, s)
			}
		})
	}
}
