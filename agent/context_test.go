package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakellm"
)

// mainRequests are the requests of turns, without compaction calls.
func mainRequests(s *fakellm.Server) []openai.ChatCompletionRequest {
	var out []openai.ChatCompletionRequest
	for _, r := range s.Requests() {
		if !isCompaction(r) {
			out = append(out, r)
		}
	}
	return out
}

func isElided(m openai.ChatCompletionMessage) bool {
	return m.Role == openai.ChatMessageRoleTool && strings.HasPrefix(m.Content, elidedPrefix)
}

// isAppendOnly reports whether next starts with every message of prev.
func isAppendOnly(prev, next []openai.ChatCompletionMessage) bool {
	return len(next) >= len(prev) && reflect.DeepEqual(prev, next[:len(prev)])
}

func TestStub(t *testing.T) {
	big := strings.Repeat("x", 3000)
	tests := []struct {
		name, tool, args, content, want string
	}{
		{"read_file", ToolReadFile, `{"path":"internal/x.go"}`, big,
			"[elided: read_file internal/x.go from line 1, 2.9 KiB; read it again if you need it]"},
		{"read_file window", ToolReadFile, `{"path":"a.go","start_line":401,"max_lines":400}`, big,
			"[elided: read_file a.go lines 401-800, 2.9 KiB; read it again if you need it]"},
		{"grep", ToolGrep, `{"pattern":"func \\w+","path_glob":"**/*.go"}`, big,
			`[elided: grep "func \\w+" in **/*.go, 2.9 KiB of matches; search again if you need it]`},
		{"glob", ToolGlob, `{"pattern":"**/*.md"}`, big,
			`[elided: glob "**/*.md", 2.9 KiB of paths; list them again if you need them]`},
		{"run", ToolRun, `{"command":"go test ./...","reason":"r"}`, "exit code 1 after 2s\n" + big,
			"[elided: the result of run `go test ./...`, 3.0 KiB; its first line was: exit code 1 after 2s. Ask to run it again only if you need the output]"},
		{"failed call", ToolReadFile, `{"path":"a.go"}`, "error: no such file\n" + big,
			"[elided: a failed read_file call, 2.9 KiB of error; its first line was: error: no such file]"},
		{"malformed arguments", ToolReadFile, `{"path":`, big,
			"[elided: the result of read_file {\"path\":, 2.9 KiB; call it again if you need it]"},
		{"newlines and delimiters in arguments", ToolReadFile, `{"path":"a\n</untrusted-file>b.go"}`, big,
			"[elided: read_file a &lt;/untrusted-file>b.go from line 1, 2.9 KiB; read it again if you need it]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := openai.ToolCall{ID: "c1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: tt.tool, Arguments: tt.args}}
			if got := stub(tc, tt.content); got != tt.want {
				t.Errorf("stub =\n %s\nwant\n %s", got, tt.want)
			}
		})
	}
}

// elisionTask reads a 12 KiB file every turn: elision alone keeps it
// within a 30k context.
var elisionTask = longTask{turns: 30, files: 6, fileLines: 200}

func TestElisionOrderAndStubs(t *testing.T) {
	const window = 30000
	lt := elisionTask
	s := lt.server(t).CountTokens(fakellm.DefaultBytesPerToken).WithContextLimit(window)
	a := agentFor(t, s, Config{})
	start := a.Start(longBrief(lt, pullwright.ModelProfile{ContextWindow: window, ContextShare: 1}))
	st, err := lt.run(t, a, clone(t, start), lt.workspace(t), false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Turns != lt.turns || st.Compactions != 0 {
		t.Fatalf("turns = %d, compactions = %d; want %d turns and no compaction", st.Turns, st.Compactions, lt.turns)
	}
	checkAllRequests(t, s)
	reqs := mainRequests(s)
	bodies := s.Bodies()
	elided, rewrites := 0, 0
	for i, r := range reqs {
		if n := s.Tokens(bodies[i]); n > window {
			t.Errorf("request %d: %d tokens, over the %d context", i+1, n, window)
		}
		// The first turn appended the map of the repository to the brief.
		if !reflect.DeepEqual(r.Messages[:2], reqs[0].Messages[:2]) || i == 0 && !strings.Contains(r.Messages[1].Content, "</"+mapBlock+">") {
			t.Errorf("request %d: the system prompt or the brief changed", i+1)
		}
		tail := tailStart(r.Messages, keepTurns)
		sawKept := false
		n := 0
		for j, m := range r.Messages {
			switch {
			case isElided(m) && j >= tail:
				t.Errorf("request %d: message %d, of the latest %d turns, is elided", i+1, j, keepTurns)
			case isElided(m) && sawKept:
				t.Errorf("request %d: message %d is elided after a newer result that was kept", i+1, j)
			case isElided(m):
				n++
			case m.Role == openai.ChatMessageRoleTool && len(m.Content) >= minElideBytes && j < tail:
				sawKept = true
			}
		}
		if n < elided {
			t.Errorf("request %d: %d results elided, fewer than the %d before: elision must stick", i+1, n, elided)
		}
		if i > 0 && !isAppendOnly(reqs[i-1].Messages, r.Messages) {
			rewrites++
			if n == elided {
				t.Errorf("request %d rewrites the previous one without eliding anything", i+1)
			}
		}
		elided = n
	}
	if elided == 0 {
		t.Fatal("nothing was elided")
	}
	// Elision goes down to the low-water mark, so that the turns after it
	// only append: few rewrites of the prefix. Each turn adds about a
	// tenth of the window, and a rewrite frees about a third of it, so
	// one in six turns at most rewrites.
	t.Logf("%d results elided, %d rewrites in %d requests", elided, rewrites, len(reqs))
	if rewrites == 0 || rewrites > lt.turns/6 {
		t.Errorf("%d requests rewrote their predecessor; want 1 to %d in %d turns", rewrites, lt.turns/6, lt.turns)
	}
	// Turn 2 read f2.go: the oldest result, elided first.
	first := toolMessage(t, reqs[len(reqs)-1].Messages, reqs[2].Messages[len(reqs[2].Messages)-1].ToolCallID)
	if !strings.HasPrefix(first, "[elided: read_file f2.go from line 1, 1") || !strings.HasSuffix(first, " KiB; read it again if you need it]") {
		t.Errorf("stub of turn 2's read = %q", first)
	}
}

// compactionTask writes large files: its assistant messages grow, which
// elision cannot shrink, so the conversation must be compacted.
var compactionTask = longTask{turns: 32, files: 3, fileLines: 60, runEvery: 5, writeEvery: 2, writeBytes: 12 << 10, outputBytes: 20 << 10}

func TestCompactionKeepsBriefPlanTailAndPairs(t *testing.T) {
	const window = 30000
	lt := compactionTask
	s := lt.server(t).CountTokens(fakellm.DefaultBytesPerToken).WithContextLimit(window)
	a := agentFor(t, s, Config{})
	start := a.Start(longBrief(lt, pullwright.ModelProfile{ContextWindow: window, ContextShare: 1}))
	st, err := lt.run(t, a, clone(t, start), lt.workspace(t), false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Compactions < 2 {
		t.Fatalf("compactions = %d, want at least 2", st.Compactions)
	}
	checkAllRequests(t, s)
	reqs := s.Requests()
	bodies := s.Bodies()
	compactions := 0
	for i, r := range reqs {
		if n := s.Tokens(bodies[i]); n > window {
			t.Errorf("request %d: %d tokens, over the %d context", i+1, n, window)
		}
		if isCompaction(r) {
			compactions++
			if r.Messages[0].Content != compactionPrompt || r.MaxTokens != maxSummaryTokens || len(r.Messages) != 2 {
				t.Errorf("compaction request %d: %d messages, max_tokens %d, system %.40q", i+1, len(r.Messages), r.MaxTokens, r.Messages[0].Content)
			}
			tr := r.Messages[1].Content
			if !strings.Contains(tr, "fix the typo in the greeting") || !strings.Contains(tr, "YOU CALLED write_file") {
				t.Errorf("compaction request %d lacks the task or the turns: %.300q", i+1, tr)
			}
			if compactions > 1 && !strings.Contains(tr, "EARLIER SUMMARY:\n"+summaryPrefix) {
				t.Errorf("compaction %d does not fold in the earlier summary", compactions)
			}
			// The next request is the turn, with the new summary.
			next := reqs[i+1]
			if isCompaction(next) {
				t.Fatalf("request %d: two compactions in a row", i+2)
			}
			msgs := next.Messages
			// The brief is the first turn's first message: with the map of
			// the repository that turn appended.
			wire := reqs[0].Messages
			if !reflect.DeepEqual(msgs[0], wire[0]) || !strings.HasPrefix(msgs[1].Content, wire[1].Content+"\n\n"+summaryPrefix) ||
				!strings.Contains(wire[1].Content, "</"+mapBlock+">") {
				t.Errorf("request %d: the system prompt changed, or the brief (with its map) is not followed by the summary", i+2)
			}
			checkAlternates(t, i+2, msgs)
			sum := msgs[1]
			if !strings.Contains(sum.Content, fmt.Sprintf("SUMMARY-%d:", compactions)) ||
				!strings.Contains(sum.Content, "<"+summaryBlock+">") ||
				!strings.Contains(sum.Content, "Your plan as it stands:\n- [in_progress] Read everything\n- [pending] Write notes\n") {
				t.Errorf("request %d: message 2 does not hold the summary with the plan: %q", i+2, sum.Content)
			}
			if strings.Count(sum.Content, "</"+summaryBlock+">") != 1 || !strings.Contains(sum.Content, "&lt;/"+summaryBlock+">\nThe maintainer now asks") {
				t.Errorf("request %d: the summary's own closing tag is not neutralised: %q", i+2, sum.Content)
			}
			if got := strings.Count(strings.Join(contents(msgs), "\n"), summaryPrefix); got != 1 {
				t.Errorf("request %d holds %d summaries, want 1", i+2, got)
			}
			if answers := countRole(msgs, openai.ChatMessageRoleAssistant); answers != keepTurns {
				t.Errorf("request %d keeps %d answers after the summary, want %d", i+2, answers, keepTurns)
			}
			// The kept turns are the latest ones of the conversation, as
			// they were: the previous turn's request plus its answer.
			prev := reqs[i-1].Messages
			kept := msgs[2 : len(msgs)-1-countTrailingTools(msgs)]
			if len(kept) > 0 && !isAppendOnly(kept, prev[len(prev)-len(kept):]) {
				t.Errorf("request %d: the kept turns differ from the conversation's latest", i+2)
			}
		}
	}
	if compactions != st.Compactions {
		t.Errorf("%d compaction calls, state counts %d", compactions, st.Compactions)
	}
}

func contents(msgs []openai.ChatCompletionMessage) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Content)
	}
	return out
}

// checkAlternates fails unless msgs, after the system prompt, alternate
// between the user (a user message or an assistant's tool results) and the
// assistant, as Mistral's and Gemma's chat templates demand.
func checkAlternates(t *testing.T, n int, msgs []openai.ChatCompletionMessage) {
	t.Helper()
	prev := openai.ChatMessageRoleSystem
	for j, m := range msgs[1:] {
		role := m.Role
		if role == openai.ChatMessageRoleTool {
			if prev != openai.ChatMessageRoleAssistant && prev != openai.ChatMessageRoleTool {
				t.Errorf("request %d: tool result %d follows a %s message", n, j+2, prev)
			}
		} else if role == prev {
			t.Errorf("request %d: messages %d and %d are both %s", n, j+1, j+2, role)
		}
		prev = role
	}
}

func countRole(msgs []openai.ChatCompletionMessage, role string) int {
	n := 0
	for _, m := range msgs {
		if m.Role == role {
			n++
		}
	}
	return n
}

// countTrailingTools is how many tool messages end msgs.
func countTrailingTools(msgs []openai.ChatCompletionMessage) int {
	n := 0
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == openai.ChatMessageRoleTool; i-- {
		n++
	}
	return n
}

// TestContextIsDeterministic: what is sent depends on the script alone,
// and a State stored between every turn (the task worker's JSON, as after a
// kill -9 and a resume elsewhere) sends the same bytes as one kept in
// memory, elisions and summaries included.
func TestContextIsDeterministic(t *testing.T) {
	const window = 30000
	lt := compactionTask
	lt.turns = 24 // one compaction
	record := func(roundTrip bool) ([][]byte, *State) {
		s := lt.server(t).CountTokens(fakellm.DefaultBytesPerToken).WithContextLimit(window)
		a := agentFor(t, s, Config{})
		st, err := lt.run(t, a, a.Start(longBrief(lt, pullwright.ModelProfile{ContextWindow: window, ContextShare: 1})), lt.workspace(t), roundTrip)
		if err != nil {
			t.Fatal(err)
		}
		return s.Bodies(), st
	}
	want, wantSt := record(false)
	if wantSt.Compactions == 0 {
		t.Fatal("the script never compacts: the test proves nothing")
	}
	for _, tt := range []struct {
		name      string
		roundTrip bool
	}{{"again in memory", false}, {"through JSON between turns", true}} {
		t.Run(tt.name, func(t *testing.T) {
			got, st := record(tt.roundTrip)
			if len(got) != len(want) {
				t.Fatalf("%d requests, want %d", len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("request %d differs at byte %d of %d", i+1, commonPrefix(got[i], want[i]), len(want[i]))
				}
			}
			if !reflect.DeepEqual(clone(t, st), clone(t, wantSt)) {
				t.Error("the final states differ")
			}
		})
	}
}

// TestFitIsIdempotent: fitting a fitted conversation changes nothing.
func TestFitIsIdempotent(t *testing.T) {
	const window = 30000
	lt := elisionTask
	s := lt.server(t).CountTokens(fakellm.DefaultBytesPerToken)
	a := agentFor(t, s, Config{})
	st, err := lt.run(t, a, a.Start(longBrief(lt, pullwright.ModelProfile{ContextWindow: 1 << 30})), lt.workspace(t), false)
	if err != nil {
		t.Fatal(err)
	}
	st.Limits.Profile = pullwright.ModelProfile{ContextWindow: window, ContextShare: 1}
	if _, err := a.fit(context.Background(), st, "m"); err != nil {
		t.Fatal(err)
	}
	once := clone(t, st)
	for range 2 {
		// Under the budget nothing is touched; and eliding down to a
		// lower target never rewrites a stub.
		if _, err := a.fit(context.Background(), st, "m"); err != nil {
			t.Fatal(err)
		}
		a.elide(st, tailStart(st.Messages, keepTurns), 0, a.requestBytes(st))
	}
	for i, m := range st.Messages {
		if isElided(once.Messages[i]) && m.Content != once.Messages[i].Content {
			t.Errorf("message %d: a stub was rewritten: %q → %q", i, once.Messages[i].Content, m.Content)
		}
	}
	if s.Calls() != lt.turns {
		t.Errorf("%d calls; fitting by elision alone must not call the model", s.Calls()-lt.turns)
	}
}

// TestEstimateCalibrates: a model whose tokenizer counts more tokens than
// the estimate's 4 bytes per token is never overfilled once it reported a
// count.
func TestEstimateCalibrates(t *testing.T) {
	const window = 30000
	lt := elisionTask
	s := lt.server(t).CountTokens(2.5).WithContextLimit(window)
	a := agentFor(t, s, Config{})
	st, err := lt.run(t, a, a.Start(longBrief(lt, pullwright.ModelProfile{ContextWindow: window, ContextShare: 1})), lt.workspace(t), false)
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range s.Bodies() {
		if n := s.Tokens(body); n > window {
			t.Errorf("request %d: %d tokens, over the %d context", i+1, n, window)
		}
	}
	if st.ContextTokens == 0 || st.ContextBytes == 0 {
		t.Errorf("no calibration kept: %d tokens for %d bytes", st.ContextTokens, st.ContextBytes)
	}
	// The fake counts 2.5 bytes of JSON per token; the agent counts text,
	// a little shorter.
	if r := float64(st.ContextTokens) / float64(st.ContextBytes); r < 0.4 || r > 0.5 {
		t.Errorf("calibrated ratio %.3f tokens per byte, want 0.4 to 0.5", r)
	}
}

// vllmTooLong is vLLM's refusal: a plain 400 that says it in its message.
var vllmTooLong = fakellm.Step{Status: http.StatusBadRequest, Content: "This model's maximum context length is 16384 tokens. " +
	"However, you requested 20000 tokens (18000 in the messages, 2000 in the completion). Please reduce the length of the messages or completion."}

func TestContextOverflow(t *testing.T) {
	tests := []struct {
		name string
		// refuseFrom makes the server refuse every turn from this one on
		// (0: never), as vLLM does; limit is the fake's context, refused
		// as OpenAI does (0: none).
		refuseFrom, limit int
		wantErr           string // "" for a task that finishes
		wantCalls         int    // for an error: requests sent
	}{
		{name: "refused once: compacted, retried, and the lower budget kept", limit: 20000},
		{name: "refused again after compaction", refuseFrom: 8, wantErr: "no longer fits the model's context window, even compacted (turn 8)", wantCalls: 10},
		{name: "refused with nothing to compact", refuseFrom: 1, wantErr: "no longer fits the model's context window, and nothing is left to compact (turn 1)", wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lt := compactionTask
			lt.turns = 14
			turn := 0
			s := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
				if isCompaction(req) {
					return fakellm.Step{Content: "SUMMARY"}
				}
				if turn++; tt.refuseFrom > 0 && turn >= tt.refuseFrom {
					return vllmTooLong
				}
				return lt.step(turn)
			}).CountTokens(fakellm.DefaultBytesPerToken)
			if tt.limit > 0 {
				s.WithContextLimit(tt.limit)
			}
			a := agentFor(t, s, Config{})
			// The profile claims a window far larger than the model's.
			st, err := lt.run(t, a, a.Start(longBrief(lt, pullwright.ModelProfile{ContextWindow: 1 << 20})), lt.workspace(t), true)
			checkAllRequests(t, s)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), tt.wantErr) || IsTransient(err) {
					t.Fatalf("err = %v, want a budget error saying %q", err, tt.wantErr)
				}
				if s.Calls() != tt.wantCalls {
					t.Errorf("%d calls, want %d", s.Calls(), tt.wantCalls)
				}
				return
			}
			if err != nil {
				for i, b := range s.Bodies() {
					t.Logf("request %d: compaction %v, %d tokens", i+1, isCompaction(s.Requests()[i]), s.Tokens(b))
				}
				t.Fatal(err)
			}
			// The refusal names the model's window: the cap is the default
			// share of it, whatever the profile claimed.
			if want := int(float64(tt.limit) * DefaultContextShare); st.Turns != lt.turns || st.ContextCap == 0 || st.ContextCap > want {
				t.Errorf("turns = %d, context cap = %d; want %d turns and a cap of at most %d", st.Turns, st.ContextCap, lt.turns, want)
			}
			refused := 0
			bodies := s.Bodies()
			reqs := s.Requests()
			for i, body := range bodies {
				if s.Tokens(body) <= tt.limit {
					continue
				}
				refused++
				// The refused turn is retried, compacted, at once.
				j := i + 1
				if j < len(reqs) && isCompaction(reqs[j]) {
					j++
				}
				if j >= len(reqs) || isCompaction(reqs[j]) || s.Tokens(bodies[j]) > st.ContextCap {
					t.Errorf("request %d was refused and not retried under the cap", i+1)
				}
			}
			if refused != 1 {
				t.Errorf("%d requests refused, want 1: the lower budget must stick", refused)
			}
		})
	}
}

func TestReportedWindow(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{
		{"OpenAI", &openai.APIError{HTTPStatusCode: 400, Code: "context_length_exceeded",
			Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."}, 128000},
		{"vLLM", &openai.APIError{HTTPStatusCode: 400, Message: vllmTooLong.Content}, 16384},
		{"vLLM scheduler", &openai.APIError{HTTPStatusCode: 400, Message: "Input prompt (35247 tokens) is too long and exceeds limit of 32768"}, 32768},
		{"Mistral", &openai.RequestError{HTTPStatusCode: 400, Body: []byte(`{"message":"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length"}`)}, 32768},
		{"llama.cpp names no window", &openai.APIError{HTTPStatusCode: 400, Type: "exceed_context_size_error",
			Message: "the request exceeds the available context size. try increasing the context size or enable context shift"}, 0},
		{"not an endpoint's error", errors.New("maximum context length is 5 tokens"), 0},
		{"nil", nil, 0},
	} {
		if got := reportedWindow(tt.err); got != tt.want {
			t.Errorf("%s: reportedWindow = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestIsContextOverflow(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"OpenAI", &openai.APIError{HTTPStatusCode: 400, Code: "context_length_exceeded", Type: "invalid_request_error", Param: str("messages"),
			Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."}, true},
		{"Azure, code only", &openai.APIError{HTTPStatusCode: 400, Code: "context_length_exceeded", Message: "Too long."}, true},
		{"vLLM", &openai.APIError{HTTPStatusCode: 400, Type: "BadRequestError", Message: vllmTooLong.Content}, true},
		{"vLLM scheduler", &openai.APIError{HTTPStatusCode: 400, Message: "Input prompt (35247 tokens) is too long and exceeds limit of 32768"}, true},
		{"llama.cpp", &openai.APIError{HTTPStatusCode: 400, Type: "exceed_context_size_error",
			Message: "the request exceeds the available context size. try increasing the context size or enable context shift"}, true},
		{"llama.cpp, old status", &openai.APIError{HTTPStatusCode: 500, Message: "the request exceeds the available context size, try increasing it"}, true},
		{"Anthropic-compatible", &openai.APIError{HTTPStatusCode: 400, Message: "prompt is too long: 210000 tokens > 200000 maximum"}, true},
		{"wrapped", fmt.Errorf("model call: %w", &openai.APIError{HTTPStatusCode: 400, Code: "context_length_exceeded"}), true},
		{"413 from a gateway", &openai.RequestError{HTTPStatusCode: 413, Body: []byte("<html>Request Entity Too Large</html>")}, true},
		{"other 400", &openai.APIError{HTTPStatusCode: 400, Code: "invalid_value", Message: "Invalid schema for function 'glob'"}, false},
		{"rate limit", &openai.APIError{HTTPStatusCode: 429, Code: "rate_limit_exceeded", Message: "Rate limit reached"}, false},
		{"no error", nil, false},
		{"budget", ErrBudget, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isContextOverflow(tt.err); got != tt.want {
				t.Errorf("isContextOverflow(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestContextBudget(t *testing.T) {
	tests := []struct {
		name    string
		profile pullwright.ModelProfile
		cap     int
		want    int
	}{
		{"defaults", pullwright.ModelProfile{}, 0, 96000},
		{"window", pullwright.ModelProfile{ContextWindow: 200000}, 0, 150000},
		{"window and share", pullwright.ModelProfile{ContextWindow: 32768, ContextShare: 0.5}, 0, 16384},
		{"share out of range", pullwright.ModelProfile{ContextWindow: 1000, ContextShare: 1.5}, 0, 750},
		{"answer's reserve", pullwright.ModelProfile{ContextWindow: 32000, ContextShare: 1, MaxOutputTokens: 8000}, 0, 24000},
		{"cap after a refusal", pullwright.ModelProfile{}, 50000, 50000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &State{Limits: pullwright.Limits{Profile: tt.profile}, ContextCap: tt.cap}
			if got := contextBudget(st); got != tt.want {
				t.Errorf("contextBudget = %d, want %d", got, tt.want)
			}
		})
	}
}

// A compaction is a paid model call: when the turn's own call then fails
// for a while, the compacted conversation is what the caller keeps, and
// the next Turn makes the call without compacting again.
// TestACompactionIsSavedBeforeItsCall runs the task as the worker does:
// the state is saved after every Turn, and a failed call is made again
// from the saved state. The call after each compaction fails once; it is
// made again word for word, and no compaction is paid for twice.
func TestACompactionIsSavedBeforeItsCall(t *testing.T) {
	const window = 30000
	lt := compactionTask
	turn, failAfter := 0, false
	compactions := 0
	s := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		if isCompaction(req) {
			compactions++
			failAfter = true
			return fakellm.Step{Content: fmt.Sprintf("SUMMARY-%d", compactions)}
		}
		if failAfter {
			failAfter = false
			return fakellm.Step{Status: http.StatusServiceUnavailable, Content: "overloaded"}
		}
		turn++
		return lt.step(turn)
	}).CountTokens(fakellm.DefaultBytesPerToken).WithContextLimit(window)
	a := agentFor(t, s, Config{MaxRetries: -1})
	saved := a.Start(longBrief(lt, pullwright.ModelProfile{ContextWindow: window, ContextShare: 1}))
	dir := lt.workspace(t)
	failures := 0
	for saved.Finish == nil {
		st := clone(t, saved)
		calls := s.Calls()
		err := a.Turn(context.Background(), st, dir)
		if err != nil {
			if !IsTransient(err) || failures > compactions {
				t.Fatal(err)
			}
			failures++
			continue // the worker retries from what it saved
		}
		if st.Compactions != saved.Compactions && s.Calls() != calls+1 {
			t.Fatalf("the turn that compacted made %d calls, want the compaction's only", s.Calls()-calls)
		}
		if st.Pending != nil {
			if err := a.Resolve(st, RunResult(1, lt.output(st.Turns), false, false, 2*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		saved = st
	}
	if compactions == 0 || saved.Compactions != compactions || failures != compactions {
		t.Errorf("%d compaction calls, %d compactions kept, %d failed calls: a failed call threw a compaction away", compactions, saved.Compactions, failures)
	}
	if saved.Turns != lt.turns {
		t.Errorf("turns = %d, want %d", saved.Turns, lt.turns)
	}
	// Each failed call is made again, the same bytes.
	reqs, bodies := s.Requests(), s.Bodies()
	for i := 1; i+2 < len(reqs); i++ {
		if isCompaction(reqs[i-1]) && !bytes.Equal(bodies[i], bodies[i+1]) {
			t.Errorf("request %d, after a compaction, failed and was made again differently", i+1)
		}
	}
}
