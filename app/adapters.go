package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/ghapp"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/task"
)

// The adapters below turn ghapp, agent and repo into the interfaces task
// declares, so that task imports none of them.

type gitHub struct{ app *ghapp.App }

func (g gitHub) Identity(ctx context.Context) (task.Identity, error) {
	id, err := g.app.Identity(ctx)
	return task.Identity{Login: id.Login, Name: id.Name, Email: id.Email}, err
}

func (g gitHub) Token(ctx context.Context, inst int64) (string, error) {
	return g.app.Token(ctx, inst)
}

func (g gitHub) AddReaction(ctx context.Context, r task.Repo, commentID int64, content string) error {
	return g.app.AddReaction(ctx, r.InstallationID, r.Owner, r.Name, commentID, content)
}

func (g gitHub) UpsertComment(ctx context.Context, r task.Repo, issue int, marker string, commentID int64, body string) (task.Posted, error) {
	p, err := g.app.UpsertCommentURL(ctx, r.InstallationID, r.Owner, r.Name, issue, marker, commentID, body)
	return task.Posted{ID: p.ID, URL: p.URL, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}, err
}

func (g gitHub) UpdatePullRequest(ctx context.Context, r task.Repo, number int, title, body string) error {
	return g.app.UpdatePullRequest(ctx, r.InstallationID, r.Owner, r.Name, number, title, body)
}

func (g gitHub) MarkReadyForReview(ctx context.Context, r task.Repo, number int) error {
	return g.app.MarkReadyForReview(ctx, r.InstallationID, r.Owner, r.Name, number)
}

func (g gitHub) UpsertCheckRun(ctx context.Context, r task.Repo, cr task.CheckRun) (int64, error) {
	out := ghapp.CheckRun{
		ID: cr.ID, Name: cr.Name, HeadSHA: cr.HeadSHA, Status: cr.Status, Conclusion: cr.Conclusion,
		ExternalID: cr.ExternalID, DetailsURL: cr.DetailsURL, Title: cr.Title, Summary: cr.Summary, Text: cr.Text,
	}
	for _, a := range cr.Actions {
		out.Actions = append(out.Actions, ghapp.CheckAction{Label: a.Label, Description: a.Description, Identifier: a.Identifier})
	}
	return g.app.UpsertCheckRun(ctx, r.InstallationID, r.Owner, r.Name, out)
}

func (g gitHub) Issue(ctx context.Context, r task.Repo, number int) (task.Issue, error) {
	is, err := g.app.Issue(ctx, r.InstallationID, r.Owner, r.Name, number)
	if err != nil {
		return task.Issue{}, err
	}
	out := task.Issue{Title: is.Title, Body: is.Body, Locked: is.Locked}
	for _, c := range is.Comments {
		out.Comments = append(out.Comments, task.Comment{Author: c.Author, AuthorType: c.AuthorType, Body: c.Body})
	}
	return out, nil
}

func (g gitHub) OpenPullRequest(ctx context.Context, r task.Repo, pr task.NewPullRequest) (task.PullRequest, error) {
	got, err := g.app.OpenPullRequest(ctx, r.InstallationID, r.Owner, r.Name, ghapp.NewPullRequest{
		Title: pr.Title, Body: pr.Body, Head: pr.Head, Base: pr.Base, Draft: pr.Draft,
	})
	return task.PullRequest{Number: got.Number, URL: got.HTMLURL}, notPermitted(err)
}

func (g gitHub) Permission(ctx context.Context, r task.Repo, user string) (string, error) {
	return g.app.Permission(ctx, r.InstallationID, r.Owner, r.Name, user)
}

func (g gitHub) TeamMember(ctx context.Context, r task.Repo, org, team, user string) (bool, error) {
	return g.app.TeamMember(ctx, r.InstallationID, org, team, user)
}

func (g gitHub) File(ctx context.Context, r task.Repo, ref, path string) ([]byte, error) {
	b, err := g.app.File(ctx, r.InstallationID, r.Owner, r.Name, ref, path)
	switch {
	case errors.Is(err, ghapp.ErrNotFound):
		return nil, fmt.Errorf("%w: %w", task.ErrNoFile, err)
	case errors.Is(err, ghapp.ErrNotAFile):
		return nil, fmt.Errorf("%w: %w", task.ErrNotAFile, err)
	}
	return b, err
}

// model keeps the agent's State as JSON in the task.
type model struct{ a *agent.Agent }

func (m model) Start(b task.Brief) ([]byte, error) {
	s := b.Settings
	ab := agent.Brief{
		Repo: b.Repo, Issue: b.Issue, Title: b.Title, Body: b.Body,
		Instructions: b.Instructions, Requester: b.Requester,
		TestCommand: s.TestCommand,
		Limits: agent.Limits{
			MaxTurns: s.MaxTurns, MaxTokens: s.MaxTokens, MaxCostUSD: s.MaxCostUSD,
			PriceInput: s.Price.Input, PriceOutput: s.Price.Output,
			Model: s.Model, Protected: s.Protected,
		},
	}
	ab.Comments = agentComments(b.Comments)
	ab.Pull = agentPull(b.Pull)
	return json.Marshal(m.a.Start(ab))
}

func (m model) Turn(ctx context.Context, conv []byte, workdir string) (task.Progress, error) {
	p, _, err := m.turn(ctx, conv, workdir)
	return p, err
}

// turnUsage is what one Turn spent: model calls answered, their tokens,
// and the agent's error when the turn failed.
type turnUsage struct {
	Turns, PromptTokens, CompletionTokens int
	Err                                   error
}

func (m model) turn(ctx context.Context, conv []byte, workdir string) (task.Progress, turnUsage, error) {
	var st agent.State
	if err := json.Unmarshal(conv, &st); err != nil {
		return task.Progress{}, turnUsage{}, task.Fatal("the saved conversation cannot be read", err)
	}
	if st.Finish != nil || st.Pending != nil {
		// The model finished, or asked to run something, in a turn whose
		// outcome was not recorded; that stands, and no call is made.
		return progress(conv, &st), turnUsage{}, nil
	}
	// The state's counts are the task's totals; the turn's are the difference.
	turns, prompt, completion := st.Turns, st.PromptTokens, st.CompletionTokens
	err := m.a.Turn(ctx, &st, workdir)
	u := turnUsage{
		Turns:            st.Turns - turns,
		PromptTokens:     st.PromptTokens - prompt,
		CompletionTokens: st.CompletionTokens - completion,
		Err:              err,
	}
	p, err := m.outcome(&st, err)
	return p, u, err
}

// outcome turns the end of a Turn into the conversation to save, or the
// error the task sees.
func (m model) outcome(st *agent.State, err error) (task.Progress, error) {
	if err != nil {
		switch {
		case errors.Is(err, agent.ErrBudget):
			return task.Progress{}, task.Fatal(budgetMessage(err), fmt.Errorf("%w: %w", task.ErrBudget, err))
		case agent.IsTransient(err):
			return task.Progress{}, task.Retry("the model endpoint did not answer", err)
		default:
			return task.Progress{}, task.Fatal("the model endpoint refused the request or answered something unreadable", err)
		}
	}
	out, err := json.Marshal(st)
	if err != nil {
		return task.Progress{}, task.Fatal("saving the conversation failed", err)
	}
	return progress(out, st), nil
}

// metered is a model whose turns are counted in the metrics.
type metered struct {
	model
	m *metrics
}

func (m metered) Turn(ctx context.Context, conv []byte, workdir string) (task.Progress, error) {
	p, u, err := m.model.turn(ctx, conv, workdir)
	m.m.turn(u)
	return p, err
}

func (m model) Resolve(conv []byte, o task.Outcome) ([]byte, error) {
	var st agent.State
	if err := json.Unmarshal(conv, &st); err != nil {
		return nil, fmt.Errorf("read the saved conversation: %w", err)
	}
	var result string
	switch o.Verdict {
	case task.Approved:
		if o.Result == nil {
			return nil, errors.New("an approved request without a result")
		}
		r := o.Result
		output := r.Output
		if r.OOMKilled {
			output += "\n[the sandbox killed the command: it ran out of memory]"
		}
		result = agent.RunResult(r.ExitCode, output, r.Truncated, r.TimedOut, r.Duration)
	case task.Rejected:
		result = agent.Rejected(o.By, o.Reason)
	case task.TimedOut:
		result = agent.TimedOut()
	default:
		return nil, fmt.Errorf("unknown verdict %q", o.Verdict)
	}
	if err := m.a.Resolve(&st, result); err != nil {
		return nil, err
	}
	return json.Marshal(&st)
}

// budgetMessage says which budget the agent spent, for the issue.
func budgetMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), agent.ErrBudget.Error()+": ")
	return "the agent used up its budget (" + msg + ")"
}

func progress(out []byte, st *agent.State) task.Progress {
	p := task.Progress{
		Conversation: out,
		Turns:        st.Turns,
		Tokens:       st.Tokens(),
		Steps:        st.Steps,
	}
	for _, it := range st.Plan {
		p.Plan = append(p.Plan, task.PlanItem{Title: it.Title, Status: it.Status})
	}
	if st.Finish != nil {
		p.Finished, p.Title, p.Summary = true, st.Finish.Title, st.Finish.Summary
		p.Replies = st.Finish.Replies
	}
	if st.Pending != nil {
		p.Pending = &task.Pending{Command: st.Pending.Command, Reason: st.Pending.Reason}
	}
	return p
}

type workspaces struct{}

func (workspaces) RemoteHead(ctx context.Context, url, token, branch string) (string, error) {
	return repo.RemoteHead(ctx, url, token, branch)
}

func (workspaces) Clone(ctx context.Context, url, branch, token, dir string) (task.Workspace, error) {
	ws, err := repo.Clone(ctx, repo.CloneOptions{URL: url, Branch: branch, Token: token, Dir: dir})
	if err != nil {
		return nil, err
	}
	return workspace{ws}, nil
}

func (workspaces) Open(dir string) (task.Workspace, error) {
	ws, err := repo.Open(dir)
	if err != nil {
		return nil, err
	}
	return workspace{ws}, nil
}

type workspace struct{ *repo.Workspace }

func (w workspace) Changes() ([]task.Change, error) {
	cs, err := w.Workspace.Changes()
	if err != nil {
		return nil, err
	}
	out := make([]task.Change, 0, len(cs))
	for _, c := range cs {
		out = append(out, task.Change{Path: c.Path, Deleted: c.Status == repo.StatusDeleted})
	}
	return out, nil
}

func (w workspace) CommitAll(when time.Time, msg string, author task.Identity, coAuthors ...task.Identity) (string, error) {
	co := make([]repo.Identity, 0, len(coAuthors))
	for _, c := range coAuthors {
		co = append(co, repo.Identity{Name: c.Name, Email: c.Email})
	}
	sha, err := w.Workspace.CommitAllAt(when, msg, repo.Identity{Name: author.Name, Email: author.Email}, co...)
	if errors.Is(err, repo.ErrNothingToCommit) {
		return "", fmt.Errorf("%w: %w", task.ErrNoChanges, err)
	}
	return sha, err
}

func (w workspace) Push(ctx context.Context, token, branch string) error {
	err := w.Workspace.Push(ctx, token, branch)
	if errors.Is(err, repo.ErrNonFastForward) {
		return fmt.Errorf("%w: %w", task.ErrPushRejected, err)
	}
	return err
}

func (w workspace) ResetTo(ctx context.Context, token, sha string) error {
	return commitGone(w.Workspace.ResetTo(ctx, token, sha))
}

func (w workspace) Fetch(ctx context.Context, token, sha string) error {
	return commitGone(w.Workspace.Fetch(ctx, token, sha))
}

func (w workspace) Export(ctx context.Context, sha, dir string) error {
	t, err := w.Workspace.CommitTree(sha)
	if err != nil {
		return err
	}
	return t.Export(ctx, dir)
}

func (w workspace) LeftOut(sha string, max int) ([]string, int, error) {
	t, err := w.Workspace.CommitTree(sha)
	if err != nil {
		return nil, 0, err
	}
	return w.Workspace.LeftOut(t, max)
}

func commitGone(err error) error {
	if errors.Is(err, repo.ErrCommitGone) {
		return fmt.Errorf("%w: %w", task.ErrBaseGone, err)
	}
	return err
}

// sandbox runs approved commands through a runner.Runner.
type sandbox struct{ r runner.Runner }

func (s sandbox) Run(ctx context.Context, spec task.RunSpec) (task.RunResult, error) {
	res, err := s.r.Run(ctx, runner.Spec{
		Dir: spec.Dir, Command: spec.Command, Labels: spec.Labels,
		Image: spec.Image, Network: spec.Network, Memory: spec.Memory, Disk: spec.Disk,
		NanoCPUs: int64(spec.CPUs * 1e9), Timeout: spec.Timeout,
		Caches: cacheMounts(spec.Caches), Env: spec.Env, Links: links(spec.Links),
	})
	return task.RunResult{
		ExitCode: res.ExitCode, Output: res.Output, Truncated: res.Truncated,
		TimedOut: res.TimedOut, OOMKilled: res.OOMKilled, Duration: res.Duration,
	}, err
}

func links(ls []task.Link) []runner.Link {
	var out []runner.Link
	for _, l := range ls {
		out = append(out, runner.Link{Name: l.Name, Target: l.Target})
	}
	return out
}

func cacheMounts(cs []task.CacheMount) []runner.CacheMount {
	var out []runner.CacheMount
	for _, c := range cs {
		out = append(out, runner.CacheMount{Volume: c.Volume, Target: c.Target, ReadOnly: c.ReadOnly})
	}
	return out
}

// timed is a runner whose runs are counted and timed in the metrics.
type timed struct {
	task.Runner
	m *metrics
}

func (s timed) Run(ctx context.Context, spec task.RunSpec) (task.RunResult, error) {
	began := time.Now()
	res, err := s.Runner.Run(ctx, spec)
	s.m.run(res, err, time.Since(began))
	return res, err
}

func (w workspace) DiffStat(base string) ([]task.FileStat, error) {
	st, err := w.Workspace.DiffStat(base)
	if err != nil {
		return nil, err
	}
	out := make([]task.FileStat, 0, len(st))
	for _, s := range st {
		out = append(out, task.FileStat{Path: s.Path, Added: s.Added, Deleted: s.Deleted})
	}
	return out, nil
}
