package pullwright

import (
	"fmt"
	"slices"
	"strings"
)

// Spend is what a task's model calls used and what they cost at the
// operator's prices, by model. It is kept with the task and shown on
// every surface that shows the task (status comment, pull request,
// console, API, terminal, job summary), each rendering it with String
// or reading its fields, never counting on its own.
type Spend struct {
	Models []ModelSpend `json:"models,omitempty"`
}

// ModelSpend is one model's share of a Spend.
type ModelSpend struct {
	Model string `json:"model"`
	// Calls counts the model calls answered (turns and compactions).
	Calls            int `json:"calls"`
	PromptTokens     int `json:"prompt_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty"` // part of PromptTokens
	CompletionTokens int `json:"completion_tokens"`
	// USD is the cost at the prices the task ran under.
	USD float64 `json:"usd"`
	// TokensEstimated: the endpoint reported no usage for some calls,
	// whose tokens are counted from the sizes sent and answered.
	TokensEstimated bool `json:"tokens_estimated,omitempty"`
	// Unpriced: the operator set no price for the model, so USD is 0 and
	// not what the calls cost.
	Unpriced bool `json:"unpriced,omitempty"`
}

// Price is what a model costs, in USD per million tokens, as the
// operator sets it (prices in the operator file).
type Price struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
	// CachedInput is the price of prompt tokens the endpoint served from
	// its prompt cache; 0 prices them as Input.
	CachedInput float64 `yaml:"cached_input" json:"cached_input,omitempty"`
}

// Cost is what the given tokens cost at p.
func (p Price) Cost(prompt, cached, completion int) float64 {
	cached = min(max(cached, 0), prompt)
	cachedPrice := p.Input
	if p.CachedInput > 0 {
		cachedPrice = p.CachedInput
	}
	return (float64(prompt-cached)*p.Input + float64(cached)*cachedPrice + float64(completion)*p.Output) / 1e6
}

// Add counts one model call of model, priced at p; priced is false when
// the operator has no price for the model.
func (s *Spend) Add(model string, prompt, cached, completion int, estimated bool, p Price, priced bool) {
	i := slices.IndexFunc(s.Models, func(m ModelSpend) bool { return m.Model == model })
	if i < 0 {
		s.Models = append(s.Models, ModelSpend{Model: model})
		i = len(s.Models) - 1
	}
	m := &s.Models[i]
	m.Calls++
	m.PromptTokens += prompt
	m.CachedTokens += min(max(cached, 0), prompt)
	m.CompletionTokens += completion
	m.USD += p.Cost(prompt, cached, completion)
	m.TokensEstimated = m.TokensEstimated || estimated
	m.Unpriced = m.Unpriced || !priced
}

// Calls counts the model calls of every model.
func (s Spend) Calls() int {
	n := 0
	for _, m := range s.Models {
		n += m.Calls
	}
	return n
}

// Tokens are the prompt and completion tokens of every model.
func (s Spend) Tokens() int {
	n := 0
	for _, m := range s.Models {
		n += m.PromptTokens + m.CompletionTokens
	}
	return n
}

// USD is the cost of every model's calls.
func (s Spend) USD() float64 {
	var usd float64
	for _, m := range s.Models {
		usd += m.USD
	}
	return usd
}

// TokensEstimated reports whether some token counts are estimates.
func (s Spend) TokensEstimated() bool {
	return slices.ContainsFunc(s.Models, func(m ModelSpend) bool { return m.TokensEstimated })
}

// Unpriced are the models the operator has no price for, in order.
func (s Spend) Unpriced() []string {
	var out []string
	for _, m := range s.Models {
		if m.Unpriced && m.PromptTokens+m.CompletionTokens > 0 {
			out = append(out, m.Model)
		}
	}
	return out
}

// Estimated reports whether USD is less than certain: some tokens are
// estimated or some model has no price.
func (s Spend) Estimated() bool { return s.TokensEstimated() || len(s.Unpriced()) > 0 }

// Merge adds o's calls to s's, model by model.
func (s *Spend) Merge(o Spend) {
	for _, m := range o.Models {
		i := slices.IndexFunc(s.Models, func(x ModelSpend) bool { return x.Model == m.Model })
		if i < 0 {
			s.Models = append(s.Models, m)
			continue
		}
		x := &s.Models[i]
		x.Calls += m.Calls
		x.PromptTokens += m.PromptTokens
		x.CachedTokens += m.CachedTokens
		x.CompletionTokens += m.CompletionTokens
		x.USD += m.USD
		x.TokensEstimated = x.TokensEstimated || m.TokensEstimated
		x.Unpriced = x.Unpriced || m.Unpriced
	}
}

// FormatUSD writes an amount the way every surface shows money: cents
// from a dollar up, four decimals below, so that a cheap task is not
// shown as free.
func FormatUSD(usd float64) string {
	switch {
	case usd == 0:
		return "$0"
	case usd >= 1:
		return fmt.Sprintf("$%.2f", usd)
	case usd >= 0.01:
		return fmt.Sprintf("$%.3f", usd)
	default:
		return fmt.Sprintf("$%.4f", usd)
	}
}

// String is the spend in one line, as comments, the terminal and the
// job summary show it: tokens, then the cost, then why the cost is
// uncertain, if it is.
func (s Spend) String() string {
	var b strings.Builder
	tokens := s.Tokens()
	if s.TokensEstimated() {
		fmt.Fprintf(&b, "about %s tokens", Thousands(tokens))
	} else {
		fmt.Fprintf(&b, "%s tokens", Thousands(tokens))
	}
	unpriced := s.Unpriced()
	switch {
	case tokens == 0:
	case len(unpriced) == len(s.Models):
		b.WriteString(" · cost unknown (no price for " + strings.Join(unpriced, ", ") + ")")
	default:
		usd := FormatUSD(s.USD())
		var why []string
		if s.TokensEstimated() {
			why = append(why, "the model endpoint reports no usage")
		}
		if len(unpriced) > 0 {
			why = append(why, "no price for "+strings.Join(unpriced, ", "))
		}
		if len(why) > 0 {
			fmt.Fprintf(&b, " · about %s (estimated: %s)", usd, strings.Join(why, "; "))
		} else {
			b.WriteString(" · " + usd)
		}
	}
	return b.String()
}

// Thousands writes n with commas between groups of three digits, as
// every surface writes counts of tokens.
func Thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + Thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
