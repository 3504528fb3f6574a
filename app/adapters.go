package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/ghapp"
	"github.com/pullwright/pullwright/mcptools"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/task"
)

// ghapp and repo speak the vocabulary task's ports are written in, so they
// are those ports as they are; what is left here translates where a plain
// assignment cannot: the agent's state as JSON in the task, repo's
// constructors' concrete results. What the agent reads of a run is
// worded in agent (agent.Ran, AnswerCall, Rejected, TimedOut).
var (
	_ task.GitHub    = (*ghapp.App)(nil)
	_ task.Workspace = (*repo.Workspace)(nil)
)

// model keeps the agent's State as JSON in the task.
type model struct{ a *agent.Agent }

func (m model) Start(b pullwright.Brief) ([]byte, error) {
	return json.Marshal(m.a.Start(b))
}

func (m model) Turn(ctx context.Context, repo string, conv []byte, workdir string) (task.Progress, error) {
	p, _, err := m.turn(ctx, conv, workdir)
	return p, err
}

// turnUsage is what one Turn spent: model calls answered, their tokens,
// what they used and cost by model, and the agent's error when the turn
// failed.
type turnUsage struct {
	Turns, PromptTokens, CompletionTokens int
	Spend                                 pullwright.Spend
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
		return progress(conv, &st, m.a.Spent(&st)), turnUsage{}, nil
	}
	// The state's counts are the task's totals; the turn's are the difference.
	turns, prompt, completion := st.Turns, st.PromptTokens, st.CompletionTokens
	before := m.a.Spent(&st)
	err := m.a.Turn(ctx, &st, workdir)
	u := turnUsage{
		Turns:            st.Turns - turns,
		PromptTokens:     st.PromptTokens - prompt,
		CompletionTokens: st.CompletionTokens - completion,
		Spend:            spentSince(before, m.a.Spent(&st)),
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
	return progress(out, st, m.a.Spent(st)), nil
}

// metered is a model whose turns are counted in the metrics.
type metered struct {
	model
	m *metrics
}

func (m metered) Turn(ctx context.Context, repo string, conv []byte, workdir string) (task.Progress, error) {
	p, u, err := m.model.turn(ctx, conv, workdir)
	m.m.turn(repo, u)
	return p, err
}

// spentSince is what after holds beyond before, model by model: the
// calls of one turn, from the task's totals before and after it.
func spentSince(before, after pullwright.Spend) pullwright.Spend {
	var out pullwright.Spend
	for _, a := range after.Models {
		d := a
		if i := slices.IndexFunc(before.Models, func(b pullwright.ModelSpend) bool { return b.Model == a.Model }); i >= 0 {
			b := before.Models[i]
			d.Calls -= b.Calls
			d.PromptTokens -= b.PromptTokens
			d.CachedTokens -= b.CachedTokens
			d.CompletionTokens -= b.CompletionTokens
			d.USD -= b.USD
		}
		if d.Calls > 0 || d.PromptTokens > 0 || d.CompletionTokens > 0 {
			out.Models = append(out.Models, d)
		}
	}
	return out
}

func (m model) Resolve(conv []byte, o task.Outcome) (task.Resolved, error) {
	var st agent.State
	if err := json.Unmarshal(conv, &st); err != nil {
		return task.Resolved{}, fmt.Errorf("read the saved conversation: %w", err)
	}
	result, kept, err := m.result(&st, o)
	if err != nil {
		return task.Resolved{}, err
	}
	switch {
	case result == "":
		// A tool's call, answered by result.
	case o.Required != "":
		if err := m.a.Reopen(&st, o.Required, result); err != nil {
			return task.Resolved{}, err
		}
	default:
		if err := m.a.Resolve(&st, result); err != nil {
			return task.Resolved{}, err
		}
	}
	out, err := json.Marshal(&st)
	if err != nil {
		return task.Resolved{}, err
	}
	r := task.Resolved{Conversation: out}
	if kept != nil {
		r.Kept, r.KeptNote = kept.Files, kept.Summary()
	}
	return r, nil
}

// result is the tool result o makes of st's pending request, after the
// run's kept changes, if it kept any, are applied to o.Workdir; kept says
// what was (nil when the request kept nothing). A call of an MCP tool is
// answered here (its result is "").
func (m model) result(st *agent.State, o task.Outcome) (result string, kept *agent.Kept, err error) {
	switch o.Verdict {
	case task.Approved:
		if o.Result == nil {
			return "", nil, errors.New("an approved request without a result")
		}
		if st.Pending != nil && st.Pending.Tool != nil && o.Required == "" {
			return "", nil, m.a.AnswerCall(st, *o.Result)
		}
		r := o.Result
		result = agent.Ran(*r)
		if st.Pending != nil && st.Pending.KeepChanges && o.Workdir != "" && !r.NotStarted {
			k, err := agent.KeepChanges(st, o.Workdir, r.Changes, r.KeptNote)
			if err != nil {
				return "", nil, fmt.Errorf("keep the run's changes: %w", err)
			}
			result, kept = agent.WithKept(result, k), &k
		}
	case task.Rejected:
		result = agent.Rejected(o.By, o.Reason)
	case task.TimedOut:
		result = agent.TimedOut()
	default:
		return "", nil, fmt.Errorf("unknown verdict %q", o.Verdict)
	}
	return result, kept, nil
}

// budgetMessage says which budget the agent spent, for the issue.
func budgetMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), agent.ErrBudget.Error()+": ")
	return "the agent used up its budget (" + msg + ")"
}

func progress(out []byte, st *agent.State, spend pullwright.Spend) task.Progress {
	p := task.Progress{
		Conversation: out,
		Turns:        st.Turns,
		Tokens:       st.Tokens(),
		Spend:        spend,
		// An endpoint without usage (some Ollama and vLLM versions) has
		// its tokens counted by size; the comments say so.
		TokensEstimated: st.EstimatedTurns > 0,
		Steps:           st.Steps,
	}
	p.Plan = st.Plan
	if st.Finish != nil {
		p.Finished, p.Title, p.Summary = true, st.Finish.Title, st.Finish.Summary
		p.Replies = st.Finish.Replies
		p.Review = st.Draft()
		p.OutOfBudget = st.Finish.OutOfBudget
	}
	if st.Pending != nil {
		p.Pending = &task.Pending{Command: st.Pending.Command, Reason: st.Pending.Reason, Tool: st.Pending.Tool,
			KeepChanges: st.Pending.KeepChanges, Network: st.Pending.Network}
	}
	return p
}

// workspaces opens repo's checkouts as task's: Go has no covariant
// results, so the constructors that return *repo.Workspace need these
// three lines each.
type workspaces struct{}

func (workspaces) RemoteHead(ctx context.Context, url, token, branch string) (string, error) {
	return repo.RemoteHead(ctx, url, token, branch)
}

func (workspaces) Clone(ctx context.Context, url, branch, token, dir string) (task.Workspace, error) {
	ws, err := repo.Clone(ctx, repo.CloneOptions{URL: url, Branch: branch, Token: token, Dir: dir})
	if err != nil {
		return nil, err
	}
	return ws, nil
}

func (workspaces) Open(dir string) (task.Workspace, error) {
	ws, err := repo.Open(dir)
	if err != nil {
		return nil, err
	}
	return ws, nil
}

// timed is a runner whose runs are counted and timed in the metrics.
type timed struct {
	task.Runner
	m *metrics
}

func (s timed) Run(ctx context.Context, spec pullwright.RunSpec) (pullwright.RunResult, error) {
	began := time.Now()
	res, err := s.Runner.Run(ctx, spec)
	s.m.run(res, err, time.Since(began))
	return res, err
}

// toolCaller makes the approved calls of MCP tools (task.ToolCaller)
// with the SDK client the agent's read-only calls use.
type toolCaller struct {
	getenv    func(string) string
	transport http.RoundTripper
	log       *slog.Logger
}

func (c toolCaller) CallTool(ctx context.Context, s pullwright.ToolServer, call pullwright.ToolCall) (string, bool, error) {
	getenv := c.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cl := mcptools.New([]pullwright.ToolServer{s}, getenv, c.transport, "pullwright", c.log)
	r, err := cl.Call(ctx, s.Name+mcptools.Sep+call.Tool, json.RawMessage(call.Arguments))
	if err != nil {
		return "", false, err
	}
	return r.Text, r.Failed, nil
}
