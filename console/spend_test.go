package console

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

var (
	o3Spend = pullwright.Spend{Models: []pullwright.ModelSpend{{Model: "o3", Calls: 4, PromptTokens: 5000, CachedTokens: 1200, CompletionTokens: 321, USD: 0.011}}}
	// estimatedSpend: the endpoint reported no usage.
	estimatedSpend = pullwright.Spend{Models: []pullwright.ModelSpend{{Model: "gpt-x", Calls: 2, PromptTokens: 1000, CompletionTokens: 100, USD: 0.002, TokensEstimated: true}}}
	// unpricedSpend: the operator set no price for the model.
	unpricedSpend = pullwright.Spend{Models: []pullwright.ModelSpend{{Model: "secret-model", Calls: 1, PromptTokens: 900, CompletionTokens: 100, Unpriced: true}}}
)

// spent gives the fixture's tasks what they spent: alice's o/private
// (two tasks of o3, one on another day) and o/hostile (estimated tokens,
// asked the day before in UTC), dave's o/secret (a model with no price),
// and carol's o/readonly a task saved before spend was kept (tokens only).
func (f *fixture) spent(t *testing.T) {
	t.Helper()
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	edits := map[string]func(*task.Task){
		"private": func(tk *task.Task) {
			tasktest.Job(tk).Spend, tasktest.Job(tk).Tokens, tk.CreatedAt = o3Spend, o3Spend.Tokens(), day
		},
		"hostile": func(tk *task.Task) {
			tasktest.Job(tk).Spend, tk.CreatedAt = estimatedSpend, day.Add(-12*time.Hour-30*time.Minute)
		},
		"secret":   func(tk *task.Task) { tasktest.Job(tk).Spend, tk.CreatedAt = unpricedSpend, day },
		"readonly": func(tk *task.Task) { tasktest.Job(tk).Tokens, tk.CreatedAt = 4000, day },
	}
	for name, edit := range edits {
		if err := f.store.Rewrite(f.ids[name], edit); err != nil {
			t.Fatal(err)
		}
	}
	more := f.add(t, &task.Task{Kind: task.KindFix, Issue: 30, Instructions: "more"})
	f.ids["more"] = more.ID
	if err := f.store.Rewrite(more.ID, func(tk *task.Task) {
		tk.CreatedAt = day.Add(24 * time.Hour)
		tasktest.Job(tk).Spend = pullwright.Spend{Models: []pullwright.ModelSpend{{Model: "o3", Calls: 1, PromptTokens: 100, CompletionTokens: 10, USD: 0.001}}}
	}); err != nil {
		t.Fatal(err)
	}
}

func spentTask(s pullwright.Spend, tokens int, estimated bool) task.Task {
	tk := task.Task{Kind: task.KindFix}
	j := tasktest.Job(&tk)
	j.Spend, j.Tokens, j.TokensEstimated = s, tokens, estimated
	return tk
}

func TestCostCell(t *testing.T) {
	tests := []struct {
		name     string
		tk       task.Task
		cost     string
		line     string
		spendAPI bool
	}{
		{"priced", spentTask(o3Spend, 0, false), "$0.011", "5,321 tokens · $0.011", true},
		{"estimated tokens", spentTask(estimatedSpend, 0, false), "≈ $0.0020", "about 1,100 tokens · about $0.0020 (estimated: the model endpoint reports no usage)", true},
		{"no price", spentTask(unpricedSpend, 0, false), "unknown", "1,000 tokens · cost unknown (no price for secret-model)", true},
		{"one model of two unpriced", spentTask(pullwright.Spend{Models: append(append([]pullwright.ModelSpend{}, o3Spend.Models...), unpricedSpend.Models...)}, 0, false),
			"≈ $0.011", "6,321 tokens · about $0.011 (estimated: no price for secret-model)", true},
		{"before spend was kept", spentTask(pullwright.Spend{}, 12345, false), "12,345 tokens", "12,345 tokens", false},
		{"before spend was kept, estimated", spentTask(pullwright.Spend{}, 900, true), "≈ 900 tokens", "about 900 tokens (estimated: the model endpoint reports no usage)", false},
		{"nothing yet", spentTask(pullwright.Spend{}, 0, false), "—", "none yet", false},
		{"models but no tokens", spentTask(pullwright.Spend{Models: []pullwright.ModelSpend{{Model: "o3"}}}, 0, false), "—", "0 tokens", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v taskView
			viewCost(&v, tasktest.Job(&tt.tk).Work)
			if v.Cost != tt.cost || v.SpendLine != tt.line || (v.Spend != nil) != tt.spendAPI {
				t.Errorf("cost %q, line %q, spend %v; want %q, %q, %v", v.Cost, v.SpendLine, v.Spend != nil, tt.cost, tt.line, tt.spendAPI)
			}
			if v.Spend != nil && (v.Spend.Text != tasktest.Job(&tt.tk).Spend.String() || v.Spend.USD != tasktest.Job(&tt.tk).Spend.USD() || v.Spend.Estimated != tasktest.Job(&tt.tk).Spend.Estimated()) {
				t.Errorf("the API's spend %+v is not the task's", v.Spend)
			}
		})
	}
}

// The list's cost column and the task page's line and table show each
// task's spend; a person sees only the spend of tasks they may see.
func TestSpendOnPages(t *testing.T) {
	f := newFixture(t)
	f.spent(t)
	alice, carol := f.signIn(t, "alice"), f.signIn(t, "carol")
	tests := []struct {
		name    string
		who     *http.Cookie
		target  string
		want    []string
		notWant []string
	}{
		{"alice's list", alice, "/console/", []string{
			`<th>Cost</th>`,
			`<td class="cost" title="5,321 tokens · $0.011">$0.011</td>`,
			`<td class="cost" title="about 1,100 tokens · about $0.0020 (estimated: the model endpoint reports no usage)">≈ $0.0020</td>`,
		}, []string{"secret-model", "cost unknown", "4,000"}},
		{"carol's list", carol, "/console/", []string{
			`<td class="cost" title="recorded before costs were kept">4,000 tokens</td>`,
		}, []string{"$0.011", "≈"}},
		{"a priced task", alice, "/console/tasks/" + itoa(f.ids["private"]), []string{
			`<dd id="spend-line">5,321 tokens · $0.011</dd>`,
			`<tr><td><code>o3</code></td><td class="num">4</td><td class="num">5,000</td><td class="num">1,200</td><td class="num">321</td><td class="num">$0.011</td></tr>`,
		}, nil},
		{"an estimated task", alice, "/console/tasks/" + itoa(f.ids["hostile"]), []string{
			`<dd id="spend-line">about 1,100 tokens · about $0.0020 (estimated: the model endpoint reports no usage)</dd>`,
			`<tr><td><code>gpt-x</code></td><td class="num">2</td><td class="num">≈ 1,000</td><td class="num">0</td><td class="num">≈ 100</td><td class="num">≈ $0.0020</td></tr>`,
		}, nil},
		{"a task from before spend was kept", carol, "/console/tasks/" + itoa(f.ids["readonly"]), []string{
			`<dd id="spend-line">4,000 tokens</dd>`,
		}, []string{"<h2>Spend</h2>"}},
		{"the navigation", alice, "/console/", []string{`<a href="/console/spend">Spend</a>`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.serve(t, "GET", tt.target, nil, []*http.Cookie{tt.who}, nil)
			body := w.Body.String()
			if w.Code != http.StatusOK {
				t.Fatalf("%s = %d", tt.target, w.Code)
			}
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("%s lacks %s", tt.target, s)
				}
			}
			for _, s := range tt.notWant {
				if strings.Contains(body, s) {
					t.Errorf("%s shows %s", tt.target, s)
				}
			}
		})
	}
}

// The API's task has its spend by model and the sums, beside the tokens
// older clients read; a task from before spend was kept has no spend.
func TestSpendInTheAPI(t *testing.T) {
	f := newFixture(t)
	f.spent(t)
	o := loadOpenAPI(t)
	alice, carol := f.signIn(t, "alice"), f.signIn(t, "carol")
	tests := []struct {
		who       *http.Cookie
		operation string
		target    string
		id        int64
		want      *pullwright.Spend
		tokens    int
	}{
		{alice, "GET /api/tasks/{id}", "/api/tasks/" + itoa(f.ids["private"]), f.ids["private"], &o3Spend, 5321},
		{alice, "GET /api/tasks/{id}", "/api/tasks/" + itoa(f.ids["hostile"]), f.ids["hostile"], &estimatedSpend, 0},
		{carol, "GET /api/tasks/{id}", "/api/tasks/" + itoa(f.ids["readonly"]), f.ids["readonly"], nil, 4000},
		{alice, "GET /api/tasks", "/api/tasks", f.ids["private"], &o3Spend, 5321},
		{carol, "GET /api/tasks", "/api/tasks", f.ids["readonly"], nil, 4000},
	}
	for _, tt := range tests {
		w := f.serve(t, "GET", tt.target, nil, []*http.Cookie{tt.who}, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("%s = %d", tt.target, w.Code)
		}
		o.check(t, tt.operation, w)
		var list struct {
			Tasks []taskView `json:"tasks"`
		}
		if tt.operation == "GET /api/tasks" {
			if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
				t.Fatal(err)
			}
		} else {
			var v taskView
			if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			list.Tasks = []taskView{v}
		}
		var v *taskView
		for i := range list.Tasks {
			if list.Tasks[i].ID == tt.id {
				v = &list.Tasks[i]
			}
		}
		if v == nil {
			t.Fatalf("%s: no task %d: %s", tt.target, tt.id, w.Body)
		}
		if v.Tokens != tt.tokens {
			t.Errorf("%s: tokens %d, want %d", tt.target, v.Tokens, tt.tokens)
		}
		if tt.want == nil {
			if v.Spend != nil || strings.Contains(w.Body.String(), `"spend"`) {
				t.Errorf("%s: a task without spend has %s", tt.target, w.Body)
			}
			continue
		}
		want := viewSpend(*tt.want)
		if v.Spend == nil || v.Spend.Text != want.Text || v.Spend.USD != want.USD || v.Spend.Estimated != want.Estimated ||
			v.Spend.Tokens != want.Tokens || v.Spend.Calls != want.Calls || len(v.Spend.Models) != len(want.Models) || v.Spend.Models[0] != want.Models[0] {
			t.Errorf("%s: spend %+v, want %+v", tt.target, v.Spend, want)
		}
	}
}

// spendTotals decodes GET /api/spend's answer, checked against the spec.
func (f *fixture) spendTotals(t *testing.T, o *openAPI, who *http.Cookie, query string) (totals, int) {
	t.Helper()
	w := f.serve(t, "GET", "/api/spend?"+query, nil, []*http.Cookie{who}, nil)
	o.check(t, "GET /api/spend", w)
	var out totals
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
	}
	return out, w.Code
}

type row struct {
	key   string
	tasks int
	usd   float64
}

func rows(ts []spendTotal) []row {
	var out []row
	for _, s := range ts {
		out = append(out, row{s.Repo + s.Day, s.Tasks, math.Round(s.Spend.USD*1e6) / 1e6})
	}
	return out
}

// The totals sum, model by model, the spend of the tasks the person may
// see, by repository and by the day (UTC) each was asked.
func TestSpendTotals(t *testing.T) {
	f := newFixture(t)
	f.spent(t)
	o := loadOpenAPI(t)
	alice, carol, mallory := f.signIn(t, "alice"), f.signIn(t, "carol"), f.signIn(t, "mallory")
	f.gh.SetPermission("o", "secret", "dave", "admin")
	dave := f.signIn(t, "dave")
	tests := []struct {
		name       string
		who        *http.Cookie
		query      string
		status     int
		total      row
		tokensOnly int
		text       string
		byRepo     []row
		byDay      []row
	}{
		{"alice: her two repositories, merged by model", alice, "", 200, row{"", 3, 0.014}, 0,
			"about 6,531 tokens · about $0.014 (estimated: the model endpoint reports no usage)",
			[]row{{"o/private", 2, 0.012}, {"o/hostile", 1, 0.002}},
			[]row{{"2026-03-02", 1, 0.001}, {"2026-03-01", 1, 0.011}, {"2026-02-28", 1, 0.002}}},
		{"alice since a day", alice, "since=2026-03-01", 200, row{"", 2, 0.012}, 0, "5,431 tokens · $0.012",
			[]row{{"o/private", 2, 0.012}}, []row{{"2026-03-02", 1, 0.001}, {"2026-03-01", 1, 0.011}}},
		{"alice until a day", alice, "until=2026-03-01", 200, row{"", 2, 0.013}, 0,
			"about 6,421 tokens · about $0.013 (estimated: the model endpoint reports no usage)",
			[]row{{"o/private", 1, 0.011}, {"o/hostile", 1, 0.002}}, []row{{"2026-03-01", 1, 0.011}, {"2026-02-28", 1, 0.002}}},
		{"alice, one day", alice, "since=2026-02-28&until=2026-02-28", 200, row{"", 1, 0.002}, 0,
			"about 1,100 tokens · about $0.0020 (estimated: the model endpoint reports no usage)",
			[]row{{"o/hostile", 1, 0.002}}, []row{{"2026-02-28", 1, 0.002}}},
		{"alice, one repository", alice, "repo=O/Hostile", 200, row{"", 1, 0.002}, 0,
			"about 1,100 tokens · about $0.0020 (estimated: the model endpoint reports no usage)",
			[]row{{"o/hostile", 1, 0.002}}, []row{{"2026-02-28", 1, 0.002}}},
		{"alice asks for a repository she cannot see", alice, "repo=o/secret", 200, row{"", 0, 0}, 0, "0 tokens", nil, nil},
		{"dave: a model with no price", dave, "", 200, row{"", 1, 0}, 0, "1,000 tokens · cost unknown (no price for secret-model)",
			[]row{{"o/secret", 1, 0}}, []row{{"2026-03-01", 1, 0}}},
		{"carol: tokens of a task from before", carol, "", 200, row{"", 1, 0}, 4000, "0 tokens",
			[]row{{"o/readonly", 1, 0}}, []row{{"2026-03-01", 1, 0}}},
		{"mallory: nothing", mallory, "", 200, row{"", 0, 0}, 0, "0 tokens", nil, nil},
		{"bad day", alice, "since=yesterday", 400, row{}, 0, "", nil, nil},
		{"since after until", alice, "since=2026-03-02&until=2026-03-01", 400, row{}, 0, "", nil, nil},
		{"bad repo", alice, "repo=nope", 400, row{}, 0, "", nil, nil},
		{"nobody", nil, "", 401, row{}, 0, "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cookies []*http.Cookie
			if tt.who != nil {
				cookies = []*http.Cookie{tt.who}
			}
			w := f.serve(t, "GET", "/api/spend?"+tt.query, nil, cookies, nil)
			if w.Code != tt.status {
				t.Fatalf("= %d %s", w.Code, w.Body)
			}
			o.check(t, "GET /api/spend", w)
			if tt.status != 200 {
				return
			}
			var got totals
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if tt.who != dave && strings.Contains(w.Body.String(), "secret") {
				t.Errorf("the totals show o/secret's spend: %s", w.Body)
			}
			if r := rows([]spendTotal{got.Total})[0]; r != tt.total || got.Total.TokensOnly != tt.tokensOnly || got.Total.Spend.Text != tt.text {
				t.Errorf("total %+v, tokens only %d, %q; want %+v, %d, %q", r, got.Total.TokensOnly, got.Total.Spend.Text, tt.total, tt.tokensOnly, tt.text)
			}
			if r := rows(got.ByRepo); !equalRows(r, tt.byRepo) {
				t.Errorf("by repository %+v, want %+v", r, tt.byRepo)
			}
			if r := rows(got.ByDay); !equalRows(r, tt.byDay) {
				t.Errorf("by day %+v, want %+v", r, tt.byDay)
			}
			if got.Cut || got.Next != 0 || got.Unchecked != 0 {
				t.Errorf("cut %v at %d, unchecked %d", got.Cut, got.Next, got.Unchecked)
			}
		})
	}
}

func equalRows(a, b []row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The page shows the same totals, and nothing of a repository the person
// cannot see.
func TestSpendPage(t *testing.T) {
	f := newFixture(t)
	f.spent(t)
	alice, carol, dave := f.signIn(t, "alice"), f.signIn(t, "carol"), func() *http.Cookie { return f.signIn(t, "dave") }()
	tests := []struct {
		name    string
		who     *http.Cookie
		query   string
		want    []string
		notWant []string
	}{
		{"alice", alice, "", []string{
			`<strong>3 tasks</strong> · about 6,531 tokens · about $0.014 (estimated: the model endpoint reports no usage)`,
			`<td><a href="/console/?repo=o%2fprivate">o/private</a></td><td class="num">2</td><td class="num">5,431</td><td class="num cost" title="5,431 tokens · $0.012">$0.012</td>`,
			`<td><a href="/console/?repo=o%2fhostile">o/hostile</a></td><td class="num">1</td><td class="num">≈ 1,100</td>`,
			`<td>2026-02-28</td><td class="num">1</td>`,
		}, []string{"secret", "o/readonly"}},
		{"alice, filtered", alice, "?repo=o/private&since=2026-03-02", []string{
			`value="o/private"`, `name="since" value="2026-03-02"`, `<strong>1 task</strong> · 110 tokens · $0.0010`,
		}, []string{"o/hostile", "2026-03-01"}},
		{"carol: tokens only", carol, "", []string{
			`<strong>1 task</strong> · and 4,000 tokens of tasks recorded before costs were kept`,
			`<td class="num">0 + 4,000</td><td class="num cost">—</td>`,
		}, []string{"o/private", "secret"}},
		{"dave: no price", dave, "", []string{`<td class="num cost" title="1,000 tokens · cost unknown (no price for secret-model)">unknown</td>`}, []string{"o/private"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.serve(t, "GET", "/console/spend"+tt.query, nil, []*http.Cookie{tt.who}, nil)
			body := w.Body.String()
			if w.Code != http.StatusOK {
				t.Fatalf("= %d %s", w.Code, body)
			}
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("the page lacks %s\n%s", s, body)
				}
			}
			for _, s := range tt.notWant {
				if strings.Contains(body, s) {
					t.Errorf("the page shows %s", s)
				}
			}
		})
	}
	if w := f.serve(t, "GET", "/console/spend", nil, nil, nil); w.Code != http.StatusSeeOther {
		t.Errorf("the page without a session = %d", w.Code)
	}
	if w := f.serve(t, "GET", "/console/spend?since=x", nil, []*http.Cookie{alice}, nil); w.Code != http.StatusBadRequest {
		t.Errorf("a bad filter = %d", w.Code)
	}
}

// The totals count every task, past the store's page and the list's.
func TestSpendTotalsReadPastAPage(t *testing.T) {
	f := newFixture(t)
	o := loadOpenAPI(t)
	n := task.MaxList*2 + pageSize
	one := pullwright.Spend{Models: []pullwright.ModelSpend{{Model: "o3", Calls: 1, PromptTokens: 10, CompletionTokens: 1, USD: 0.001}}}
	for i := range n {
		tk := &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "private"}, Issue: 100 + i,
			Requester: task.Person{Login: "dave"}}
		tasktest.Job(tk).Spend = one
		if err := f.store.Record(context.Background(), task.Delivery{ID: "many" + itoa(int64(i))}, tk); err != nil {
			t.Fatal(err)
		}
	}
	got, code := f.spendTotals(t, o, f.signIn(t, "alice"), "")
	if code != 200 || got.Cut {
		t.Fatalf("= %d, cut %v", code, got.Cut)
	}
	if got.Total.Tasks != n+2 || got.Total.Spend.Calls != n || math.Abs(got.Total.Spend.USD-float64(n)*0.001) > 1e-9 {
		t.Errorf("total %d tasks, %d calls, $%f; want %d, %d, $%f", got.Total.Tasks, got.Total.Spend.Calls, got.Total.Spend.USD, n+2, n, float64(n)*0.001)
	}
}

// A sum that asks GitHub about as many repositories as one request may,
// or reads as many tasks, stops there and says so; before= counts the
// rest, and the two add up to the whole.
func TestSpendTotalsCut(t *testing.T) {
	for _, limit := range []string{"repositories", "tasks"} {
		t.Run(limit, func(t *testing.T) { spendTotalsCut(t, limit) })
	}
}

func spendTotalsCut(t *testing.T, limit string) {
	f := newFixture(t)
	f.spent(t)
	o := loadOpenAPI(t)
	alice := f.signIn(t, "alice")
	whole, _ := f.spendTotals(t, o, alice, "")
	if limit == "repositories" {
		f.c.totalRepos = 3
	} else {
		f.c.totalScan = 2
	}
	before := len(f.gh.Requests())
	first, code := f.spendTotals(t, o, alice, "")
	if got := len(f.gh.Requests()) - before; got > 3 {
		t.Errorf("one request made %d calls to GitHub, want at most 3", got)
	}
	if code != 200 || !first.Cut || first.Next == 0 {
		t.Fatalf("= %d, cut %v at %d", code, first.Cut, first.Next)
	}
	f.c.totalRepos, f.c.totalScan = maxTotalRepos, maxTotalScan
	rest, code := f.spendTotals(t, o, alice, "before="+itoa(first.Next))
	if code != 200 || rest.Cut || rest.Next != 0 {
		t.Fatalf("the rest = %d, cut %v at %d", code, rest.Cut, rest.Next)
	}
	var sum pullwright.Spend
	for _, s := range []totals{first, rest} {
		sum.Merge(pullwright.Spend{Models: s.Total.Spend.Models})
	}
	if first.Total.Tasks+rest.Total.Tasks != whole.Total.Tasks || sum.String() != whole.Total.Spend.Text {
		t.Errorf("cut totals %d + %d tasks, %s; whole %d, %s", first.Total.Tasks, rest.Total.Tasks, sum.String(), whole.Total.Tasks, whole.Total.Spend.Text)
	}
	if limit == "repositories" {
		f.c.totalRepos = 3
	} else {
		f.c.totalScan = 2
	}
	page := f.serve(t, "GET", "/console/spend", nil, []*http.Cookie{alice}, nil).Body.String()
	if !strings.Contains(page, "stop early, at task #"+itoa(first.Next)) || !strings.Contains(page, `href="/console/spend?before=`+itoa(first.Next)+`"`) {
		t.Errorf("the page does not say it was cut: %s", page)
	}
}

// A cut sum goes on from the last task the person may see, never from
// one of a repository they may not: next_before names only tasks of
// theirs, and paging with it counts each of them exactly once. Tasks of
// four repositories, two of them alice's, take turns; each page stops at
// the limit of tasks read or of repositories asked.
func TestSpendTotalsCutNamesOnlyVisibleTasks(t *testing.T) {
	for _, limit := range []string{"repositories", "tasks"} {
		t.Run(limit, func(t *testing.T) {
			f := newFixture(t)
			o := loadOpenAPI(t)
			one := pullwright.Spend{Models: []pullwright.ModelSpend{{Model: "o3", Calls: 1, PromptTokens: 10, CompletionTokens: 1, USD: 0.001}}}
			names := []string{"private", "secret", "hostile", "readonly"}
			for i := range 23 {
				tk := &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: names[i%len(names)]}, Issue: 100 + i,
					Requester: task.Person{Login: "dave"}}
				tasktest.Job(tk).Spend = one
				if err := f.store.Record(context.Background(), task.Delivery{ID: "turn" + itoa(int64(i))}, tk); err != nil {
					t.Fatal(err)
				}
			}
			all, err := f.store.List(context.Background(), task.ListQuery{Limit: task.MaxList})
			if err != nil {
				t.Fatal(err)
			}
			visible := map[int64]bool{}
			for _, tk := range all {
				visible[tk.ID] = tk.Repo.Name == "private" || tk.Repo.Name == "hostile"
			}
			alice := f.signIn(t, "alice")
			whole, code := f.spendTotals(t, o, alice, "")
			if code != 200 || whole.Cut {
				t.Fatalf("the whole sum = %d, cut %v", code, whole.Cut)
			}
			if limit == "repositories" {
				f.c.totalRepos = 3
			} else {
				f.c.totalScan = 3
			}
			var (
				tasks, pages int
				sum          pullwright.Spend
				before       int64
			)
			for {
				q := ""
				if before > 0 {
					q = "before=" + itoa(before)
				}
				got, code := f.spendTotals(t, o, alice, q)
				if code != 200 {
					t.Fatalf("the sum %q = %d", q, code)
				}
				pages++
				tasks += got.Total.Tasks
				sum.Merge(pullwright.Spend{Models: got.Total.Spend.Models})
				if got.Next == 0 {
					break
				}
				if ok, known := visible[got.Next]; !ok {
					t.Fatalf("page %d: next_before %d names a task alice may not see (known %v)", pages, got.Next, known)
				}
				if before > 0 && got.Next >= before || pages > len(all) {
					t.Fatalf("page %d: next_before %d after before=%d: no progress", pages, got.Next, before)
				}
				before = got.Next
			}
			if pages < 3 {
				t.Errorf("the sum took %d pages; the limits should cut it more often", pages)
			}
			if tasks != whole.Total.Tasks || sum.String() != whole.Total.Spend.Text {
				t.Errorf("the pages counted %d tasks, %s; the whole sum %d, %s", tasks, sum.String(), whole.Total.Tasks, whole.Total.Spend.Text)
			}
		})
	}
}

// A sum stopped by its limits before it found a task the person may see
// has nowhere to go on from that names none of another's: it says so, and
// how to sum what they may see.
func TestSpendTotalsCutBeforeAnyVisibleTask(t *testing.T) {
	f := newFixture(t)
	o := loadOpenAPI(t)
	alice := f.signIn(t, "alice")
	f.c.totalScan = 2
	// Below o/hostile's task: o/secret's and o/readonly's, then o/private's.
	q := "before=" + itoa(f.ids["hostile"])
	w := f.serve(t, "GET", "/api/spend?"+q, nil, []*http.Cookie{alice}, nil)
	o.check(t, "GET /api/spend", w)
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "repo=owner/name") {
		t.Errorf("= %d %s; want 422 saying to sum one repository", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), "next_before") {
		t.Errorf("the answer names a task to go on from, of a repository alice may not see: %s", w.Body)
	}
	page := f.serve(t, "GET", "/console/spend?"+q, nil, []*http.Cookie{alice}, nil)
	if page.Code != http.StatusUnprocessableEntity || !strings.Contains(page.Body.String(), "Sum one repository") {
		t.Errorf("the page = %d; want 422 saying to sum one repository:\n%s", page.Code, page.Body)
	}
	// One repository's sum reads its tasks alone, and is whole.
	got, code := f.spendTotals(t, o, alice, q+"&repo=o/private")
	if code != 200 || got.Cut || got.Total.Tasks != 1 {
		t.Errorf("o/private's sum = %d, cut %v, %d tasks; want its one task", code, got.Cut, got.Total.Tasks)
	}
}

// One sum at a time per person, and a few in all: a second waits its turn
// with 429 while someone else's goes on.
func TestSpendTotalsOneAtATime(t *testing.T) {
	f := newFixture(t)
	f.spent(t)
	o := loadOpenAPI(t)
	alice, carol := f.signIn(t, "alice"), f.signIn(t, "carol")
	aliceID := f.gh.UserID("alice")
	if !f.c.sums.open(aliceID) {
		t.Fatal("no place for a first sum")
	}
	if _, code := f.spendTotals(t, o, alice, ""); code != http.StatusTooManyRequests {
		t.Errorf("a second sum of alice's = %d, want 429", code)
	}
	if w := f.serve(t, "GET", "/console/spend", nil, []*http.Cookie{alice}, nil); w.Code != http.StatusTooManyRequests {
		t.Errorf("the page while alice's sum runs = %d, want 429", w.Code)
	}
	if _, code := f.spendTotals(t, o, carol, ""); code != http.StatusOK {
		t.Errorf("carol's sum = %d, want 200", code)
	}
	f.c.sums.close(aliceID)
	if _, code := f.spendTotals(t, o, alice, ""); code != http.StatusOK {
		t.Errorf("alice's sum once hers ended = %d, want 200", code)
	}
}
