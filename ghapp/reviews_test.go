package ghapp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
)

// TestPostReview posts a review through go-github to the fake: one
// request with event COMMENT, the commit, the body tagged with the marker,
// lines on the right side and start_line only for a range; BotReviews
// finds it by its marker, and a review GitHub refuses (a line off the
// diff) is pullwright.ErrInvalid.
func TestPostReview(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r := pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}
	pr := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadRef: "topic", HeadSHA: "abc"})
	e.fake.Diffs = func(owner, repo, base, head string) (string, error) {
		return "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,2 +1,4 @@\n x\n+y\n+z\n w\n", nil
	}
	rv := pullwright.NewReview{CommitID: "abc", Body: "Summary.", Comments: []pullwright.NewReviewComment{
		{Path: "a.go", Line: 2, Body: "One line."},
		{Path: "a.go", StartLine: 2, Line: 3, Body: "A range."},
	}}
	posted, err := e.app.PostReview(ctx, r, pr, "task-4-review", rv)
	if err != nil {
		t.Fatal(err)
	}
	if posted.CommitID != "abc" || !strings.Contains(posted.URL, "#pullrequestreview-") || posted.Marker != "task-4-review" {
		t.Errorf("posted = %+v", posted)
	}
	var sent map[string]any
	for _, q := range e.fake.Requests() {
		if q.Method == "POST" && strings.HasSuffix(q.Path, "/reviews") {
			if err := json.Unmarshal(q.Body, &sent); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := `{"body":"Summary.\n\n<!-- pullwright:task-4-review -->","comments":[{"body":"One line.","line":2,"path":"a.go","side":"RIGHT"},{"body":"A range.","line":3,"path":"a.go","side":"RIGHT","start_line":2,"start_side":"RIGHT"}],"commit_id":"abc","event":"COMMENT"}`
	var wantMap map[string]any
	if err := json.Unmarshal([]byte(want), &wantMap); err != nil {
		t.Fatal(err)
	}
	if got, w := mustJSON(t, sent), mustJSON(t, wantMap); got != w {
		t.Errorf("sent %s\nwant %s", got, w)
	}
	all, err := e.app.BotReviews(ctx, r, pr)
	if err != nil || len(all) != 1 || all[0].Marker != "task-4-review" || all[0].CommitID != "abc" || all[0].URL != posted.URL {
		t.Fatalf("BotReviews = %+v, %v", all, err)
	}

	rv.Comments = []pullwright.NewReviewComment{{Path: "a.go", Line: 9, Body: "Off the diff."}}
	if _, err := e.app.PostReview(ctx, r, pr, "task-5-review", rv); !errors.Is(err, pullwright.ErrInvalid) || !strings.Contains(err.Error(), "must be part of the diff") {
		t.Errorf("a line off the diff: %v", err)
	}
	if all, _ := e.app.BotReviews(ctx, r, pr); len(all) != 1 {
		t.Errorf("a refused review was stored: %+v", all)
	}
}

func TestMarkerKey(t *testing.T) {
	for body, want := range map[string]string{
		"text\n\n" + Marker("task-1-review"):          "task-1-review",
		"text\n\n" + Marker("task-1-review") + "\n\n": "task-1-review",
		Marker("a") + " and more":                     "",
		"no marker":                                   "",
	} {
		if got := markerKey(body); got != want {
			t.Errorf("markerKey(%q) = %q, want %q", body, got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
