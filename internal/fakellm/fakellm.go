// Package fakellm is an OpenAI-compatible chat-completions server for tests.
//
// It replays a scripted conversation (or asks a function for each answer),
// records every request it was sent, and answers in the wire format the real
// API uses, so production code built on go-openai runs unchanged against it.
// It owns nothing outside tests and must never be wired into the bot binary.
package fakellm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Default token usage reported for a step that sets none.
const (
	DefaultPromptTokens     = 100
	DefaultCompletionTokens = 20
)

// ToolCall is one function call the fake model makes. Its ID is generated.
type ToolCall struct {
	Name      string
	Arguments string // raw JSON text, sent verbatim (so it may be malformed on purpose)
}

// Usage is the token usage reported with a step.
type Usage struct {
	Prompt, Completion int
	// Cached is the part of Prompt reported served from the endpoint's
	// prompt cache (prompt_tokens_details.cached_tokens).
	Cached int
}

// Step is one scripted answer.
type Step struct {
	ToolCalls []ToolCall
	Content   string
	// Usage defaults to DefaultPromptTokens/DefaultCompletionTokens when zero.
	Usage Usage
	// Status, when non-zero, makes the answer an HTTP error with an
	// OpenAI-style error body; Content, if set, is its message.
	Status int
	// RawBody, when set, is sent verbatim, with Status or else 200: a
	// garbage answer, or an answer recorded in an endpoint's own wire
	// format (see Transcript).
	RawBody string
}

// Recorded is one HTTP request the server received, as it came: what a
// test checks the endpoint would have seen.
type Recorded struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
	Body         []byte
}

// Server is a running fake. URL ends in /v1 and is meant as a client BaseURL.
type Server struct {
	URL string

	t      testing.TB
	srv    *httptest.Server
	next   func(req openai.ChatCompletionRequest) (Step, bool)
	mu     sync.Mutex
	apiKey string
	azure  *azure // set by WithAzure
	reqs   []openai.ChatCompletionRequest
	http   []Recorded
	calls  int
	served int       // scripted answers given
	fails  []failure // answers owed before the script is asked again, in order
	bodies [][]byte  // raw request bodies, as received
	// contextLimit, when set, is the model's context in estimated tokens.
	contextLimit int
	// decodeArguments: refuse history whose tool-call arguments are not a
	// JSON object, as vLLM and Ollama do (DecodeArguments).
	decodeArguments bool
	// bytesPerToken, when set, makes the server report estimated prompt
	// tokens for steps that set no usage.
	bytesPerToken float64
	// latency is how long each chat completion takes (WithLatency).
	latency time.Duration
}

// DefaultBytesPerToken is the estimate of Tokens when CountTokens set none.
const DefaultBytesPerToken = 4.0

// failure is one HTTP error owed by FailNext.
type failure struct {
	status int
	header http.Header
}

// New starts a server that answers with steps in order. When the script runs
// out it answers 500 and reports the test as failed.
func New(t testing.TB, steps ...Step) *Server {
	t.Helper()
	i := 0 // guarded by Server.mu: next is only called with the lock held
	return start(t, func(openai.ChatCompletionRequest) (Step, bool) {
		if i >= len(steps) {
			return Step{}, false
		}
		s := steps[i]
		i++
		return s, true
	})
}

// Turn is how many answers the model already gave in req's conversation.
func Turn(req openai.ChatCompletionRequest) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleAssistant {
			n++
		}
	}
	return n
}

// NewByTurn starts a server whose answer depends only on how far the
// conversation got: steps[Turn(req)], and the last step past the end. A
// turn replayed after a crash, or resumed after a restart, gets the same
// answer again, which a plain script (one step per call) cannot give.
func NewByTurn(t testing.TB, steps ...Step) *Server {
	t.Helper()
	if len(steps) == 0 {
		t.Fatal("fakellm: NewByTurn needs at least one step")
	}
	return NewFunc(t, func(req openai.ChatCompletionRequest) Step { return steps[min(Turn(req), len(steps)-1)] })
}

// NewFunc starts a server that asks f for every answer. f is called with the
// server's lock held, so it needs no locking of its own, and must not call
// the Server's methods.
func NewFunc(t testing.TB, f func(req openai.ChatCompletionRequest) Step) *Server {
	t.Helper()
	return start(t, func(req openai.ChatCompletionRequest) (Step, bool) { return f(req), true })
}

func start(t testing.TB, next func(openai.ChatCompletionRequest) (Step, bool)) *Server {
	s := &Server{t: t, next: next}
	s.srv = httptest.NewServer(http.HandlerFunc(s.route))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// WithAPIKey makes the server require "Authorization: Bearer key" and answer
// 401 otherwise. It returns s for chaining after New.
func (s *Server) WithAPIKey(key string) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
	return s
}

// FailNext makes the next n requests (after any failures already queued)
// fail with status, an OpenAI-style error body and header (for instance
// Retry-After), as a rate limiter or an overloaded gateway in front of the
// model would. They are recorded like any request but do not use up a step
// of the script. It returns s for chaining.
func (s *Server) FailNext(n, status int, header http.Header) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fails = append(s.fails, failure{status: status, header: header.Clone()})
	}
	return s
}

// WithContextLimit makes the server refuse a request whose estimated size
// (Tokens) exceeds limit tokens as OpenAI refuses one longer than the
// model's context: HTTP 400 with code context_length_exceeded and the
// documented message. The refusal is recorded like any request but uses up
// no step of the script. It returns s for chaining.
func (s *Server) WithContextLimit(limit int) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.contextLimit = limit
	return s
}

// DecodeArguments makes the server decode the arguments of every tool call
// in the request's history into an object, as vLLM does before rendering
// its chat template (chat_utils._postprocess_messages) and Ollama does to
// fill its own message type, and refuse the request with HTTP 400 when one
// does not decode. It returns s for chaining.
func (s *Server) DecodeArguments() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decodeArguments = true
	return s
}

// CountTokens makes the server report, for a step that sets no usage, the
// request's estimated size as its prompt tokens, counting bytesPerToken
// bytes of the request body per token (DefaultBytesPerToken if 0), as a
// real endpoint reports what its tokenizer counted. It returns s for
// chaining.
func (s *Server) CountTokens(bytesPerToken float64) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytesPerToken = cmp.Or(bytesPerToken, DefaultBytesPerToken)
	return s
}

// WithLatency makes every chat completion take d before it is answered, as
// a real model's does. The wait is outside the server's lock, so calls in
// flight at once wait side by side, as at a real endpoint, rather than one
// after another: a step function that slept would hold the lock. It
// returns s for chaining.
func (s *Server) WithLatency(d time.Duration) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
	return s
}

// Tokens is the server's estimate of the prompt tokens of a request body.
func (s *Server) Tokens(body []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens(body)
}

func (s *Server) tokens(body []byte) int {
	return int(math.Ceil(float64(len(body)) / cmp.Or(s.bytesPerToken, DefaultBytesPerToken)))
}

// Bodies returns a copy of the raw body of every request received.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.bodies))
	for i, b := range s.bodies {
		out[i] = bytes.Clone(b)
	}
	return out
}

// HTTP returns a copy of every HTTP request received, routed or not, in
// order.
func (s *Server) HTTP() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.http...)
}

// Requests returns a copy of every chat-completion request received, as
// decoded.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.reqs...)
}

// Calls is the number of chat-completion requests received, answered or not.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// route records r and sends it on to handle when it is a chat-completion
// request at a path the endpoint serves: /v1/chat/completions and
// /chat/completions, or with WithAzure only Azure's deployment path.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "fakellm: request body: "+err.Error())
		return
	}
	s.mu.Lock()
	s.http = append(s.http, Recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
	az, latency := s.azure, s.latency
	s.mu.Unlock()
	if az != nil {
		if az.refuse(w, r) {
			return
		}
	} else if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions" {
		writeError(w, http.StatusNotFound, "fakellm: no route for "+r.Method+" "+r.URL.Path)
		return
	}
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return // the client gave up; nobody reads an answer
		}
	}
	s.handle(w, r, body)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "fakellm: method "+r.Method+" not allowed")
		return
	}
	var req openai.ChatCompletionRequest
	decodeErr := json.Unmarshal(body, &req)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if decodeErr != nil {
		s.t.Errorf("fakellm: undecodable request: %v", decodeErr)
		writeError(w, http.StatusBadRequest, "fakellm: undecodable request: "+decodeErr.Error())
		return
	}
	s.reqs = append(s.reqs, req)
	s.bodies = append(s.bodies, body)

	if s.apiKey != "" && s.azure == nil && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.")
		return
	}

	if len(s.fails) > 0 {
		f := s.fails[0]
		s.fails = s.fails[1:]
		for k, vs := range f.header {
			w.Header()[k] = vs
		}
		writeError(w, f.status, http.StatusText(f.status))
		return
	}

	if s.decodeArguments {
		for _, m := range req.Messages {
			for _, tc := range m.ToolCalls {
				var args map[string]any
				if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
					writeAPIError(w, http.StatusBadRequest, map[string]any{
						"message": fmt.Sprintf("the arguments of tool call %s cannot be decoded: %v", tc.ID, err),
						"type":    "BadRequestError",
						"code":    http.StatusBadRequest,
					})
					return
				}
			}
		}
	}

	if n := s.tokens(body); s.contextLimit > 0 && n > s.contextLimit {
		writeAPIError(w, http.StatusBadRequest, map[string]any{
			"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in "+
				"%d tokens. Please reduce the length of the messages.", s.contextLimit, n),
			"type":  "invalid_request_error",
			"param": "messages",
			"code":  "context_length_exceeded",
		})
		return
	}

	step, ok := s.next(req)
	if !ok {
		msg := fmt.Sprintf("fakellm: script exhausted after %d steps", s.served)
		s.t.Errorf("%s", msg)
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	s.served++
	switch {
	case step.RawBody != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(cmp.Or(step.Status, http.StatusOK))
		_, _ = w.Write([]byte(step.RawBody))
	case step.Status != 0:
		msg := step.Content
		if msg == "" {
			msg = http.StatusText(step.Status)
		}
		writeError(w, step.Status, msg)
	default:
		w.Header().Set("Content-Type", "application/json")
		resp := s.response(req, step)
		if step.Usage == (Usage{}) && s.bytesPerToken > 0 {
			resp.Usage.PromptTokens = s.tokens(body)
			resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
		}
		_ = json.NewEncoder(w).Encode(resp)
	}
}

// response builds the answer for call number s.calls.
func (s *Server) response(req openai.ChatCompletionRequest, step Step) openai.ChatCompletionResponse {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: step.Content}
	for i, tc := range step.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
			ID:       fmt.Sprintf("call_%d_%d", s.calls, i+1),
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	finish := openai.FinishReasonStop
	if len(msg.ToolCalls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	u := step.Usage
	if u == (Usage{}) {
		u = Usage{Prompt: DefaultPromptTokens, Completion: DefaultCompletionTokens}
	}
	var details *openai.PromptTokensDetails
	if u.Cached > 0 {
		details = &openai.PromptTokensDetails{CachedTokens: u.Cached}
	}
	return openai.ChatCompletionResponse{
		ID:      fmt.Sprintf("chatcmpl-fake-%d", s.calls),
		Object:  "chat.completion",
		Created: 1700000000, // fixed: tests must not depend on the clock
		Model:   req.Model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage: openai.Usage{
			PromptTokens:        u.Prompt,
			CompletionTokens:    u.Completion,
			TotalTokens:         u.Prompt + u.Completion,
			PromptTokensDetails: details,
		},
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status >= 500:
		typ = "server_error"
	}
	writeAPIError(w, status, map[string]any{
		"message": msg,
		"type":    typ,
		"param":   nil,
		"code":    strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_"),
	})
}

// writeAPIError answers with OpenAI's error envelope around e.
func writeAPIError(w http.ResponseWriter, status int, e map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}
