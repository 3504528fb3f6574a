package webhook

import (
	"fmt"
	"strings"

	"github.com/pullwright/pullwright/internal/words"
)

// DefaultCommand is the comment command word used when none is configured.
const DefaultCommand = "/agent"

// Verb is what a comment command asks for.
type Verb string

const (
	Fix     Verb = "fix"
	Cancel  Verb = "cancel"
	Status  Verb = "status"
	Help    Verb = "help"
	Approve Verb = "approve"
	Reject  Verb = "reject"
	// Review reviews a pull request: one GitHub review with line comments,
	// no change pushed.
	Review Verb = "review"
)

// The approval words are fixed: they do not follow the configured command word.
const (
	approveWord = "/approve"
	rejectWord  = "/reject"
)

// Command is a recognised comment command.
type Command struct {
	Verb Verb
	// Args is the fix instructions, a review's focus, the rejection
	// reason or the approved request id; empty for cancel, status and help.
	Args string
	// Mode is how a fix must prove its work (task.Modes): "" for a plain
	// fix, or tdd, debug or refactor.
	Mode string
}

// modes are the words that start a fix in a mode: each is a prompt for the
// agent and a check of the task's record of runs (task/modes.go).
var modes = []string{"tdd", "debug", "refactor"}

// Result is what a comment means to the bot: a Command to hand to task, a
// Reply to post to the user (usage, an unknown sub-command), or, when both
// are zero, nothing at all.
type Result struct {
	Command *Command
	Reply   string
}

// Ignored reports whether the comment holds no command and needs no reply.
func (r Result) Ignored() bool { return r.Command == nil && r.Reply == "" }

// Parse finds the first command in a comment body. It does no I/O and knows
// nothing about who wrote the comment: trust is decided elsewhere.
//
// word is the command word ("/agent" when empty); "/approve" and "/reject"
// are fixed. A command is a line that starts with the word (case-sensitive,
// after at most three spaces) followed by whitespace or the end of the line.
// These lines never hold a command:
//
//   - lines inside fenced code blocks (``` or ~~~, three or more; the closing
//     fence uses the same character and is at least as long; an unclosed fence
//     runs to the end of the comment);
//   - quote lines, starting with ">" after any indentation ("> > /agent" too);
//   - indented code: a line indented by four or more spaces, or by a tab
//     (CommonMark renders it as code, so it is an example, not a request).
//
// The first command wins. "/agent review" takes the rest as its focus,
// which may be empty. For fix and reject, Args is the rest of the command
// line plus every following line of the comment, trimmed, code blocks
// included. "/agent cancel", "/agent status" and "/agent help" are recognised
// only when the verb is alone on its line (a trailing "." or "!" is allowed):
// "/agent help me fix the login form" is a fix. A lone word that is not a verb
// but is close to one ("/agent stauts") gets a reply instead of starting work,
// and "/agent" with nothing after it gets the usage.
func Parse(word, body string) Result {
	if word == "" {
		word = DefaultCommand
	}
	// Reject cheaply: almost every comment holds no command at all.
	if !strings.Contains(body, word) && !strings.Contains(body, approveWord) && !strings.Contains(body, rejectWord) {
		return Result{}
	}
	body = normalizeNewlines(body)

	var open fence
	for rest := body; rest != ""; {
		line, next, _ := strings.Cut(rest, "\n")
		rest = next
		if open.char != 0 {
			if open.closedBy(line) {
				open = fence{}
			}
			continue
		}
		if isQuote(line) {
			continue
		}
		if f, ok := openFence(line); ok {
			open = f
			continue
		}
		text, ok := unindent(line)
		if !ok {
			continue
		}
		if tail, ok := cutWord(text, word); ok {
			return parseAgent(word, tail, rest)
		}
		if tail, ok := cutWord(text, approveWord); ok {
			var id string
			if f := strings.Fields(tail); len(f) > 0 {
				id = f[0]
			}
			return Result{Command: &Command{Verb: Approve, Args: id}}
		}
		if tail, ok := cutWord(text, rejectWord); ok {
			return Result{Command: &Command{Verb: Reject, Args: joinArgs(tail, rest)}}
		}
	}
	return Result{}
}

// parseAgent reads what follows the command word: tail is the rest of the
// command line, following the rest of the comment.
func parseAgent(word, tail, following string) Result {
	tail = strings.TrimLeft(tail, " \t")
	if strings.TrimSpace(tail) == "" {
		if strings.TrimSpace(following) == "" {
			return Result{Reply: Usage(word)}
		}
		return Result{Command: &Command{Verb: Fix, Args: strings.TrimSpace(following)}}
	}
	first, after := tail, ""
	if i := strings.IndexAny(tail, " \t"); i >= 0 {
		first, after = tail[:i], tail[i+1:]
	}
	if strings.ToLower(first) == string(Fix) {
		return Result{Command: &Command{Verb: Fix, Args: joinArgs(after, following)}}
	}
	if strings.ToLower(strings.TrimRight(first, ".!")) == string(Review) {
		// What follows, if anything, is what to look at: a review needs
		// no instructions.
		return Result{Command: &Command{Verb: Review, Args: joinArgs(after, following)}}
	}
	for _, m := range modes {
		// A mode needs something to work on: "/agent debug" alone gets the
		// usage, as "/agent" does.
		if strings.ToLower(first) == m {
			if args := joinArgs(after, following); args != "" {
				return Result{Command: &Command{Verb: Fix, Args: args, Mode: m}}
			}
			return Result{Reply: fmt.Sprintf("`%s %s` needs to be told what to work on.\n\n%s", word, m, Usage(word))}
		}
	}
	if strings.TrimSpace(after) == "" {
		verb := strings.ToLower(strings.TrimRight(first, ".!"))
		switch v := Verb(verb); v {
		case Cancel, Status, Help:
			return Result{Command: &Command{Verb: v}}
		}
		if strings.TrimSpace(following) == "" {
			if near, ok := suggest(verb); ok {
				return Result{Reply: fmt.Sprintf("unknown command `%s`; did you mean `%s`?\n\n%s", first, near, Usage(word))}
			}
		}
	}
	return Result{Command: &Command{Verb: Fix, Args: joinArgs(tail, following)}}
}

// Usage is the markdown help text listing every command.
func Usage(word string) string {
	if word == "" {
		word = DefaultCommand
	}
	var b strings.Builder
	b.WriteString("**Commands** (at the start of a line of a comment on an issue or pull request, outside code blocks and quotes):\n\n")
	b.WriteString("| command | what it does |\n|---|---|\n")
	rows := [][2]string{
		{word + " fix <instructions>", "work on this issue and open a pull request; the instructions may span several lines"},
		{word + " <instructions>", "the same as `fix`"},
		{word + " tdd <instructions>", "test first: the pull request must show a new or changed test failing before the fix and passing after it"},
		{word + " debug <instructions>", "reproduce first: a run that shows the failure, then the fix, then the run that shows it gone"},
		{word + " refactor <instructions>", "change the structure only: the tests pass before and after, and the exported API stays as it was unless the instructions ask otherwise"},
		{word + " review [focus]", "on a pull request: review its changes in one GitHub review, with line comments and suggested changes; nothing is pushed. Asked again after a push, it reviews only what changed since"},
		{word + " status", "show how the current task is going"},
		{word + " cancel", "stop the current task"},
		{word + " help", "show this help"},
		{approveWord + " [request-id]", "allow the command the bot asked to run (name its id from a task's second request on)"},
		{rejectWord + " [reason]", "refuse the command the bot asked to run; the reason is passed on"},
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s |\n", r[0], r[1])
	}
	fmt.Fprintf(&b, "\nOn a pull request, `%s fix` changes that pull request; with no instructions, it addresses the unresolved review comments (in a review comment: that comment).\n", word)
	return b.String()
}

// fence is an open fenced code block; the zero value means none is open.
type fence struct {
	char byte
	n    int
}

// openFence reports whether line opens a fenced code block.
func openFence(line string) (fence, bool) {
	s := strings.TrimLeft(line, " \t")
	if s == "" || (s[0] != '`' && s[0] != '~') {
		return fence{}, false
	}
	n := run(s, s[0])
	if n < 3 {
		return fence{}, false
	}
	// A backtick fence's info string cannot hold a backtick: "```x```" is
	// inline code, not a fence.
	if s[0] == '`' && strings.IndexByte(s[n:], '`') >= 0 {
		return fence{}, false
	}
	return fence{char: s[0], n: n}, true
}

// closedBy reports whether line closes f: the same character, at least as
// many of them, and nothing after but spaces.
func (f fence) closedBy(line string) bool {
	s := strings.TrimLeft(line, " \t")
	n := run(s, f.char)
	return n >= f.n && strings.Trim(s[n:], " \t") == ""
}

// run counts the leading bytes of s equal to c.
func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

func isQuote(line string) bool {
	return strings.HasPrefix(strings.TrimLeft(line, " \t"), ">")
}

// unindent strips up to three leading spaces; more, or a tab, makes the line
// indented code and never a command.
func unindent(line string) (string, bool) {
	n := run(line, ' ')
	if n > 3 {
		return "", false
	}
	s := line[n:]
	if s != "" && s[0] == '\t' {
		return "", false
	}
	return s, true
}

// cutWord returns what follows w when text starts with w and w is followed
// by whitespace or the end of the line.
func cutWord(text, w string) (string, bool) {
	if !strings.HasPrefix(text, w) {
		return "", false
	}
	tail := text[len(w):]
	if tail != "" && tail[0] != ' ' && tail[0] != '\t' {
		return "", false
	}
	return tail, true
}

// joinArgs joins the rest of a command line with the lines after it, as
// they stand in the comment (blank lines and indentation inside kept).
func joinArgs(tail, following string) string {
	return strings.TrimSpace(tail + "\n" + following)
}

func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// suggest returns the verb a lone word was probably meant to be. Only
// letters count, and short verbs need a closer match, so "/agent go" or
// "/agent hi" are fix requests rather than typos.
func suggest(word string) (Verb, bool) {
	if len(word) < 2 || len(word) > 10 {
		return "", false
	}
	for i := 0; i < len(word); i++ {
		if c := word[i]; c < 'a' || c > 'z' {
			return "", false
		}
	}
	best, bestDist := Verb(""), 3
	for _, v := range []Verb{Status, Cancel, Help, Review, Fix} {
		limit := 2
		if len(v) < 4 {
			limit = 1
		}
		if d := words.Distance(word, string(v)); d <= limit && d < bestDist {
			best, bestDist = v, d
		}
	}
	return best, best != ""
}
