package app

import (
	"testing"

	"github.com/pullwright/pullwright/agent"
)

func TestProgressSaysWhenTokensAreEstimated(t *testing.T) {
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
