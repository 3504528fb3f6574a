package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakellm"
)

// wire decodes the body of the i-th HTTP request s received.
func wire(t *testing.T, s *fakellm.Server, i int) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(s.HTTP()[i].Body, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRequestFollowsProfile(t *testing.T) {
	tests := []struct {
		name    string
		model   string
		profile pullwright.ModelProfile
		want    map[string]any // fields that must be on the wire
		absent  []string       // fields that must not
		role    string         // role of the first message on the wire
	}{
		{name: "zero profile (a state saved before profiles)", model: "gpt-4.1",
			absent: []string{"max_tokens", "max_completion_tokens", "reasoning_effort"}, role: "system"},
		{name: "max_tokens by default", model: "gpt-4.1", profile: pullwright.ModelProfile{MaxOutputTokens: 4096},
			want: map[string]any{"max_tokens": 4096.0}, absent: []string{"max_completion_tokens"}, role: "system"},
		{name: "max_completion_tokens for a reasoning family", model: "o4-mini", profile: pullwright.ModelProfile{MaxOutputTokens: 8000, ReasoningEffort: "low"},
			want: map[string]any{"max_completion_tokens": 8000.0, "reasoning_effort": "low"}, absent: []string{"max_tokens"}, role: "system"},
		{name: "gpt-5 family", model: "gpt-5-mini", profile: pullwright.ModelProfile{MaxOutputTokens: 100},
			want: map[string]any{"max_completion_tokens": 100.0}, absent: []string{"max_tokens"}, role: "system"},
		{name: "the profile's parameter wins", model: "qwen3-coder", profile: pullwright.ModelProfile{MaxOutputTokens: 2048, TokenParameter: "max_completion_tokens"},
			want: map[string]any{"max_completion_tokens": 2048.0}, absent: []string{"max_tokens"}, role: "system"},
		{name: "developer role", model: "o3", profile: pullwright.ModelProfile{SystemRole: "developer", ReasoningEffort: "high"},
			want: map[string]any{"reasoning_effort": "high"}, role: "developer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakellm.New(t, fakellm.Step{Content: "thinking"})
			a := agentFor(t, s, Config{Model: tt.model})
			brief := testBrief
			brief.Limits.Profile = tt.profile
			st := a.Start(brief)
			if err := a.Turn(context.Background(), st, workspaceDir(t, nil)); err != nil {
				t.Fatal(err)
			}
			got := wire(t, s, 0)
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s sent: %v", k, got[k])
				}
			}
			if role := got["messages"].([]any)[0].(map[string]any)["role"]; role != tt.role {
				t.Errorf("instructions sent as %v, want %s", role, tt.role)
			}
			if st.Messages[0].Role != openai.ChatMessageRoleSystem {
				t.Errorf("the state keeps role %q, want system", st.Messages[0].Role)
			}
		})
	}
}

// TestCompactionRequestFollowsProfile: a compaction is asked of the model
// with its own parameters, and a reasoning model gets room to reason.
func TestCompactionRequestFollowsProfile(t *testing.T) {
	tests := []struct {
		name    string
		model   string
		profile pullwright.ModelProfile
		want    map[string]any
		absent  string
		role    string
	}{
		{name: "chat model", model: "gpt-4.1", want: map[string]any{"max_tokens": float64(maxSummaryTokens)}, absent: "max_completion_tokens", role: "system"},
		{name: "chat model with a smaller cap", model: "gpt-4.1", profile: pullwright.ModelProfile{MaxOutputTokens: 1000},
			want: map[string]any{"max_tokens": 1000.0}, absent: "max_completion_tokens", role: "system"},
		{name: "reasoning model", model: "o4-mini", profile: pullwright.ModelProfile{ReasoningEffort: "low"},
			want: map[string]any{"max_completion_tokens": float64(reasoningSummaryTokens), "reasoning_effort": "low"}, absent: "max_tokens", role: "system"},
		{name: "reasoning model with the profile's cap", model: "o3", profile: pullwright.ModelProfile{MaxOutputTokens: 40000, SystemRole: "developer"},
			want: map[string]any{"max_completion_tokens": 40000.0}, absent: "max_tokens", role: "developer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakellm.New(t, fakellm.Step{Content: "SUMMARY"})
			a := agentFor(t, s, Config{Model: tt.model})
			brief := testBrief
			brief.Limits.Profile = tt.profile
			st := a.Start(brief)
			text, err := a.summarise(context.Background(), st, tt.model, st.Messages[1:], 100000)
			if err != nil || text != "SUMMARY" {
				t.Fatalf("summarise = %q, %v", text, err)
			}
			got := wire(t, s, 0)
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			if _, ok := got[tt.absent]; ok {
				t.Errorf("%s sent: %v", tt.absent, got[tt.absent])
			}
			if role := got["messages"].([]any)[0].(map[string]any)["role"]; role != tt.role {
				t.Errorf("compaction instructions sent as %v, want %s", role, tt.role)
			}
		})
	}
}

func TestParseArguments(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    string   // the clean JSON
		repairs []string // repairs made
		errHas  []string // parts of the error, when it fails
	}{
		{name: "valid", raw: `{"path":"a.go"}`, want: `{"path":"a.go"}`},
		{name: "empty", raw: "  ", want: `{}`},
		{name: "valid with fence and comma text inside strings", raw: `{"content":"a,}\n` + "```" + `"}`, want: `{"content":"a,}\n` + "```" + `"}`},
		{name: "json fence", raw: "```json\n{\"path\":\"a.go\"}\n```", want: `{"path":"a.go"}`, repairs: []string{repairFence}},
		{name: "bare fence", raw: "```\n{\"path\":\"a.go\"}\n```", want: `{"path":"a.go"}`, repairs: []string{repairFence}},
		{name: "trailing commas", raw: "{\"items\":[1,2,],\n\"path\":\"a\",\n}", want: "{\"items\":[1,2],\n\"path\":\"a\"\n}", repairs: []string{repairTrailingComma}},
		{name: "fence and comma", raw: "```JSON\n{\"path\":\"a\",}\n```", want: `{"path":"a"}`, repairs: []string{repairFence, repairTrailingComma}},
		{name: "comma inside a string is kept", raw: `{"a":"x,}",}`, want: `{"a":"x,}"}`, repairs: []string{repairTrailingComma}},
		{name: "other fence language", raw: "```go\n{}\n```", errHas: []string{"line 1, column 1 (byte 0)", "invalid character '`'"}},
		{name: "cut short", raw: "{\"path\": \"a.go\",\n \"content\": \"pack", errHas: []string{"line 2, column 18 (byte 34)", "not closed"}},
		{name: "missing colon", raw: "{\n  \"path\" \"a.go\"\n}", errHas: []string{"line 2, column 10 (byte 11)", "after object key", `near "{\n  \"path\" \"a.go\"\n}"`}},
		{name: "single quotes", raw: `{'path': 'a'}`, errHas: []string{"line 1, column 2 (byte 1)", "looking for beginning of object key string"}},
		{name: "inside a fence", raw: "```json\n{\"a\" 1}\n```", errHas: []string{"inside the code fence", "line 1, column 6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, repairs, err := parseArguments(tt.raw)
			if len(tt.errHas) > 0 {
				if err == nil {
					t.Fatalf("parsed %s", got)
				}
				for _, w := range tt.errHas {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q: %v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want || !reflect.DeepEqual(repairs, tt.repairs) {
				t.Errorf("= %s, %q; want %s, %q", got, repairs, tt.want, tt.repairs)
			}
		})
	}
}

func TestStoredArguments(t *testing.T) {
	for _, tt := range []struct{ raw, want string }{
		{`{"path":"a.go"}`, `{"path":"a.go"}`},
		{`{ "path" : "a.go" }`, `{ "path" : "a.go" }`}, // valid JSON is kept byte for byte
		{"", `{}`},
		{"```json\n{\"path\":\"a.go\",}\n```", `{"path":"a.go"}`},
		{`{"path": "a.go", "content": "pack`, `{"unparsed_arguments":"{\"path\": \"a.go\", \"content\": \"pack"}`},
		{`["a.go"]`, `{"unparsed_arguments":"[\"a.go\"]"}`},
	} {
		if got := storedArguments(tt.raw); got != tt.want {
			t.Errorf("storedArguments(%q) = %s, want %s", tt.raw, got, tt.want)
		}
	}
}

// raw is an answer in the wire format, with one choice.
func raw(message string, finish string, usage string) fakellm.Step {
	b := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":` + message
	if finish != "" {
		b += `,"finish_reason":` + finish
	}
	b += `}]`
	if usage != "" {
		b += `,"usage":` + usage
	}
	return fakellm.Step{RawBody: b + `}`}
}

const readA = `{"function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}`

// TestAnswers: every finish reason and the shapes OpenAI-compatible servers
// answer in. All tool calls of an answer run in order and are all answered;
// a call cut short is answered, not run.
func TestAnswers(t *testing.T) {
	const usage = `{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`
	tests := []struct {
		name      string
		step      fakellm.Step
		wantTools []string // prefixes of the tool results, in order
		wantNudge string   // part of the nudge, when no tool ran
		wantSteps []string
		wantFile  string // a.txt after the turn
	}{
		{name: "tool_calls, several in order", step: raw(`{"role":"assistant","content":null,"tool_calls":[`+readA+`,`+
			`{"id":"c2","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.txt\",\"content\":\"b\\n\"}"}},`+readA+`]}`, `"tool_calls"`, usage),
			wantTools: []string{"<untrusted-file", "replaced the content of a.txt", "<untrusted-file"}, wantFile: "b\n"},
		{name: "stop with text", step: raw(`{"role":"assistant","content":"I think it is done."}`, `"stop"`, usage), wantNudge: "without calling a tool"},
		{name: "null finish reason and content null", step: raw(`{"role":"assistant","content":null,"tool_calls":[`+readA+`]}`, `null`, usage),
			wantTools: []string{"<untrusted-file"}},
		{name: "no finish reason", step: raw(`{"role":"assistant","content":"","tool_calls":[`+readA+`]}`, ``, usage), wantTools: []string{"<untrusted-file"}},
		{name: "unknown finish reason", step: raw(`{"role":"assistant","tool_calls":[`+readA+`]}`, `"eos"`, usage), wantTools: []string{"<untrusted-file"}},
		{name: "legacy function_call", step: raw(`{"role":"assistant","content":null,"function_call":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}`, `"function_call"`, usage),
			wantTools: []string{"<untrusted-file"}},
		{name: "length with a cut tool call", step: raw(`{"role":"assistant","tool_calls":[`+readA+`,`+
			`{"id":"c2","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.txt\",\"content\":\"pack"}}]}`, `"length"`, usage),
			wantTools: []string{"<untrusted-file", "error: the answer reached the output token limit and was cut off inside the arguments of this write_file call, so it did not run"},
			wantSteps: []string{"read a.txt", "write_file not run: its arguments were cut short"}, wantFile: "a\n"},
		{name: "length without a tool call", step: raw(`{"role":"assistant","content":"Here is the whole file: package"}`, `"length"`, usage),
			wantNudge: "cut short: the answer reached the output token limit"},
		{name: "content_filter", step: raw(`{"role":"assistant","content":""}`, `"content_filter"`, usage), wantNudge: "content filter"},
		{name: "repaired arguments", step: raw(`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"`+
			"```json\\n{\\\"path\\\":\\\"a.txt\\\",}\\n```"+`"}}]}`, `"tool_calls"`, usage),
			wantTools: []string{"<untrusted-file"}, wantSteps: []string{"read a.txt (arguments repaired: code fence removed, trailing comma removed)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := workspaceDir(t, map[string]string{"a.txt": "a\n"})
			s := fakellm.New(t, tt.step, fakellm.Step{Content: "next"}).DecodeArguments()
			var logs bytes.Buffer
			a := agentFor(t, s, Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			st := a.Start(testBrief)
			for range 2 {
				if err := a.Turn(context.Background(), st, dir); err != nil {
					t.Fatal(err)
				}
			}
			sent := s.Requests()[1].Messages[2:]
			var tools []openai.ChatCompletionMessage
			var nudge string
			for _, m := range sent {
				switch m.Role {
				case openai.ChatMessageRoleTool:
					tools = append(tools, m)
				case openai.ChatMessageRoleUser:
					nudge = m.Content
				}
			}
			if len(tools) != len(tt.wantTools) {
				t.Fatalf("%d tool results, want %d: %+v", len(tools), len(tt.wantTools), sent)
			}
			var ids []string
			for _, tc := range sent[0].ToolCalls {
				ids = append(ids, tc.ID)
			}
			for i, m := range tools {
				if !strings.HasPrefix(m.Content, tt.wantTools[i]) {
					t.Errorf("result %d = %q, want prefix %q", i, m.Content, tt.wantTools[i])
				}
				if i >= len(ids) || m.ToolCallID != ids[i] {
					t.Errorf("result %d answers %q, want the call ids %q in order", i, m.ToolCallID, ids)
				}
			}
			// Ollama and vLLM decode earlier calls' arguments into objects.
			for _, tc := range sent[0].ToolCalls {
				var obj map[string]any
				if err := json.Unmarshal([]byte(tc.Function.Arguments), &obj); err != nil {
					t.Errorf("call %s goes back with arguments that are not a JSON object: %q", tc.ID, tc.Function.Arguments)
				}
			}
			if tt.wantNudge != "" && !strings.Contains(nudge, tt.wantNudge) {
				t.Errorf("nudge = %q, want %q", nudge, tt.wantNudge)
			}
			if tt.wantNudge == "" && len(tools) == 0 {
				t.Error("neither a tool result nor a nudge")
			}
			if tt.wantSteps != nil && !reflect.DeepEqual(st.Steps, tt.wantSteps) {
				t.Errorf("steps = %q, want %q", st.Steps, tt.wantSteps)
			}
			if want := cmpOr(tt.wantFile, "a\n"); readDisk(t, dir, "a.txt") != want {
				t.Errorf("a.txt = %q, want %q", readDisk(t, dir, "a.txt"), want)
			}
			if strings.HasPrefix(tt.name, "repaired") && !strings.Contains(logs.String(), `"repaired_arguments":["read_file: code fence removed, trailing comma removed"]`) {
				t.Errorf("the turn log does not record the repair:\n%s", logs.String())
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestUsage: cached prompt tokens are counted and priced apart, and a turn
// without usage is estimated, marked, and still counts against the budget.
func TestUsage(t *testing.T) {
	msg := `{"role":"assistant","tool_calls":[` + readA + `]}`
	tests := []struct {
		name                       string
		usage                      string
		prompt, completion, cached int
		estimated                  bool
		limits                     pullwright.Limits
		cost                       float64
		wantLog                    string
	}{
		{name: "cached tokens", usage: `{"prompt_tokens":1000000,"completion_tokens":100000,"total_tokens":1100000,"prompt_tokens_details":{"cached_tokens":800000}}`,
			prompt: 1_000_000, completion: 100_000, cached: 800_000,
			limits: pullwright.Limits{PriceInput: 2, PriceOutput: 8, PriceCachedInput: 0.5}, cost: 0.2*2 + 0.8*0.5 + 0.1*8,
			wantLog: `"cached_prompt_tokens":800000`},
		{name: "cached tokens without a cached price", usage: `{"prompt_tokens":1000000,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":800000}}`,
			prompt: 1_000_000, cached: 800_000, limits: pullwright.Limits{PriceInput: 2}, cost: 2, wantLog: `"cached_prompt_tokens":800000`},
		{name: "details null", usage: `{"prompt_tokens":7,"completion_tokens":3,"prompt_tokens_details":null}`, prompt: 7, completion: 3, wantLog: `"cached_prompt_tokens":0`},
		{name: "no usage", estimated: true, wantLog: `"estimated_tokens":true`},
		{name: "usage null", usage: `null`, estimated: true, wantLog: `"estimated_tokens":true`},
		{name: "usage zero", usage: `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`, estimated: true, wantLog: `"estimated_tokens":true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakellm.New(t, raw(msg, `"tool_calls"`, tt.usage))
			var logs bytes.Buffer
			a := agentFor(t, s, Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			brief := testBrief
			brief.Limits = tt.limits
			st := a.Start(brief)
			if err := a.Turn(context.Background(), st, workspaceDir(t, map[string]string{"a.txt": "a\n"})); err != nil {
				t.Fatal(err)
			}
			if st.Estimated() != tt.estimated {
				t.Errorf("estimated = %v, want %v", st.Estimated(), tt.estimated)
			}
			if tt.estimated {
				// The request holds the system prompt and the tool
				// definitions: thousands of bytes, hundreds of tokens.
				sent := len(s.HTTP()[0].Body)
				if st.PromptTokens < sent/8 || st.PromptTokens > sent/2 || st.CompletionTokens < 1 {
					t.Errorf("estimate = %d+%d tokens for a %d-byte request", st.PromptTokens, st.CompletionTokens, sent)
				}
			} else if st.PromptTokens != tt.prompt || st.CompletionTokens != tt.completion || st.CachedPromptTokens != tt.cached {
				t.Errorf("tokens = %d+%d (%d cached), want %d+%d (%d cached)", st.PromptTokens, st.CompletionTokens, st.CachedPromptTokens,
					tt.prompt, tt.completion, tt.cached)
			}
			if diff := st.CostUSD() - tt.cost; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("cost = %v, want %v", st.CostUSD(), tt.cost)
			}
			// The spend shown on every surface agrees with the counts
			// and the budget's cost, for the model that was called.
			spent := a.Spent(st)
			if len(spent.Models) != 1 || spent.Models[0].Model != a.cfg.Model || spent.Models[0].Calls != 1 ||
				spent.Tokens() != st.Tokens() || spent.Models[0].CachedTokens != st.CachedPromptTokens ||
				spent.TokensEstimated() != tt.estimated || spent.Models[0].Unpriced != (tt.cost == 0) {
				t.Errorf("spent = %+v for %d tokens (%d cached)", spent, st.Tokens(), st.CachedPromptTokens)
			}
			if diff := spent.USD() - tt.cost; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("spent %v, want %v", spent.USD(), tt.cost)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("turn log lacks %s:\n%s", tt.wantLog, logs.String())
			}
		})
	}
}

// An endpoint that never reports usage still runs out of tokens.
func TestEstimatedUsageKeepsTheBudget(t *testing.T) {
	s := fakellm.NewByTurn(t, raw(`{"role":"assistant","content":"hm"}`, `"stop"`, ""))
	a := agentFor(t, s, Config{MaxTokens: 5000})
	st := a.Start(testBrief)
	dir := workspaceDir(t, nil)
	var err error
	for range 40 {
		if err = a.Turn(context.Background(), st, dir); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "tokens") {
		t.Fatalf("err = %v after %d turns, want the token budget", err, st.Turns)
	}
	if st.EstimatedTurns != st.Turns || st.Turns >= 40 {
		t.Errorf("estimated turns = %d of %d", st.EstimatedTurns, st.Turns)
	}
}

// TestEndpointTranscripts runs one turn against each endpoint's documented
// answer (internal/fakellm/testdata), through go-openai and the agent.
func TestEndpointTranscripts(t *testing.T) {
	tests := []struct {
		file      string
		azure     bool
		wantTool  string // the tool result's prefix, when the answer calls one
		wantNudge bool
		tokens    int
		cached    int
	}{
		{file: "openai.txt", wantTool: `error: unknown tool "get_current_weather"`, tokens: 99, cached: 64},
		{file: "azure.txt", azure: true, wantNudge: true, tokens: 590},
		{file: "ollama.txt", wantNudge: true, tokens: 33},
		{file: "vllm.txt", wantTool: `error: unknown tool "get_weather"`, tokens: 279},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tr := fakellm.LoadTranscript(t, "../internal/fakellm/testdata/"+tt.file)
			s := fakellm.New(t, tr.Step())
			cfg := Config{}
			u, err := url.Parse(tr.Path)
			if err != nil {
				t.Fatal(err)
			}
			if tt.azure {
				s.WithAzure("k", u.Query().Get("api-version"), "gpt-4o-prod")
				cfg = Config{APIType: APITypeAzure, APIVersion: u.Query().Get("api-version"), APIKey: "k"}
			}
			a := agentFor(t, s, cfg)
			brief := testBrief
			brief.Limits.Profile.Deployment = "gpt-4o-prod"
			st := a.Start(brief)
			if err := a.Turn(context.Background(), st, workspaceDir(t, nil)); err != nil {
				t.Fatal(err)
			}
			last := st.Messages[len(st.Messages)-1]
			switch {
			case tt.wantNudge:
				if last.Role != openai.ChatMessageRoleUser || st.Messages[len(st.Messages)-2].Content == "" {
					t.Errorf("the answer is not kept and nudged: %+v", st.Messages[2:])
				}
			default:
				asst := st.Messages[len(st.Messages)-2]
				if last.Role != openai.ChatMessageRoleTool || !strings.HasPrefix(last.Content, tt.wantTool) ||
					last.ToolCallID != asst.ToolCalls[0].ID || asst.ToolCalls[0].ID == "" {
					t.Errorf("tool answer = %+v to %+v", last, asst.ToolCalls)
				}
			}
			if st.Tokens() != tt.tokens || st.CachedPromptTokens != tt.cached || st.Estimated() {
				t.Errorf("tokens = %d (%d cached, estimated %v), want %d (%d cached)", st.Tokens(), st.CachedPromptTokens, st.Estimated(), tt.tokens, tt.cached)
			}
			h := s.HTTP()[0]
			wantPath := "/v1/chat/completions"
			if tt.azure {
				wantPath = "/openai/deployments/gpt-4o-prod/chat/completions"
			}
			if h.Path != wantPath {
				t.Errorf("path = %s, want %s", h.Path, wantPath)
			}
		})
	}
}

func TestAzure(t *testing.T) {
	const key = "azure-very-secret"
	t.Run("deployment from the profile, else the model's name", func(t *testing.T) {
		for _, tt := range []struct{ deployment, want string }{{"eu-gpt41", "eu-gpt41"}, {"", "gpt-4.1"}} {
			s := fakellm.New(t, fakellm.Step{Content: "x"}).WithAzure(key, "2024-10-21", tt.want)
			a := agentFor(t, s, Config{APIType: "azure", APIVersion: "2024-10-21", APIKey: key, Model: "gpt-4.1"})
			brief := testBrief
			brief.Limits.Profile.Deployment = tt.deployment
			if err := a.Turn(context.Background(), a.Start(brief), workspaceDir(t, nil)); err != nil {
				t.Fatal(err)
			}
			h := s.HTTP()[0]
			if h.Path != "/openai/deployments/"+tt.want+"/chat/completions" || h.Query.Get("api-version") != "2024-10-21" ||
				h.Header.Get("api-key") != key || h.Header.Get("Authorization") != "" {
				t.Errorf("request = %s?%s %v", h.Path, h.Query.Encode(), h.Header)
			}
		}
	})
	t.Run("refusals keep the key out of errors and logs", func(t *testing.T) {
		s := fakellm.New(t).WithAzure("the-right-key", "2024-10-21", "gpt-4.1")
		var logs bytes.Buffer
		a := agentFor(t, s, Config{APIType: "azure", APIVersion: "2024-10-21", APIKey: key, Model: "gpt-4.1",
			Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		err := a.Turn(context.Background(), a.Start(testBrief), workspaceDir(t, nil))
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusUnauthorized || IsTransient(err) {
			t.Fatalf("err = %v, want Azure's 401", err)
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(logs.String(), "secret") {
			t.Errorf("the key shows:\n%v\n%s", err, logs.String())
		}
	})
	t.Run("configuration", func(t *testing.T) {
		for _, tt := range []struct {
			cfg    Config
			errHas string
		}{
			{Config{Model: "m", APIType: "azure", BaseURL: "https://r.openai.azure.com", APIKey: key}, "API version"},
			{Config{Model: "m", APIType: "azure", APIVersion: "2024-10-21", APIKey: key}, "base URL"},
			{Config{Model: "m", APIType: "anthropic", APIKey: key}, `API type "anthropic"`},
			{Config{Model: "m", APIType: "azure_ad", APIKey: key}, "Entra ID"},
			{Config{Model: "m", APIType: "AZURE", BaseURL: "http://r.openai.azure.com", APIVersion: "2024-10-21", APIKey: key}, "is not https"},
		} {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) || strings.Contains(err.Error(), key) {
				t.Errorf("New(%s) = %v, want an error about %s", tt.cfg.APIType, err, tt.errHas)
			}
		}
	})
}
