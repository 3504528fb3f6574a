package ghapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/gitserver"
)

func TestPullRequest(t *testing.T) {
	e := newEnv(t)
	same := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{
		Title: "Speed up", Body: "b", Author: "bob", HeadRef: "topic", HeadSHA: "aaa", BaseSHA: "bbb", Draft: true,
	})
	fork := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{
		Title: "Fix", Author: "alice", HeadOwner: "Alice", HeadRepo: "widgets", HeadRef: "fix", HeadSHA: "ccc",
		BaseRef: "trunk", MaintainerCanModify: true, Locked: true,
	})
	caseOnly := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadOwner: "ACME", HeadRepo: "Widgets", HeadRef: "x"})
	gone := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadOwner: "carol", HeadRepo: "widgets", HeadRef: "y", HeadRepoDeleted: true, Merged: true})

	tests := []struct {
		name string
		n    int
		want pullwright.Pull
	}{
		{"same repository", same, pullwright.Pull{
			Number: same, URL: fmt.Sprintf("https://github.com/acme/widgets/pull/%d", same), Title: "Speed up", Body: "b",
			Author: "bob", State: "open", Draft: true, HeadRef: "topic", HeadSHA: "aaa", HeadRepo: "acme/widgets",
			HeadCloneURL: "https://github.com/acme/widgets.git", BaseRef: "main", BaseSHA: "bbb", BaseRepo: "acme/widgets",
		}},
		{"fork", fork, pullwright.Pull{
			Number: fork, URL: fmt.Sprintf("https://github.com/acme/widgets/pull/%d", fork), Title: "Fix",
			Author: "alice", State: "open", Locked: true, HeadRef: "fix", HeadSHA: "ccc", HeadRepo: "Alice/widgets",
			HeadCloneURL: "https://github.com/Alice/widgets.git", BaseRef: "trunk", BaseRepo: "acme/widgets", Fork: true,
			MaintainerCanModify: true,
		}},
		{"same repository spelled differently", caseOnly, pullwright.Pull{
			Number: caseOnly, URL: fmt.Sprintf("https://github.com/acme/widgets/pull/%d", caseOnly),
			Author: "octocat", State: "open", HeadRef: "x", HeadRepo: "ACME/Widgets",
			HeadCloneURL: "https://github.com/ACME/Widgets.git", BaseRef: "main", BaseRepo: "acme/widgets",
		}},
		{"deleted fork", gone, pullwright.Pull{
			Number: gone, URL: fmt.Sprintf("https://github.com/acme/widgets/pull/%d", gone),
			Author: "octocat", State: "closed", Merged: true, HeadRef: "y", BaseRef: "main", BaseRepo: "acme/widgets", Fork: true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.app.PullRequest(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			got.NodeID = ""
			if got != tt.want {
				t.Errorf("PullRequest =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
	_, err := e.app.PullRequest(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 404)
	if StatusCode(err) != http.StatusNotFound || !strings.Contains(err.Error(), "get pull request acme/widgets#404") {
		t.Errorf("missing pull request: %v", err)
	}
}

func TestPullRequestDiff(t *testing.T) {
	e := newEnv(t)
	const diff = "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+é\n"
	e.fake.Diffs = func(owner, repo, base, head string) (string, error) { return diff, nil }
	n := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadRef: "topic", HeadSHA: "aaa"})
	big := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadRef: "big", HeadSHA: "bbb"})
	e.fake.DiffTooLarge(owner, repo, big, true)
	unprocessable := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadRef: "u", HeadSHA: "ccc"})
	e.fake.FailNext("GET", fmt.Sprintf("/repos/acme/widgets/pulls/%d", unprocessable), 1, http.StatusUnprocessableEntity, nil)
	firstLine := len("diff --git a/a b/a\n")

	tests := []struct {
		name      string
		n, max    int
		want      string
		wantTrunc bool
	}{
		{"fits", n, 1000, diff, false},
		{"exactly", n, len(diff), diff, false},
		{"no bound", n, 0, diff, false},
		{"cut at a line end", n, len(diff) - 2, strings.TrimSuffix(diff, "+é\n"), true},
		{"cut right after a line", n, firstLine, diff[:firstLine], true},
		{"first line too long", n, 6, "diff -", true},
		{"too large (406)", big, 1000, "", true},
		{"unprocessable (422)", unprocessable, 1000, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, trunc, err := e.app.PullRequestDiff(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, tt.n, tt.max)
			if err != nil || got != tt.want || trunc != tt.wantTrunc {
				t.Errorf("PullRequestDiff(max %d) = %q, %v, %v; want %q, %v, nil", tt.max, got, trunc, err, tt.want, tt.wantTrunc)
			}
		})
	}
	// A cut never splits a character: "+é" is 3 bytes, cut after 2.
	if got := cutDiff([]byte("+\xc3")); got != "+" {
		t.Errorf("cutDiff split a character: %q", got)
	}
	if !strings.Contains(e.logs.String(), "will not render the pull request's diff") {
		t.Error("a refused diff was not logged")
	}
	_, _, err := e.app.PullRequestDiff(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 404, 10)
	if StatusCode(err) != http.StatusNotFound || !strings.Contains(err.Error(), "get diff of pull request acme/widgets#404") {
		t.Errorf("missing pull request: %v", err)
	}
}

// TestForkPullFromGitServer reads a fork's pull request, and its diff, from
// real repositories: the fork's head is reachable in the base repository
// under refs/pull/N/head, as on GitHub.
func TestForkPullFromGitServer(t *testing.T) {
	git := gitserver.New(t, gitserver.Options{})
	git.CreateRepo(t, owner, repo, "main", map[string]string{"a.txt": "one\ntwo\n"})
	if err := git.Fork(owner, repo, "alice", repo); err != nil {
		t.Fatal(err)
	}
	git.Push(t, "alice", repo, "fix", map[string]string{"a.txt": "one\n2\n"}, "Fix two")
	e := newEnv(t)
	e.fake.Diffs, e.fake.Refs, e.fake.CloneURL = git.Diff, git.Ref, git.CloneURL
	n := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadOwner: "alice", HeadRepo: repo, HeadRef: "fix"})
	head, err := git.MirrorPullHead(owner, repo, n, "alice", repo, "fix")
	if err != nil {
		t.Fatal(err)
	}

	p, err := e.app.PullRequest(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, n)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := git.RevParse(t, owner, repo, "main")
	if !p.Fork || p.HeadSHA != head || p.BaseSHA != base || p.HeadCloneURL != git.CloneURL("alice", repo) {
		t.Errorf("pull = %+v; want head %s, base %s", p, head, base)
	}
	d, cut, err := e.app.PullRequestDiff(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, n, 1<<20)
	if err != nil || cut || !strings.Contains(d, "\n-two\n+2\n") {
		t.Errorf("diff = %q, %v, %v", d, cut, err)
	}
}

func TestReviewThreads(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pr := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadRef: "topic", HeadSHA: "aaa"})
	if th, err := e.app.ReviewThreads(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr); err != nil || th != nil {
		t.Fatalf("no comments: %+v, %v", th, err)
	}
	if n := e.count("POST", "/graphql"); n != 0 {
		t.Errorf("GraphQL asked %d times for a pull request without comments", n)
	}

	a := e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{
		Author: "bob", Body: "off by one", Path: "page.go", Line: 12, StartLine: 10, DiffHunk: "@@ -1 +1 @@", CommitID: "aaa",
	})
	b := e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Author: "bob", Body: "old", Path: "x.go", Line: 3, Outdated: true})
	a1 := e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Author: "alice", Body: "agreed", InReplyTo: a})
	// Enough comments for two pages of REST and two of GraphQL.
	for i := range 150 {
		e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Body: fmt.Sprint("nit ", i), Path: "y.go", Line: i + 1})
	}
	a2 := e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Author: "pullwright-test[bot]", Body: "on it", InReplyTo: a})
	e.fake.ResolveThread(owner, repo, pr, b)
	last := e.fake.ReviewComments(owner, repo, pr)[152].ID // "nit 149"
	e.fake.ResolveThread(owner, repo, pr, last)

	listed := e.count("GET", fmt.Sprintf("/repos/acme/widgets/pulls/%d/comments", pr))
	th, err := e.app.ReviewThreads(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr)
	if err != nil {
		t.Fatal(err)
	}
	if len(th) != 152 {
		t.Fatalf("%d threads, want 152", len(th))
	}
	t0 := th[0]
	if t0.Resolved || t0.Outdated || len(t0.Comments) != 3 || t0.Comments[0].ID != a || t0.Comments[1].ID != a1 || t0.Comments[2].ID != a2 {
		t.Errorf("thread 0 = %+v", t0)
	}
	c := t0.Comments[0]
	if c.Author != "bob" || c.AuthorType != "User" || c.Body != "off by one" || c.Path != "page.go" || c.Line != 12 || c.StartLine != 10 ||
		c.Side != "RIGHT" || c.DiffHunk != "@@ -1 +1 @@" || c.CommitID != "aaa" || c.InReplyTo != 0 ||
		c.URL != fmt.Sprintf("https://github.com/acme/widgets/pull/%d#discussion_r%d", pr, a) || c.CreatedAt.IsZero() {
		t.Errorf("first comment = %+v", c)
	}
	if r := t0.Comments[2]; r.InReplyTo != a || r.AuthorType != "Bot" || r.Path != "page.go" {
		t.Errorf("reply = %+v", r)
	}
	if t1 := th[1]; !t1.Resolved || !t1.Outdated || t1.Comments[0].Line != 0 || t1.Comments[0].OriginalLine != 3 {
		t.Errorf("thread 1 = %+v", t1)
	}
	if tl := th[151]; !tl.Resolved || tl.Comments[0].ID != last {
		t.Errorf("last thread = %+v", tl)
	}
	for i, x := range th[2:151] {
		if x.Resolved || len(x.Comments) != 1 {
			t.Errorf("thread %d = %+v", i+2, x)
		}
	}
	if n := e.count("GET", fmt.Sprintf("/repos/acme/widgets/pulls/%d/comments", pr)) - listed; n != 2 {
		t.Errorf("%d pages of review comments read, want 2", n)
	}
	if n := e.count("POST", "/graphql"); n != 2 {
		t.Errorf("%d GraphQL pages read, want 2", n)
	}

	// GraphQL fails: the threads come back, all open, and a warning says so.
	e.fake.FailNextGraphQL(1, "Something went wrong while executing your query.")
	th, err = e.app.ReviewThreads(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr)
	if err != nil || len(th) != 152 {
		t.Fatalf("with GraphQL failing: %d threads, %v", len(th), err)
	}
	for i, x := range th {
		if x.Resolved {
			t.Errorf("thread %d resolved without GraphQL", i)
		}
	}
	if !th[1].Outdated {
		t.Error("outdated thread lost without GraphQL")
	}
	if logs := e.logs.String(); !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "could not learn which review threads are resolved") {
		t.Errorf("no warning logged: %s", logs)
	}

	// REST failing is an error.
	e.fake.FailNext("GET", fmt.Sprintf("/repos/acme/widgets/pulls/%d/comments", pr), 1, http.StatusForbidden, nil)
	if _, err := e.app.ReviewThreads(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr); StatusCode(err) != http.StatusForbidden || !strings.Contains(err.Error(), "list review comments of acme/widgets#") {
		t.Errorf("REST failing: %v", err)
	}
}

func TestGroupThreadsOrphanReply(t *testing.T) {
	e := newEnv(t)
	pr := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadRef: "topic"})
	root := e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Body: "r", Path: "a", Line: 1})
	e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Body: "reply", InReplyTo: root})
	// Only the reply is on the page read (the first comment was deleted, or
	// lies past the bound): it still makes a thread.
	e.app.pageSize = 1
	gh, err := e.app.client(inst)
	if err != nil {
		t.Fatal(err)
	}
	cs, _, err := e.app.reviewComments(context.Background(), gh, owner, repo, pr)
	if err != nil || len(cs) != 2 {
		t.Fatalf("reviewComments = %d, %v", len(cs), err)
	}
	th := groupThreads(cs[1:])
	if len(th) != 1 || len(th[0].Comments) != 1 || th[0].Comments[0].InReplyTo != root {
		t.Errorf("orphan reply threads = %+v", th)
	}
}

func TestReplyInThread(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pr := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadRef: "topic"})
	root := e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Author: "bob", Body: "why?", Path: "a.go", Line: 4})
	other := e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Author: "bob", Body: "and this", Path: "b.go", Line: 9})
	// A user quoting the bot's marker is not the bot's reply.
	e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Author: "mallory", Body: "> " + Marker("task-1/review"), InReplyTo: root})
	replies := fmt.Sprintf("/repos/acme/widgets/pulls/%d/comments/%d/replies", pr, root)

	id, err := e.app.ReplyInThread(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr, root, "task-1/review", "Fixed in abc123.\n")
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.app.ReplyInThread(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr, root, "task-1/review", "Fixed in def456.")
	if err != nil || again != id {
		t.Fatalf("second reply = %d, %v; want %d edited", again, err, id)
	}
	// The same marker in another thread is another reply.
	elsewhere, err := e.app.ReplyInThread(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr, other, "task-1/review", "Here too.")
	if err != nil || elsewhere == id {
		t.Fatalf("reply in another thread = %d, %v", elsewhere, err)
	}

	var mine []fakegithub.ReviewComment
	for _, c := range e.fake.ReviewComments(owner, repo, pr) {
		if c.Author == e.fake.BotLogin() {
			mine = append(mine, c)
		}
	}
	if len(mine) != 2 {
		t.Fatalf("bot replies = %+v, want 2", mine)
	}
	if r := mine[0]; r.ID != id || r.InReplyTo != root || r.Edits != 1 || r.Body != "Fixed in def456.\n\n"+Marker("task-1/review") {
		t.Errorf("reply = %+v", r)
	}
	if r := mine[1]; r.InReplyTo != other || r.Edits != 0 {
		t.Errorf("reply elsewhere = %+v", r)
	}
	if n := e.count("POST", replies); n != 1 {
		t.Errorf("%d replies posted in the first thread, want 1", n)
	}

	// A create whose answer was lost: the retried step edits it.
	e.fake.FailNextAfterApply("POST", replies, 1, http.StatusBadGateway, nil)
	if _, err := e.app.ReplyInThread(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr, root, "task-1/thread-2", "v1"); StatusCode(err) != http.StatusBadGateway {
		t.Fatalf("first attempt: %v, want the 502", err)
	}
	if _, err := e.app.ReplyInThread(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr, root, "task-1/thread-2", "v2"); err != nil {
		t.Fatalf("retried attempt: %v", err)
	}
	n := 0
	for _, c := range e.fake.ReviewComments(owner, repo, pr) {
		if strings.Contains(c.Body, Marker("task-1/thread-2")) {
			n++
			if !strings.HasPrefix(c.Body, "v2") || c.Edits != 1 {
				t.Errorf("retried reply = %+v", c)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d replies carry the marker after a retry, want 1", n)
	}

	// Too long a body is cut, the marker kept.
	long := strings.Repeat("x", MaxBodyChars+10)
	lid, err := e.app.ReplyInThread(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr, root, "task-1/long", long)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range e.fake.ReviewComments(owner, repo, pr) {
		if c.ID == lid && (!strings.HasSuffix(c.Body, Marker("task-1/long")) || !strings.Contains(c.Body, "was cut")) {
			t.Errorf("long reply ends %q", c.Body[len(c.Body)-200:])
		}
	}

	// Replying to a reply is refused by GitHub.
	if _, err := e.app.ReplyInThread(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr, id, "task-1/x", "no"); StatusCode(err) != http.StatusUnprocessableEntity ||
		!strings.Contains(err.Error(), fmt.Sprintf("reply in review thread %d of acme/widgets#%d", id, pr)) {
		t.Errorf("reply to a reply: %v", err)
	}
}

func TestAddReviewReaction(t *testing.T) {
	e := newEnv(t)
	pr := e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadRef: "topic"})
	c := e.fake.AddReviewComment(owner, repo, pr, fakegithub.ReviewComment{Body: "x", Path: "a", Line: 1})
	for range 2 {
		if err := e.app.AddReviewReaction(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, c, "eyes"); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.fake.ReviewReactions(owner, repo, c); len(got) != 1 || got[0] != "eyes" {
		t.Errorf("reactions = %q", got)
	}
	err := e.app.AddReviewReaction(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 1, "eyes")
	if StatusCode(err) != http.StatusNotFound || !strings.Contains(err.Error(), `add reaction "eyes" to review comment 1 in acme/widgets`) {
		t.Errorf("missing comment: %v", err)
	}
}

func TestOpenPullRequestAcrossRepositories(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tok, err := e.app.Token(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	// alice/widgets is a fork of acme/widgets that the installation does
	// not cover; the bot proposes its branch to the fork's branch.
	e.fake.AddPullRequest(owner, repo, fakegithub.PullRequestSeed{HeadOwner: "alice", HeadRepo: repo, HeadRef: "fix"})
	pr := pullwright.NewPullRequest{Title: "Fix", Body: "b", Head: "acme:pullwright/task-3", Base: "fix"}

	tests := []struct {
		name      string
		public    bool
		wantPOST  int
		wantState int
	}{
		// A private fork does not exist for the token: the head lookup is 404.
		{"private fork", false, 0, http.StatusNotFound},
		// A public one can be read, and the creation is refused.
		{"public fork", true, 1, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.fake.SetPublic("alice", repo, tt.public)
			before := e.count("POST", "/repos/alice/widgets/pulls")
			_, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: "alice", Name: repo}, pr)
			if !errors.Is(err, pullwright.ErrNotPermitted) || StatusCode(err) != tt.wantState {
				t.Fatalf("err = %v (status %d), want pullwright.ErrNotPermitted with %d", err, StatusCode(err), tt.wantState)
			}
			if !strings.Contains(err.Error(), "open pull request acme:pullwright/task-3 → fix in alice/widgets") || strings.Contains(err.Error(), tok) {
				t.Errorf("error = %v", err)
			}
			if n := e.count("POST", "/repos/alice/widgets/pulls") - before; n != tt.wantPOST {
				t.Errorf("%d creations tried, want %d", n, tt.wantPOST)
			}
		})
	}

	// A refusal that is a rate limit is not a lack of access.
	e.fake.FailNext("POST", "/repos/acme/widgets/pulls", 1, http.StatusForbidden, http.Header{"Retry-After": {"99999"}})
	if _, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Title: "t", Head: "h", Base: "main"}); err == nil || errors.Is(err, pullwright.ErrNotPermitted) {
		t.Errorf("rate limited: %v, want an error that is not pullwright.ErrNotPermitted", err)
	}
	// Nor is a validation failure.
	e.fake.FailNext("POST", "/repos/acme/widgets/pulls", 1, http.StatusUnprocessableEntity, nil)
	if _, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Title: "t", Head: "h2", Base: "main"}); StatusCode(err) != http.StatusUnprocessableEntity || errors.Is(err, pullwright.ErrNotPermitted) {
		t.Errorf("422: %v, want an error that is not pullwright.ErrNotPermitted", err)
	}

	// Once the installation covers the fork, the cross-repository head works,
	// and a second call finds the pull request by it.
	e.fake.AddInstallation(inst, "alice/"+repo)
	first, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: "alice", Name: repo}, pr)
	if err != nil || !first.Created {
		t.Fatalf("open in the fork = %+v, %v", first, err)
	}
	pr.Title = "Fix (v2)"
	second, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: "alice", Name: repo}, pr)
	if err != nil || second.Created || second.Number != first.Number {
		t.Fatalf("again = %+v, %v; want #%d found", second, err, first.Number)
	}
	got := e.fake.PullRequests("alice", repo)
	if len(got) != 1 || got[0].HeadOwner != "acme" || got[0].HeadRepo != repo || got[0].Head != "pullwright/task-3" || got[0].Base != "fix" || got[0].Title != "Fix (v2)" {
		t.Errorf("pull requests in the fork = %+v", got)
	}
	for _, r := range e.fake.Requests() {
		if r.Method == "GET" && r.Path == "/repos/alice/widgets/pulls" && !strings.Contains(r.Query, "head=acme%3Apullwright%2Ftask-3") {
			t.Errorf("lookup query %q does not filter on head=acme:pullwright/task-3", r.Query)
		}
	}
}
