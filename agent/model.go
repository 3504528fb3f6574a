package agent

import (
	"cmp"
	"encoding/json"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
)

// Values of pullwright.ModelProfile.TokenParameter and SystemRole.
const (
	tokenParamMaxTokens           = "max_tokens"
	tokenParamMaxCompletionTokens = "max_completion_tokens"
	roleDeveloper                 = openai.ChatMessageRoleDeveloper
)

// reasoningFamilies are the prefixes of OpenAI's reasoning models. They
// refuse max_tokens and take max_completion_tokens, which counts their
// hidden reasoning too; go-openai refuses to send max_tokens to them before
// any request is made. gpt-6 is there because go-openai treats its models
// the same way.
var reasoningFamilies = []string{"o1", "o3", "o4", "gpt-5", "gpt-6"}

// reasoningModel reports whether model is named like one of OpenAI's
// reasoning models. A name is all the agent knows of a model the operator
// wrote no profile for; on Azure that is the deployment's model name, not
// the deployment.
func reasoningModel(model string) bool {
	for _, p := range reasoningFamilies {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// tokenParameter is the request field MaxOutputTokens goes in: the
// profile's, else max_completion_tokens for a reasoning model and
// max_tokens for any other, which is the field every OpenAI-compatible
// server knows.
func tokenParameter(model string, p pullwright.ModelProfile) string {
	if p.TokenParameter != "" {
		return p.TokenParameter
	}
	if reasoningModel(model) {
		return tokenParamMaxCompletionTokens
	}
	return tokenParamMaxTokens
}

// request builds the chat-completion request of st's next turn to model,
// as st.Limits.Profile says to talk to it. A State saved before profiles
// existed has the zero profile: the endpoint's defaults, role system.
//
// The system role is not defaulted by family: OpenAI's reasoning models
// take a system message as a developer message, while "developer" is a
// role many OpenAI-compatible servers (and older Azure API versions) do
// not know.
func (a *Agent) request(st *State, model string) openai.ChatCompletionRequest {
	p := st.Limits.Profile
	req := openai.ChatCompletionRequest{
		Model:           model,
		Messages:        withImages(wireMessages(st.Messages, p), st.Images),
		Tools:           a.toolsFor(st),
		ReasoningEffort: p.ReasoningEffort,
	}
	if p.MaxOutputTokens > 0 {
		if tokenParameter(model, p) == tokenParamMaxCompletionTokens {
			req.MaxCompletionTokens = p.MaxOutputTokens
		} else {
			req.MaxTokens = p.MaxOutputTokens
		}
	}
	return req
}

// wireMessages is msgs as they are sent: with SystemRole developer, the
// system messages go as developer messages. The State keeps role system,
// so that a restart or a changed profile sends what the profile of that
// moment says, and msgs is never changed.
func wireMessages(msgs []openai.ChatCompletionMessage, p pullwright.ModelProfile) []openai.ChatCompletionMessage {
	if p.SystemRole != roleDeveloper {
		return msgs
	}
	out := make([]openai.ChatCompletionMessage, len(msgs))
	copy(out, msgs)
	for i := range out {
		if out[i].Role == openai.ChatMessageRoleSystem {
			out[i].Role = roleDeveloper
		}
	}
	return out
}

// turnUsage is what one turn cost in tokens.
type turnUsage struct {
	prompt, completion, cached int
	// estimated: the endpoint reported no usage, and the numbers are
	// estimateTokens of the request and the answer.
	estimated bool
}

// usageOf reads the token usage of resp, or estimates it when the endpoint
// sent none (some Ollama and vLLM versions, and proxies in front of them,
// leave usage out), so that the token and cost budgets still bound a task.
func usageOf(req openai.ChatCompletionRequest, resp openai.ChatCompletionResponse) turnUsage {
	u := resp.Usage
	if u.PromptTokens > 0 || u.CompletionTokens > 0 {
		out := turnUsage{prompt: u.PromptTokens, completion: u.CompletionTokens}
		if d := u.PromptTokensDetails; d != nil {
			out.cached = min(max(d.CachedTokens, 0), u.PromptTokens)
		}
		return out
	}
	var answer strings.Builder
	if len(resp.Choices) > 0 {
		m := resp.Choices[0].Message
		answer.WriteString(m.Content)
		answer.WriteString(m.Refusal)
		for _, tc := range m.ToolCalls {
			answer.WriteString(tc.Function.Name)
			answer.WriteString(tc.Function.Arguments)
		}
		if fc := m.FunctionCall; fc != nil {
			answer.WriteString(fc.Name)
			answer.WriteString(fc.Arguments)
		}
	}
	// The request is counted as sent, tool definitions included: the
	// endpoint reads all of it.
	// A picture counts as imageBytes, not as its encoded bytes.
	msgs, pictures := withoutImageData(req.Messages)
	sent, _ := json.Marshal(struct {
		M []openai.ChatCompletionMessage `json:"m"`
		T []openai.Tool                  `json:"t"`
	}{msgs, req.Tools})
	return turnUsage{prompt: estimateTokens(len(sent) + pictures*imageBytes), completion: estimateTokens(answer.Len()), estimated: true}
}

// estimateTokens is a token count from a byte count: a token is about four
// bytes of English or code for the tokenizers of OpenAI's and the common
// open models, and JSON's punctuation makes the guess err high rather than
// low, which is the safe side for a budget.
func estimateTokens(n int) int {
	return (n + 3) / 4
}

// Finish reasons the agent tells apart; go-openai has no constant for an
// absent one, which it decodes as "".
const (
	finishStop          = openai.FinishReasonStop
	finishToolCalls     = openai.FinishReasonToolCalls
	finishFunctionCall  = openai.FinishReasonFunctionCall
	finishLength        = openai.FinishReasonLength
	finishContentFilter = openai.FinishReasonContentFilter
	finishNull          = openai.FinishReasonNull
)

// stopped says why an answer ended early ("" when it ended as the model
// meant): the output limit or the endpoint's content filter. Both can cut
// a tool call's arguments short.
func stopped(r openai.FinishReason) string {
	switch r {
	case finishLength:
		return "the answer reached the output token limit and was cut off"
	case finishContentFilter:
		return "the endpoint's content filter stopped the answer"
	}
	return ""
}

// knownFinish reports whether r is a finish reason of the chat-completions
// API (or none at all, which several servers send for tool calls).
func knownFinish(r openai.FinishReason) bool {
	switch r {
	case "", finishNull, finishStop, finishToolCalls, finishFunctionCall, finishLength, finishContentFilter:
		return true
	}
	return false
}

// nudgeFor is the message sent after an answer without a tool call.
func nudgeFor(st *State, r openai.FinishReason) string {
	if st.Reviewing != nil {
		// A review has neither finish nor edit_file.
		if why := stopped(r); why != "" {
			return "Your last answer was cut short: " + why + ", so nothing happened. Continue with shorter steps, " +
				"one tool call at a time, or call finish_review if you are done."
		}
		return reviewNudge
	}
	if why := stopped(r); why != "" {
		return "Your last answer was cut short: " + why + ", so nothing happened. " +
			"Continue with shorter steps: one tool call at a time, and large files in parts (edit_file), " +
			"or call finish if you are done."
	}
	return nudge
}

// cutCall is the result of a tool call whose arguments an early stop cut
// short: it did not run, and the model is told why rather than given a
// parse error it could not make sense of.
func cutCall(name, why string) string {
	return "error: " + why + " inside the arguments of this " + name + " call, so it did not run. " +
		"Send it again, shorter if it can be (write a large file in parts with edit_file)."
}

// model is the model st's turns talk to: its task's, else Config's.
func (a *Agent) model(st *State) string { return cmp.Or(st.Limits.Model, a.cfg.Model) }

// toolsFor are the tool definitions of st's requests: a review's, or a
// fix's.
func (a *Agent) toolsFor(st *State) []openai.Tool {
	if st.Reviewing != nil {
		return a.reviewDefs
	}
	return a.tools
}
