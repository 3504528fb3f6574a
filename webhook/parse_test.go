package webhook

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	usage := Usage(DefaultCommand)
	typo := func(word, verb string) string {
		return "unknown command `" + word + "`; did you mean `" + verb + "`?\n\n" + usage
	}
	cmd := func(v Verb, args string) Result { return Result{Command: &Command{Verb: v, Args: args}} }
	ignore := Result{}

	tests := []struct {
		name string
		word string // DefaultCommand when empty
		body string
		want Result
	}{
		// Not a command at all.
		{"empty", "", "", ignore},
		{"plain text", "", "LGTM, thanks!", ignore},
		{"word mid-line", "", "please run /agent fix the bug", ignore},
		{"word glued to text", "", "/agentfoo bar", ignore},
		{"word glued to punctuation", "", "/agent: fix it", ignore},
		{"case-sensitive word", "", "/Agent fix it", ignore},
		{"other word", "", "/bot fix it", ignore},
		{"approve glued", "", "/approved", ignore},
		{"reject glued", "", "/rejection is fine", ignore},

		// Fix.
		{"fix", "", "/agent fix the off-by-one", cmd(Fix, "the off-by-one")},
		{"fix capitalised verb", "", "/agent Fix the off-by-one", cmd(Fix, "the off-by-one")},
		{"bare instructions", "", "/agent the off-by-one in pagination", cmd(Fix, "the off-by-one in pagination")},
		{"fix alone", "", "/agent fix", cmd(Fix, "")},
		{"fix alone with spaces", "", "/agent   fix   ", cmd(Fix, "")},
		{"fix with tab", "", "/agent\tfix\tthe bug", cmd(Fix, "the bug")},

		// Review.
		{"review", "", "/agent review", cmd(Review, "")},
		{"review with a focus", "", "/agent review the error handling", cmd(Review, "the error handling")},
		{"review capitalised, focus on next lines", "", "/agent Review\nlook at\nthe parser", cmd(Review, "look at\nthe parser")},
		{"review with a full stop", "", "/agent review.", cmd(Review, "")},
		{"review glued is a fix", "", "/agent reviewer notes", cmd(Fix, "reviewer notes")},
		{"review typo", "", "/agent reveiw", Result{Reply: typo("reveiw", "review")}},
		{"review in a code block", "", "```\n/agent review\n```", ignore},
		{"review quoted", "", "> /agent review", ignore},

		// Modes.
		{"tdd", "", "/agent tdd add a test for the empty page", Result{Command: &Command{Verb: Fix, Args: "add a test for the empty page", Mode: "tdd"}}},
		{"debug, capitalised, multi-line", "", "/agent Debug the crash\non login", Result{Command: &Command{Verb: Fix, Args: "the crash\non login", Mode: "debug"}}},
		{"refactor", "", "/agent refactor split store.go", Result{Command: &Command{Verb: Fix, Args: "split store.go", Mode: "refactor"}}},
		{"mode alone", "", "/agent tdd", Result{Reply: "`/agent tdd` needs to be told what to work on.\n\n" + usage}},
		{"mode glued is plain text", "", "/agent tdd-style tests please", cmd(Fix, "tdd-style tests please")},
		{"fix multi-line", "", "/agent fix the bug\nin pagination\n\nkeep the API", cmd(Fix, "the bug\nin pagination\n\nkeep the API")},
		{"fix instructions on next lines", "", "/agent fix\n\n  the bug  \n", cmd(Fix, "the bug")},
		{"word alone then instructions", "", "/agent\nplease fix the bug", cmd(Fix, "please fix the bug")},
		{"fix keeps code blocks", "", "/agent fix this:\n```go\nx := 1\n```\n> and this quote", cmd(Fix, "this:\n```go\nx := 1\n```\n> and this quote")},
		{"fix keeps later commands as text", "", "/agent fix a\n/agent cancel", cmd(Fix, "a\n/agent cancel")},
		{"leading spaces", "", "   /agent fix it", cmd(Fix, "it")},
		{"after text lines", "", "Thanks for the report.\n\n/agent fix it", cmd(Fix, "it")},
		{"crlf", "", "hello\r\n/agent fix it\r\nnow\r\n", cmd(Fix, "it\nnow")},
		{"lone cr", "", "hello\r/agent fix it", cmd(Fix, "it")},
		{"help with text is fix", "", "/agent help me fix the login form", cmd(Fix, "help me fix the login form")},
		{"status with text is fix", "", "/agent status codes are wrong", cmd(Fix, "status codes are wrong")},
		{"unrelated lone word", "", "/agent modernise", cmd(Fix, "modernise")},
		{"short lone word is not a typo", "", "/agent hi", cmd(Fix, "hi")},
		{"non-letter lone word", "", "/agent st@tus", cmd(Fix, "st@tus")},
		{"typo with more lines is fix", "", "/agent stauts\nof the parser", cmd(Fix, "stauts\nof the parser")},
		{"unicode", "", "/agent fix the naïve café → ☕", cmd(Fix, "the naïve café → ☕")},

		// Other verbs.
		{"cancel", "", "/agent cancel", cmd(Cancel, "")},
		{"status", "", "/agent status", cmd(Status, "")},
		{"status with dot", "", "/agent status.", cmd(Status, "")},
		{"cancel with bang", "", "/agent cancel!", cmd(Cancel, "")},
		{"status capitalised", "", "/agent Status", cmd(Status, "")},
		{"status then chatter", "", "/agent status\nthanks!", cmd(Status, "")},
		{"help", "", "/agent help", cmd(Help, "")},
		{"approve", "", "/approve", cmd(Approve, "")},
		{"approve id", "", "/approve req-42", cmd(Approve, "req-42")},
		{"approve id and chatter", "", "/approve req-42 looks safe\nthanks", cmd(Approve, "req-42")},
		{"reject", "", "/reject", cmd(Reject, "")},
		{"reject reason", "", "/reject do not run scripts from the internet", cmd(Reject, "do not run scripts from the internet")},
		{"reject multi-line reason", "", "/reject no\nuse make test instead", cmd(Reject, "no\nuse make test instead")},
		{"approve indented", "", "  /approve", cmd(Approve, "")},

		// Replies.
		{"word alone", "", "/agent", Result{Reply: usage}},
		{"word alone with spaces", "", "  /agent   \n\n", Result{Reply: usage}},
		{"typo status", "", "/agent stauts", Result{Reply: typo("stauts", "status")}},
		{"typo cancel", "", "/agent cancle", Result{Reply: typo("cancle", "cancel")}},
		{"typo help", "", "/agent hlep", Result{Reply: typo("hlep", "help")}},
		{"typo fix", "", "/agent fx", Result{Reply: typo("fx", "fix")}},
		{"typo keeps case in echo", "", "/agent Stat", Result{Reply: typo("Stat", "status")}},
		{"typo with dot", "", "/agent statsu.", Result{Reply: typo("statsu.", "status")}},

		// First command wins.
		{"first wins", "", "/agent status\n/agent cancel", cmd(Status, "")},
		{"approve before agent", "", "/approve\n/agent fix it", cmd(Approve, "")},
		{"reply before command", "", "/agent\n", Result{Reply: usage}},

		// Fenced code.
		{"in backtick fence", "", "```\n/agent fix it\n```", ignore},
		{"in tilde fence", "", "~~~\n/agent fix it\n~~~", ignore},
		{"after fence", "", "```sh\nmake\n```\n/agent fix it", cmd(Fix, "it")},
		{"fence with info", "", "```go\n/approve\n```\n/reject nope", cmd(Reject, "nope")},
		{"unclosed fence", "", "```\n/agent fix it", ignore},
		{"longer fence not closed by shorter", "", "````\n```\n/agent fix it\n````", ignore},
		{"longer fence closed by longer", "", "````\nx\n`````\n/agent fix it", cmd(Fix, "it")},
		{"tilde not closed by backticks", "", "~~~\n```\n/agent fix it", ignore},
		{"backticks not closed by tildes", "", "```\n~~~\n/agent fix it", ignore},
		{"closing fence with text does not close", "", "```\n``` x\n/agent fix it", ignore},
		{"closing fence with trailing spaces closes", "", "```\nx\n```   \n/agent fix it", cmd(Fix, "it")},
		{"indented fence", "", "  ```\n/agent fix it\n  ```\n/agent status", cmd(Status, "")},
		{"two backticks are not a fence", "", "``\n/agent fix it", cmd(Fix, "it")},
		{"inline code line is not a fence", "", "```x```\n/agent fix it", cmd(Fix, "it")},
		{"tilde fence may hold backticks in info", "", "~~~ a`b\n/agent fix it", ignore},
		{"command line after fence in same comment", "", "~~~~\n/agent fix a\n~~~~\n/agent fix b", cmd(Fix, "b")},

		// Quotes.
		{"quoted", "", "> /agent fix it", ignore},
		{"quoted no space", "", ">/agent fix it", ignore},
		{"nested quote", "", "> > /agent fix it", ignore},
		{"indented quote", "", "   > /agent fix it", ignore},
		{"quote then command", "", "> /agent fix a\n\n/agent fix b", cmd(Fix, "b")},
		{"fence inside quote does not swallow", "", "> ```\n/agent fix it", cmd(Fix, "it")},

		// Indented code.
		{"four spaces", "", "    /agent fix it", ignore},
		{"tab", "", "\t/agent fix it", ignore},
		{"spaces then tab", "", "  \t/agent fix it", ignore},
		{"three spaces", "", "   /agent fix it", cmd(Fix, "it")},

		// Custom word.
		{"custom word", "/bot", "/bot fix it", cmd(Fix, "it")},
		{"custom word ignores default", "/bot", "/agent fix it", ignore},
		{"custom word usage", "/bot", "/bot", Result{Reply: Usage("/bot")}},
		{"custom word keeps approve", "/bot", "/approve 7", cmd(Approve, "7")},
		{"mention word", "@pullwright", "@pullwright fix it", cmd(Fix, "it")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse(tt.word, tt.body)
			if !equalResult(got, tt.want) {
				t.Errorf("Parse(%q, %q)\n got %s\nwant %s", tt.word, tt.body, show(got), show(tt.want))
			}
		})
	}
}

func TestUsageListsEveryCommand(t *testing.T) {
	u := Usage("/bot")
	for _, want := range []string{"/bot fix <instructions>", "/bot <instructions>", "/bot status", "/bot cancel", "/bot help", "/bot review [focus]", "/approve [request-id]", "/reject [reason]"} {
		if !strings.Contains(u, "`"+want+"`") {
			t.Errorf("Usage misses %q:\n%s", want, u)
		}
	}
	if !strings.Contains(u, "On a pull request, `/bot fix` changes that pull request") {
		t.Errorf("Usage does not say what a fix on a pull request does:\n%s", u)
	}
	if Usage("") != Usage(DefaultCommand) {
		t.Error("Usage(\"\") differs from Usage(DefaultCommand)")
	}
}

func equalResult(a, b Result) bool {
	if a.Reply != b.Reply || (a.Command == nil) != (b.Command == nil) {
		return false
	}
	return a.Command == nil || *a.Command == *b.Command
}

func show(r Result) string {
	switch {
	case r.Command != nil:
		return "command " + string(r.Command.Verb) + " " + strconvQuote(r.Command.Args)
	case r.Reply != "":
		return "reply " + strconvQuote(r.Reply)
	}
	return "ignore"
}

func strconvQuote(s string) string {
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return "«" + s + "»"
}
