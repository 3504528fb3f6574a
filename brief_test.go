package pullwright_test

import (
	"testing"

	"github.com/pullwright/pullwright"
)

// A plan item's status reads as words wherever a person sees it; a status
// a later release adds reads as its name with spaces.
func TestPlanItemWords(t *testing.T) {
	for _, tt := range []struct{ status, want string }{
		{pullwright.PlanPending, "pending"},
		{"", "pending"},
		{pullwright.PlanInProgress, "in progress"},
		{pullwright.PlanDone, "done"},
		{"on_hold", "on hold"},
	} {
		if got := (pullwright.PlanItem{Title: "x", Status: tt.status}).Words(); got != tt.want {
			t.Errorf("PlanItem{Status: %q}.Words() = %q, want %q", tt.status, got, tt.want)
		}
	}
}
