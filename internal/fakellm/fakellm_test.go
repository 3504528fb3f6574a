package fakellm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func client(s *Server, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = s.URL
	return openai.NewClientWithConfig(cfg)
}

func ask(c *openai.Client, text string) (openai.ChatCompletionResponse, error) {
	return c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}},
	})
}

// recorder is a testing.TB that records Errorf instead of failing, to test
// that the server reports misuse.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestScriptedSteps(t *testing.T) {
	s := New(t,
		Step{ToolCalls: []ToolCall{{Name: "read_file", Arguments: `{"path":"a"}`}, {Name: "think", Arguments: `{"thought":"x"}`}}},
		Step{Content: "hello", Usage: Usage{Prompt: 7, Completion: 3}},
	)
	c := client(s, "")

	r1, err := ask(c, "one")
	if err != nil {
		t.Fatal(err)
	}
	m := r1.Choices[0].Message
	if len(m.ToolCalls) != 2 || m.ToolCalls[0].Function.Name != "read_file" || m.ToolCalls[0].Function.Arguments != `{"path":"a"}` {
		t.Fatalf("tool calls = %+v", m.ToolCalls)
	}
	if m.ToolCalls[0].ID == "" || m.ToolCalls[0].ID == m.ToolCalls[1].ID {
		t.Errorf("tool call ids not unique: %q %q", m.ToolCalls[0].ID, m.ToolCalls[1].ID)
	}
	if r1.Choices[0].FinishReason != openai.FinishReasonToolCalls {
		t.Errorf("finish reason = %q", r1.Choices[0].FinishReason)
	}
	if r1.Usage.PromptTokens != DefaultPromptTokens || r1.Usage.CompletionTokens != DefaultCompletionTokens {
		t.Errorf("default usage = %+v", r1.Usage)
	}

	r2, err := ask(c, "two")
	if err != nil {
		t.Fatal(err)
	}
	if r2.Choices[0].Message.Content != "hello" || r2.Usage.PromptTokens != 7 || r2.Usage.CompletionTokens != 3 || r2.Usage.TotalTokens != 10 {
		t.Errorf("second answer = %+v", r2)
	}
	if r2.Model != "fake-model" {
		t.Errorf("model = %q", r2.Model)
	}

	reqs := s.Requests()
	if len(reqs) != 2 || s.Calls() != 2 {
		t.Fatalf("recorded %d requests, %d calls", len(reqs), s.Calls())
	}
	if reqs[1].Messages[0].Content != "two" {
		t.Errorf("second request = %+v", reqs[1])
	}
}

func TestErrorsAndGarbage(t *testing.T) {
	tests := []struct {
		name       string
		step       Step
		wantStatus int
		wantMsg    string
	}{
		{"server error", Step{Status: 500}, 500, "Internal Server Error"},
		{"rate limit with message", Step{Status: 429, Content: "slow down"}, 429, "slow down"},
		{"bad request", Step{Status: 400}, 400, "Bad Request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t, tt.step)
			_, err := ask(client(s, ""), "x")
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v (%T), want *openai.APIError", err, err)
			}
			if apiErr.HTTPStatusCode != tt.wantStatus || apiErr.Message != tt.wantMsg {
				t.Errorf("got %d %q, want %d %q", apiErr.HTTPStatusCode, apiErr.Message, tt.wantStatus, tt.wantMsg)
			}
		})
	}

	t.Run("raw body", func(t *testing.T) {
		s := New(t, Step{RawBody: "<html>not json"})
		if _, err := ask(client(s, ""), "x"); err == nil {
			t.Fatal("garbage body decoded without error")
		}
	})
}

func TestAPIKey(t *testing.T) {
	s := New(t, Step{Content: "ok"}).WithAPIKey("sekret")

	_, err := ask(client(s, "wrong"), "x")
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong key: err = %v, want 401", err)
	}
	if _, err := ask(client(s, "sekret"), "x"); err != nil {
		t.Fatalf("right key: %v", err)
	}
	if s.Calls() != 2 {
		t.Errorf("calls = %d, want 2", s.Calls())
	}
}

func TestScriptExhausted(t *testing.T) {
	rec := &recorder{TB: t}
	s := New(rec, Step{Content: "only"})
	c := client(s, "")
	if _, err := ask(c, "1"); err != nil {
		t.Fatal(err)
	}
	_, err := ask(c, "2")
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 || apiErr.Message != "fakellm: script exhausted after 1 steps" {
		t.Fatalf("err = %v", err)
	}
	if len(rec.errs) != 1 {
		t.Errorf("test not failed loudly: %v", rec.errs)
	}
	if len(s.Requests()) != 2 {
		t.Errorf("exhausted request not recorded")
	}
}

func TestNewFuncAndPaths(t *testing.T) {
	s := NewFunc(t, func(req openai.ChatCompletionRequest) Step {
		return Step{Content: "echo: " + req.Messages[len(req.Messages)-1].Content}
	})
	// Both the /v1 base and the bare base work.
	for _, base := range []string{s.URL, strings.TrimSuffix(s.URL, "/v1")} {
		cfg := openai.DefaultConfig("")
		cfg.BaseURL = base
		r, err := ask(openai.NewClientWithConfig(cfg), "hi")
		if err != nil {
			t.Fatalf("base %s: %v", base, err)
		}
		if got := r.Choices[0].Message.Content; got != "echo: hi" {
			t.Errorf("base %s: content = %q", base, got)
		}
	}
	resp, err := http.Get(s.URL + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET status = %d", resp.StatusCode)
	}
}

func TestConcurrentUse(t *testing.T) {
	const n = 20
	steps := make([]Step, n)
	for i := range steps {
		steps[i] = Step{Content: "ok"}
	}
	s := New(t, steps...)
	c := client(s, "")
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := ask(c, "x"); err != nil {
				t.Error(err)
			}
			_ = s.Requests()
		})
	}
	wg.Wait()
	if s.Calls() != n {
		t.Errorf("calls = %d, want %d", s.Calls(), n)
	}
}

// Calls in flight at once wait out their latency side by side: a benchmark
// of concurrent workers against the model measures the workers, not a
// queue inside the fake.
func TestLatencyOverlaps(t *testing.T) {
	const (
		n       = 8
		latency = time.Second
	)
	s := NewFunc(t, func(openai.ChatCompletionRequest) Step { return Step{Content: "ok"} }).WithLatency(latency)
	c := client(s, "")
	began := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := ask(c, "x"); err != nil {
				t.Error(err)
			}
			if d := time.Since(began); d < latency {
				t.Errorf("answered after %s, before the latency of %s", d, latency)
			}
		})
	}
	wg.Wait()
	// One after another would take n seconds; 2 leaves room for a busy machine.
	if d := time.Since(began); d >= 2*latency {
		t.Errorf("%d calls took %s: they waited one after another", n, d)
	}
}

func TestFailNext(t *testing.T) {
	s := New(t, Step{Content: "first"}, Step{Content: "second"})
	s.FailNext(2, http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}).
		FailNext(1, http.StatusServiceUnavailable, nil)
	post := func() (*http.Response, string) {
		t.Helper()
		resp, err := http.Post(s.URL+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		if _, err := io.Copy(&b, resp.Body); err != nil {
			t.Fatal(err)
		}
		return resp, b.String()
	}
	tests := []struct {
		status     int
		retryAfter string
		body       string
	}{
		{429, "1", `"type":"rate_limit_error"`},
		{429, "1", `"type":"rate_limit_error"`},
		{503, "", `"type":"server_error"`},
		{200, "", `"content":"first"`}, // the script was not used up by the failures
		{200, "", `"content":"second"`},
	}
	for i, tt := range tests {
		resp, body := post()
		if resp.StatusCode != tt.status || resp.Header.Get("Retry-After") != tt.retryAfter || !strings.Contains(body, tt.body) {
			t.Errorf("request %d: %d, Retry-After %q, body %s; want %d, %q, %s",
				i+1, resp.StatusCode, resp.Header.Get("Retry-After"), body, tt.status, tt.retryAfter, tt.body)
		}
	}
	if s.Calls() != 5 || len(s.Requests()) != 5 {
		t.Errorf("calls %d, requests %d; want every request recorded, failed or not", s.Calls(), len(s.Requests()))
	}
}

func TestContextLimitAndTokenCounts(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		usage     Usage
		wantErr   bool
		wantUsage func(body []byte, s *Server) int
	}{
		{"fits: estimated tokens reported", "short", Usage{}, false, func(b []byte, s *Server) int { return s.Tokens(b) }},
		{"fits: the step's usage wins", "short", Usage{Prompt: 7, Completion: 1}, false, func([]byte, *Server) int { return 7 }},
		{"too long: OpenAI's refusal", strings.Repeat("x", 2000), Usage{}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t, Step{Content: "ok", Usage: tt.usage}).WithContextLimit(300).CountTokens(3)
			r, err := ask(client(s, ""), tt.text)
			bodies := s.Bodies()
			if len(bodies) != 1 {
				t.Fatalf("recorded %d bodies, want 1", len(bodies))
			}
			if tt.wantErr {
				var apiErr *openai.APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("err = %v, want an API error", err)
				}
				if apiErr.HTTPStatusCode != http.StatusBadRequest || apiErr.Code != "context_length_exceeded" ||
					apiErr.Type != "invalid_request_error" || apiErr.Param == nil || *apiErr.Param != "messages" ||
					!strings.HasPrefix(apiErr.Message, "This model's maximum context length is 300 tokens. However, your messages resulted in ") {
					t.Errorf("error = %+v", apiErr)
				}
				// The refusal used up no step: the script still answers.
				if _, err := ask(client(s, ""), "short"); err != nil {
					t.Errorf("after a refusal: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.wantUsage(bodies[0], s); r.Usage.PromptTokens != want {
				t.Errorf("prompt tokens = %d, want %d", r.Usage.PromptTokens, want)
			}
			if got, want := s.Tokens(bodies[0]), (len(bodies[0])+2)/3; got != want {
				t.Errorf("Tokens = %d, want %d (3 bytes per token)", got, want)
			}
		})
	}
}
