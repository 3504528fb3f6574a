package fakegithub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// doAccept is do with an Accept header.
func doAccept(t *testing.T, method, url, auth, accept, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

type pullJSON struct {
	Number              int    `json:"number"`
	HTMLURL             string `json:"html_url"`
	Title               string `json:"title"`
	Body                string `json:"body"`
	State               string `json:"state"`
	Draft               bool   `json:"draft"`
	Locked              bool   `json:"locked"`
	Merged              bool   `json:"merged"`
	MaintainerCanModify bool   `json:"maintainer_can_modify"`
	User                struct{ Login, Type string }
	Head, Base          struct {
		Label, Ref, SHA string
		User            struct{ Login string }
		Repo            *struct {
			Name     string `json:"name"`
			FullName string `json:"full_name"`
			CloneURL string `json:"clone_url"`
			Fork     bool   `json:"fork"`
			Owner    struct{ Login string }
		}
	}
}

func TestAddPullRequest(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	s.AddIssue("acme", "widgets", Issue{Number: 1, Title: "an issue"})
	auth := mintToken(t, s, 1)
	s.CloneURL = func(owner, repo string) string { return "http://git.test/" + owner + "/" + repo + ".git" }

	same := s.AddPullRequest("acme", "widgets", PullRequestSeed{
		Title: "Same repo", Body: "b", Author: "bob", HeadRef: "topic", HeadSHA: "aaa", BaseSHA: "bbb", Draft: true,
	})
	fork := s.AddPullRequest("acme", "widgets", PullRequestSeed{
		Number: 9, Title: "From a fork", Author: "alice", HeadOwner: "alice", HeadRepo: "widgets", HeadRef: "fix",
		HeadSHA: "ccc", BaseRef: "trunk", MaintainerCanModify: true, Locked: true,
	})
	gone := s.AddPullRequest("acme", "widgets", PullRequestSeed{Title: "Deleted fork", HeadOwner: "carol", HeadRepo: "w", HeadRef: "x", HeadRepoDeleted: true, Merged: true})
	if same != 2 || fork != 9 || gone != 10 {
		t.Fatalf("numbers %d, %d, %d; want 2, 9, 10", same, fork, gone)
	}

	get := func(n int) pullJSON {
		t.Helper()
		resp, body := do(t, "GET", fmt.Sprintf("%s/repos/acme/widgets/pulls/%d", s.URL, n), auth, "")
		if resp.StatusCode != 200 {
			t.Fatalf("GET pull %d: %d %s", n, resp.StatusCode, body)
		}
		return decode[pullJSON](t, body)
	}
	p := get(same)
	if p.Title != "Same repo" || p.User.Login != "bob" || !p.Draft || p.State != "open" || p.Locked || p.Merged ||
		p.HTMLURL != "https://github.com/acme/widgets/pull/2" ||
		p.Head.Ref != "topic" || p.Head.SHA != "aaa" || p.Head.Label != "acme:topic" || p.Head.Repo == nil ||
		p.Head.Repo.FullName != "acme/widgets" || p.Head.Repo.Fork || p.Head.Repo.CloneURL != "http://git.test/acme/widgets.git" ||
		p.Base.Ref != "main" || p.Base.SHA != "bbb" || p.Base.Repo.FullName != "acme/widgets" {
		t.Errorf("same-repo pull = %+v", p)
	}
	p = get(fork)
	if p.User.Login != "alice" || !p.MaintainerCanModify || !p.Locked || p.Head.Label != "alice:fix" || p.Head.SHA != "ccc" ||
		p.Head.Repo == nil || p.Head.Repo.FullName != "alice/widgets" || !p.Head.Repo.Fork || p.Head.Repo.Owner.Login != "alice" ||
		p.Base.Ref != "trunk" || p.Base.Repo.FullName != "acme/widgets" || p.Base.Repo.Fork {
		t.Errorf("fork pull = %+v", p)
	}
	if p = get(gone); p.Head.Repo != nil || !p.Merged || p.State != "closed" {
		t.Errorf("pull from a deleted fork = %+v", p)
	}

	// The pull request is an issue too.
	resp, body := do(t, "GET", s.URL+"/repos/acme/widgets/issues/9", auth, "")
	if resp.StatusCode != 200 || !strings.Contains(body, `"pull_request"`) || !strings.Contains(body, `"locked":true`) {
		t.Errorf("issue 9: %d %s", resp.StatusCode, body)
	}
	s.SetPullHead("acme", "widgets", fork, "ddd")
	if p := get(fork); p.Head.SHA != "ddd" {
		t.Errorf("after SetPullHead head.sha = %q", p.Head.SHA)
	}
	prs := s.PullRequests("acme", "widgets")
	if len(prs) != 3 || prs[1].HeadOwner != "alice" || prs[1].HeadRepo != "widgets" || prs[1].HeadSHA != "ddd" || !prs[1].Locked || prs[1].Author != "alice" {
		t.Errorf("PullRequests = %+v", prs)
	}

	// The Refs hook reports the commits of a pull request without its own.
	var mu sync.Mutex
	var asked []string
	s.Refs = func(owner, repo, ref string) (string, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, owner+"/"+repo+"@"+ref)
		return "sha-of-" + ref, true, nil
	}
	resp, body = do(t, "POST", s.URL+"/repos/acme/widgets/pulls", auth, `{"title":"Bot","head":"pullwright/task-1","base":"main"}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	bot := decode[pullJSON](t, body)
	p = get(bot.Number)
	if p.User.Login != s.BotLogin() || p.Head.SHA != "sha-of-pullwright/task-1" || p.Base.SHA != "sha-of-main" ||
		p.Head.Repo.FullName != "acme/widgets" || p.Head.Label != "acme:pullwright/task-1" {
		t.Errorf("bot pull = %+v", p)
	}
	if strings.Join(asked, " ") != "acme/widgets@pullwright/task-1 acme/widgets@main" {
		t.Errorf("Refs asked for %q", asked)
	}
	s.Refs = func(owner, repo, ref string) (string, bool, error) { return "", false, fmt.Errorf("git broke") }
	if resp, body := do(t, "GET", fmt.Sprintf("%s/repos/acme/widgets/pulls/%d", s.URL, bot.Number), auth, ""); resp.StatusCode != 500 || !strings.Contains(body, "git broke") {
		t.Errorf("failing Refs hook: %d %s", resp.StatusCode, body)
	}
}

func TestPullDiff(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	auth := mintToken(t, s, 1)
	withSHA := s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadRef: "topic", HeadSHA: "aaa", BaseRef: "trunk"})
	branch := s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadRef: "topic"})
	fork := s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadOwner: "alice", HeadRepo: "widgets", HeadRef: "fix"})
	url := func(n int) string { return fmt.Sprintf("%s/repos/acme/widgets/pulls/%d", s.URL, n) }

	resp, body := doAccept(t, "GET", url(withSHA), auth, "application/vnd.github.diff", "")
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(body, "Diffs") {
		t.Errorf("without a Diffs hook: %d %s", resp.StatusCode, body)
	}
	s.Diffs = func(owner, repo, base, head string) (string, error) {
		if head == "boom" {
			return "", fmt.Errorf("no such commit")
		}
		return fmt.Sprintf("diff of %s/%s %s...%s\n", owner, repo, base, head), nil
	}
	tests := []struct {
		name   string
		n      int
		accept string
		want   string
	}{
		{"head sha", withSHA, "application/vnd.github.diff", "diff of acme/widgets trunk...aaa\n"},
		{"v3 media type", withSHA, "application/vnd.github.v3.diff", "diff of acme/widgets trunk...aaa\n"},
		{"head branch", branch, "application/vnd.github.v3.diff; charset=utf-8", "diff of acme/widgets main...topic\n"},
		{"fork head", fork, "application/vnd.github.diff", fmt.Sprintf("diff of acme/widgets main...refs/pull/%d/head\n", fork)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := doAccept(t, "GET", url(tt.n), auth, tt.accept, "")
			if resp.StatusCode != 200 || body != tt.want || !strings.Contains(resp.Header.Get("Content-Type"), "diff") {
				t.Errorf("diff: %d %q (%s), want %q", resp.StatusCode, body, resp.Header.Get("Content-Type"), tt.want)
			}
		})
	}
	if resp, body := doAccept(t, "GET", url(withSHA), auth, "application/vnd.github+json", ""); resp.StatusCode != 200 || !strings.HasPrefix(body, "{") {
		t.Errorf("JSON answer: %d %s", resp.StatusCode, body)
	}

	s.DiffTooLarge("acme", "widgets", withSHA, true)
	resp, body = doAccept(t, "GET", url(withSHA), auth, "application/vnd.github.diff", "")
	if resp.StatusCode != http.StatusNotAcceptable || !strings.Contains(body, "too_large") {
		t.Errorf("too large: %d %s", resp.StatusCode, body)
	}
	if resp, _ := doAccept(t, "GET", url(withSHA), auth, "application/json", ""); resp.StatusCode != 200 {
		t.Errorf("JSON of a pull request with a too large diff: %d", resp.StatusCode)
	}
	s.DiffTooLarge("acme", "widgets", withSHA, false)
	if resp, _ := doAccept(t, "GET", url(withSHA), auth, "application/vnd.github.diff", ""); resp.StatusCode != 200 {
		t.Errorf("after DiffTooLarge(false): %d", resp.StatusCode)
	}
	s.SetPullHead("acme", "widgets", withSHA, "boom")
	if resp, body := doAccept(t, "GET", url(withSHA), auth, "application/vnd.github.diff", ""); resp.StatusCode != 500 || !strings.Contains(body, "no such commit") {
		t.Errorf("failing hook: %d %s", resp.StatusCode, body)
	}
	if resp, _ := doAccept(t, "GET", url(99), auth, "application/vnd.github.diff", ""); resp.StatusCode != 404 {
		t.Errorf("diff of a missing pull request: %d", resp.StatusCode)
	}
}

type reviewJSON struct {
	ID           int64  `json:"id"`
	NodeID       string `json:"node_id"`
	InReplyTo    *int64 `json:"in_reply_to_id"`
	User         struct{ Login, Type string }
	Body         string `json:"body"`
	Path         string `json:"path"`
	Line         *int   `json:"line"`
	StartLine    *int   `json:"start_line"`
	OriginalLine *int   `json:"original_line"`
	Side         string `json:"side"`
	DiffHunk     string `json:"diff_hunk"`
	CommitID     string `json:"commit_id"`
	HTMLURL      string `json:"html_url"`
	ReviewID     int64  `json:"pull_request_review_id"`
	CreatedAt    string `json:"created_at"`
}

func TestReviewComments(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	auth := mintToken(t, s, 1)
	pr := s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadRef: "topic", HeadSHA: "aaa"})
	other := s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadRef: "other"})
	root := s.AddReviewComment("acme", "widgets", pr, ReviewComment{
		Author: "bob", Body: "off by one?", Path: "page.go", Line: 12, StartLine: 10, DiffHunk: "@@ -1 +1 @@", CommitID: "aaa",
	})
	reply := s.AddReviewComment("acme", "widgets", pr, ReviewComment{Author: "alice", Body: "yes", InReplyTo: root})
	old := s.AddReviewComment("acme", "widgets", pr, ReviewComment{Author: "bob", Body: "old", Path: "a.go", Line: 3, Outdated: true})
	otherRoot := s.AddReviewComment("acme", "widgets", other, ReviewComment{Body: "elsewhere", Path: "x", Line: 1})

	list := s.URL + fmt.Sprintf("/repos/acme/widgets/pulls/%d/comments", pr)
	resp, body := do(t, "GET", list, auth, "")
	if resp.StatusCode != 200 {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	cs := decode[[]reviewJSON](t, body)
	if len(cs) != 3 {
		t.Fatalf("listed %d comments: %s", len(cs), body)
	}
	r0, r1, r2 := cs[0], cs[1], cs[2]
	if r0.ID != root || r0.InReplyTo != nil || r0.User.Login != "bob" || r0.User.Type != "User" || r0.Line == nil || *r0.Line != 12 ||
		r0.StartLine == nil || *r0.StartLine != 10 || r0.Side != "RIGHT" || r0.DiffHunk != "@@ -1 +1 @@" || r0.CommitID != "aaa" ||
		r0.HTMLURL != fmt.Sprintf("https://github.com/acme/widgets/pull/%d#discussion_r%d", pr, root) || r0.NodeID == "" || r0.ReviewID == 0 || r0.CreatedAt == "" {
		t.Errorf("root = %+v", r0)
	}
	if r1.ID != reply || r1.InReplyTo == nil || *r1.InReplyTo != root || r1.Path != "page.go" || r1.Line == nil || *r1.Line != 12 || r1.DiffHunk != r0.DiffHunk {
		t.Errorf("reply = %+v", r1)
	}
	if r2.ID != old || r2.Line != nil || r2.OriginalLine == nil || *r2.OriginalLine != 3 {
		t.Errorf("outdated = %+v", r2)
	}
	if !strings.Contains(body, `"line":null`) || !strings.Contains(body, `"performed_via_github_app":null`) {
		t.Errorf("list lacks null fields: %s", body)
	}

	// Replies: only to a thread's first comment, and only in its pull request.
	replies := func(n int, id int64) string {
		return fmt.Sprintf("%s/repos/acme/widgets/pulls/%d/comments/%d/replies", s.URL, n, id)
	}
	tests := []struct {
		name, method, url, body string
		want                    int
		wantBody                string
	}{
		{"reply to a reply", "POST", replies(pr, reply), `{"body":"x"}`, 422, "is a reply"},
		{"reply in another pull request", "POST", replies(other, root), `{"body":"x"}`, 404, "Not Found"},
		{"reply to a missing comment", "POST", replies(pr, 1), `{"body":"x"}`, 404, "Not Found"},
		{"reply without a body", "POST", replies(pr, root), `{}`, 422, "missing_field"},
		{"reply by in_reply_to to another PR's comment", "POST", list, fmt.Sprintf(`{"body":"x","in_reply_to":%d}`, otherRoot), 404, "Not Found"},
		{"new comment without commit", "POST", list, `{"body":"x","path":"a","line":1}`, 422, "commit_id"},
		{"edit a missing comment", "PATCH", s.URL + "/repos/acme/widgets/pulls/comments/1", `{"body":"x"}`, 404, "Not Found"},
		{"bad reaction", "POST", fmt.Sprintf("%s/repos/acme/widgets/pulls/comments/%d/reactions", s.URL, root), `{"content":"meh"}`, 422, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, tt.method, tt.url, auth, tt.body)
			if resp.StatusCode != tt.want || !strings.Contains(body, tt.wantBody) {
				t.Errorf("%d %s; want %d with %q", resp.StatusCode, body, tt.want, tt.wantBody)
			}
		})
	}

	resp, body = do(t, "POST", replies(pr, root), auth, `{"body":"done <!-- pullwright:t -->"}`)
	if resp.StatusCode != 201 {
		t.Fatalf("reply: %d %s", resp.StatusCode, body)
	}
	mine := decode[reviewJSON](t, body)
	if mine.User.Login != s.BotLogin() || mine.User.Type != "Bot" || mine.InReplyTo == nil || *mine.InReplyTo != root || mine.Path != "page.go" {
		t.Errorf("reply = %+v", mine)
	}
	resp, body = do(t, "POST", list, auth, fmt.Sprintf(`{"body":"via in_reply_to","in_reply_to":%d,"path":"ignored"}`, root))
	if resp.StatusCode != 201 || decode[reviewJSON](t, body).Path != "page.go" {
		t.Errorf("reply via in_reply_to: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "POST", list, auth, `{"body":"new","path":"b.go","line":4,"commit_id":"aaa"}`)
	if resp.StatusCode != 201 || decode[reviewJSON](t, body).InReplyTo != nil {
		t.Errorf("new comment: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "PATCH", fmt.Sprintf("%s/repos/acme/widgets/pulls/comments/%d", s.URL, mine.ID), auth, `{"body":"edited"}`)
	if resp.StatusCode != 200 || decode[reviewJSON](t, body).Body != "edited" {
		t.Errorf("edit: %d %s", resp.StatusCode, body)
	}
	for range 2 {
		do(t, "POST", fmt.Sprintf("%s/repos/acme/widgets/pulls/comments/%d/reactions", s.URL, root), auth, `{"content":"eyes"}`)
	}
	if got := s.ReviewReactions("acme", "widgets", root); len(got) != 1 || got[0] != "eyes" {
		t.Errorf("ReviewReactions = %q", got)
	}
	if got := s.Reactions("acme", "widgets", root); got != nil {
		t.Errorf("a review comment's reactions show as an issue comment's: %q", got)
	}
	// The issue comment endpoints do not reach review comments.
	if resp, _ := do(t, "PATCH", fmt.Sprintf("%s/repos/acme/widgets/issues/comments/%d", s.URL, root), auth, `{"body":"x"}`); resp.StatusCode != 404 {
		t.Errorf("issue comment edit of a review comment: %d", resp.StatusCode)
	}

	stored := s.ReviewComments("acme", "widgets", pr)
	if len(stored) != 6 {
		t.Fatalf("ReviewComments = %+v", stored)
	}
	if m := stored[3]; m.ID != mine.ID || m.Body != "edited" || m.Edits != 1 || m.InReplyTo != root || m.Author != s.BotLogin() || m.AuthorType != "Bot" {
		t.Errorf("stored reply = %+v", m)
	}
	if got := s.ReviewComments("acme", "widgets", other); len(got) != 1 || got[0].ID != otherRoot {
		t.Errorf("other pull request's comments = %+v", got)
	}
}

func TestReviewCommentsPagination(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	auth := mintToken(t, s, 1)
	pr := s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadRef: "topic"})
	for i := range 150 {
		s.AddReviewComment("acme", "widgets", pr, ReviewComment{Body: fmt.Sprint(i), Path: "a", Line: i + 1})
	}
	url := fmt.Sprintf("%s/repos/acme/widgets/pulls/%d/comments?per_page=100", s.URL, pr)
	var got []reviewJSON
	for page := 0; url != ""; page++ {
		resp, body := do(t, "GET", url, auth, "")
		if resp.StatusCode != 200 || page > 2 {
			t.Fatalf("page %d: %d", page, resp.StatusCode)
		}
		got = append(got, decode[[]reviewJSON](t, body)...)
		url = ""
		for _, l := range strings.Split(resp.Header.Get("Link"), ",") {
			if u, ok := strings.CutSuffix(strings.TrimSpace(l), `>; rel="next"`); ok {
				url = strings.TrimPrefix(u, "<")
			}
		}
	}
	if len(got) != 150 || got[0].Body != "0" || got[149].Body != "149" {
		t.Errorf("got %d comments", len(got))
	}
}

func TestReviewThreadsGraphQL(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	s.AddInstallation(2, "acme/other")
	auth := mintToken(t, s, 1)
	pr := s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadRef: "topic"})
	var roots []int64
	for i := range 102 {
		id := s.AddReviewComment("acme", "widgets", pr, ReviewComment{Author: "bob", Body: fmt.Sprint("thread ", i), Path: "a.go", Line: i + 1, Outdated: i == 1})
		roots = append(roots, id)
	}
	reply := s.AddReviewComment("acme", "widgets", pr, ReviewComment{Author: "alice", Body: "re", InReplyTo: roots[0]})
	s.ResolveThread("acme", "widgets", pr, roots[0])

	const q = `query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes { isResolved isOutdated comments(first: 1) { nodes { databaseId } } }
      }
    }
  }
}`
	type page struct {
		Data struct {
			Repository *struct {
				PullRequest *struct {
					ReviewThreads struct {
						PageInfo struct {
							HasNextPage bool
							EndCursor   *string
						}
						Nodes []struct {
							IsResolved, IsOutdated bool
							Comments               struct {
								Nodes []struct{ DatabaseID int64 }
							}
						}
					}
				}
			}
		}
		Errors []struct{ Type, Message string }
	}
	ask := func(auth, query string, vars map[string]any) page {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		resp, body := do(t, "POST", s.GraphQLURL, auth, string(b))
		if resp.StatusCode != 200 {
			t.Fatalf("graphql: %d %s", resp.StatusCode, body)
		}
		return decode[page](t, body)
	}
	vars := map[string]any{"owner": "acme", "name": "widgets", "number": pr, "cursor": nil}
	first := ask(auth, q, vars)
	th := first.Data.Repository.PullRequest.ReviewThreads
	if len(first.Errors) != 0 || len(th.Nodes) != 100 || !th.PageInfo.HasNextPage || th.PageInfo.EndCursor == nil {
		t.Fatalf("first page: %+v", first)
	}
	n0, n1 := th.Nodes[0], th.Nodes[1]
	if !n0.IsResolved || n0.IsOutdated || len(n0.Comments.Nodes) != 1 || n0.Comments.Nodes[0].DatabaseID != roots[0] {
		t.Errorf("thread 0 = %+v (reply %d must not be listed with first: 1)", n0, reply)
	}
	if n1.IsResolved || !n1.IsOutdated || n1.Comments.Nodes[0].DatabaseID != roots[1] {
		t.Errorf("thread 1 = %+v", n1)
	}
	vars["cursor"] = *th.PageInfo.EndCursor
	second := ask(auth, q, vars)
	th = second.Data.Repository.PullRequest.ReviewThreads
	if len(th.Nodes) != 2 || th.PageInfo.HasNextPage || th.Nodes[1].Comments.Nodes[0].DatabaseID != roots[101] {
		t.Errorf("second page: %+v", second)
	}

	// Inline arguments, all comments of a thread.
	inline := fmt.Sprintf(`{ repository(owner: "acme", name: "widgets") { pullRequest(number: %d) { reviewThreads(first: 1) { nodes { comments(first: 10) { nodes { databaseId } } } } } } }`, pr)
	got := ask(auth, inline, nil).Data.Repository.PullRequest.ReviewThreads.Nodes
	if len(got) != 1 || len(got[0].Comments.Nodes) != 2 || got[0].Comments.Nodes[1].DatabaseID != reply {
		t.Errorf("inline query: %+v", got)
	}

	errs := []struct {
		name, auth string
		vars       map[string]any
		query      string
		want       string
	}{
		{"repository outside the installation", mintToken(t, s, 2), vars, q, "Could not resolve to a Repository"},
		{"missing pull request", auth, map[string]any{"owner": "acme", "name": "widgets", "number": 99}, q, "Could not resolve to a PullRequest"},
		{"bad cursor", auth, map[string]any{"owner": "acme", "name": "widgets", "number": pr, "cursor": "nope"}, q, "valid cursor"},
		{"too many", auth, vars, strings.Replace(q, "first: 100", "first: 101", 1), "exceeds the `first` limit"},
		{"no first", auth, vars, strings.Replace(q, "first: 100, ", "", 1), "must provide a `first`"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			got := ask(tt.auth, tt.query, tt.vars)
			if len(got.Errors) != 1 || !strings.Contains(got.Errors[0].Message, tt.want) {
				t.Errorf("errors = %+v, want %q", got.Errors, tt.want)
			}
		})
	}
	s.FailNextGraphQL(1, "Something went wrong")
	if got := ask(auth, q, vars); len(got.Errors) != 1 || got.Errors[0].Message != "Something went wrong" {
		t.Errorf("injected fault: %+v", got)
	}
}

func TestPullRequestsAcrossRepositories(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	s.AddInstallation(2, "alice/widgets")
	auth := mintToken(t, s, 1)
	// alice/widgets is a fork of acme/widgets, known through its pull request.
	s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadOwner: "alice", HeadRepo: "widgets", HeadRef: "fix"})

	// A pull request in the fork, from a branch of the base repository:
	// the installation does not include the fork.
	forkPulls := s.URL + "/repos/alice/widgets/pulls"
	resp, body := do(t, "POST", forkPulls, auth, `{"title":"t","head":"acme:pullwright/task-1","base":"fix"}`)
	if resp.StatusCode != 403 || !strings.Contains(body, "Resource not accessible by integration") {
		t.Errorf("create in an uncovered fork: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, "GET", forkPulls, auth, ""); resp.StatusCode != 404 {
		t.Errorf("list in a private uncovered fork: %d", resp.StatusCode)
	}
	s.SetPublic("alice", "widgets", true)
	if resp, body := do(t, "GET", forkPulls+"?head=acme:pullwright/task-1", auth, ""); resp.StatusCode != 200 || body != "[]\n" {
		t.Errorf("list in a public uncovered fork: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, "POST", forkPulls, auth, `{"title":"t","head":"acme:pullwright/task-1","base":"fix"}`); resp.StatusCode != 403 {
		t.Errorf("create in a public uncovered fork: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "PATCH", forkPulls+"/1", auth, `{"title":"x"}`); resp.StatusCode != 403 {
		t.Errorf("write to a public uncovered fork: %d", resp.StatusCode)
	}
	if len(s.PullRequests("alice", "widgets")) != 0 {
		t.Fatal("a refused request made a pull request")
	}

	// With an installation on the fork, the cross-repository head works
	// for creation and for the head filter of the list.
	fauth := mintToken(t, s, 2)
	resp, body = do(t, "POST", forkPulls, fauth, `{"title":"t","head":"acme:pullwright/task-1","base":"fix"}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create in the fork: %d %s", resp.StatusCode, body)
	}
	p := decode[pullJSON](t, body)
	if p.Head.Label != "acme:pullwright/task-1" || p.Head.Repo == nil || p.Head.Repo.FullName != "acme/widgets" || p.Base.Repo.FullName != "alice/widgets" || !p.Base.Repo.Fork {
		t.Errorf("cross-repository pull = %+v", p)
	}
	for query, want := range map[string]int{"head=acme:pullwright/task-1": 1, "head=ACME:pullwright/task-1": 1, "head=alice:pullwright/task-1": 0, "head=pullwright/task-1": 0} {
		resp, body := do(t, "GET", forkPulls+"?"+query, fauth, "")
		if got := len(decode[[]pullJSON](t, body)); resp.StatusCode != 200 || got != want {
			t.Errorf("list ?%s: %d, %d pull requests; want %d", query, resp.StatusCode, got, want)
		}
	}
	stored := s.PullRequests("alice", "widgets")
	if len(stored) != 1 || stored[0].HeadOwner != "acme" || stored[0].HeadRepo != "widgets" || stored[0].Head != "pullwright/task-1" || stored[0].Author != s.BotLogin() {
		t.Errorf("stored = %+v", stored)
	}
}

func TestDeleteReviewComment(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	auth := mintToken(t, s, 1)
	pr := s.AddPullRequest("acme", "widgets", PullRequestSeed{HeadRef: "topic", HeadSHA: "aaa"})
	keep := s.AddReviewComment("acme", "widgets", pr, ReviewComment{Body: "keep", Path: "a.go", Line: 1})
	gone := s.AddReviewComment("acme", "widgets", pr, ReviewComment{Body: "gone", Path: "a.go", Line: 2})
	s.DeleteReviewComment("acme", "widgets", pr, gone)

	if cs := s.ReviewComments("acme", "widgets", pr); len(cs) != 1 || cs[0].ID != keep {
		t.Errorf("comments after the delete = %+v", cs)
	}
	for _, tt := range []struct{ method, path, body string }{
		{"POST", fmt.Sprintf("/repos/acme/widgets/pulls/%d/comments/%d/replies", pr, gone), `{"body":"x"}`},
		{"PATCH", fmt.Sprintf("/repos/acme/widgets/pulls/comments/%d", gone), `{"body":"x"}`},
		{"POST", fmt.Sprintf("/repos/acme/widgets/pulls/comments/%d/reactions", gone), `{"content":"eyes"}`},
	} {
		if resp, body := do(t, tt.method, s.URL+tt.path, auth, tt.body); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s on a deleted comment: %d %s", tt.method, tt.path, resp.StatusCode, body)
		}
	}
	if resp, body := do(t, "POST", s.URL+fmt.Sprintf("/repos/acme/widgets/pulls/%d/comments/%d/replies", pr, keep), auth, `{"body":"x"}`); resp.StatusCode != http.StatusCreated {
		t.Errorf("reply to the kept comment: %d %s", resp.StatusCode, body)
	}
	defer func() {
		if recover() == nil {
			t.Error("deleting a missing comment did not panic")
		}
	}()
	s.DeleteReviewComment("acme", "widgets", pr, gone)
}
