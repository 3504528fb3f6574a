package agent

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakellm"
)

// TestTurnCapIsNeverExceeded drives a model that never finishes for exactly
// MaxTurns turns: each is one request, and the next Turn is refused without
// a request.
func TestTurnCapIsNeverExceeded(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		limits pullwright.Limits
		want   int
	}{
		{"config", Config{MaxTurns: 3}, pullwright.Limits{}, 3},
		{"task below the config", Config{MaxTurns: 10}, pullwright.Limits{MaxTurns: 2}, 2},
		{"task above the config", Config{MaxTurns: 2}, pullwright.Limits{MaxTurns: 5}, 5},
		{"a single turn", Config{}, pullwright.Limits{MaxTurns: 1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakellm.NewByTurn(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("think", `{"thought":"not done yet"}`)}})
			a := agentFor(t, s, tt.cfg)
			brief := testBrief
			brief.Limits = tt.limits
			st := a.Start(brief)
			dir := workspaceDir(t, nil)
			for i := range tt.want {
				if err := a.Turn(context.Background(), st, dir); err != nil {
					t.Fatalf("turn %d of %d: %v", i+1, tt.want, err)
				}
				if s.Calls() != i+1 {
					t.Fatalf("after turn %d the model had %d requests", i+1, s.Calls())
				}
			}
			before := clone(t, st)
			err := a.Turn(context.Background(), st, dir)
			if !errors.Is(err, ErrBudget) {
				t.Fatalf("turn %d: err = %v, want ErrBudget", tt.want+1, err)
			}
			if s.Calls() != tt.want {
				t.Errorf("turn %d made a request: %d requests for %d turns", tt.want+1, s.Calls(), tt.want)
			}
			if !reflect.DeepEqual(st, before) {
				t.Error("the refused turn changed the state")
			}
		})
	}
}

func TestLimitsModel(t *testing.T) {
	s := fakellm.NewByTurn(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("think", `{"thought":"x"}`)}})
	a := agentFor(t, s, Config{Model: "operator-default"})
	dir := workspaceDir(t, nil)
	for _, model := range []string{"", "repo-choice"} {
		brief := testBrief
		brief.Limits.Model = model
		if err := a.Turn(context.Background(), a.Start(brief), dir); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Model != "operator-default" || reqs[1].Model != "repo-choice" {
		t.Errorf("models asked for: %q and %q, want operator-default, then repo-choice", reqs[0].Model, reqs[1].Model)
	}
}

func TestCostUSD(t *testing.T) {
	tests := []struct {
		st   State
		want float64
	}{
		{State{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}, 0},
		{State{PromptTokens: 1_000_000, Limits: pullwright.Limits{PriceInput: 2.5}}, 2.5},
		{State{PromptTokens: 500_000, CompletionTokens: 250_000, Limits: pullwright.Limits{PriceInput: 2, PriceOutput: 8}}, 3},
		{State{PromptTokens: 1_000_000, CachedPromptTokens: 500_000, Limits: pullwright.Limits{PriceInput: 2, PriceCachedInput: 0.5}}, 1.25},
		{State{PromptTokens: 1_000_000, CachedPromptTokens: 500_000, Limits: pullwright.Limits{PriceInput: 2}}, 2},
	}
	for _, tt := range tests {
		if got := tt.st.CostUSD(); got != tt.want {
			t.Errorf("CostUSD(%d+%d tokens at %v/%v) = %v, want %v", tt.st.PromptTokens, tt.st.CompletionTokens,
				tt.st.Limits.PriceInput, tt.st.Limits.PriceOutput, got, tt.want)
		}
	}
}

// A State saved before it carried limits has no "limits" key: it decodes to
// zero Limits and runs under Config's, and a State without limits is saved
// without the key.
func TestStateWithoutLimits(t *testing.T) {
	s := fakellm.NewByTurn(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("write_file", `{"path":".github/workflows/ci.yml","content":"x"}`)}})
	// Two turns: the last offers only finish, and runs nothing else.
	a := agentFor(t, s, Config{MaxTurns: 2})
	data, err := json.Marshal(a.Start(testBrief))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"limits"`) {
		t.Errorf("a state without limits is saved with them: %s", data)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	dir := workspaceDir(t, nil)
	if err := a.Turn(context.Background(), &st, dir); err != nil {
		t.Fatal(err)
	}
	if got := readDisk(t, dir, ".github/workflows/ci.yml"); got != "x" {
		t.Errorf("without limits nothing is protected; file = %q", got)
	}
	if err := a.Turn(context.Background(), &st, dir); err != nil {
		t.Fatal(err)
	}
	if err := a.Turn(context.Background(), &st, dir); !errors.Is(err, ErrBudget) {
		t.Errorf("Config.MaxTurns does not apply: %v", err)
	}

	// With limits, the key is there and the round trip is exact.
	brief := testBrief
	brief.Limits = pullwright.Limits{MaxTurns: 7, MaxCostUSD: 1.5, PriceInput: 2, PriceOutput: 8, Model: "m2", Protected: []string{" ", "docs/**", ""}}
	st2 := roundTrip(t, a.Start(brief))
	want := pullwright.Limits{MaxTurns: 7, MaxCostUSD: 1.5, PriceInput: 2, PriceOutput: 8, Model: "m2", Protected: []string{"docs/**"}}
	if !reflect.DeepEqual(st2.Limits, want) {
		t.Errorf("limits = %+v, want %+v", st2.Limits, want)
	}
}

// A conversation saved before the State kept a Spend still shows what
// it used: its counts go to the model the task runs on.
func TestSpentOfAnOlderState(t *testing.T) {
	st := State{Turns: 3, PromptTokens: 1_000_000, CompletionTokens: 100_000, CachedPromptTokens: 500_000,
		Limits: pullwright.Limits{PriceInput: 2, PriceOutput: 8, PriceCachedInput: 0.5}}
	got := st.Spent("o3")
	want := pullwright.Spend{Models: []pullwright.ModelSpend{{Model: "o3", Calls: 3, PromptTokens: 1_000_000, CachedTokens: 500_000,
		CompletionTokens: 100_000, USD: st.CostUSD()}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Spent = %+v\n want %+v", got, want)
	}
	// Calls counted since are kept; only the difference is made up.
	st.count("o3", turnUsage{prompt: 1000, completion: 10})
	st.Turns++
	if got := st.Spent("o3"); got.Tokens() != st.Tokens() || got.Calls() != 4 || len(got.Models) != 1 {
		t.Errorf("Spent after a new call = %+v", got)
	}
}
