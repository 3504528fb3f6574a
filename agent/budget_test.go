package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakellm"
)

// lastContent is the content of a request's last message: where the
// budget note goes.
func lastContent(req openai.ChatCompletionRequest) string {
	return req.Messages[len(req.Messages)-1].Content
}

func toolNamesOf(req openai.ChatCompletionRequest) []string {
	var out []string
	for _, d := range req.Tools {
		out = append(out, d.Function.Name)
	}
	return out
}

// TestBudgetNotes drives a model that never finishes until its budget
// ends, and reads each request as the server got it: no note while the
// budget is high, a note at the end of the last tool result once it runs
// low, the turn before last saying so, and the last offering only finish.
func TestBudgetNotes(t *testing.T) {
	// Each turn of the fake uses 100+20 tokens.
	tests := []struct {
		name   string
		limits pullwright.Limits
		turns  int
		// notes[i] is a part of request i's last message ("" for none).
		notes []string
	}{
		{"turns", pullwright.Limits{MaxTurns: 6}, 6, []string{
			"",
			"[budget: 5 of 6 turns left; 3,999,880 of 4,000,000 tokens left. Wrap up: finish the change you are making, check it, and call finish with what is done and what is left.]",
			"[budget: 4 of 6 turns left;",
			"[budget: 3 of 6 turns left;",
			"[budget: 2 of 6 turns left; 3,999,520 of 4,000,000 tokens left. This is the turn before last: the next turn can only call finish",
			"[budget: 1 of 6 turns left; 3,999,400 of 4,000,000 tokens left. This is your last turn, so only finish is offered",
		}},
		{"tokens", pullwright.Limits{MaxTokens: 1000}, 9, []string{
			"", "", "", "", "", "", "",
			"[budget: 33 of 40 turns left; 160 of 1,000 tokens left (about 2 turns at the rate so far). This is the turn before last",
			"[budget: 32 of 40 turns left; 40 of 1,000 tokens left (about 1 turn at the rate so far). This is your last turn",
		}},
		{"cost", pullwright.Limits{MaxCostUSD: 1, PriceInput: 1000, PriceOutput: 1000}, 9, []string{
			"", "", "", "", "", "", "",
			"$0.160 of $1.00 left (about 2 turns at the rate so far). This is the turn before last",
			"$0.040 of $1.00 left (about 1 turn at the rate so far). This is your last turn",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakellm.NewByTurn(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("think", `{"thought":"not done yet"}`)}})
			a := agentFor(t, s, Config{})
			brief := testBrief
			brief.Limits = tt.limits
			st := a.Start(brief)
			dir := workspaceDir(t, nil)
			for i := range tt.turns {
				if err := a.Turn(context.Background(), st, dir); err != nil {
					t.Fatalf("turn %d: %v", i+1, err)
				}
			}
			if err := a.Turn(context.Background(), st, dir); !errors.Is(err, ErrBudget) {
				t.Fatalf("turn %d: err = %v, want ErrBudget", tt.turns+1, err)
			}
			reqs := s.Requests()
			if len(reqs) != tt.turns {
				t.Fatalf("%d requests, want %d", len(reqs), tt.turns)
			}
			for i, req := range reqs {
				got := lastContent(req)
				switch want := tt.notes[i]; {
				case want == "" && strings.Contains(got, "[budget:"):
					t.Errorf("request %d has a budget note: %q", i+1, got)
				case want != "" && !strings.Contains(got, want):
					t.Errorf("request %d's last message = %q, want it to hold %q", i+1, got, want)
				case strings.Count(got, "[budget:") > 1:
					t.Errorf("request %d has %d budget notes", i+1, strings.Count(got, "[budget:"))
				}
				if want := tt.notes[i]; want != "" && req.Messages[len(req.Messages)-1].Role != openai.ChatMessageRoleTool {
					t.Errorf("request %d: the note is in a %s message, want the tool result", i+1, req.Messages[len(req.Messages)-1].Role)
				}
				names := toolNamesOf(req)
				last := i == len(reqs)-1
				if last && (len(names) != 1 || names[0] != ToolFinish) {
					t.Errorf("the last request offers %v, want only finish", names)
				}
				if !last && len(names) < 2 {
					t.Errorf("request %d offers %v, want every tool", i+1, names)
				}
			}
		})
	}
}

// TestLastTurn: on the last turn a finish is kept and marked as out of
// budget; any other call is not run, and a model that does not finish
// leaves the task to end with ErrBudget, without a crash.
func TestLastTurn(t *testing.T) {
	tests := []struct {
		name       string
		last       fakellm.Step
		wantFinish string // Finish.OutOfBudget; "" for no finish
		wantResult string
	}{
		{"finish", fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", `{"title":"Fix greeting","summary":"Half done: a.txt fixed, b.txt left."}`)}}, "turns: 2 of 2 used", ""},
		{"write instead", fakellm.Step{ToolCalls: []fakellm.ToolCall{call("write_file", `{"path":"late.txt","content":"x"}`)}}, "", lastTurnRefused},
		{"run and finish", fakellm.Step{ToolCalls: []fakellm.ToolCall{
			call("run", `{"command":"go test ./...","reason":"check"}`),
			call("finish", `{"title":"Fix greeting","summary":"Done."}`),
		}}, "turns: 2 of 2 used", lastTurnRefused},
		{"text", fakellm.Step{Content: "I would like more turns."}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakellm.NewByTurn(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("think", `{"thought":"first"}`)}}, tt.last)
			a := agentFor(t, s, Config{MaxTurns: 2})
			st := a.Start(testBrief)
			dir := workspaceDir(t, nil)
			for i := range 2 {
				if err := a.Turn(context.Background(), st, dir); err != nil {
					t.Fatalf("turn %d: %v", i+1, err)
				}
			}
			if st.Pending != nil {
				t.Errorf("the last turn left a pending request: %+v", st.Pending)
			}
			if readDiskMaybe(dir, "late.txt") {
				t.Error("the last turn wrote a file")
			}
			switch {
			case tt.wantFinish == "" && st.Finish != nil:
				t.Errorf("finish = %+v, want none", st.Finish)
			case tt.wantFinish != "" && (st.Finish == nil || st.Finish.OutOfBudget != tt.wantFinish):
				t.Errorf("finish = %+v, want one out of budget (%s)", st.Finish, tt.wantFinish)
			}
			if tt.wantResult != "" && !containsValue(toolMessages(st.Messages), tt.wantResult) {
				t.Errorf("no tool result says %q: %v", tt.wantResult, toolMessages(st.Messages))
			}
			if st.Finish == nil {
				if err := a.Turn(context.Background(), st, dir); !errors.Is(err, ErrBudget) {
					t.Errorf("turn 3: err = %v, want ErrBudget", err)
				}
			}
		})
	}
}

// TestBudgetNoteAfterRetry: a turn whose call failed and is made again
// carries one note, not two.
func TestBudgetNoteAfterRetry(t *testing.T) {
	s := fakellm.NewByTurn(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("think", `{"thought":"x"}`)}})
	a := agentFor(t, s, Config{MaxTurns: 4, MaxRetries: -1})
	st := a.Start(testBrief)
	dir := workspaceDir(t, nil)
	if err := a.Turn(context.Background(), st, dir); err != nil {
		t.Fatal(err)
	}
	s.FailNext(1, 500, nil)
	if err := a.Turn(context.Background(), st, dir); err == nil || !IsTransient(err) {
		t.Fatalf("turn 2: err = %v, want a transient failure", err)
	}
	if err := a.Turn(context.Background(), st, dir); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	got := lastContent(reqs[len(reqs)-1])
	if n := strings.Count(got, "[budget:"); n != 1 {
		t.Errorf("the retried turn's last message has %d notes: %q", n, got)
	}
}

// readDiskMaybe reports whether dir holds the file p.
func readDiskMaybe(dir, p string) bool {
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
	return err == nil
}
