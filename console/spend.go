package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// spendView is a pullwright.Spend as the API gives it: the models, and
// the sums a client would otherwise add up itself, with the one-line
// rendering every surface shows.
type spendView struct {
	Models []pullwright.ModelSpend `json:"models"`
	Calls  int                     `json:"calls"`
	Tokens int                     `json:"tokens"`
	USD    float64                 `json:"usd"`
	// Estimated: USD is less than certain (Spend.Estimated).
	Estimated       bool     `json:"estimated"`
	TokensEstimated bool     `json:"tokens_estimated,omitempty"`
	Unpriced        []string `json:"unpriced,omitempty"`
	Text            string   `json:"text"`
}

func viewSpend(s pullwright.Spend) spendView {
	models := s.Models
	if models == nil {
		models = []pullwright.ModelSpend{}
	}
	return spendView{
		Models: models, Calls: s.Calls(), Tokens: s.Tokens(), USD: s.USD(),
		Estimated: s.Estimated(), TokensEstimated: s.TokensEstimated(), Unpriced: s.Unpriced(), Text: s.String(),
	}
}

// costCell is s's cost as a list's column shows it, compactly: the
// amount, "≈" before it when it is an estimate, "unknown" when no model
// it used has a price; and the one-line rendering, for the cell's title.
// A spend of no tokens shows nothing.
func costCell(s pullwright.Spend) (text, note string) {
	if s.Tokens() == 0 {
		return "", ""
	}
	note = s.String()
	switch {
	case len(s.Unpriced()) == len(s.Models):
		return "unknown", note
	case s.Estimated():
		return "≈ " + pullwright.FormatUSD(s.USD()), note
	}
	return pullwright.FormatUSD(s.USD()), note
}

// modelCost is one model's cost as the task page's table shows it, by
// the rules of costCell.
func modelCost(m pullwright.ModelSpend) string {
	switch {
	case m.Unpriced:
		return "unknown"
	case m.TokensEstimated:
		return "≈ " + pullwright.FormatUSD(m.USD)
	}
	return pullwright.FormatUSD(m.USD)
}

// viewCost fills v's spend from a task's work w: the API's object and the
// pages' renderings. A task saved before Spend was kept has its tokens
// only, and shows no cost.
func viewCost(v *taskView, w *task.Work) {
	if len(w.Spend.Models) > 0 {
		sv := viewSpend(w.Spend)
		v.Spend = &sv
		v.SpendLine = sv.Text
		v.Cost, v.CostNote = costCell(w.Spend)
		if v.Cost == "" {
			v.Cost = "—"
		}
		return
	}
	switch {
	case w.Tokens == 0:
		v.Cost, v.SpendLine = "—", "none yet"
	case w.TokensEstimated:
		v.Cost = "≈ " + pullwright.Thousands(w.Tokens) + " tokens"
		v.SpendLine = "about " + pullwright.Thousands(w.Tokens) + " tokens (estimated: the model endpoint reports no usage)"
	default:
		v.Cost = pullwright.Thousands(w.Tokens) + " tokens"
		v.SpendLine = pullwright.Thousands(w.Tokens) + " tokens"
	}
	if w.Tokens > 0 {
		v.CostNote = "recorded before costs were kept"
	}
}

// spendTotal is the spend of a set of tasks: all those counted, one
// repository's, or one day's.
type spendTotal struct {
	Repo  string    `json:"repo,omitempty"`
	Day   string    `json:"day,omitempty"`
	Tasks int       `json:"tasks"`
	Spend spendView `json:"spend"`
	// TokensOnly are the tokens of tasks saved before their spend was
	// kept: no model, no cost, counted apart.
	TokensOnly int `json:"tokens_only,omitempty"`
	// Cost and CostNote are the pages' cost cell.
	Cost, CostNote string `json:"-"`

	sum pullwright.Spend
}

func (s *spendTotal) add(t *task.Task) {
	s.Tasks++
	j, ok := t.Job()
	if !ok {
		return
	}
	if len(j.Spend.Models) == 0 {
		s.TokensOnly += j.Tokens
		return
	}
	s.sum.Merge(j.Spend)
}

func (s *spendTotal) done() {
	s.Spend = viewSpend(s.sum)
	s.Cost, s.CostNote = costCell(s.sum)
	if s.Cost == "" {
		s.Cost = "—"
	}
}

// totals are the spend of the tasks a person may see, summed in all, by
// repository and by day, and how far the sum got (as a list's page says
// it).
type totals struct {
	Total  spendTotal   `json:"total"`
	ByRepo []spendTotal `json:"by_repo"`
	ByDay  []spendTotal `json:"by_day"`
	// Next is where a cut sum stopped: the tasks below it are not
	// counted, and before=Next counts them.
	Next      int64 `json:"next_before"`
	Cut       bool  `json:"cut,omitempty"`
	Unchecked int   `json:"unchecked_repos,omitempty"`
}

// totalsFilter is what the totals count: one repository's tasks, tasks
// asked from since up to until (days, UTC, both counted), below before.
type totalsFilter struct {
	repo         string
	since, until time.Time // the first day counted, and the day after the last
	before       int64
}

const dayLayout = "2006-01-02"

// totalsQuery reads the totals' filters from the address.
func totalsQuery(r *http.Request) (totalsFilter, error) {
	q := r.URL.Query()
	f := totalsFilter{repo: strings.TrimSpace(q.Get("repo"))}
	if f.repo != "" {
		if o, n, ok := strings.Cut(f.repo, "/"); !ok || o == "" || n == "" || strings.Contains(n, "/") {
			return f, errors.New("repo: want owner/name")
		}
	}
	for _, d := range []struct {
		name string
		to   *time.Time
		add  int
	}{{"since", &f.since, 0}, {"until", &f.until, 1}} {
		v := strings.TrimSpace(q.Get(d.name))
		if v == "" {
			continue
		}
		day, err := time.Parse(dayLayout, v)
		if err != nil {
			return f, fmt.Errorf("%s: want a day, YYYY-MM-DD", d.name)
		}
		*d.to = day.AddDate(0, 0, d.add)
	}
	if !f.since.IsZero() && !f.until.IsZero() && !f.since.Before(f.until) {
		return f, errors.New("since: after until")
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return f, errors.New("before: want a task id")
		}
		f.before = n
	}
	return f, nil
}

// idSkew is how much earlier than a newer task an older one may say it
// was asked: ids follow the order tasks were recorded in, times the
// clocks of the replicas that recorded them. The sum stops that far
// before since, not at the first task asked before it.
const idSkew = time.Hour

// A sum reads at most maxTotalScan tasks (and says where it stopped, as
// when it runs out of time), and a replica computes at most maxSums at
// once, one per person: anyone signed in can ask for one, whatever they
// may see, and each reads the store from its newest task.
// errNoneVisible is a sum stopped by its limits before it found a task
// the person may see: it has nowhere to go on from that would not name a
// task of a repository they may not see, and the same sum would stop
// there again. One repository's sum reads that repository's tasks alone.
var errNoneVisible = errors.New("the sum stopped among tasks of repositories you may not see before it found one you may: sum one repository's (repo=owner/name)")

const (
	maxTotalScan = 20000
	maxSums      = 4
	tooManySums  = "a sum of spend is already being computed; try again in a moment"
)

// totals sums the spend of the tasks who may see, by the list's access
// checks (readers), reading the store a page at a time to its end, or to
// the first task asked before f.since. It asks GitHub about at most
// c.totalRepos repositories and spends at most the request's budget; a
// sum stopped by either says so, and where it stopped.
func (c *Console) totals(ctx context.Context, who *caller, f totalsFilter) (totals, error) {
	ctx, cancel := context.WithTimeout(ctx, c.budget)
	defer cancel()
	a := c.readers(who)
	var out totals
	byRepo, byDay := map[string]*spendTotal{}, map[string]*spendTotal{}
	// last is the last task looked at that who may see: where a cut sum
	// goes on from. Not the last task looked at, which may be of a
	// repository they may not see: next_before would name it. The tasks
	// between the two are looked at again by the next sum, and counted
	// by neither.
	var last int64
	scanned, looked := 0, false
	cut := func() (totals, error) {
		switch {
		case !looked:
			// Out of time before the first task: nothing to count.
			return totals{}, fmt.Errorf("%w: %w", errGitHub, ctx.Err())
		case last == 0:
			return totals{}, errNoneVisible
		}
		out.Next, out.Cut, out.Unchecked = last, true, a.unchecked
		out.finish(byRepo, byDay)
		return out, nil
	}
	q := task.ListQuery{Repo: f.repo, Before: f.before, Limit: task.MaxList}
scan:
	for {
		if ctx.Err() != nil {
			return cut()
		}
		batch, err := c.cfg.Store.List(ctx, q)
		if err != nil {
			if ctx.Err() != nil && last > 0 {
				return cut()
			}
			return totals{}, fmt.Errorf("list tasks: %w", err)
		}
		for _, t := range batch {
			created := t.CreatedAt.UTC()
			if !f.since.IsZero() && created.Before(f.since.Add(-idSkew)) {
				break scan
			}
			if scanned == c.totalScan {
				return cut()
			}
			scanned++
			role, seen := a.known(t.Repo)
			if !seen && (a.asked() == c.totalRepos || ctx.Err() != nil) {
				return cut()
			}
			if !seen {
				if role, err = a.ask(ctx, t.Repo); err != nil {
					return totals{}, err
				}
			}
			looked = true
			if role == "" {
				continue
			}
			last = t.ID
			if (!f.since.IsZero() && created.Before(f.since)) || (!f.until.IsZero() && !created.Before(f.until)) {
				continue
			}
			out.Total.add(t)
			repo, day := strings.ToLower(t.Repo.FullName()), created.Format(dayLayout)
			if byRepo[repo] == nil {
				byRepo[repo] = &spendTotal{Repo: t.Repo.FullName()}
			}
			if byDay[day] == nil {
				byDay[day] = &spendTotal{Day: day}
			}
			byRepo[repo].add(t)
			byDay[day].add(t)
		}
		if len(batch) < task.MaxList {
			break
		}
		q.Before = batch[len(batch)-1].ID
	}
	out.Unchecked = a.unchecked
	out.finish(byRepo, byDay)
	return out, nil
}

// finish renders the sums, the repositories costliest first and the
// days newest first.
func (out *totals) finish(byRepo, byDay map[string]*spendTotal) {
	out.Total.done()
	out.ByRepo, out.ByDay = []spendTotal{}, []spendTotal{}
	for _, s := range byRepo {
		s.done()
		out.ByRepo = append(out.ByRepo, *s)
	}
	for _, s := range byDay {
		s.done()
		out.ByDay = append(out.ByDay, *s)
	}
	slices.SortFunc(out.ByRepo, func(a, b spendTotal) int {
		return cmp.Or(cmp.Compare(b.sum.USD(), a.sum.USD()), cmp.Compare(b.sum.Tokens(), a.sum.Tokens()), strings.Compare(strings.ToLower(a.Repo), strings.ToLower(b.Repo)))
	})
	slices.SortFunc(out.ByDay, func(a, b spendTotal) int { return strings.Compare(b.Day, a.Day) })
}

func (c *Console) apiSpend(w http.ResponseWriter, r *http.Request, who *caller) {
	f, err := totalsQuery(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !c.sums.open(who.ID) {
		apiError(w, http.StatusTooManyRequests, tooManySums)
		return
	}
	defer c.sums.close(who.ID)
	out, err := c.totals(r.Context(), who, f)
	if errors.Is(err, errNoneVisible) {
		apiError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	if err != nil {
		c.apiFailed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *Console) spendPage(w http.ResponseWriter, r *http.Request, who *caller) {
	f, err := totalsQuery(r)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Bad filter: "+err.Error())
		return
	}
	if !c.sums.open(who.ID) {
		c.fail(w, r, http.StatusTooManyRequests, tooManySums)
		return
	}
	defer c.sums.close(who.ID)
	out, err := c.totals(r.Context(), who, f)
	if errors.Is(err, errNoneVisible) {
		c.fail(w, r, http.StatusUnprocessableEntity, "The sum stopped among tasks of repositories you may not see before it found one you may. Sum one repository's spend instead.")
		return
	}
	if err != nil {
		c.failed(w, r, err)
		return
	}
	v := url.Values{}
	if f.repo != "" {
		v.Set("repo", f.repo)
	}
	since, until := "", ""
	if !f.since.IsZero() {
		since = f.since.Format(dayLayout)
		v.Set("since", since)
	}
	if !f.until.IsZero() {
		until = f.until.AddDate(0, 0, -1).Format(dayLayout)
		v.Set("until", until)
	}
	var nextURL string
	if out.Next > 0 {
		v.Set("before", strconv.FormatInt(out.Next, 10))
		nextURL = "/console/spend?" + v.Encode()
	}
	c.render(w, r, http.StatusOK, "spend", who, map[string]any{
		"Totals": out, "Repo": f.repo, "Since": since, "Until": until, "Before": f.before, "Next": template.URL(nextURL),
	})
}
