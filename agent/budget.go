package agent

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
)

// The model is told what is left of its budget once it runs low, so that
// it can wrap up instead of being cut off mid-change (issue 40).
const (
	// lowTurns is how many turns left count as low.
	lowTurns = 5
	// lowShare is the share of the token or cost budget left that counts
	// as low.
	lowShare = 0.2
	// notePrefix opens the budget note; a note already at the end of the
	// message is replaced, so that a retried turn carries one note.
	notePrefix = "\n\n[budget: "
)

// budgetLeft is what a task has left before its next turn.
type budgetLeft struct {
	turns, maxTurns   int
	tokens, maxTokens int
	usd, maxUSD       float64 // maxUSD 0: no cost budget (or no prices)
	// est is how many turns are left: turns, or fewer when the tokens or
	// the money left, at the rate of the turns so far, last fewer turns.
	est int
	// by names the budget that est is counted on: "turns", "tokens" or
	// "cost".
	by string
}

// left is what st has left before its next turn, under its limits or
// Config's where they set none.
func (a *Agent) left(st *State) budgetLeft {
	l := budgetLeft{
		maxTurns:  cmp.Or(max(st.Limits.MaxTurns, 0), a.cfg.MaxTurns),
		maxTokens: cmp.Or(max(st.Limits.MaxTokens, 0), a.cfg.MaxTokens),
	}
	l.turns = max(l.maxTurns-st.Turns, 0)
	l.tokens = max(l.maxTokens-st.Tokens(), 0)
	l.est, l.by = l.turns, "turns"
	if st.Limits.MaxCostUSD > 0 && (st.Limits.PriceInput > 0 || st.Limits.PriceOutput > 0) {
		l.maxUSD = st.Limits.MaxCostUSD
		l.usd = max(l.maxUSD-st.CostUSD(), 0)
	}
	if st.Turns == 0 || st.Tokens() == 0 {
		return l
	}
	// A turn's request holds the whole conversation, so the next turn
	// costs at least the last request's prompt: the average of the turns
	// so far alone would promise too many.
	avg := float64(st.Tokens()) / float64(st.Turns)
	next := max(avg, float64(st.ContextTokens))
	if n := turnsFor(float64(l.tokens), next); n < l.est {
		l.est, l.by = n, "tokens"
	}
	if l.maxUSD > 0 {
		nextUSD := st.CostUSD() / float64(st.Turns) * next / avg
		if n := turnsFor(l.usd, nextUSD); n < l.est {
			l.est, l.by = n, "cost"
		}
	}
	return l
}

// turnsFor is how many turns of cost each fit in what is left: a turn may
// start with any amount left, so a part of a turn counts as one.
func turnsFor(left, each float64) int {
	if each <= 0 {
		return math.MaxInt
	}
	return int(math.Ceil(left / each))
}

// low reports whether the model should be told what is left.
func (l budgetLeft) low() bool {
	return l.turns <= lowTurns || float64(l.tokens) <= lowShare*float64(l.maxTokens) ||
		(l.maxUSD > 0 && l.usd <= lowShare*l.maxUSD)
}

// last reports whether the next turn is the task's last.
func (l budgetLeft) last() bool { return l.est <= 1 }

// note is the line the model reads about its budget, or "" while it is
// not low. finish is the tool that ends the task. It is built from the
// counts alone, so the same state always gets the same note.
func (l budgetLeft) note(finish string) string {
	if !l.low() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[budget: %d of %d turns left; %s of %s tokens left", l.turns, l.maxTurns,
		pullwright.Thousands(l.tokens), pullwright.Thousands(l.maxTokens))
	if l.maxUSD > 0 {
		fmt.Fprintf(&b, "; %s of %s left", pullwright.FormatUSD(l.usd), pullwright.FormatUSD(l.maxUSD))
	}
	if l.by != "turns" && l.est < l.turns {
		fmt.Fprintf(&b, " (about %s at the rate so far)", turnWord(l.est))
	}
	switch {
	case l.last():
		fmt.Fprintf(&b, ". This is your last turn, so only %s is offered: call it now, and say in its summary what is done and what is left undone.]", finish)
	case l.est == 2:
		fmt.Fprintf(&b, ". This is the turn before last: the next turn can only call %s, so make your last change now and check it.]", finish)
	default:
		fmt.Fprintf(&b, ". Wrap up: finish the change you are making, check it, and call %s with what is done and what is left.]", finish)
	}
	return b.String()
}

func turnWord(n int) string {
	if n == 1 {
		return "1 turn"
	}
	return fmt.Sprintf("%d turns", n)
}

// why says which budget the last turn used up, in budget's words, for a
// finish made on it.
func (l budgetLeft) why(st *State) string {
	switch l.by {
	case "tokens":
		return fmt.Sprintf("tokens: %s of %s used, enough for about one more turn", pullwright.Thousands(st.Tokens()), pullwright.Thousands(l.maxTokens))
	case "cost":
		return fmt.Sprintf("cost: %s spent of a %s budget, enough for about one more turn", pullwright.FormatUSD(st.CostUSD()), pullwright.FormatUSD(l.maxUSD))
	}
	return fmt.Sprintf("turns: %d of %d used", st.Turns+1, l.maxTurns)
}

// noteBudget puts the budget note at the end of the conversation's last
// message, the turn's last tool result (or the nudge after an answer
// without a tool call), so that no message is added between a tool call
// and its results, which some servers refuse. A note already there is
// replaced: a retried turn, or one after a compaction, carries the
// current one. It reports whether the turn about to be made is the last.
func (t *turnRun) noteBudget() (last bool) {
	l := t.a.left(t.st)
	last = l.last()
	if last {
		t.why = l.why(t.st)
	}
	finish := ToolFinish
	if t.st.Reviewing != nil {
		finish = ToolFinishReview
	}
	note := l.note(finish)
	msgs := t.st.Messages
	if len(msgs) <= 2 {
		// The first message is the brief, which a compaction keeps whole
		// (State.BriefBytes): the first turn goes without a note.
		return last
	}
	m := &msgs[len(msgs)-1]
	if m.Role != openai.ChatMessageRoleTool && m.Role != openai.ChatMessageRoleUser {
		return last
	}
	body := m.Content
	if i := strings.LastIndex(body, notePrefix); i >= 0 && strings.HasSuffix(body, "]") {
		body = body[:i]
	}
	if note != "" {
		body += "\n\n" + note
	}
	m.Content = body
	return last
}

// finishOnly is the request's tools on the last turn: the finish tool
// alone, so that the model cannot start work it has no turn left to
// finish. Forcing it with tool_choice would not do: Ollama ignores
// tool_choice, and some servers refuse a named one; a tool list is read
// by every server that takes tools.
func finishOnly(defs []openai.Tool) []openai.Tool {
	var out []openai.Tool
	for _, d := range defs {
		if d.Function != nil && isFinish(d.Function.Name) {
			out = append(out, d)
		}
	}
	return out
}

// Results and step lines of the tool calls a last turn does not run.
const (
	lastTurnRefused = "error: not run: this was your last turn, and only the finish tool was offered"
	stepLastTurn    = " not run: it was the last turn"
)
