package task

import (
	"fmt"
	"html"
	"strings"
	"time"
	"unicode"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/inert"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
)

// defang keeps plain text from acting on GitHub (inert.Defang): no mention
// notifies anyone and no "fixes #12" closes an issue nobody asked about.
// Only the bot's own "Fixes #N" line links the task's issue. For text
// that GitHub renders as Markdown, use line or inert.Markdown.
func defang(s string) string { return inert.Defang(s) }

// hosts are where images and links in what the task posts may point: the
// repository's own GitHub.
func hosts(t *Task) inert.Hosts { return inert.GitHub(t.Repo.CloneURL) }

// prTitle is the pull request's title: GitHub shows a title as text (its
// code spans aside), so only its mentions, closing keywords and the
// characters that do not show as themselves are a concern there. Where a
// comment repeats it, it goes through line.
func prTitle(t Job) string { return defang(policy.Escaped(oneLine(t.Title))) }

// line is one line of text someone other than the bot wrote (the agent's
// title, a plan item, a reason), as inline Markdown that does nothing but
// show its words (inert.Line).
func line(t *Task, s string) string { return inert.Line(s, hosts(t)) }

// prose shows the agent's words in a request as one line of text that
// can hide nothing: no HTML (a <details> would fold away the facts that
// follow it), no character that does not show as itself, no mention and
// no closing keyword.
func prose(s string) string {
	return defang(markdownInert.Replace(html.EscapeString(policy.Escaped(oneLine(s)))))
}

// markdownInert backslash-escapes the Markdown that would make the
// agent's words more than text: an image or a link (a tall picture that
// pushes the warnings out of sight, a button that is not ours), emphasis
// and code. HTML is already escaped as entities; a table escapes its own
// pipes.
var markdownInert = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`,
	"!", `\!`, "#", `\#`, "~", `\~`,
)

// stateLine says in words where a task stands.
var stateLine = map[State]string{
	Queued:           "⏳ Queued",
	Preparing:        "📥 Reading the issue and cloning the repository",
	Working:          "🛠️ Working",
	AwaitingApproval: "✋ Waiting for approval",
	Running:          "▶️ Running an approved command",
	Publishing:       "📤 Opening the pull request",
	Done:             "✅ Done",
	Failed:           "❌ Failed",
	Cancelled:        "🛑 Cancelled",
}

// stateOf is t's state as the status comment says it: a task that pushes
// onto a pull request's branch opens no pull request, and one asked on a
// pull request reads it, not an issue.
func stateOf(t *Task) string {
	j, works := t.Job()
	switch {
	case t.State == Publishing && works && j.onHead():
		return "📤 Pushing to the pull request's branch"
	case t.State == Preparing && t.IsPR:
		return "📥 Reading the pull request and cloning its branch"
	}
	return stateLine[t.State]
}

// maxSteps is how many of the latest steps the status comment lists.
const maxSteps = 15

// RenderStatus is the body of a fix task's status comment, which is edited
// in place as the task advances.
func RenderStatus(t Job, command string) string { return RenderStatusWith(t, command, "") }

// RenderStatusWith is RenderStatus with a link to the task's page in the
// console, when session is its address.
func RenderStatusWith(t Job, command, session string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Pullwright · task %d\n\n", t.ID)
	fmt.Fprintf(&b, "**%s**", stateOf(t.Task))
	switch t.State {
	case Done:
		switch {
		case t.Reviewing != nil && t.Reviewing.URL != "":
			fmt.Fprintf(&b, ": posted [a review](%s) of %s with %s", t.Reviewing.URL, words.Short(t.Reviewing.Head), words.Count(t.Reviewing.Inline, "line comment", "line comments"))
			switch {
			case t.Reviewing.Refused:
				fmt.Fprintf(&b, " (%d more in its body: GitHub refused them on their lines)", t.Reviewing.Moved)
			case t.Reviewing.Moved > 0:
				fmt.Fprintf(&b, " (%d more in its body: not on lines of the diff)", t.Reviewing.Moved)
			}
			if n := t.Reviewing.LeftOut; n > 0 {
				fmt.Fprintf(&b, "; %s left out, since its body was full", words.Count(n, "comment", "comments"))
			}
		case t.Reviewing != nil && t.Reviewing.Since == t.Reviewing.Head:
			fmt.Fprintf(&b, ": I reviewed %s already, and the pull request has not changed since: push a change and ask again", words.Short(t.Reviewing.Head))
		case t.Kind == KindReview:
		case t.onHead():
			fmt.Fprintf(&b, ": pushed %s to `%s`", words.Count(len(t.Pull.Commits), "commit", "commits"), t.Branch)
		case t.PRURL != "":
			fmt.Fprintf(&b, ": opened %s", t.PRURL)
		}
	case Failed:
		fmt.Fprintf(&b, ": %s", line(t.Task, t.Error))
	case Cancelled:
		if t.CancelledBy != "" {
			fmt.Fprintf(&b, " by @%s", t.CancelledBy)
		}
	}
	b.WriteString("\n\n")
	if r := t.Request; r != nil && (t.State == AwaitingApproval || t.State == Running) {
		fmt.Fprintf(&b, "Request `%s`: %s", r.ID, code(oneLine(r.Command)))
		if t.State == AwaitingApproval && r.CommentURL != "" {
			fmt.Fprintf(&b, " — [answer it](%s) with %s", r.CommentURL, answerWords(t.Kind, r))
		}
		b.WriteString("\n\n")
	}
	if r := t.Request; r != nil && r.Setup != nil {
		b.WriteString(setupLine(r.Setup) + "\n\n")
	}
	if t.PRURL != "" && t.Draft {
		fmt.Fprintf(&b, "Draft pull request: %s\n\n", t.PRURL)
	}
	if line := budgetLine(t); line != "" {
		b.WriteString(line + "\n\n")
		if s := strings.TrimSpace(t.Summary); s != "" {
			fmt.Fprintf(&b, "<details><summary>Summary</summary>\n\n%s\n\n</details>\n\n", inert.Markdown(s, hosts(t.Task)))
		}
	}
	if s := t.Settings; s != nil && s.RequirePassing != "" && t.Kind == KindFix && (t.Pull == nil || t.Pull.Mode == PullInBase) {
		b.WriteString(requirementLine(t, s.RequirePassing) + "\n\n")
	}
	if t.Mode != "" && (len(t.Runs) > 0 || t.State == Done) {
		b.WriteString(renderMode(t))
	}
	if t.Pull != nil && t.Pull.Why != "" && t.Kind == KindFix {
		fmt.Fprintf(&b, "Not pushed to this pull request's branch: %s.\n\n", line(t.Task, t.Pull.Why))
	}
	if t.Review != nil {
		fmt.Fprintf(&b, "Asked on %s %s.\n\n", code(t.Review.Path), lineRange(t.Review.StartLine, t.Review.Line))
	}
	if t.Instructions != "" {
		fmt.Fprintf(&b, "> %s\n\n", strings.ReplaceAll(clip(t.Instructions, 300), "\n", "\n> "))
	}
	if t.Unheard > 0 {
		verb := "were"
		if t.Unheard == 1 {
			verb = "was"
		}
		fmt.Fprintf(&b, "%s by people without write access %s left out of what the agent reads.\n\n",
			words.Count(t.Unheard, "comment", "comments"), verb)
	}
	if p := t.Pictured; p != nil {
		what := "issue"
		if t.Pull != nil {
			what = "pull request"
		}
		b.WriteString(p.line(what) + "\n\n")
	}
	if g := t.Guidance; g != nil {
		b.WriteString(guidanceLine(g, t.Repo.DefaultBranch) + "\n\n")
	}
	if len(t.Plan) > 0 {
		b.WriteString("**Plan**\n\n")
		for _, p := range t.Plan {
			box := " "
			if p.Status == pullwright.PlanDone {
				box = "x"
			}
			suffix := ""
			if p.Status == pullwright.PlanInProgress {
				suffix = " *(" + p.Words() + ")*"
			}
			fmt.Fprintf(&b, "- [%s] %s%s\n", box, line(t.Task, p.Title), suffix)
		}
		b.WriteString("\n")
	}
	if len(t.Steps) > 0 {
		steps := t.Steps
		fmt.Fprintf(&b, "<details><summary>Steps (%d)</summary>\n\n", len(steps))
		if len(steps) > maxSteps {
			fmt.Fprintf(&b, "- … %d earlier steps\n", len(steps)-maxSteps)
			steps = steps[len(steps)-maxSteps:]
		}
		for _, s := range steps {
			fmt.Fprintf(&b, "- %s\n", line(t.Task, s))
		}
		b.WriteString("\n</details>\n\n")
	}
	fmt.Fprintf(&b, "<sub>%d turns · %s", t.Turns, tokens(t))
	if t.Branch != "" && t.Kind != KindReview {
		// A review's branch is local to its workspace: nothing is pushed.
		fmt.Fprintf(&b, " · branch `%s`", t.Branch)
	}
	if !t.State.Terminal() {
		fmt.Fprintf(&b, " · `%s status` · `%s cancel`", command, command)
	}
	if session != "" {
		fmt.Fprintf(&b, " · [View session](%s)", session)
	}
	b.WriteString("</sub>\n")
	return b.String()
}

// StatusLine answers "/agent status" about t.
func StatusLine(t Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task %d: **%s**", t.ID, stateOf(t.Task))
	switch {
	case t.State == Done && t.onHead():
		fmt.Fprintf(&b, ", pushed %s to `%s`", words.Count(len(t.Pull.Commits), "commit", "commits"), t.Branch)
	case t.State == Done && t.PRURL != "":
		fmt.Fprintf(&b, ", opened %s", t.PRURL)
	case t.State == Failed:
		fmt.Fprintf(&b, ": %s", line(t.Task, t.Error))
	case t.State == AwaitingApproval && t.Request != nil:
		fmt.Fprintf(&b, ": request `%s` asks to %s %s; answer with %s before %s",
			t.Request.ID, t.Request.verb(), code(oneLine(t.Request.Command)), answerWords(t.Kind, t.Request), t.Request.Deadline.UTC().Format("2006-01-02 15:04 MST"))
	}
	fmt.Fprintf(&b, " (%d turns, %s).", t.Turns, tokens(t))
	return b.String()
}

// RenderPullRequest is the body of the pull request a fix opens.
func RenderPullRequest(t Job) string {
	var b strings.Builder
	if line := budgetLine(t); line != "" {
		b.WriteString(line + " This draft holds the work so far.\n\n")
	}
	if s := strings.TrimSpace(t.Summary); s != "" {
		b.WriteString(inert.Markdown(s, hosts(t.Task)))
		b.WriteString("\n\n")
	} else {
		fmt.Fprintf(&b, "Work in progress: the agent is still working on #%d and keeps this draft up to date at each checkpoint.\n\n", t.Issue)
	}
	if len(t.ChangedFiles) > 0 {
		b.WriteString("**Files changed**\n\n")
		for _, f := range t.ChangedFiles {
			fmt.Fprintf(&b, "- %s (+%d −%d)\n", code(f.Path), f.Added, f.Deleted)
		}
		b.WriteString("\n")
	}
	if p := t.Pull; p != nil {
		fmt.Fprintf(&b, "Builds on #%d by @%s", t.Issue, p.Info.Author)
		if p.Info.Fork {
			fmt.Fprintf(&b, " (from %s)", code(p.Info.HeadRepo+":"+p.Info.HeadRef))
		}
		b.WriteString(": it holds that pull request's commits and the agent's on top.\n\n")
	} else {
		fmt.Fprintf(&b, "Fixes #%d\n\n", t.Issue)
	}
	b.WriteString(RenderVerification(t))
	b.WriteString("\n")
	fmt.Fprintf(&b, "---\n<sub>Requested by @%s · Pullwright task %d · %d turns · %s</sub>\n",
		t.Requester.Login, t.ID, t.Turns, tokens(t))
	return b.String()
}

// requirementLine says where the repository's required command stands.
func requirementLine(t Job, cmd string) string {
	shown := code(oneLine(cmd))
	switch why := t.unmet(cmd); {
	case t.HeadSHA == "":
		return fmt.Sprintf("Required before review: %s must pass on the final commit.", shown)
	case why == "":
		return fmt.Sprintf("Required before review: %s passed on %s.", shown, words.Short(t.HeadSHA))
	case t.Request != nil && t.Request.Required && t.Request.SHA == t.HeadSHA && !t.State.Terminal():
		return fmt.Sprintf("Required before review: %s must pass on the final commit; asked as request `%s`.", shown, t.Request.ID)
	default:
		return "Required before review: " + strings.TrimPrefix(why, "the repository requires ") + "."
	}
}

// tokens is what the task's model calls used and cost, as the comments
// show it (pullwright.Spend's one rendering).
func tokens(t Job) string {
	if len(t.Spend.Models) > 0 {
		return t.Spend.String()
	}
	if t.TokensEstimated {
		return fmt.Sprintf("about %s tokens (estimated: the model endpoint reports no usage)", pullwright.Thousands(t.Tokens))
	}
	return pullwright.Thousands(t.Tokens) + " tokens"
}

// CommitMessage is the message of the commit a fix pushes.
func CommitMessage(t Job) string {
	title := oneLine(t.Title)
	if title == "" {
		title = fmt.Sprintf("Address #%d", t.Issue)
	}
	msg := defang(clip(title, 72)) + "\n"
	if s := strings.TrimSpace(t.Summary); s != "" {
		msg += "\n" + defang(s) + "\n"
	}
	msg += fmt.Sprintf("\nRequested in #%d by @%s.\n", t.Issue, t.Requester.Login)
	return msg
}

// lineRange is "line 12" or "lines 10–14".
func lineRange(start, end int) string {
	switch {
	case end <= 0:
		return "(a line no longer in the diff)"
	case start > 0 && start < end:
		return fmt.Sprintf("lines %d–%d", start, end)
	}
	return fmt.Sprintf("line %d", end)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string { return words.Clip(strings.TrimSpace(s), n) }

// RenderRequest is the comment that shows an execution request on the
// issue and on the draft pull request: the value every surface shows.
func RenderRequest(v approval.Request) string {
	return renderRequest(v, KindFix)
}

// renderRequest is RenderRequest for a task of kind, which decides
// whether a bare answer is taken (bareTaken).
func renderRequest(v approval.Request, kind Kind) string {
	var b strings.Builder
	what, act := "run a command", "run it"
	if v.Tool != nil {
		what, act = "call a tool", "make the call"
	}
	fmt.Fprintf(&b, "### ✋ Pullwright asks to %s · request `%s`\n\n", what, v.ID)
	b.WriteString(requestBody(v))
	switch {
	case bareTaken(kind, &ExecRequest{ID: v.ID}):
		fmt.Fprintf(&b, "Answer with `/approve` (or `/approve %s`) to %s, or `/reject <reason>` to refuse; the agent then goes on without it. ", v.ID, act)
	case kind == KindReview:
		fmt.Fprintf(&b, "Answer with `/approve %s` to %s, or refuse it with the check run's **Reject** button; the agent then goes on without it. A bare `/approve` or `/reject` here answers a fix, not this review. ", v.ID, act)
	default:
		// A later request: "/approve" alone might have been meant for
		// the one before it.
		fmt.Fprintf(&b, "Answer with `/approve %s` (this task asked before, so `/approve` alone is not taken) to %s, or `/reject <reason>` to refuse; the agent then goes on without it. ", v.ID, act)
	}
	fmt.Fprintf(&b, "The buttons on the **%s** check run do the same. A push to the branch makes this request stale. "+
		"Digest of this request: `%s` (the console and the API show the same).\n", ApprovalCheck, v.ShortDigest())
	return b.String()
}

// requestBody is what the comment and the check run show of v: the
// command, the reason, every sentence of the value and its files.
func requestBody(v approval.Request) string {
	var b strings.Builder
	lang := "sh"
	if v.Tool != nil {
		lang = "json"
	}
	fmt.Fprintf(&b, "```%s\n%s\n```\n\n", lang, fence(v.Command))
	// What calls for care comes first, before the agent's own words.
	warnings, rest := v.Parts()
	for _, s := range warnings {
		b.WriteString(sentenceBlock(v, s))
	}
	if reason := strings.TrimSpace(v.Reason); reason != "" {
		fmt.Fprintf(&b, "**Why:** %s\n\n", prose(reason))
	}
	for _, s := range rest {
		b.WriteString(sentenceBlock(v, s))
	}
	if len(v.Files) > 0 {
		b.WriteString("<details><summary>Files changed so far</summary>\n\n")
		for i, c := range v.Files {
			if i == approval.MaxFilesShown {
				fmt.Fprintf(&b, "- and %d more\n", len(v.Files)-i)
				break
			}
			fmt.Fprintf(&b, "- %s (+%d −%d)\n", code(c.Path), c.Added, c.Deleted)
		}
		b.WriteString("\n</details>\n\n")
	}
	return b.String()
}

// sentenceBlock is one sentence of v as a paragraph, with the manifests'
// diff after the setup's.
func sentenceBlock(v approval.Request, s approval.Sentence) string {
	out := icon[s.Kind] + markdown(s) + "\n\n"
	if s.Kind == approval.KindSetup && v.Setup.Diff != "" {
		out += fmt.Sprintf("<details open><summary>The manifests' changes</summary>\n\n```diff\n%s```\n\n</details>\n\n", fence(v.Setup.Diff))
	}
	return out
}

// icon marks a request's sentences in Markdown as the comment always did.
var icon = map[string]string{
	approval.KindFork:         "⚠️ ",
	approval.KindNoSandbox:    "⚠️ ",
	approval.KindNetwork:      "🌐 ",
	approval.KindSetup:        "📦 ",
	approval.KindSetupAnyway:  "📦 ",
	approval.KindSetupPrivate: "📦 ",
	approval.KindFilesAnyway:  "⚠️ ",
	approval.KindTool:         "⚠️ ",
}

// markdown is a sentence in the comment's Markdown: values as code spans,
// logins as mentions (the fork's author is told), our stressed words bold.
func markdown(s approval.Sentence) string {
	var b strings.Builder
	for _, sp := range s.Spans {
		switch {
		case sp.Code:
			b.WriteString(code(sp.Text))
		case sp.Login:
			b.WriteString("@" + sp.Text)
		case sp.Strong:
			b.WriteString("**" + sp.Text + "**")
		default:
			b.WriteString(sp.Text)
		}
	}
	return b.String()
}

// maxStepsShown bounds the setup steps a status names: a monorepo's can
// be many, and the status is one comment.
const maxStepsShown = 8

// setupLine says what the repository's setup did before the last run.
func setupLine(s *pullwright.SetupRecord) string {
	var b strings.Builder
	var steps []string
	for i, st := range s.Steps {
		if i == maxStepsShown {
			steps = append(steps, fmt.Sprintf("and %d more", len(s.Steps)-i))
			break
		}
		steps = append(steps, code(clip(oneLine(st), 200)))
	}
	outcome := "done"
	if s.Failed {
		outcome = fmt.Sprintf("**failed** (exit code %d)", s.ExitCode)
	}
	fmt.Fprintf(&b, "📦 Setup %s in %s: %s", outcome, s.Duration.Round(100*time.Millisecond), strings.Join(steps, "; "))
	// Host names are what the setup asked for: the sandbox's words.
	hosts := func(list []string) string {
		shown := make([]string, len(list))
		for i, h := range list {
			shown[i] = code(h)
		}
		return strings.Join(shown, ", ")
	}
	if len(s.Reached) > 0 {
		fmt.Fprintf(&b, " · reached %s", hosts(s.Reached))
	}
	if len(s.Blocked) > 0 {
		fmt.Fprintf(&b, " · **blocked** %s", hosts(s.Blocked))
	}
	return b.String()
}

// RenderRequestSummary is the summary of the request's check runs: the
// request as shown, in full, and its answer once there is one.
func RenderRequestSummary(t Job) string {
	r := t.Request
	var s string
	if r.Shown != nil {
		s = fmt.Sprintf("Request `%s` of task %d on #%d (digest `%s`) asks to %s:\n\n", r.ID, t.ID, t.Issue, r.Shown.ShortDigest(), r.verb()) + requestBody(*r.Shown)
	} else {
		s = fmt.Sprintf("Request `%s` of task %d on #%d asks to run:\n\n```sh\n%s\n```\n", r.ID, t.ID, t.Issue, fence(r.Command))
		if reason := strings.TrimSpace(r.Reason); reason != "" {
			s += "\n**Why:** " + prose(reason) + "\n"
		}
	}
	if a := r.Answer; a != nil && r.Auto != "" {
		s += fmt.Sprintf("\n**Answer:** approved without asking, by this repository's auto_approve rule (%s)\n", r.Auto)
	} else if a != nil {
		s += fmt.Sprintf("\n**Answer:** %s by @%s", a.Verdict, a.By)
		if a.Reason != "" {
			s += ": " + line(t.Task, a.Reason)
		}
		s += "\n"
	}
	return s
}

// RunTitle sums up a run's result in a line.
func RunTitle(r *pullwright.RunResult) string {
	switch {
	case r.TimedOut:
		return fmt.Sprintf("Timed out after %s", r.Duration.Round(time.Millisecond))
	case r.OOMKilled:
		return "Killed: out of memory"
	}
	return fmt.Sprintf("Exit code %d after %s", r.ExitCode, r.Duration.Round(time.Millisecond))
}

// CheckpointMessage is the message of the commit made before a request.
func CheckpointMessage(t Job) string {
	return fmt.Sprintf("WIP: checkpoint before request %s\n\nThe agent asked to %s %s.\nRequested in #%d by @%s.\n",
		t.Request.ID, t.Request.verb(), defang(code(oneLine(t.Request.Command))), t.Issue, t.Requester.Login)
}

// StopMessage is the message of the commit that keeps a stopped task's work.
func StopMessage(t Job) string {
	return fmt.Sprintf("WIP: work so far, stopped\n\nThe task was stopped: %s.\nRequested in #%d by @%s.\n",
		defang(oneLine(t.Stop)), t.Issue, t.Requester.Login)
}

// code shows s as inline code whatever backticks it holds: the delimiter
// is one backtick longer than the longest run inside. Characters that do
// not show as themselves are written as their code points
// (policy.Escaped); line breaks and tabs, which git allows in names and
// which could end the span (a blank line ends any inline markup), are
// shown as U+FFFD.
func code(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, policy.Escaped(s))
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	d := strings.Repeat("`", longest+1)
	if longest > 0 {
		return d + " " + s + " " + d
	}
	return d + s + d
}

// fence keeps a command from closing the code block it is shown in, and
// shows what does not show as itself as its code point: a command never
// holds such characters (policy.CheckCommand), and if one ever did the
// maintainer would see it.
func fence(s string) string { return strings.ReplaceAll(policy.Escaped(s), "```", "`\u200d``") }

// guidanceLine names the repository's instruction files the agent was
// given, and those it was not, so that a maintainer knows what steered it.
func guidanceLine(g *GuidanceUsed, branch string) string {
	var used, left []string
	for _, f := range g.Files {
		switch {
		case f.Skipped != "":
			left = append(left, fmt.Sprintf("%s (%s)", code(f.Path), defang(oneLine(f.Skipped))))
		case f.Cut:
			used = append(used, code(f.Path)+" (cut short)")
		default:
			used = append(used, code(f.Path))
		}
	}
	if g.More > 0 {
		left = append(left, fmt.Sprintf("%s deeper in the tree (the %d nearest the root are read)", words.Count(g.More, "more file", "more files"), policy.MaxInstructionFiles))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Repository instructions from %s at %s: ", code(branch), code(words.Short(g.SHA)))
	if len(used) == 0 {
		b.WriteString("none given")
	} else {
		b.WriteString(strings.Join(used, ", "))
	}
	if len(left) > 0 {
		b.WriteString("; left out: " + strings.Join(left, ", "))
	}
	return b.String() + "."
}

// answerWords are the answers a status line offers for r: bare where a
// bare answer is taken, else with the request's id.
func answerWords(kind Kind, r *ExecRequest) string {
	if kind == KindReview {
		return fmt.Sprintf("`/approve %s` or the check run's Reject button", r.ID)
	}
	return "`/approve` or `/reject <reason>`"
}

// callTitle sums up an approved tool call's end in a line.
func callTitle(r *pullwright.RunResult) string {
	switch {
	case r.NotStarted:
		return "Not called"
	case r.ExitCode < 0:
		return "Interrupted: the server may have acted"
	case r.ExitCode != 0:
		return fmt.Sprintf("The call failed after %s", r.Duration.Round(time.Millisecond))
	}
	return fmt.Sprintf("Called; answered after %s", r.Duration.Round(time.Millisecond))
}
