package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/tracing"
)

// taskView is a task as the console shows it, in pages and in the API:
// what a maintainer needs, and none of the agent's working state, the
// workspace's path or the repository's resolved settings.
type taskView struct {
	ID int64 `json:"id"`
	// Kind is "fix" or "review".
	Kind         task.Kind  `json:"kind"`
	State        task.State `json:"state"`
	Repo         string     `json:"repo"`
	Issue        int        `json:"issue"`
	IsPR         bool       `json:"is_pr,omitempty"`
	IssueTitle   string     `json:"issue_title,omitempty"`
	IssueURL     string     `json:"issue_url"`
	Requester    string     `json:"requester"`
	Instructions string     `json:"instructions,omitempty"`
	Mode         string     `json:"mode,omitempty"`
	Error        string     `json:"error,omitempty"`
	CancelledBy  string     `json:"cancelled_by,omitempty"`
	Branch       string     `json:"branch,omitempty"`
	PRURL        string     `json:"pr_url,omitempty"`
	Turns        int        `json:"turns"`
	Tokens       int        `json:"tokens"`
	// TokensEstimated: Tokens holds estimates.
	TokensEstimated bool `json:"tokens_estimated,omitempty"`
	// Spend is what the task's model calls used and cost, by model;
	// absent for a task saved before it was kept (Tokens has its tokens).
	Spend *spendView `json:"spend,omitempty"`
	// TraceID is the task's OpenTelemetry trace (absent when the bot did
	// not trace it), and TraceURL where the operator's tracing UI shows
	// it (Config.TraceURL); pages only.
	TraceID   string                `json:"trace_id,omitempty"`
	TraceURL  string                `json:"-"`
	CreatedAt time.Time             `json:"created_at"`
	UpdatedAt time.Time             `json:"updated_at"`
	Plan      []pullwright.PlanItem `json:"plan,omitempty"`
	Steps     []string              `json:"steps,omitempty"`
	Runs      []task.RunRecord      `json:"runs,omitempty"`
	// Calls are the approved calls of MCP tools, recorded as runs are.
	Calls []task.RunRecord `json:"calls,omitempty"`
	// Pending is the request waiting for an answer, if one does.
	Pending *requestView `json:"pending,omitempty"`
	// Verification is what the runs show of the task's last commit, as
	// the pull request's Verification section says it (task.Verify);
	// pages only, the API has the runs.
	Verification string `json:"-"`
	// Cost is the list's cost column, CostNote its title, and SpendLine
	// the task page's line (Spend.String); pages only.
	Cost, CostNote, SpendLine string `json:"-"`
}

// requestView is the request waiting for an answer, as every surface
// shows it: the value task built once (approval.Request, with its
// digest), its sentences written out, and where it waits. An answer from
// the console or the API names the digest it was shown.
type requestView struct {
	approval.Request
	// SHA is Commit, under the name the API gave it before.
	SHA       string     `json:"sha,omitempty"`
	Sentences []sentence `json:"sentences"`
	AskedAt   time.Time  `json:"asked_at"`
	Deadline  time.Time  `json:"deadline,omitzero"`
	URL       string     `json:"url,omitempty"`
	// CheckRunID is the approval check run the console's buttons press.
	CheckRunID int64 `json:"check_run_id,omitempty"`
	// OnGitHubOnly is true for a request asked by a release that kept no
	// value as shown: it is answered on GitHub, where it is shown whole.
	OnGitHubOnly bool `json:"on_github_only,omitempty"`
}

// sentence is one of approval.Request.Sentences, with its text as plain
// text for clients that show no markup.
type sentence struct {
	approval.Sentence
	Text string `json:"text"`
}

// pending is rq as the console shows it.
func pending(rq *task.ExecRequest) *requestView {
	v := &requestView{SHA: rq.SHA, AskedAt: rq.AskedAt, Deadline: rq.Deadline, URL: rq.CommentURL, CheckRunID: rq.CheckRunID}
	if rq.Shown == nil {
		v.Request = approval.Request{ID: rq.ID, Command: rq.Command, Reason: rq.Reason, Commit: rq.SHA}
		v.OnGitHubOnly = true
		return v
	}
	v.Request = *rq.Shown
	for _, s := range rq.Shown.Sentences() {
		v.Sentences = append(v.Sentences, sentence{Sentence: s, Text: approval.PlainText(s)})
	}
	return v
}

func (c *Console) view(t *task.Task, full bool) taskView {
	// What the agent did, for a fix or a review; none for another kind.
	w := new(task.Work)
	if j, ok := t.Job(); ok {
		w = j.Work
	}
	kind := "issues"
	if t.IsPR {
		kind = "pull"
	}
	v := taskView{
		ID: t.ID, Kind: t.Kind, State: t.State, Repo: t.Repo.FullName(), Issue: t.Issue, IsPR: t.IsPR, IssueTitle: t.IssueTitle,
		IssueURL:  fmt.Sprintf("%s/%s/%s/%s/%d", c.gh.web, url.PathEscape(t.Repo.Owner), url.PathEscape(t.Repo.Name), kind, t.Issue),
		Requester: t.Requester.Login, Instructions: t.Instructions, Mode: string(t.Mode), Error: t.Error, CancelledBy: t.CancelledBy,
		Branch: w.Branch, PRURL: w.PRURL, Turns: w.Turns, Tokens: w.Tokens, TokensEstimated: w.TokensEstimated,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, TraceID: tracing.TraceID(t.Trace),
	}
	if v.TraceID != "" && c.cfg.TraceURL != "" {
		v.TraceURL = strings.ReplaceAll(c.cfg.TraceURL, "{trace_id}", v.TraceID)
	}
	viewCost(&v, w)
	if !full {
		return v
	}
	v.Plan, v.Steps, v.Runs, v.Calls = w.Plan, w.Steps, w.Runs, w.Calls
	if w.HeadSHA != "" && (w.PRURL != "" || len(w.Runs) > 0) {
		which := "latest"
		if w.Final {
			which = "final"
		}
		v.Verification = task.Verify(w.Runs, w.HeadSHA).Text("the " + which + " commit " + words.Short(w.HeadSHA))
	}
	if rq := w.Request; rq != nil && t.State == task.AwaitingApproval && rq.Answer == nil {
		v.Pending = pending(rq)
	}
	return v
}

// errGitHub is GitHub failing to answer a permission question: the
// console then shows nothing rather than guess.
var errGitHub = errors.New("GitHub did not answer a permission check")

// canRead reports whether who may see tasks of repository repo. A task
// that knows its repository's id is shown only if the name still leads to
// that repository: names are reused (a private repository renamed or
// deleted, a public one created under its old name), ids are not. Tasks
// recorded before ids were kept (ID 0) are checked by name only.
func (c *Console) canRead(ctx context.Context, who *caller, repo pullwright.Repo) (bool, error) {
	role, err := c.roleIn(ctx, who, repo)
	return role != "", err
}

// roleIn is who's role on repo as their token shows it: "" for none, or
// for a repository of that name that is not repo (its id differs).
func (c *Console) roleIn(ctx context.Context, who *caller, repo pullwright.Repo) (string, error) {
	role, id, err := c.gh.role(ctx, who.token, repo.FullName())
	if err != nil {
		c.log.WarnContext(ctx, "console: permission check failed", "login", who.Login, "repo", repo.FullName(), "err", err)
		return "", fmt.Errorf("%w: %w", errGitHub, err)
	}
	if repo.ID != 0 && id != repo.ID {
		return "", nil
	}
	return role, nil
}

// waitsFor reports whether t's request waits for an answer that who, of
// role on the repository, may give by the approve rule the task started
// with: the role it asks for, its users, and not the requester when it
// excludes them. Team membership is asked of GitHub when the answer
// comes, with the app's token; this list, which has only the person's,
// counts a rule's teams as admitting them.
func waitsFor(t *task.Task, who *caller, role string) bool {
	r := t.CurrentRequest()
	if t.State != task.AwaitingApproval || r == nil || !r.Asked || r.Answer != nil {
		return false
	}
	var rule policy.Approvers
	if t.Settings != nil {
		rule = t.Settings.Approve
	}
	if rule.ExcludeRequester && strings.EqualFold(t.Requester.Login, who.Login) {
		return false
	}
	ok, err := rule.Admits(role, who.Login, t.Repo.Owner, func(string, string) (bool, error) { return true, nil })
	return ok && err == nil
}

// listFilter is a list's filters: the store's, and "waiting for my
// answer", which only the console can tell.
type listFilter struct {
	task.ListQuery
	mine bool
}

// listQuery reads a list's filters from the address.
func listQuery(r *http.Request) (listFilter, error) {
	q := task.ListQuery{Repo: strings.TrimSpace(r.URL.Query().Get("repo")), State: task.State(r.URL.Query().Get("state"))}
	f := listFilter{ListQuery: q}
	switch r.URL.Query().Get("waiting") {
	case "":
	case "me":
		if q.State != "" && q.State != task.AwaitingApproval {
			return f, errors.New("waiting=me: only tasks awaiting approval wait for an answer")
		}
		f.mine, f.State = true, task.AwaitingApproval
	default:
		return f, errors.New("waiting: want me")
	}
	q = f.ListQuery
	if q.Repo != "" {
		if o, n, ok := strings.Cut(q.Repo, "/"); !ok || o == "" || n == "" || strings.Contains(n, "/") {
			return f, errors.New("repo: want owner/name")
		}
	}
	if q.State != "" && !knownState(q.State) {
		return f, errors.New("state: not a task state")
	}
	if b := r.URL.Query().Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return f, errors.New("before: want a task id")
		}
		f.Before = n
	}
	return f, nil
}

var states = []task.State{task.Queued, task.Preparing, task.Working, task.AwaitingApproval, task.Running, task.Publishing, task.Done, task.Failed, task.Cancelled}

func knownState(s task.State) bool {
	for _, k := range states {
		if k == s {
			return true
		}
	}
	return false
}

// listing is one page of a list: the tasks, the id to list on from (0 at
// the end), how many repositories could not be checked (their tasks are
// left out), and whether the page was cut short of pageSize by the limit
// of repositories or of time.
type listing struct {
	tasks     []taskView
	next      int64
	unchecked int
	cut       bool
}

// readers answers, for one request, which repositories who may see the
// tasks of: GitHub is asked once per repository, by name and id, so that
// tasks of an old and a new repository of one name are answered apart. A
// repository whose check failed is counted in unchecked and left out
// rather than failing the request: one repository GitHub does not answer
// for must not hide all the others. The list and the spend totals both
// decide with it, so that no total counts a task its list would not show.
type readers struct {
	c         *Console
	who       *caller
	roles     map[string]string
	unchecked int
}

func (c *Console) readers(who *caller) *readers {
	return &readers{c: c, who: who, roles: map[string]string{}}
}

func repoKey(r pullwright.Repo) string {
	return strings.ToLower(r.FullName()) + "#" + strconv.FormatInt(r.ID, 10)
}

// known is who's role on repo if this request asked already.
func (a *readers) known(repo pullwright.Repo) (string, bool) {
	role, ok := a.roles[repoKey(repo)]
	return role, ok
}

// asked is how many repositories this request asked GitHub about.
func (a *readers) asked() int { return len(a.roles) }

// ask asks GitHub for who's role on repo: "" for none, or for a check
// that failed. Only a token GitHub refuses is an error: the session is
// over.
func (a *readers) ask(ctx context.Context, repo pullwright.Repo) (string, error) {
	role, err := a.c.roleIn(ctx, a.who, repo)
	switch {
	case errors.Is(err, errUnauthorized):
		return "", err
	case err != nil:
		a.unchecked++
		role = ""
	}
	a.roles[repoKey(repo)] = role
	return role, nil
}

// visible returns one page of the tasks who may see, newest first. The
// store pages by id; tasks of repositories who cannot read are dropped
// after, so a page can be short, but never skips a task who may see: the
// next page starts after the last task looked at. A repository whose
// check failed is left out rather than failing the page: one repository
// GitHub does not answer for must not hide all the others.
func (c *Console) visible(ctx context.Context, who *caller, f listFilter) (listing, error) {
	ctx, cancel := context.WithTimeout(ctx, c.budget)
	defer cancel()
	q := f.ListQuery
	var l listing
	a := c.readers(who)
	scanned := 0
	var last int64 // the last task looked at: where a cut page goes on from
	for {
		q.Limit = task.MaxList
		batch, err := c.cfg.Store.List(ctx, q)
		if err != nil {
			return listing{}, fmt.Errorf("list tasks: %w", err)
		}
		for _, t := range batch {
			scanned++
			role, seen := a.known(t.Repo)
			if !seen && (a.asked() == maxRepos || ctx.Err() != nil) {
				// Enough asked for one request: the next page goes on
				// from this task.
				if last == 0 {
					// Out of time before the first task: nothing to show.
					return listing{}, fmt.Errorf("%w: %w", errGitHub, ctx.Err())
				}
				l.next, l.cut, l.unchecked = last, true, a.unchecked
				return l, nil
			}
			if !seen {
				if role, err = a.ask(ctx, t.Repo); err != nil {
					return listing{}, err
				}
			}
			if role != "" && (!f.mine || waitsFor(t, who, role)) {
				l.tasks = append(l.tasks, c.view(t, false))
			}
			last = t.ID
			if len(l.tasks) == pageSize || scanned == maxScan {
				l.next, l.unchecked = t.ID, a.unchecked
				return l, nil
			}
		}
		if len(batch) < task.MaxList {
			l.unchecked = a.unchecked
			return l, nil
		}
		q.Before = batch[len(batch)-1].ID
	}
}

// one returns the task id names if who may see it. A task of a repository
// they cannot read is not found, as GitHub answers for such repositories:
// the console does not tell which tasks exist.
func (c *Console) one(ctx context.Context, who *caller, idText string) (*task.Task, error) {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 {
		return nil, task.ErrNotFound
	}
	ctx, cancel := context.WithTimeout(ctx, c.budget)
	defer cancel()
	t, err := c.cfg.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if t.Kind != task.KindFix && t.Kind != task.KindReview {
		return nil, task.ErrNotFound
	}
	ok, err := c.canRead(ctx, who, t.Repo)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, task.ErrNotFound
	}
	return t, nil
}

func (c *Console) tasksPage(w http.ResponseWriter, r *http.Request, who *caller) {
	q, err := listQuery(r)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Bad filter: "+err.Error())
		return
	}
	l, err := c.visible(r.Context(), who, q)
	if err != nil {
		c.failed(w, r, err)
		return
	}
	next := l.next
	var nextURL string
	if next > 0 {
		v := url.Values{"before": {strconv.FormatInt(next, 10)}}
		if q.Repo != "" {
			v.Set("repo", q.Repo)
		}
		if q.State != "" && !q.mine {
			v.Set("state", string(q.State))
		}
		if q.mine {
			v.Set("waiting", "me")
		}
		nextURL = "/console/?" + v.Encode()
	}
	state := string(q.State)
	if q.mine {
		state = ""
	}
	c.render(w, r, http.StatusOK, "tasks", who, map[string]any{
		"Tasks": l.tasks, "Repo": q.Repo, "State": state, "Mine": q.mine, "States": states, "Next": template.URL(nextURL),
		"Unchecked": l.unchecked, "Cut": l.cut,
	})
}

func (c *Console) taskPage(w http.ResponseWriter, r *http.Request, who *caller) {
	t, err := c.one(r.Context(), who, r.PathValue("id"))
	if err != nil {
		c.failed(w, r, err)
		return
	}
	data := map[string]any{}
	if sent := r.URL.Query().Get("sent"); (sent == "approve" || sent == "reject" || sent == "cancel") && stillSent(t, sent) {
		data["Sent"] = sent
	}
	c.renderTask(w, r, who, t, http.StatusOK, data)
}

// stillSent reports whether the notice that verb was sent still has
// something to say: not once the task has ended, nor once the request an
// approval or rejection answered is answered. A reload, or a link kept,
// of the page an answer led to must not tell of it after it was heard.
func stillSent(t *task.Task, verb string) bool {
	if t.State.Terminal() {
		return false
	}
	if verb == "cancel" {
		return true
	}
	r := t.CurrentRequest()
	return t.State == task.AwaitingApproval && r != nil && r.Answer == nil
}

// renderTask answers the page of task t, with data's notices.
func (c *Console) renderTask(w http.ResponseWriter, r *http.Request, who *caller, t *task.Task, status int, data map[string]any) {
	data["Task"] = c.view(t, true)
	if !t.State.Terminal() {
		// Buttons only for those whose token shows write access; the
		// handlers check again, and the worker decides.
		ok, err := c.canAct(r.Context(), who, t)
		if err != nil {
			c.log.WarnContext(r.Context(), "console: permission check failed", "login", who.Login, "err", err)
		}
		data["CanAct"] = ok
	}
	c.render(w, r, status, "task", who, data)
}

// failed answers an error of the store or of GitHub with a page that
// names neither; the details go to the log.
func (c *Console) failed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errUnauthorized):
		// GitHub refuses the session's token (revoked, expired, the app
		// uninstalled by the person): the session is over.
		c.cookies.clear(w, sessionCookie)
		http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
	case errors.Is(err, task.ErrNotFound):
		c.fail(w, r, http.StatusNotFound, "No such task, or not one you can see.")
	case errors.Is(err, errGitHub):
		c.fail(w, r, http.StatusBadGateway, "GitHub did not answer whether you may see this. Try again shortly.")
	default:
		c.log.ErrorContext(r.Context(), "console: store", "err", err)
		c.fail(w, r, http.StatusInternalServerError, "The bot's store did not answer.")
	}
}

// ---- API ----

// api guards an API endpoint: the session's cookie, or the caller's own
// GitHub token in Authorization, which GitHub must recognise.
func (c *Console) api(h func(http.ResponseWriter, *http.Request, *caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// A demo asks GitHub about no token: everyone is its one person.
		if auth := r.Header.Get("Authorization"); auth != "" && !c.demo {
			scheme, token, _ := strings.Cut(auth, " ")
			token = strings.TrimSpace(token)
			if (!strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token")) || token == "" {
				apiError(w, http.StatusUnauthorized, "want Authorization: Bearer <GitHub token>")
				return
			}
			// Only a token of this app: its reach is what the app
			// and the person share, as a signed-in session's is.
			u, err := c.gh.appUser(r.Context(), token)
			switch {
			case errors.Is(err, errUnauthorized):
				apiError(w, http.StatusUnauthorized, "not a GitHub token of this app")
				return
			case err != nil:
				c.log.WarnContext(r.Context(), "console: token check failed", "err", err)
				apiError(w, http.StatusBadGateway, "GitHub did not answer who this token is")
				return
			}
			h(w, r, &caller{Login: u.Login, ID: u.ID, token: token, viaToken: true})
			return
		}
		who, ok := c.fromSession(r)
		if !ok {
			apiError(w, http.StatusUnauthorized, "sign in, or send a GitHub token")
			return
		}
		h(w, r, who)
	}
}

func (c *Console) apiTasks(w http.ResponseWriter, r *http.Request, who *caller) {
	q, err := listQuery(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	l, err := c.visible(r.Context(), who, q)
	if err != nil {
		c.apiFailed(w, r, err)
		return
	}
	if l.tasks == nil {
		l.tasks = []taskView{}
	}
	out := map[string]any{"tasks": l.tasks, "next_before": l.next}
	if l.unchecked > 0 {
		// The caller must know the list may lack tasks it could see.
		out["unchecked_repos"] = l.unchecked
	}
	if l.cut {
		// Short of a page, yet not the end: go on from next_before.
		out["cut"] = true
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *Console) apiTask(w http.ResponseWriter, r *http.Request, who *caller) {
	t, err := c.one(r.Context(), who, r.PathValue("id"))
	if err != nil {
		c.apiFailed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c.view(t, true))
}

func (c *Console) apiFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errUnauthorized):
		// GitHub refuses the caller's token: the session (if any) is over.
		c.cookies.clear(w, sessionCookie)
		apiError(w, http.StatusUnauthorized, "GitHub does not recognise this token; sign in again")
	case errors.Is(err, task.ErrNotFound):
		apiError(w, http.StatusNotFound, "not found")
	case errors.Is(err, errGitHub):
		// The operator must learn why (a broken key, a clock skewed for
		// the JWT, GitHub down); the error holds no token.
		c.log.WarnContext(r.Context(), "console: GitHub", "err", err)
		apiError(w, http.StatusBadGateway, "GitHub did not answer")
	default:
		c.log.ErrorContext(r.Context(), "console: store", "err", err)
		apiError(w, http.StatusInternalServerError, "store unavailable")
	}
}

func apiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
