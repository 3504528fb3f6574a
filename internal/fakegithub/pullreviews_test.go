package fakegithub

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestPullReviews(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	auth := mintToken(t, s, 1)
	n := s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadRef: "topic", HeadSHA: "aaa", BaseRef: "trunk"})
	s.Diffs = func(owner, repo, base, head string) (string, error) {
		return "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n@@ -10,2 +11,3 @@\n k\n+l\n m\n", nil
	}
	url := fmt.Sprintf("%s/repos/acme/widgets/pulls/%d/reviews", s.URL, n)
	tests := []struct {
		name     string
		comments string
		status   int
		want     string
	}{
		{"no comments", `[]`, 200, `"state":"COMMENTED"`},
		{"a line in a hunk", `[{"path":"x.go","line":2,"side":"RIGHT","body":"b"}]`, 200, `"commit_id":"aaa"`},
		{"a range in one hunk", `[{"path":"x.go","start_line":11,"start_side":"RIGHT","line":13,"side":"RIGHT","body":"b"}]`, 200, `"state":"COMMENTED"`},
		{"a line between hunks", `[{"path":"x.go","line":7,"side":"RIGHT","body":"b"}]`, 422, "Pull request review thread line must be part of the diff"},
		{"another file", `[{"path":"y.go","line":1,"side":"RIGHT","body":"b"}]`, 422, "must be part of the diff"},
		{"a range across hunks", `[{"path":"x.go","start_line":3,"start_side":"RIGHT","line":12,"side":"RIGHT","body":"b"}]`, 422, "start line must be part of the same hunk as the line."},
		{"a range of one line", `[{"path":"x.go","start_line":2,"start_side":"RIGHT","line":2,"side":"RIGHT","body":"b"}]`, 422, "start line must precede the end line."},
		{"one bad comment refuses the whole review", `[{"path":"x.go","line":2,"side":"RIGHT","body":"ok"},{"path":"x.go","line":20,"side":"RIGHT","body":"b"}]`, 422, "must be part of the diff"},
	}
	stored := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := doAccept(t, "POST", url, auth, "application/vnd.github+json",
				`{"commit_id":"aaa","body":"summary","event":"COMMENT","comments":`+tt.comments+`}`)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) {
				t.Fatalf("%d %s, want %d with %q", resp.StatusCode, body, tt.status, tt.want)
			}
			if tt.status == 200 {
				stored++
			}
			if got := len(s.PullReviews("acme", "widgets", n)); got != stored {
				t.Fatalf("%d reviews stored, want %d", got, stored)
			}
		})
	}
	if got := s.ReviewComments("acme", "widgets", n); len(got) != 2 || got[1].StartLine != 11 || got[1].Line != 13 {
		t.Errorf("review comments = %+v", got)
	}

	// A hunk's added line that reads like a file's header is a line.
	s.Diffs = func(owner, repo, base, head string) (string, error) {
		return "diff --git a/m.md b/m.md\n--- a/m.md\n+++ b/m.md\n@@ -1,1 +1,3 @@\n a\n+++ b/other\n+c\n@@ -5,0 +8 @@\n+d\n", nil
	}
	resp, body := doAccept(t, "POST", url, auth, "application/vnd.github+json",
		`{"commit_id":"aaa","body":"summary","event":"COMMENT","comments":[{"path":"m.md","line":8,"side":"RIGHT","body":"b"}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a comment after a line like a header: %d %s", resp.StatusCode, body)
	}
	stored++
	resp, body = doAccept(t, "GET", url, auth, "application/vnd.github+json", "")
	if resp.StatusCode != http.StatusOK || strings.Count(body, "#pullrequestreview-") != stored {
		t.Errorf("list: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(body, `"login":"`+s.BotLogin()+`"`) {
		t.Errorf("list does not name the bot: %s", body)
	}
}
