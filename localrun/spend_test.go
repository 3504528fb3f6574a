package localrun_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/localrun"
)

// The report and the status line say what the model calls used, and what
// they cost at the prices given for the run's model, from the usage the
// endpoint reported.
func TestRunReportsWhatItCost(t *testing.T) {
	usage := []fakellm.Usage{
		{Prompt: 1800, Completion: 60},
		{Prompt: 2400, Cached: 1536, Completion: 140},
		{Prompt: 2900, Cached: 2048, Completion: 75},
	}
	price := pullwright.Price{Input: 2.5, Output: 10, CachedInput: 1.25}
	for _, tt := range []struct {
		name   string
		prices map[string]pullwright.Price
		want   string // what the line must say, lest the expected Spend be wrong too
	}{
		{"priced", map[string]pullwright.Price{"test-model": price, "other-model": {Input: 100}}, "7,375 tokens · $0.016"},
		{"unpriced", map[string]pullwright.Price{"other-model": price}, "7,375 tokens · cost unknown (no price for test-model)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			steps := []fakellm.Step{readStep, editStep, finishStep}
			var want pullwright.Spend
			p, priced := tt.prices["test-model"]
			for i := range steps {
				steps[i].Usage = usage[i]
				want.Add("test-model", usage[i].Prompt, usage[i].Cached, usage[i].Completion, false, p, priced)
			}
			if want.String() != tt.want {
				t.Fatalf("the expected spend says %q, want %q", want.String(), tt.want)
			}
			dir := newRepo(t, false, nil)
			llm := fakellm.New(t, steps...)
			o, stdout, stderr := options(t, dir, llm, strings.NewReader(""), true)
			o.Prices = tt.prices
			res, err := localrun.Run(context.Background(), o)
			if err != nil {
				t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
			}
			if llm.Calls() != len(steps) {
				t.Fatalf("the model was called %d times, want %d", llm.Calls(), len(steps))
			}
			if got := res.Spend.String(); got != tt.want {
				t.Errorf("Result.Spend = %q, want %q", got, tt.want)
			}
			mustContain(t, "stdout", stdout.String(), "(3 turns, "+tt.want+")")
			// The status line before the last call showed the first two.
			var two pullwright.Spend
			for _, u := range usage[:2] {
				two.Add("test-model", u.Prompt, u.Cached, u.Completion, false, p, priced)
			}
			// What is happening comes first: the line is cut to the
			// terminal's width, and the spend can be long.
			mustContain(t, "stderr", stderr.String(), "… 2/40 turns · waiting for the model · "+pullwright.Thousands(two.Tokens())+" tokens")
		})
	}
}
