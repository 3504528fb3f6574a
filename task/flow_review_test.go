package task_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

func (w *world) reviewPull(focus string, by string) *task.Task {
	return w.ask(&task.Task{Kind: task.KindReview, Issue: 7, IsPR: true, CommentID: 71, Requester: person(by), Instructions: focus})
}

// TestReview drives /agent review through the flow: the agent gets the
// diff and the lines comments may go on, the one review is posted on the
// head it reviewed with its comments on the diff's lines (and the rest in
// its body), and nothing is pushed. Asked again after a push, it reviews
// only what changed since the head it reviewed.
func TestReview(t *testing.T) {
	const prDiff = "diff --git a/feature.go b/feature.go\n--- a/feature.go\n+++ b/feature.go\n@@ -0,0 +1,5 @@\n+package feature\n+\n+func F() int {\n+\treturn 1\n+}\n" +
		"diff --git a/util.go b/util.go\n--- a/util.go\n+++ b/util.go\n@@ -10,3 +10,4 @@\n a\n+b\n c\n d\n"
	fix := "\treturn 2"
	draft := &pullwright.ReviewDraft{Summary: "F returns the wrong number.", Comments: []pullwright.DraftComment{
		{Path: "feature.go", Line: 4, Body: "Should be 2.", Suggestion: &fix},
		{Path: "feature.go", StartLine: 3, Line: 5, Body: "Document F."},
		{Path: "util.go", Line: 2, Body: "Outside the diff."},
	}}
	finished := tasktest.Turn{Progress: task.Progress{Finished: true, Title: "Review", Summary: draft.Summary, Review: draft}}
	cases := []struct {
		name  string
		by    string
		setup func(w *world, head string) // before the review is asked
		state task.State
		said  string // in the status comment, or the reply
		check func(t *testing.T, w *world, rv *task.Task, head string)
	}{
		{
			name: "a first review", by: "alice", state: task.Done, said: "posted [a review](",
			check: func(t *testing.T, w *world, rv *task.Task, head string) {
				posted := w.gh.Reviews[7]
				if len(posted) != 1 {
					t.Fatalf("%d reviews posted, want 1", len(posted))
				}
				p := posted[0]
				if p.CommitID != head || p.Marker != fmt.Sprintf("task-%d-review", rv.ID) {
					t.Errorf("review on %s with marker %q, want on %s", p.CommitID, p.Marker, head)
				}
				want := []pullwright.NewReviewComment{
					{Path: "feature.go", Line: 4, Body: "Should be 2.\n\n```suggestion\n\treturn 2\n```"},
					{Path: "feature.go", Line: 5, StartLine: 3, Body: "Document F."},
				}
				if !equalComments(p.Comments, want) {
					t.Errorf("comments = %+v, want %+v", p.Comments, want)
				}
				for _, s := range []string{"Review of " + head[:12], "@alice", "looking at: the error paths", "F returns the wrong number.", "**`util.go:2`** (not in the diff)\n\nOutside the diff."} {
					if !strings.Contains(p.Body, s) {
						t.Errorf("body lacks %q:\n%s", s, p.Body)
					}
				}
				b := w.agent.Briefs[0].Reviewing
				if b == nil || b.Since != "" || b.Head != head || b.Focus != "the error paths" || b.Diff != prDiff {
					t.Fatalf("brief's review = %+v", b)
				}
				if want := []pullwright.LineRange{{Path: "feature.go", Start: 1, End: 5}, {Path: "util.go", Start: 10, End: 13}}; !equalRanges(b.Lines, want) {
					t.Errorf("lines = %+v, want %+v", b.Lines, want)
				}
				if status := w.gh.Comment(7, fmt.Sprintf("task-%d-status", rv.ID)).Text(); !strings.Contains(status, "with 2 line comments (1 more in its body") || strings.Contains(status, "branch `") {
					t.Errorf("status:\n%s", status)
				}
			},
		},
		{
			name: "again after a push: only what changed since", by: "alice", state: task.Done, said: "posted [a review](",
			setup: func(w *world, head string) {
				w.gh.Reviews = map[int][]tasktest.Review{7: {{NewReview: pullwright.NewReview{CommitID: w.base}, ID: 1, Marker: "task-99-review"}}}
			},
			check: func(t *testing.T, w *world, rv *task.Task, head string) {
				b := w.agent.Briefs[0].Reviewing
				if b.Since != w.base || !strings.Contains(b.Diff, "+++ b/feature.go") || strings.Contains(b.Diff, "util.go") {
					t.Fatalf("brief's review = %+v", b)
				}
				// util.go did not change since the head reviewed before.
				if want := []pullwright.LineRange{{Path: "feature.go", Start: 1, End: 5}}; !equalRanges(b.Lines, want) {
					t.Errorf("lines = %+v, want %+v", b.Lines, want)
				}
				p := w.gh.Reviews[7][1]
				if len(p.Comments) != 2 || !strings.Contains(p.Body, "Review of the changes since "+w.base[:12]) {
					t.Errorf("review = %+v", p)
				}
			},
		},
		{
			name: "GitHub refuses a line comment: all in the body", by: "alice", state: task.Done, said: "GitHub refused them on their lines",
			setup: func(w *world, head string) {
				// A line GitHub counts otherwise than the bot does.
				w.gh.FailNext("PostReview", fmt.Errorf("post a review of #7: %w: 422 Pull request review thread line must be part of the diff", pullwright.ErrInvalid))
			},
			check: func(t *testing.T, w *world, rv *task.Task, head string) {
				posted := w.gh.Reviews[7]
				if len(posted) != 1 || len(posted[0].Comments) != 0 || w.gh.Asked["PostReview"] != 2 {
					t.Fatalf("reviews %+v after %d posts", posted, w.gh.Asked["PostReview"])
				}
				for _, s := range []string{"F returns the wrong number.", "GitHub did not take", "**`feature.go:4`**", "```suggestion\n\treturn 2\n```", "**`feature.go:3-5`**", "**`util.go:2`**"} {
					if !strings.Contains(posted[0].Body, s) {
						t.Errorf("body lacks %q:\n%s", s, posted[0].Body)
					}
				}
				if status := w.gh.Comment(7, fmt.Sprintf("task-%d-status", rv.ID)).Text(); !strings.Contains(status, "with 0 line comments (3 more in its body: GitHub refused them") {
					t.Errorf("status:\n%s", status)
				}
			},
		},
		{
			name: "GitHub refuses the review in its body too", by: "alice", state: task.Failed, said: "GitHub refused the review",
			setup: func(w *world, head string) {
				for range 2 {
					w.gh.FailNext("PostReview", fmt.Errorf("post a review of #7: %w: 422 Validation Failed", pullwright.ErrInvalid))
				}
			},
			check: func(t *testing.T, w *world, rv *task.Task, head string) {
				if len(w.gh.Reviews[7]) != 0 || w.gh.Asked["PostReview"] != 2 {
					t.Errorf("reviews %+v after %d posts", w.gh.Reviews[7], w.gh.Asked["PostReview"])
				}
			},
		},
		{
			name: "the same head again: done, saying so", by: "alice", state: task.Done, said: "Done**: I reviewed ",
			setup: func(w *world, head string) {
				w.gh.Reviews = map[int][]tasktest.Review{7: {{NewReview: pullwright.NewReview{CommitID: head}, ID: 1, Marker: "task-99-review"}}}
			},
			check: func(t *testing.T, w *world, rv *task.Task, head string) {
				status := w.gh.Comment(7, fmt.Sprintf("task-%d-status", rv.ID)).Text()
				if rv.Error != "" || !strings.Contains(status, head[:12]+" already, and the pull request has not changed since") {
					t.Errorf("error %q, status:\n%s", rv.Error, status)
				}
				if len(w.gh.Reviews[7]) != 1 || len(w.agent.Briefs) != 0 {
					t.Errorf("reviewed again: %+v, %d briefs", w.gh.Reviews[7], len(w.agent.Briefs))
				}
				// Nothing ran, so nothing counts against the rates.
				if rv.AdmittedMS != 0 {
					t.Errorf("admitted at %d", rv.AdmittedMS)
				}
			},
		},
		{
			// Finished on its last turn: the review says it may not cover
			// everything.
			name: "a review at the end of its budget", by: "alice", state: task.Done, said: "posted [a review](",
			setup: func(w *world, head string) {
				last := finished
				last.Progress.OutOfBudget = "turns: 40 of 40 used"
				w.agent.Script = []tasktest.Turn{last}
			},
			check: func(t *testing.T, w *world, rv *task.Task, head string) {
				if p := w.gh.Reviews[7]; len(p) != 1 || !strings.Contains(p[0].Body, "This review ended when the agent used up its budget (turns: 40 of 40 used), so it may not cover the whole change.") {
					t.Errorf("reviews %+v", p)
				}
			},
		},
		{
			name: "a reader may not ask", by: "mallory", state: task.Done, said: "sorry",
			check: func(t *testing.T, w *world, rv *task.Task, head string) {
				if len(w.gh.Reviews[7]) != 0 || len(w.agent.Briefs) != 0 {
					t.Errorf("a reader's review ran: %+v", w.gh.Reviews)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, info := pullWorld(t, false, map[string]string{"feature.go": "package feature\n\nfunc F() int {\n\treturn 1\n}\n"})
			w.gh.Diffs[7] = prDiff
			w.agent.Script = []tasktest.Turn{finished}
			if tc.setup != nil {
				tc.setup(w, info.HeadSHA)
			}
			rv := w.reviewPull("the error paths", tc.by)
			w.drain()
			got := w.want(rv.ID, tc.state)
			said := got.Error
			if c := w.gh.Comment(7, fmt.Sprintf("task-%d-status", rv.ID)); c != nil {
				said += c.Text()
			}
			if c := w.gh.Comment(7, fmt.Sprintf("task-%d-reply", rv.ID)); c != nil {
				said += c.Text()
			}
			if !strings.Contains(said, tc.said) {
				t.Errorf("said %q, want %q", said, tc.said)
			}
			if len(w.ws.Pushes) != 0 {
				t.Errorf("a review pushed: %+v", w.ws.Pushes)
			}
			if tasktest.Job(got).Workdir != "" {
				if _, err := os.Stat(tasktest.Job(got).Workdir); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the workspace %s is left: %v", tasktest.Job(got).Workdir, err)
				}
			}
			if tc.check != nil {
				tc.check(t, w, got, info.HeadSHA)
			}
		})
	}
}

func equalComments(a, b []pullwright.NewReviewComment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalRanges(a, b []pullwright.LineRange) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A review's request to run is asked, approved and run as a fix's is, on
// the head under review, and nothing is pushed.
func TestAReviewAsksToRun(t *testing.T) {
	w, info := pullWorld(t, false, map[string]string{"feature.go": "package feature\n"})
	w.gh.Diffs[7] = "diff --git a/feature.go b/feature.go\n--- a/feature.go\n+++ b/feature.go\n@@ -0,0 +1 @@\n+package feature\n"
	w.agent.Script = []tasktest.Turn{
		pending("go test ./...", nil),
		{Progress: task.Progress{Finished: true, Review: &pullwright.ReviewDraft{Summary: "The tests pass."}}},
	}
	rv := w.reviewPull("", "alice")
	w.drain()
	parked := w.want(rv.ID, task.AwaitingApproval)
	if tasktest.Job(parked).Request.SHA != info.HeadSHA || w.gh.Comment(7, fmt.Sprintf("task-%d-request-%s", rv.ID, tasktest.Job(parked).Request.ID)) == nil {
		t.Fatalf("request %+v on %s", tasktest.Job(parked).Request, info.HeadSHA)
	}
	w.clock.Advance(time.Minute)
	approve := w.ask(&task.Task{Kind: task.KindApprove, Issue: 7, CommentID: 72, Requester: person("maint"), Answering: task.AnswerRef{RequestID: tasktest.Job(parked).Request.ID}})
	w.drain()
	w.want(approve.ID, task.Done)
	done := w.want(rv.ID, task.Done)
	if len(w.runner.Specs) != 1 || len(tasktest.Job(done).Runs) != 1 || tasktest.Job(done).Runs[0].SHA != info.HeadSHA {
		t.Errorf("runs %+v, specs %d", tasktest.Job(done).Runs, len(w.runner.Specs))
	}
	if len(w.ws.Pushes) != 0 {
		t.Errorf("a review pushed: %+v", w.ws.Pushes)
	}
	if got := w.gh.Reviews[7]; len(got) != 1 || got[0].CommitID != info.HeadSHA || !strings.Contains(got[0].Body, "The tests pass.") {
		t.Errorf("reviews %+v", got)
	}
}
