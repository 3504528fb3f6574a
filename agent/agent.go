// Package agent owns the LLM loop of a task: the prompts, the tools the model
// may call and their implementations over a workspace directory, the turn,
// token and cost budgets, the paths the tools may not change, retries of the
// model endpoint, and the conversation state that the task worker persists
// between turns. A task's own rules (Limits) travel in that state.
//
// The loop is driven one turn at a time (Agent.Turn) so that a restart
// resumes from the stored State. The agent must not execute anything itself:
// its tools only read and write files inside the workspace, and running a
// command is a request (State.Pending, from the run tool) that the task
// package turns into an approval, runs elsewhere, and answers with Resolve.
//
// Import rule: none of task, runner, setup or ghapp.
package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/tracing"
	"github.com/pullwright/pullwright/untrusted"
)

// Defaults of Config.
const (
	DefaultMaxTurns      = 40
	DefaultMaxTokens     = 4000000 // DefaultMaxTurns requests at the default context budget, 96k (docs/configuration.md)
	DefaultMaxToolOutput = 16 << 10
	DefaultCallTimeout   = 3 * time.Minute
)

// ErrBudget is wrapped by Turn's error when the task used up its turns,
// tokens or money; the worker should fail the task rather than retry.
var ErrBudget = errors.New("agent: budget exhausted")

// ErrFinished is wrapped by Turn's error when the model already called
// finish; clear State.Finish to continue the conversation.
var ErrFinished = errors.New("agent: the model already called finish")

// Config configures an Agent.
type Config struct {
	// BaseURL, APIKey and Model select any OpenAI-compatible endpoint.
	// BaseURL defaults to OpenAI's. A task's Limits.Model replaces Model.
	BaseURL, APIKey, Model string
	// APIType is APITypeOpenAI ("" too: OpenAI and every server that
	// speaks its API) or APITypeAzure: Azure OpenAI, where BaseURL is the
	// resource's endpoint (https://NAME.openai.azure.com), the key goes in
	// the api-key header, and a model is reached through its deployment,
	// /openai/deployments/{deployment}/chat/completions?api-version=…,
	// with the deployment the task's Profile.Deployment, else the model's
	// name. It is never guessed from BaseURL.
	APIType string
	// APIVersion is Azure's api-version query parameter, required with
	// APITypeAzure (for instance 2024-10-21).
	APIVersion string
	// HTTPClient makes the model calls; its Transport (or
	// http.DefaultTransport) is wrapped to retry them (see MaxRetries).
	HTTPClient *http.Client
	// MaxTurns and MaxTokens apply to tasks whose Limits set none.
	MaxTurns      int           // model calls per task, default 40
	MaxTokens     int           // prompt+completion tokens per task (from the API's usage), default 4000000
	MaxToolOutput int           // bytes of one tool result, default 16 KiB
	CallTimeout   time.Duration // deadline of one model call, retries included, default 3m
	// MaxRetries is how many times one model call is retried after a 429,
	// 500, 502, 503 or 504 answer or a connection error, within
	// CallTimeout; default 3, negative for none.
	MaxRetries int
	// RetryBackoff is the first wait before a retry when the server does
	// not say (Retry-After); it doubles with each retry, with jitter.
	// Default 1s.
	RetryBackoff time.Duration
	// MaxRetryWait caps every wait before a retry, Retry-After included.
	// Default 60s.
	MaxRetryWait time.Duration
	// Getenv reads the credentials of the task's MCP servers, named by
	// the operator (pullwright.ToolServer.HeadersFromEnv), at each call;
	// nil reads none. MCPTransport carries the calls (nil:
	// http.DefaultTransport).
	Getenv       func(string) string
	MCPTransport http.RoundTripper
	Logger       *slog.Logger
}

// API types of Config.APIType.
const (
	APITypeOpenAI = "openai"
	APITypeAzure  = "azure"
)

// ParseAPIType reads an API type as operators write it: in any case, and
// with the names OpenAI's Python library gave its OPENAI_API_TYPE, which
// an operator may already have set (open_ai; azure_ad, which signs in with
// Microsoft Entra ID tokens that the bot cannot obtain, is refused rather
// than taken for azure and then failing on every call).
func ParseAPIType(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", APITypeOpenAI, "open_ai":
		return APITypeOpenAI, nil
	case APITypeAzure:
		return APITypeAzure, nil
	case "azure_ad":
		return "", fmt.Errorf("API type %q (Microsoft Entra ID sign-in) is not supported: use azure, with the resource's API key", s)
	}
	return "", fmt.Errorf("API type %q: want %s or %s", s, APITypeOpenAI, APITypeAzure)
}

// Agent runs turns of the loop. It is safe for concurrent use by several
// tasks, each with its own State and workspace.
type Agent struct {
	cfg    Config
	client *openai.Client
	oc     openai.ClientConfig // client's, for Azure's per-deployment clients
	retry  *retryTransport     // inside client; tests set its clock
	log    *slog.Logger
	tools  []openai.Tool
	// toolBytes is the counted size of tools in every request.
	toolBytes int
	// reviewDefs and reviewBytes are the same for a review's requests.
	reviewDefs  []openai.Tool
	reviewBytes int
}

// New validates cfg, fills in defaults and builds the API client.
func New(cfg Config) (*Agent, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("agent: model is required")
	}
	if cfg.MaxTurns < 0 || cfg.MaxTokens < 0 || cfg.MaxToolOutput < 0 || cfg.CallTimeout < 0 ||
		cfg.RetryBackoff < 0 || cfg.MaxRetryWait < 0 {
		return nil, errors.New("agent: budgets and limits must not be negative")
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.MaxToolOutput == 0 {
		cfg.MaxToolOutput = DefaultMaxToolOutput
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.MaxRetryWait == 0 {
		cfg.MaxRetryWait = DefaultMaxRetryWait
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	oc, err := clientConfig(cfg)
	if err != nil {
		return nil, err
	}
	// The caller's client keeps its own transport; ours wraps it in a copy.
	hc := *cfg.HTTPClient
	rt := newRetryTransport(hc.Transport, cfg, cfg.Logger)
	hc.Transport = rt
	oc.HTTPClient = &hc
	defs := toolDefs()
	toolJSON, err := json.Marshal(defs)
	if err != nil {
		return nil, fmt.Errorf("agent: encode the tool definitions: %w", err)
	}
	rdefs := defsOf(reviewTools)
	reviewJSON, err := json.Marshal(rdefs)
	if err != nil {
		return nil, fmt.Errorf("agent: encode the review's tool definitions: %w", err)
	}
	return &Agent{
		cfg:       cfg,
		client:    openai.NewClientWithConfig(oc),
		oc:        oc,
		retry:     rt,
		log:       cfg.Logger,
		tools:     defs,
		toolBytes: len(toolJSON),

		reviewDefs:  rdefs,
		reviewBytes: len(reviewJSON),
	}, nil
}

// clientConfig is go-openai's configuration for cfg's endpoint. Its errors
// name the setting, never the key.
func clientConfig(cfg Config) (openai.ClientConfig, error) {
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return openai.ClientConfig{}, fmt.Errorf("agent: base URL %q is not an http(s) URL", cfg.BaseURL)
		}
	}
	base := strings.TrimSuffix(cfg.BaseURL, "/")
	apiType, err := ParseAPIType(cfg.APIType)
	if err != nil {
		return openai.ClientConfig{}, fmt.Errorf("agent: %w", err)
	}
	if apiType == APITypeOpenAI {
		oc := openai.DefaultConfig(cfg.APIKey)
		if base != "" {
			oc.BaseURL = base
		}
		return oc, nil
	}
	if base == "" {
		return openai.ClientConfig{}, errors.New("agent: Azure OpenAI needs the base URL of the resource's endpoint (https://NAME.openai.azure.com)")
	}
	if u, _ := url.Parse(base); u.Scheme != "https" && !isLoopback(u.Hostname()) {
		// Azure serves only https; plain http would send the api-key
		// header in the clear to whoever answers.
		return openai.ClientConfig{}, fmt.Errorf("agent: Azure OpenAI's endpoint %q is not https", cfg.BaseURL)
	}
	if strings.TrimSpace(cfg.APIVersion) == "" {
		return openai.ClientConfig{}, errors.New("agent: Azure OpenAI needs an API version (api-version, for instance 2024-10-21)")
	}
	oc := openai.DefaultAzureConfig(cfg.APIKey, base)
	oc.APIVersion = strings.TrimSpace(cfg.APIVersion)
	// go-openai's default mapper rewrites some model names into
	// deployment names; the deployment is the operator's word
	// (Profile.Deployment) or the model's name as written.
	oc.AzureModelMapperFunc = func(model string) string { return model }
	return oc, nil
}

// isLoopback says whether host names this machine: a local proxy or a
// test's server may speak plain http.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clientFor is the client that reaches model: on Azure, through the
// profile's deployment, which differs per task while the Agent is shared;
// elsewhere, the one client. A go-openai client is a configuration and a
// request builder, so one per Azure turn costs nothing worth caching.
func (a *Agent) clientFor(model string, p pullwright.ModelProfile) *openai.Client {
	if a.oc.APIType != openai.APITypeAzure {
		return a.client
	}
	deployment := cmp.Or(p.Deployment, model)
	oc := a.oc
	oc.AzureModelMapperFunc = func(string) string { return deployment }
	return openai.NewClientWithConfig(oc)
}

// Finish is what the model handed in with the finish tool.
type Finish struct {
	Title   string `json:"title"`
	Summary string `json:"summary"`
	// Replies are the model's notes for the brief's checklist, by thread
	// number (from 1): what it did about the thread, or why not. Threads
	// without a note are absent.
	Replies map[int]string `json:"replies,omitempty"`
	// OutOfBudget is set when the model finished on its last turn, when
	// only finish was offered: which budget ran out, in ErrBudget's words.
	OutOfBudget string `json:"out_of_budget,omitempty"`
}

// State is the whole conversation of a task. It round-trips through
// encoding/json, so the worker can persist it between turns.
type State struct {
	Messages         []openai.ChatCompletionMessage `json:"messages"`
	Turns            int                            `json:"turns"`
	PromptTokens     int                            `json:"prompt_tokens"`
	CompletionTokens int                            `json:"completion_tokens"`
	// CachedPromptTokens are the part of PromptTokens the endpoint served
	// from its prompt cache (usage.prompt_tokens_details.cached_tokens),
	// priced at Limits.PriceCachedInput.
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`
	// EstimatedTurns counts the turns whose endpoint reported no usage: their
	// tokens are estimated from the sizes of the request and the answer
	// (about four bytes a token), so the counts above are estimates when it
	// is not 0.
	EstimatedTurns int                   `json:"estimated_turns,omitempty"`
	Plan           []pullwright.PlanItem `json:"plan,omitempty"`
	Steps          []string              `json:"steps,omitempty"` // one short human line per tool call
	Finish         *Finish               `json:"finish,omitempty"`
	// Pending is the execution request the last turn ended with; while it is
	// set, Turn refuses to run (ErrPending) until Resolve answers it.
	Pending *Request `json:"pending,omitempty"`
	// extraBytes is what the turn's MCP tools add to each request
	// (serverTools.size); not saved, since each turn lists them anew.
	extraBytes int
	// Limits are the task's rules, from Brief.Limits. A State saved before
	// they existed has none, and runs under Config's.
	Limits pullwright.Limits `json:"limits,omitzero"`
	// Threads is how many review threads the brief's checklist numbered
	// (0 without one): finish accepts replies to threads 1 to Threads. It
	// is kept apart from Plan, which the model rewrites at will.
	Threads int `json:"threads,omitempty"`
	// ContextTokens are the prompt tokens the endpoint reported for the
	// last request, and ContextBytes that request's counted size: their
	// ratio corrects the estimate of the next request's tokens.
	ContextTokens int `json:"context_tokens,omitempty"`
	ContextBytes  int `json:"context_bytes,omitempty"`
	// ContextCap lowers the context budget, in tokens, after the endpoint
	// refused a request as too long for the model (0: none).
	ContextCap int `json:"context_cap,omitempty"`
	// Compactions is how many times earlier turns were replaced by a
	// summary (agent/context.go).
	Compactions int `json:"compactions,omitempty"`
	// BriefBytes is the length of the maintainer's request at the start
	// of Messages[1] once a compaction appended its summary there (0:
	// none did): the next compaction replaces what follows it.
	BriefBytes int `json:"brief_bytes,omitempty"`
	// Overflowed is the turn whose request the endpoint refused as too
	// long and that was shrunk for it: a second refusal of that turn ends
	// the task instead of shrinking again.
	Overflowed int `json:"overflowed,omitempty"`
	// Spend is what the calls used and cost, by model, each priced when
	// it was answered. A State saved before it existed has counts above
	// that it lacks; Spent makes up the difference.
	Spend pullwright.Spend `json:"spend,omitzero"`
	// Images are the brief's pictures, sent after the first message's
	// text on every call (withImages). They are kept apart from Messages,
	// so that compaction and the context's count leave them whole, and
	// bounded (maxImages, maxImagesBytes), since the State is saved after
	// every step.
	Images []pullwright.Image `json:"images,omitempty"`
	// Reviewing is set in a review (Brief.Reviewing): the task's tools are
	// then reviewTools, and finish_review ends it.
	Reviewing *Reviewing `json:"reviewing,omitempty"`
	// Base is Brief.Base, the commit the diff tool compares with; empty in
	// a State saved before it existed.
	Base string `json:"base,omitempty"`
	// Mapped is set once the first turn appended the map of the
	// repository to the first message (agent/repomap.go).
	Mapped bool `json:"mapped,omitempty"`
}

// Tokens is the number of tokens used so far.
func (s *State) Tokens() int { return s.PromptTokens + s.CompletionTokens }

// CostUSD is what the model calls so far cost, in USD, at the prices of
// s.Limits (0 if they are not set). Cached prompt tokens are priced at
// PriceCachedInput when it is set, else as other prompt tokens.
func (s *State) CostUSD() float64 {
	p, _ := s.Limits.Price()
	return p.Cost(s.PromptTokens, s.CachedPromptTokens, s.CompletionTokens)
}

// Spent is s.Spend with the tokens it does not hold (counted before the
// State kept a Spend) put down to model, the one the task runs on.
func (s *State) Spent(model string) pullwright.Spend {
	var out pullwright.Spend
	out.Merge(s.Spend)
	var prompt, cached, completion int
	for _, m := range out.Models {
		prompt, cached, completion = prompt+m.PromptTokens, cached+m.CachedTokens, completion+m.CompletionTokens
	}
	if dp, dc := s.PromptTokens-prompt, s.CompletionTokens-completion; dp > 0 || dc > 0 {
		p, priced := s.Limits.Price()
		var rest pullwright.Spend
		rest.Add(model, max(dp, 0), max(s.CachedPromptTokens-cached, 0), max(dc, 0), s.Estimated(), p, priced)
		rest.Models[0].Calls = max(s.Turns-out.Calls(), 0)
		out.Merge(rest)
	}
	return out
}

// Spent is what st's calls used and cost, by model (State.Spent, with
// the model a would call for st).
func (a *Agent) Spent(st *State) pullwright.Spend { return st.Spent(a.model(st)) }

// count adds one answered call of model to the state's totals and to
// its Spend.
func (s *State) count(model string, use turnUsage) {
	s.PromptTokens += use.prompt
	s.CompletionTokens += use.completion
	s.CachedPromptTokens += use.cached
	if use.estimated {
		s.EstimatedTurns++
	}
	p, priced := s.Limits.Price()
	s.Spend.Add(model, use.prompt, use.cached, use.completion, use.estimated, p, priced)
}

// Estimated reports whether some of the token counts are estimates, from
// turns whose endpoint reported no usage.
func (s *State) Estimated() bool { return s.EstimatedTurns > 0 }

// Start returns the state of a new conversation: the system prompt and the
// first user message carrying the brief, under the brief's limits.
func (a *Agent) Start(b pullwright.Brief) *State {
	b.Limits.Protected = cleanGlobs(b.Limits.Protected)
	if b.Limits.MaxCostUSD > 0 && b.Limits.PriceInput <= 0 && b.Limits.PriceOutput <= 0 {
		a.log.Warn("a cost budget without prices cannot be enforced", "repo", b.Repo, "max_cost_usd", b.Limits.MaxCostUSD)
	}
	// The brief's pictures go to a model whose profile takes them; the
	// message says which were left out and why.
	b.Images, b.ImagesLeftOut = keepImages(b)
	if b.Reviewing != nil {
		// A review changes nothing: its own prompt and tools, and the
		// lines its comments may go on.
		return &State{
			Limits: b.Limits,
			Messages: []openai.ChatCompletionMessage{
				{Role: openai.ChatMessageRoleSystem, Content: reviewPrompt},
				{Role: openai.ChatMessageRoleUser, Content: reviewMessage(b)},
			},
			Reviewing: &Reviewing{Lines: b.Reviewing.Lines},
		}
	}
	st := &State{
		Limits: b.Limits,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: systemPrompt},
			{Role: openai.ChatMessageRoleUser, Content: firstMessage(b)},
		},
		Images: b.Images,
		Base:   b.Base,
	}
	if b.Pull != nil && len(b.Pull.Checklist) > 0 {
		// The status comment shows the checklist before the model's first
		// turn; the model takes the plan over from there.
		threads := listedThreads(b.Pull.Checklist)
		st.Threads = len(threads)
		st.Plan = threadPlan(threads)
	}
	if b.Pull != nil && len(b.Pull.Checks) > 0 {
		// The checks follow the threads, numbered as the brief shows them.
		st.Plan = append(st.Plan, checkPlan(listedChecks(b.Pull.Checks))...)
	}
	return st
}

// cleanGlobs copies globs without blank entries; nil if none is left, so
// that the State encodes the same before and after a round trip.
func cleanGlobs(globs []string) []string {
	var out []string
	for _, g := range globs {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

// budget checks st against its limits, or Config's where it sets none.
func (a *Agent) budget(st *State) error {
	maxTurns := cmp.Or(max(st.Limits.MaxTurns, 0), a.cfg.MaxTurns)
	maxTokens := cmp.Or(max(st.Limits.MaxTokens, 0), a.cfg.MaxTokens)
	switch {
	case st.Turns >= maxTurns:
		return fmt.Errorf("%w: turns: %d of %d used", ErrBudget, st.Turns, maxTurns)
	case st.Tokens() >= maxTokens:
		return fmt.Errorf("%w: tokens: %d of %d used", ErrBudget, st.Tokens(), maxTokens)
	case st.Limits.MaxCostUSD > 0 && st.CostUSD() >= st.Limits.MaxCostUSD:
		return fmt.Errorf("%w: cost: %s spent of a %s budget", ErrBudget, pullwright.FormatUSD(st.CostUSD()), pullwright.FormatUSD(st.Limits.MaxCostUSD))
	}
	return nil
}

// Turn makes one model call and carries out the tool calls it asks for
// against workdir, in order. It returns an error, and leaves the turn
// undone, when an execution request waits for its answer (ErrPending), the budget of
// st.Limits (or Config) is used up (ErrBudget: turns, tokens or cost), the
// model already finished (ErrFinished), the workspace cannot be opened, or
// the model call fails after its retries (see IsTransient). A Turn is one
// model call, so it never takes the task past its turn limit; the only
// other calls are compactions of the conversation (see fit, in
// agent/context.go), and one retry when the endpoint refuses the request
// as too long for the model's context; a second such refusal is an
// ErrBudget. The conversation may have been fitted to its context budget
// before such an error: st is then as valid as before, and a later Turn
// fits it the same way. When a compaction was made and the turn's call
// then fails in a way worth retrying, Turn returns nil with st compacted
// and no answer added (st.Turns unchanged): the caller saves st, and the
// next Turn makes the call without paying for the compaction again. Tool
// failures are not errors: they become "error: …" tool results.
//
// The first valid run call of the answer becomes st.Pending and gets no tool
// message until Resolve; the other tool calls of the same answer run as
// usual, a further run call gets an error result (one run request per turn),
// and so does any finish call of an answer that contains a run call: the
// model must see the result before it finishes. After a turn that ends with
// st.Pending set, the caller persists st, has the request approved and run,
// and calls Resolve before the next Turn.
func (a *Agent) Turn(ctx context.Context, st *State, workdir string) (err error) {
	if err := a.refuseTurn(st); err != nil {
		return err
	}
	ws, err := openWorkspace(workdir)
	if err != nil {
		return fmt.Errorf("agent: open workspace: %w", err)
	}
	defer ws.Close()
	undo, err := a.addMap(ctx, st, ws)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			undo() // a failed turn leaves st as it was
		}
	}()

	t := a.newTurn(ctx, st)
	t.listServerTools()
	if compacted, err := t.fitContext(); compacted || err != nil {
		return err
	}
	t.last = t.noteBudget()
	resp, compacted, err := t.callModel()
	if compacted || err != nil {
		return err
	}

	// The call succeeded: from here on the turn is committed to st.
	choice := resp.Choices[0]
	msg := assistantMessage(choice.Message, t.n)
	attrs := t.account(resp)
	cut := t.checkFinishReason(choice.FinishReason, len(msg.ToolCalls))
	if len(msg.ToolCalls) == 0 {
		t.keepAnswerAndNudge(msg, choice.FinishReason)
		t.log.Info("agent turn", append(attrs, "tools", []string{})...)
		return nil
	}
	names, repaired := t.runToolCalls(ws, msg, cut)
	if t.last && st.Finish != nil {
		st.Finish.OutOfBudget = t.why
	}
	t.logTurn(attrs, names, repaired)
	return nil
}

// refuseTurn is why st may not take a turn now, if it may not. A pending
// request and a finish are checked before the budget: they name what the
// caller still has to do with st (answer the request, or deliver the
// finish), which holds however much budget is left, while ErrBudget fails
// the task.
func (a *Agent) refuseTurn(st *State) error {
	if st == nil || len(st.Messages) == 0 {
		return errors.New("agent: empty state; use Start")
	}
	if st.Pending != nil {
		return fmt.Errorf("%w (tool call %s)", ErrPending, st.Pending.ToolCallID)
	}
	if st.Finish != nil {
		return ErrFinished
	}
	return a.budget(st)
}

// turnRun is one Turn under way. Its steps share the turn's number, model
// and logger, and what the model call was sent, so that each step of Turn
// reads as one call.
type turnRun struct {
	a   *Agent
	ctx context.Context
	st  *State
	// n is the turn's number; st.Turns becomes n only once the model has
	// answered, so a turn that fails before that is made again in full.
	n     int
	model string
	log   *slog.Logger // with the model and the turn's number
	// compactions is st.Compactions before the turn: a step that sees it
	// changed ends the turn there (see fitContext).
	compactions int
	ext         *serverTools // the turn's MCP tools; nil without any
	// req is the request last sent and sent its counted size: usage is
	// estimated from the one and calibrates the count of the other.
	req  openai.ChatCompletionRequest
	sent int
	// last is set on the task's last turn (noteBudget): the request
	// offers only the finish tool, and why says which budget ran out.
	last bool
	why  string
}

// newTurn notes where st stands before the turn: its steps compare
// st.Compactions against it, and st.Turns moves only when the model answers.
func (a *Agent) newTurn(ctx context.Context, st *State) *turnRun {
	model := a.model(st)
	n := st.Turns + 1
	return &turnRun{
		a: a, ctx: ctx, st: st,
		n:           n,
		model:       model,
		log:         a.log.With("model", model, "turn", n),
		compactions: st.Compactions,
	}
}

// listServerTools lists the task's MCP tools, which st does not keep, so
// each turn lists them anew. Their definitions go with every request: their
// size (st.extraBytes) counts when the context is fitted.
func (t *turnRun) listServerTools() {
	t.ext = t.a.serverTools(t.ctx, t.st, t.log)
	t.st.extraBytes = t.ext.size()
}

// fitContext makes room for the request in the context budget, compacting
// the conversation if need be. compacted reports that it did: a compaction
// is a paid model call whose summary a second call would write
// differently, so the caller saves it before the call it made room for,
// which the next Turn makes. After a crash, that call is then the one that
// would have been sent without it.
func (t *turnRun) fitContext() (compacted bool, err error) {
	if t.sent, err = t.a.fit(t.ctx, t.st, t.model); err != nil {
		return false, err
	}
	if t.st.Compactions != t.compactions {
		t.log.Info("conversation compacted; the turn's call is made next")
		return true, nil
	}
	return false, nil
}

// request is the turn's request with its MCP tools, built anew after a
// compaction changed the conversation.
func (t *turnRun) request() openai.ChatCompletionRequest {
	req := t.a.request(t.st, t.model)
	req.Tools = t.ext.with(req.Tools)
	if t.last {
		req.Tools = finishOnly(req.Tools)
	}
	return req
}

// callModel makes the turn's model call. When the endpoint refuses the
// request as too long, the estimate was wrong or the profile's window too
// large: it compacts harder and tries once more (makeRoom) rather than
// fail the task. compacted reports that this made a compaction, which
// ends the turn as in fitContext. An error means the turn left st
// unanswered.
func (t *turnRun) callModel() (resp openai.ChatCompletionResponse, compacted bool, err error) {
	t.req = t.request()
	resp, err = t.a.complete(t.ctx, t.st, t.model, t.req)
	if isContextOverflow(err) {
		if compacted, ferr := t.makeRoom(err); compacted || ferr != nil {
			return resp, compacted, ferr
		}
		if resp, err = t.a.complete(t.ctx, t.st, t.model, t.req); isContextOverflow(err) {
			t.log.Warn("model call refused as too long after compaction", "err", err)
			return resp, false, fmt.Errorf("%w: context: %w, even compacted (turn %d)", ErrBudget, errOverflow, t.n)
		}
	}
	if err != nil {
		t.log.Warn("model call failed", "err", err, "transient", IsTransient(err))
		return resp, false, fmt.Errorf("model call (turn %d): %w", t.n, err)
	}
	if len(resp.Choices) == 0 {
		return resp, false, fmt.Errorf("model call (turn %d): %w", t.n, errNoChoices)
	}
	return resp, false, nil
}

// makeRoom shrinks the conversation after the endpoint refused the
// request as too long, and readies the shorter request. st.Overflowed
// remembers the turn across a save, so that a second refusal of the same
// turn ends the task (ErrBudget) instead of shrinking again, and so does
// a conversation with nothing left to shrink.
func (t *turnRun) makeRoom(refusal error) (compacted bool, err error) {
	t.log.Warn("model call refused as too long for the model's context", "err", refusal)
	if t.st.Overflowed == t.n {
		return false, fmt.Errorf("%w: context: %w, even compacted (turn %d)", ErrBudget, errOverflow, t.n)
	}
	shrunk, err := t.a.shrink(t.ctx, t.st, t.model, t.sent, refusal)
	if err != nil {
		return false, err
	}
	if shrunk >= t.sent {
		return false, fmt.Errorf("%w: context: %w, and nothing is left to compact (turn %d)", ErrBudget, errOverflow, t.n)
	}
	t.st.Overflowed = t.n
	if t.st.Compactions != t.compactions {
		t.log.Info("conversation compacted after a refusal; the turn's call is made next")
		return true, nil
	}
	t.sent, t.req = shrunk, t.request()
	return false, nil
}

// account counts the answered call against st's budgets, by model, and
// returns the log attributes of its usage. An endpoint that reports no
// usage gets an estimate, so that the token and cost budgets still bound
// the task; only a reported count calibrates the context's estimate.
func (t *turnRun) account(resp openai.ChatCompletionResponse) (attrs []any) {
	use := usageOf(t.req, resp)
	t.st.Turns = t.n
	t.st.count(t.model, use)
	if !use.estimated && !t.last {
		// The last turn sends the finish tool alone, fewer bytes than
		// t.sent counted: its usage would skew the calibration.
		t.st.calibrate(t.sent, use.prompt)
	}
	attrs = []any{"prompt_tokens", use.prompt, "completion_tokens", use.completion, "cached_prompt_tokens", use.cached}
	if use.estimated {
		attrs = append(attrs, "estimated_tokens", true)
		t.log.Warn("model reported no token usage; the turn's tokens are estimated from the request and answer sizes",
			"prompt_tokens", use.prompt, "completion_tokens", use.completion)
	}
	return append(attrs, "total_tokens", t.st.Tokens(), "finish_reason", string(resp.Choices[0].FinishReason))
}

// checkFinishReason warns of an answer that did not end normally, and
// returns why it was cut short ("" if it was not): the tools then tell the
// model that arguments which do not parse were cut, not malformed.
func (t *turnRun) checkFinishReason(r openai.FinishReason, toolCalls int) (cut string) {
	if !knownFinish(r) {
		t.log.Warn("model answer ended with an unknown finish reason; handled as a complete answer", "finish_reason", string(r))
	}
	cut = stopped(r)
	if cut != "" {
		t.log.Warn("model answer was cut short", "finish_reason", string(r), "tool_calls", toolCalls)
	}
	return cut
}

// keepAnswerAndNudge ends a turn whose answer called no tool. A task ends
// only with a finish call (finish_review in a review), so the model is told
// to go on (nudgeFor); an empty answer is left out, as it would give the
// model nothing to read.
func (t *turnRun) keepAnswerAndNudge(msg openai.ChatCompletionMessage, r openai.FinishReason) {
	if msg.Content != "" || msg.Refusal != "" {
		t.st.Messages = append(t.st.Messages, msg)
	}
	t.st.Messages = append(t.st.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: nudgeFor(t.st, r)})
}

// runToolCalls adds msg to the conversation and runs its tool calls in
// order, each answered by a tool message, except the run request that
// becomes st.Pending, which Resolve answers. It returns the tools' names
// and the repairs their arguments needed, for the log.
func (t *turnRun) runToolCalls(ws *workspace, msg openai.ChatCompletionMessage, cut string) (names, repaired []string) {
	st := t.st
	asked := len(st.Messages)
	st.Messages = append(st.Messages, msg)
	// The conversation keeps each call's arguments as valid JSON, repaired
	// or wrapped, once the tools have read what the model sent: Ollama and
	// vLLM decode the arguments of earlier calls to render the next
	// request, and refuse it when they cannot.
	defer func() {
		for i := range st.Messages[asked].ToolCalls {
			f := &st.Messages[asked].ToolCalls[i].Function
			f.Arguments = storedArguments(f.Arguments)
		}
	}()
	env := toolEnv{ctx: t.ctx, ws: ws, st: st, ext: t.ext, cut: cut, maxOutput: t.a.cfg.MaxToolOutput}
	names = make([]string, 0, len(msg.ToolCalls))
	// A message that asks to run a command cannot also finish: the model has
	// not seen the result yet. Its finish calls are refused, with a text that
	// depends on whether the run request turned out valid.
	hasRun := !t.last && slices.ContainsFunc(msg.ToolCalls, func(tc openai.ToolCall) bool { return tc.Function.Name == ToolRun || t.ext.asks(tc.Function.Name) })
	var refused []int // indexes in st.Messages of refused finish results
	for _, tc := range msg.ToolCalls {
		names = append(names, tc.Function.Name)
		if t.last && !isFinish(tc.Function.Name) {
			// The last turn offered only finish: nothing else runs, since
			// no turn is left to read its result.
			st.Steps = append(st.Steps, untrusted.Cut(tc.Function.Name, 40)+stepLastTurn)
			st.Messages = append(st.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: lastTurnRefused, ToolCallID: tc.ID})
			continue
		}
		if hasRun && isFinish(tc.Function.Name) {
			refused = append(refused, len(st.Messages))
			st.Steps = append(st.Steps, stepFinishRefused)
			st.Messages = append(st.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID})
			continue
		}
		env.callID = tc.ID
		if repairs := t.runToolCall(env, tc); len(repairs) > 0 {
			repaired = append(repaired, tc.Function.Name+": "+strings.Join(repairs, ", "))
		}
	}
	t.explainRefusedFinishes(refused)
	return names, repaired
}

// runToolCall runs one tool call and answers it with a tool message,
// unless it became st.Pending: the command's result is its answer, and
// Resolve adds it once the command has run.
func (t *turnRun) runToolCall(env toolEnv, tc openai.ToolCall) (repairs []string) {
	st := t.st
	wasPending := st.Pending != nil
	content, step, repairs := t.a.runTool(env, tc)
	st.Steps = append(st.Steps, step)
	if !wasPending && st.Pending != nil {
		return repairs
	}
	st.Messages = append(st.Messages, openai.ChatCompletionMessage{
		Role:       openai.ChatMessageRoleTool,
		Content:    content,
		ToolCallID: tc.ID,
	})
	return repairs
}

// explainRefusedFinishes fills in the results of the finish calls refused
// next to a run request (at indexes refused of st.Messages). Their text
// waits for the whole answer to have run, since it depends on whether a
// run request became st.Pending: the model is to wait for its result, or
// to fix the request.
func (t *turnRun) explainRefusedFinishes(refused []int) {
	for _, i := range refused {
		t.st.Messages[i].Content = finishRefusedFailed
		if t.st.Pending != nil {
			t.st.Messages[i].Content = finishRefusedPending
		}
	}
}

// logTurn logs the turn that ran tools, with its usage (attrs), the tools
// it called, and what it left for the caller: a finish, a pending request.
// A turn without tool calls logs the same line with its usage only.
func (t *turnRun) logTurn(attrs []any, names, repaired []string) {
	attrs = append(attrs, "tools", names, "finished", t.st.Finish != nil)
	if len(repaired) > 0 {
		attrs = append(attrs, "repaired_arguments", repaired)
	}
	if t.st.Limits.PriceInput > 0 || t.st.Limits.PriceOutput > 0 {
		attrs = append(attrs, "cost_usd", t.st.CostUSD())
	}
	if t.st.Pending != nil {
		attrs = append(attrs, "pending_tool_call", t.st.Pending.ToolCallID)
	}
	t.log.Info("agent turn", attrs...)
}

var errNoChoices = errors.New("the response has no choices")

// complete makes one model call of st's task to model under its own
// deadline, through the client that reaches that model.
func (a *Agent) complete(ctx context.Context, st *State, model string, req openai.ChatCompletionRequest) (resp openai.ChatCompletionResponse, err error) {
	// A span per call, in OpenTelemetry's conventions for generative AI:
	// the model, the tokens, why the answer ended; never the messages.
	provider := semconv.GenAIProviderNameOpenAI
	if a.cfg.APIType == APITypeAzure {
		provider = semconv.GenAIProviderNameAzureAIOpenAI
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, provider, semconv.GenAIRequestModel(model)}
	if u, perr := url.Parse(a.cfg.BaseURL); perr == nil && u.Hostname() != "" {
		attrs = append(attrs, semconv.ServerAddress(u.Hostname()))
	}
	ctx, span := tracing.Start(ctx, "chat "+model, attrs...)
	defer func() {
		var kind string
		if err != nil {
			var apiErr *openai.APIError
			var reqErr *openai.RequestError
			switch {
			case errors.As(err, &apiErr) && apiErr.HTTPStatusCode > 0:
				kind = strconv.Itoa(apiErr.HTTPStatusCode)
			case errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0:
				kind = strconv.Itoa(reqErr.HTTPStatusCode)
			case errors.Is(err, context.DeadlineExceeded):
				kind = "timeout"
			}
		} else {
			reasons := make([]string, 0, len(resp.Choices))
			for _, c := range resp.Choices {
				reasons = append(reasons, string(c.FinishReason))
			}
			if resp.Model != "" {
				span.SetAttributes(semconv.GenAIResponseModel(resp.Model))
			}
			span.SetAttributes(semconv.GenAIResponseFinishReasons(reasons...),
				semconv.GenAIUsageInputTokens(resp.Usage.PromptTokens), semconv.GenAIUsageOutputTokens(resp.Usage.CompletionTokens))
			if d := resp.Usage.PromptTokensDetails; d != nil {
				span.SetAttributes(semconv.GenAIUsageCacheReadInputTokens(d.CachedTokens))
			}
		}
		tracing.EndAs(span, err, kind)
	}()
	callCtx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	return a.clientFor(model, st.Limits.Profile).CreateChatCompletion(callCtx, req)
}

// assistantMessage keeps what the conversation needs from the model's answer,
// and gives every tool call an id and a type (some servers omit them). A
// null content and an empty one are the same here: go-openai decodes both
// as "".
func assistantMessage(m openai.ChatCompletionMessage, turn int) openai.ChatCompletionMessage {
	out := openai.ChatCompletionMessage{
		Role:    openai.ChatMessageRoleAssistant,
		Content: m.Content,
		Refusal: m.Refusal,
	}
	if len(m.MultiContent) > 0 && m.Content == "" {
		var parts []string
		for _, p := range m.MultiContent {
			if p.Text != "" {
				parts = append(parts, p.Text)
			}
		}
		out.Content = strings.Join(parts, "\n")
	}
	calls := m.ToolCalls
	if len(calls) == 0 && m.FunctionCall != nil && m.FunctionCall.Name != "" {
		// The legacy function_call answer (finish_reason "function_call") of
		// older servers is one tool call; kept as one, it is answered like
		// any other, with a tool message.
		calls = []openai.ToolCall{{Function: *m.FunctionCall}}
	}
	for i, tc := range calls {
		tc.Index = nil
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_t%d_%d", turn, i+1)
		}
		if tc.Type == "" {
			tc.Type = openai.ToolTypeFunction
		}
		out.ToolCalls = append(out.ToolCalls, tc)
	}
	return out
}

// runTool runs one tool call and returns the tool message content, the
// step line and the repairs its arguments needed (parseArguments). It never
// fails: errors become "error: …" content.
func (a *Agent) runTool(env toolEnv, tc openai.ToolCall) (content, step string, repairs []string) {
	name := tc.Function.Name
	t, ok := toolsOf(env.st)[name]
	if !ok && env.ext.has(name) {
		t, ok = env.ext.tool(name), true
	}
	if !ok {
		set := tools
		if env.st.Reviewing != nil {
			set = reviewTools
		}
		return "error: unknown tool " + fmt.Sprintf("%q", name) + "; the available tools are: " + toolNames(set),
			fmt.Sprintf("called unknown tool `%s`", untrusted.Cut(name, 40)), nil
	}
	raw, repairs, err := parseArguments(tc.Function.Arguments)
	if err != nil {
		if env.cut != "" {
			// Arguments that do not parse in an answer stopped early were
			// cut there: saying so helps the model more than where.
			return a.cut(cutCall(name, env.cut)), name + " not run: its arguments were cut short", nil
		}
		msg := fmt.Sprintf("arguments of %s are %v; send the call again with its arguments as one JSON object", name, err)
		return "error: " + a.cut(msg), name + " failed: arguments are not valid JSON", nil
	}
	res, err := t.run(env, raw)
	note := ""
	if len(repairs) > 0 {
		// The step line shows that the bot, not the model, made the call
		// readable.
		note = " (arguments repaired: " + strings.Join(repairs, ", ") + ")"
	}
	if err != nil {
		var te *toolError
		msg := err.Error()
		if !errors.As(err, &te) {
			msg = "internal error: " + describe(err)
		}
		return "error: " + a.cut(msg), name + " failed: " + untrusted.Cut(firstLine(msg), 80) + note, repairs
	}
	text := a.cut(res.text)
	if text == "" {
		text = "(no output)"
	}
	if res.block != "" {
		text = untrusted.Block(res.block, res.attrs, text)
	}
	return text, res.step + note, repairs
}

// cut bounds one tool output to MaxToolOutput bytes, on a line or rune
// boundary, with a note saying how much was cut.
func (a *Agent) cut(s string) string {
	limit := a.cfg.MaxToolOutput
	if len(s) <= limit {
		return s
	}
	i := limit
	if nl := strings.LastIndexByte(s[:limit], '\n'); nl >= limit/2 {
		i = nl + 1
	} else {
		for i > 0 && s[i]&0xC0 == 0x80 { // not a rune start
			i--
		}
	}
	return s[:i] + fmt.Sprintf("\n[… %d bytes cut …]\n", len(s)-i)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// IsTransient reports whether err, from Turn, is worth retrying later: server
// errors (5xx), rate limits (429), request timeouts and connection failures.
// Client errors (400, 401, 403, 404, …), budget errors and malformed answers
// are not.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, ErrBudget) || errors.Is(err, ErrFinished) || errors.Is(err, ErrPending) {
		return false
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0 {
		return transientStatus(apiErr.HTTPStatusCode)
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0 {
		return transientStatus(reqErr.HTTPStatusCode)
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	// The call's deadline ended it, retries included; a later turn may
	// fare better.
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return connectionError(err)
}

func transientStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}
