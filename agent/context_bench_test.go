package agent

import (
	"fmt"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakellm"
)

// BenchmarkLongTask runs defaultLongTask (40 and 60 turns) against a fake model
// with a 128k context that counts 4 bytes per token, and reports what the
// "Context and budgets" figures of docs/benchmarks.md are:
//
//   - max_prompt_tokens: the largest request of the task, by the fake's
//     count, and budget_tokens: the budget fit keeps it under;
//   - prompt_tokens and resend_prompt_tokens: the task's prompt tokens
//     (compaction calls included), and what resending the whole
//     conversation every turn costs (its largest request in
//     resend_max_prompt_tokens), with their ratio;
//   - prefix_share: the mean share of each request's bytes that repeat the
//     previous request's prefix byte for byte (what a prompt cache can
//     serve);
//   - compactions and refusals (requests the fake refused as too long).
//
// go test ./agent -run '^$' -bench LongTask -benchtime 1x
func BenchmarkLongTask(b *testing.B) {
	for _, turns := range []int{40, 60} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			lt := defaultLongTask
			lt.turns = turns
			benchLongTask(b, lt)
		})
	}
}

func benchLongTask(b *testing.B, lt longTask) {
	const window = 128000
	for b.Loop() {
		managed := measureLongTask(b, lt, pullwright.ModelProfile{ContextWindow: window}, window)
		resend := measureLongTask(b, lt, pullwright.ModelProfile{ContextWindow: 1 << 30}, 0)
		b.ReportMetric(float64(managed.maxPrompt), "max_prompt_tokens")
		b.ReportMetric(float64(managed.budget), "budget_tokens")
		b.ReportMetric(float64(managed.prompt), "prompt_tokens")
		b.ReportMetric(float64(resend.prompt), "resend_prompt_tokens")
		b.ReportMetric(float64(resend.maxPrompt), "resend_max_prompt_tokens")
		b.ReportMetric(float64(managed.prompt)/float64(resend.prompt), "prompt_ratio")
		b.ReportMetric(managed.prefixShare, "prefix_share")
		b.ReportMetric(float64(managed.compactions), "compactions")
		b.ReportMetric(float64(managed.refusals), "refusals")
		b.ReportMetric(float64(managed.turns), "turns")
	}
}

type longTaskFigures struct {
	turns, budget, maxPrompt, prompt, compactions, refusals int
	prefixShare                                             float64
}

// measureLongTask runs lt to its end against a fake with the given context
// limit (0: none) and measures the requests it was sent.
func measureLongTask(tb testing.TB, lt longTask, profile pullwright.ModelProfile, limit int) longTaskFigures {
	tb.Helper()
	s := lt.server(tb).CountTokens(fakellm.DefaultBytesPerToken)
	if limit > 0 {
		s.WithContextLimit(limit)
	}
	a := agentFor(tb, s, Config{})
	st, err := lt.run(tb, a, a.Start(longBrief(lt, profile)), lt.workspace(tb), false)
	if err != nil {
		tb.Fatal(err)
	}
	f := longTaskFigures{turns: st.Turns, budget: contextBudget(st), compactions: st.Compactions}
	var prev []byte
	shares, n := 0.0, 0
	reqs := s.Requests()
	for i, body := range s.Bodies() {
		tokens := s.Tokens(body)
		f.prompt += tokens
		if limit > 0 && tokens > limit {
			f.refusals++
			continue
		}
		if isCompaction(reqs[i]) {
			continue
		}
		f.maxPrompt = max(f.maxPrompt, tokens)
		if prev != nil {
			shares += float64(commonPrefix(prev, body)) / float64(len(body))
			n++
		}
		prev = body
	}
	if n > 0 {
		f.prefixShare = shares / float64(n)
	}
	return f
}
