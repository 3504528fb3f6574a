package app

import (
	"math"
	"slices"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/agent"
)

func TestProgressSaysWhenTokensAreEstimated(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		estimatedTurns int
		want           bool
	}{{0, false}, {1, true}} {
		st := &agent.State{Turns: 3, PromptTokens: 100, CompletionTokens: 20, EstimatedTurns: tt.estimatedTurns}
		p := progress(nil, st, st.Spent("m"))
		if p.Tokens != 120 || p.TokensEstimated != tt.want || p.Spend.Tokens() != 120 || p.Spend.TokensEstimated() != tt.want {
			t.Errorf("%d estimated turns: tokens %d, estimated %v; want 120, %v", tt.estimatedTurns, p.Tokens, p.TokensEstimated, tt.want)
		}
	}
}

// A turn's spend is the task's after it less the task's before, model by
// model; models the turn did not call are left out.
func TestSpentSince(t *testing.T) {
	t.Parallel()
	p := pullwright.Price{Input: 2, Output: 8}
	var before pullwright.Spend
	before.Add("a", 1000, 0, 100, false, p, true)
	before.Add("b", 500, 0, 50, false, p, false)
	after := pullwright.Spend{Models: slices.Clone(before.Models)}
	after.Add("a", 300, 200, 30, false, p, true)
	after.Add("c", 10, 0, 1, true, p, true)

	got := spentSince(before, after)
	if len(got.Models) != 2 {
		t.Fatalf("models = %+v, want a and c", got.Models)
	}
	a, c := got.Models[0], got.Models[1]
	if a.Model != "a" || a.Calls != 1 || a.PromptTokens != 300 || a.CachedTokens != 200 || a.CompletionTokens != 30 ||
		math.Abs(a.USD-p.Cost(300, 200, 30)) > 1e-12 {
		t.Errorf("a's turn = %+v", a)
	}
	if c.Model != "c" || c.Calls != 1 || c.PromptTokens != 10 || !c.TokensEstimated {
		t.Errorf("c's turn = %+v", c)
	}
	if none := spentSince(after, after); len(none.Models) != 0 {
		t.Errorf("no calls spent %+v", none)
	}
}
