package app_test

import (
	"encoding/json"
	"html"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
)

// costScript is fixScript with each call's usage reported, prompt-cache
// hits included.
func costScript() []fakellm.Step {
	steps := fixScript()
	usage := []fakellm.Usage{
		{Prompt: 2100, Completion: 95},
		{Prompt: 2650, Cached: 2048, Completion: 40},
		{Prompt: 3300, Cached: 2560, Completion: 210},
		{Prompt: 3900, Cached: 3072, Completion: 120},
	}
	for i := range steps {
		steps[i].Usage = usage[i]
	}
	return steps
}

// withPrices runs the bot with the operator's prices for its model, or
// none when prices is nil.
func withPrices(prices map[string]policy.Price) envOption {
	return func(c *app.Config) {
		op := policy.DefaultOperator()
		op.Models.Default = c.Model
		op.Prices = prices
		c.Operator = op
	}
}

// spentOn is what the fake model's answers reported, priced as the
// operator priced model: the spend every surface should show.
func spentOn(llm *fakellm.Server, steps []fakellm.Step, model string, prices map[string]policy.Price) pullwright.Spend {
	var s pullwright.Spend
	p, priced := prices[model]
	for i := range llm.Calls() {
		u := steps[min(i, len(steps)-1)].Usage
		s.Add(model, u.Prompt, u.Cached, u.Completion, false, p, priced)
	}
	return s
}

// A fix through the wired bot, with prices set: the status comment, the
// pull request's footer, /agent status and the metrics all say what the
// model reported at the operator's prices.
func TestCostIsShownWhereTheTaskIs(t *testing.T) {
	t.Parallel()
	prices := map[string]policy.Price{"test-model": {Input: 3, Output: 15, CachedInput: 0.3}}
	steps := costScript()
	e := newEnv(t, fakellm.New(t, steps...), withPrices(prices), withConsole)
	if code := e.comment("d1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
		t.Fatalf("fix answered %d", code)
	}
	tk := e.waitTask(1)
	if tk.State != task.Done {
		t.Fatalf("task ended %s: %s\nlogs:\n%s", tk.State, tk.Error, e.logs.String())
	}
	want := spentOn(e.llm, steps, "test-model", prices)
	line := want.String()
	// Not vacuous: the prices and cached tokens are in the line.
	if !strings.Contains(line, "12,415 tokens · $0.022") {
		t.Fatalf("expected spend line %q: the script or prices changed", line)
	}

	if status := e.waitComment(1, "✅ Done"); !strings.Contains(status.Body, line) {
		t.Errorf("status comment lacks %q:\n%s", line, status.Body)
	}
	prs := e.gh.PullRequests(owner, repoName)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	if footer := prs[0].Body[strings.LastIndex(prs[0].Body, "---"):]; !strings.Contains(footer, line) {
		t.Errorf("pull request footer lacks %q:\n%s", line, footer)
	}
	e.comment("s1", 1, owner, "/agent status")
	if c := e.waitComment(1, "Task 1: **"); !strings.Contains(c.Body, line) {
		t.Errorf("/agent status lacks %q: %s", line, c.Body)
	}

	// The console's page and its API, through the wired bot, show the same.
	browser := e.browser(t, owner)
	get := func(path string) []byte {
		t.Helper()
		resp, err := browser.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s = %d: %s", path, resp.StatusCode, b)
		}
		return b
	}
	if page := string(get("/console/tasks/" + strconv.FormatInt(tk.ID, 10))); !strings.Contains(page, html.EscapeString(line)) {
		t.Errorf("the console's task page lacks %q", line)
	}
	var api struct {
		Spend struct {
			USD    float64                 `json:"usd"`
			Text   string                  `json:"text"`
			Models []pullwright.ModelSpend `json:"models"`
		} `json:"spend"`
	}
	if err := json.Unmarshal(get("/api/tasks/"+strconv.FormatInt(tk.ID, 10)), &api); err != nil {
		t.Fatal(err)
	}
	if math.Abs(api.Spend.USD-want.USD()) > 1e-9 || api.Spend.Text != line || len(api.Spend.Models) != 1 ||
		api.Spend.Models[0].PromptTokens != want.Models[0].PromptTokens || api.Spend.Models[0].CachedTokens != want.Models[0].CachedTokens ||
		api.Spend.Models[0].CompletionTokens != want.Models[0].CompletionTokens {
		t.Errorf("the API's spend = %+v, want %+v", api.Spend, want)
	}

	m := want.Models[0]
	s := e.scrape()
	s.check(t, []check{
		{"pullwright_model_tokens_total", []string{"repo=" + owner + "/" + repoName, "model=test-model", "kind=prompt"}, float64(m.PromptTokens)},
		{"pullwright_model_tokens_total", []string{"repo=" + owner + "/" + repoName, "model=test-model", "kind=cached"}, float64(m.CachedTokens)},
		{"pullwright_model_tokens_total", []string{"repo=" + owner + "/" + repoName, "model=test-model", "kind=completion"}, float64(m.CompletionTokens)},
	})
	if usd, ok := s.get("pullwright_model_cost_usd_total", "repo="+owner+"/"+repoName, "model=test-model"); !ok || math.Abs(usd-want.USD()) > 1e-9 {
		t.Errorf("pullwright_model_cost_usd_total = %v (%v), want %v", usd, ok, want.USD())
	}
}

// Without a price the tokens are still counted, the cost is not: no
// cost series, and the comments say the cost is unknown.
func TestCostOfAnUnpricedModel(t *testing.T) {
	t.Parallel()
	steps := costScript()
	e := newEnv(t, fakellm.New(t, steps...), withPrices(nil))
	e.comment("d1", 1, owner, "/agent fix the typo")
	if tk := e.waitTask(1); tk.State != task.Done {
		t.Fatalf("task ended %s: %s", tk.State, tk.Error)
	}
	want := spentOn(e.llm, steps, "test-model", nil)
	if line := want.String(); !strings.Contains(line, "cost unknown (no price for test-model)") {
		t.Fatalf("expected spend line %q", line)
	} else {
		e.waitComment(1, line)
	}
	s := e.scrape()
	s.check(t, []check{
		{"pullwright_model_tokens_total", []string{"repo=" + owner + "/" + repoName, "model=test-model", "kind=prompt"}, float64(want.Models[0].PromptTokens)},
	})
	if usd, ok := s.get("pullwright_model_cost_usd_total", "repo="+owner+"/"+repoName, "model=test-model"); ok {
		t.Errorf("an unpriced model cost %v USD", usd)
	}
}
