package task

import (
	"reflect"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/policy"
)

// The agent learns how to talk to the task's model, and what its cached
// prompt tokens cost, only from the Limits built here.
func TestLimitsCarryProfileAndCachedPrice(t *testing.T) {
	var s policy.Settings
	s.Model = "o4-mini"
	s.Price = policy.Price{Input: 1.1, Output: 4.4, CachedInput: 0.275}
	s.Profile = pullwright.ModelProfile{MaxOutputTokens: 8000, ReasoningEffort: "low", SystemRole: "developer", Deployment: "o4-mini-eu"}
	got := limits(s)
	if got.Model != "o4-mini" || got.PriceCachedInput != 0.275 || got.PriceInput != 1.1 || got.PriceOutput != 4.4 {
		t.Errorf("limits = %+v", got)
	}
	if !reflect.DeepEqual(got.Profile, s.Profile) {
		t.Errorf("profile = %+v, want %+v", got.Profile, s.Profile)
	}
}
