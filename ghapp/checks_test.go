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
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func TestUpsertCheckRun(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	approve := pullwright.CheckAction{Label: "Approve", Description: "Run `go test ./...` in the sandbox", Identifier: "approve"}
	reject := pullwright.CheckAction{Label: "Reject", Description: "Do not run it", Identifier: "reject"}

	steps := []struct {
		name    string
		cr      pullwright.CheckRun // ID filled from the previous step unless wantNew
		wantNew bool
		want    fakegithub.CheckRun // fields compared: Status, Conclusion, DetailsURL, ExternalID, Title, Summary, Actions, Updates
	}{
		{
			name: "create in progress",
			cr:   pullwright.CheckRun{Name: "pullwright / approval", HeadSHA: sha, Status: "in_progress", ExternalID: "task-1", Title: "Working", Summary: "The agent is reading the code."},
			want: fakegithub.CheckRun{Status: "in_progress", ExternalID: "task-1", Title: "Working", Summary: "The agent is reading the code."},
		},
		{
			name: "update to action_required with two buttons",
			cr: pullwright.CheckRun{
				Name: "pullwright / approval", Status: "completed", Conclusion: "action_required",
				DetailsURL: "https://github.com/acme/widgets/issues/1#issuecomment-9",
				Title:      "Approval needed", Summary: "The agent wants to run `go test ./...`.", Text: "details",
				Actions: []pullwright.CheckAction{approve, reject},
			},
			want: fakegithub.CheckRun{
				Status: "completed", Conclusion: "action_required", ExternalID: "task-1",
				DetailsURL: "https://github.com/acme/widgets/issues/1#issuecomment-9",
				Title:      "Approval needed", Summary: "The agent wants to run `go test ./...`.", Text: "details",
				Actions: []fakegithub.CheckAction{
					{Label: "Approve", Description: "Run `go test ./...` in the sandbox", Identifier: "approve"},
					{Label: "Reject", Description: "Do not run it", Identifier: "reject"},
				},
				Updates: 1,
			},
		},
		{
			name: "conclusion alone completes; no actions removes the buttons; output kept",
			cr:   pullwright.CheckRun{Conclusion: "success"},
			want: fakegithub.CheckRun{
				Status: "completed", Conclusion: "success", ExternalID: "task-1",
				DetailsURL: "https://github.com/acme/widgets/issues/1#issuecomment-9",
				Title:      "Approval needed", Summary: "The agent wants to run `go test ./...`.", Text: "details",
				Updates: 2,
			},
		},
	}
	var id int64
	for _, st := range steps {
		cr := st.cr
		cr.ID = id
		got, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, cr)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if id != 0 && got != id {
			t.Fatalf("%s: id %d, want %d", st.name, got, id)
		}
		id = got
		fc, ok := e.fake.CheckRun(id)
		if !ok {
			t.Fatalf("%s: fake has no check run %d", st.name, id)
		}
		w := st.want
		if fc.Name != "pullwright / approval" || fc.HeadSHA != sha || fc.Status != w.Status || fc.Conclusion != w.Conclusion ||
			fc.DetailsURL != w.DetailsURL || fc.ExternalID != w.ExternalID || fc.Title != w.Title || fc.Summary != w.Summary ||
			fc.Text != w.Text || fc.Updates != w.Updates || fmt.Sprint(fc.Actions) != fmt.Sprint(w.Actions) {
			t.Errorf("%s: fake check run = %+v\nwant %+v", st.name, fc, w)
		}
	}
	if n := e.count("POST", "/repos/acme/widgets/check-runs"); n != 1 {
		t.Errorf("POST check-runs made %d times, want 1", n)
	}
	if n := e.count("PATCH", fmt.Sprintf("/repos/acme/widgets/check-runs/%d", id)); n != 2 {
		t.Errorf("PATCH check-runs made %d times, want 2", n)
	}

	// A check run that is gone is created again when HeadSHA and Name are known.
	again, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.CheckRun{ID: 987654, Name: "pullwright / approval", HeadSHA: sha, Status: "queued"})
	if err != nil || again == 0 || again == id {
		t.Fatalf("update of a gone check run = %d, %v; want a new id", again, err)
	}
	if _, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.CheckRun{ID: 987654, Status: "queued"}); StatusCode(err) != http.StatusNotFound ||
		!strings.Contains(err.Error(), "update check run 987654") {
		t.Errorf("update of a gone check run without HeadSHA: %v, want a 404 naming the run", err)
	}
	if got := len(e.fake.CheckRuns(owner, repo)); got != 2 {
		t.Errorf("fake has %d check runs, want 2", got)
	}
}

func TestCheckRunOutputTruncated(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("é", MaxCheckOutputChars) // 2 bytes each
	id, err := e.app.UpsertCheckRun(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.CheckRun{
		Name: "n", HeadSHA: sha, Title: "t", Summary: long, Text: strings.Repeat("x", MaxCheckOutputChars+1),
	})
	if err != nil {
		t.Fatal(err)
	}
	fc, _ := e.fake.CheckRun(id)
	for name, v := range map[string]string{"summary": fc.Summary, "text": fc.Text} {
		if len(v) > MaxCheckOutputChars || len(v) < MaxCheckOutputChars-len(checkTruncatedNote)-1 || !strings.HasSuffix(v, checkTruncatedNote) {
			t.Errorf("%s: %d bytes, note %v", name, len(v), strings.HasSuffix(v, checkTruncatedNote))
		}
	}
	if !strings.HasPrefix(fc.Summary, "éé") || strings.ContainsRune(fc.Summary, '\uFFFD') {
		t.Error("summary was not cut on a rune boundary")
	}
}

func TestCheckRunValidation(t *testing.T) {
	e := newEnv(t)
	ok := pullwright.CheckAction{Label: "Approve", Description: "Run it", Identifier: "approve"}
	n := func(c rune, k int) string { return strings.Repeat(string(c), k) }
	base := pullwright.CheckRun{Name: "n", HeadSHA: sha, Status: "completed", Conclusion: "action_required", DetailsURL: "https://example.com/x"}
	with := func(f func(*pullwright.CheckRun)) pullwright.CheckRun {
		cr := base
		cr.Actions = []pullwright.CheckAction{ok}
		f(&cr)
		return cr
	}
	tests := []struct {
		name      string
		cr        pullwright.CheckRun
		wantField string // "" → accepted
	}{
		{"at the limits (multi-byte counts as one)", with(func(c *pullwright.CheckRun) {
			c.Actions = []pullwright.CheckAction{ok, ok, {Label: n('é', 20), Description: n('ß', 40), Identifier: n('i', 20)}}
		}), ""},
		{"four actions", with(func(c *pullwright.CheckRun) { c.Actions = []pullwright.CheckAction{ok, ok, ok, ok} }), "Actions"},
		{"label 21", with(func(c *pullwright.CheckRun) {
			c.Actions = []pullwright.CheckAction{ok, {Label: n('l', 21), Description: "d", Identifier: "i"}}
		}), "Actions[1].Label"},
		{"identifier 21", with(func(c *pullwright.CheckRun) { c.Actions[0].Identifier = n('i', 21) }), "Actions[0].Identifier"},
		{"description 41", with(func(c *pullwright.CheckRun) { c.Actions[0].Description = n('d', 41) }), "Actions[0].Description"},
		{"empty description", with(func(c *pullwright.CheckRun) { c.Actions[0].Description = "" }), "Actions[0].Description"},
		{"action_required without details URL", with(func(c *pullwright.CheckRun) { c.DetailsURL = "" }), "DetailsURL"},
		{"completed without conclusion", with(func(c *pullwright.CheckRun) { c.Conclusion = "" }), "Conclusion"},
		{"conclusion while in progress", with(func(c *pullwright.CheckRun) { c.Status = "in_progress" }), "Conclusion"},
		{"unknown conclusion", with(func(c *pullwright.CheckRun) { c.Conclusion = "stale" }), "Conclusion"},
		{"unknown status", with(func(c *pullwright.CheckRun) { c.Status, c.Conclusion = "running", "" }), "Status"},
		{"create without name", with(func(c *pullwright.CheckRun) { c.Name = "" }), "Name"},
		{"create without head sha", with(func(c *pullwright.CheckRun) { c.HeadSHA = "" }), "HeadSHA"},
		{"text without title", with(func(c *pullwright.CheckRun) { c.Summary, c.Text = "s", "t" }), "Title"},
		{"title without summary", with(func(c *pullwright.CheckRun) { c.Title = "t" }), "Summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.fake.Requests())
			_, err := e.app.UpsertCheckRun(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, tt.cr)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("error = %v, want a *FieldError for %s", err, tt.wantField)
			}
			if !strings.Contains(err.Error(), "acme/widgets") {
				t.Errorf("error %q does not name the repository", err)
			}
			if got := len(e.fake.Requests()); got != before {
				t.Errorf("%d requests made for an invalid check run", got-before)
			}
		})
	}
}

func TestDraftPullRequestReady(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pr, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Title: "Fix", Body: "b", Head: "pullwright/task-2", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Created || !pr.Draft || !strings.HasPrefix(pr.NodeID, "PR_") {
		t.Fatalf("opened %+v, want a created draft with a node id", pr)
	}
	if prs := e.fake.PullRequests(owner, repo); !prs[0].Draft {
		t.Fatalf("fake PR %+v is not a draft", prs[0])
	}
	for i := range 2 { // the second call finds it ready: no mutation
		if err := e.app.MarkReadyForReview(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr.Number); err != nil {
			t.Fatalf("MarkReadyForReview #%d: %v", i+1, err)
		}
		if prs := e.fake.PullRequests(owner, repo); prs[0].Draft {
			t.Fatalf("after MarkReadyForReview #%d the fake PR is still a draft", i+1)
		}
	}
	if n := e.count("POST", "/graphql"); n != 1 {
		t.Errorf("POST /graphql made %d times, want 1", n)
	}
	for _, r := range e.fake.Requests() {
		if r.Path == "/graphql" && (r.Auth != "token" || !strings.Contains(string(r.Body), `"variables":{"id":"`+pr.NodeID+`"}`)) {
			t.Errorf("GraphQL request auth %s body %s", r.Auth, r.Body)
		}
	}

	// Re-opening the same head updates and reports the current state.
	again, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Title: "Fix v2", Body: "b2", Head: "pullwright/task-2", Base: "main", Draft: true})
	if err != nil || again.Created || again.Draft || again.NodeID != pr.NodeID || again.Number != pr.Number {
		t.Errorf("re-open = %+v, %v; want the same PR, no longer a draft", again, err)
	}

	// UpdatePullRequest.
	if err := e.app.UpdatePullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr.Number, "Fix v3", ""); err != nil {
		t.Fatal(err)
	}
	if p := e.fake.PullRequests(owner, repo)[0]; p.Title != "Fix v3" || p.Body != "b2" {
		t.Errorf("after title-only update: %+v", p)
	}
	if err := e.app.UpdatePullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr.Number, "", strings.Repeat("y", MaxBodyChars+10)); err != nil {
		t.Fatalf("long body: %v", err)
	}
	if p := e.fake.PullRequests(owner, repo)[0]; p.Title != "Fix v3" || !strings.HasSuffix(p.Body, truncatedNote) {
		t.Errorf("after body-only update: title %q, body ends %q", p.Title, p.Body[len(p.Body)-40:])
	}
	if err := e.app.UpdatePullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, 404, "t", "b"); StatusCode(err) != http.StatusNotFound || !strings.Contains(err.Error(), "acme/widgets#404") {
		t.Errorf("update of a missing PR: %v", err)
	}
}

func TestMarkReadyForReviewErrors(t *testing.T) {
	tests := []struct {
		name       string
		inject     func(f *fakegithub.Server)
		number     int // 0: the draft PR
		want       string
		wantStatus int
		wantGQL    bool
	}{
		{
			name:    "GraphQL error surfaced",
			inject:  func(f *fakegithub.Server) { f.FailNextGraphQL(1, "Something went wrong while executing your query.") },
			want:    "Something went wrong while executing your query.",
			wantGQL: true,
		},
		{
			name:       "GraphQL endpoint failing",
			inject:     func(f *fakegithub.Server) { f.FailNext("POST", "/graphql", 1, http.StatusBadGateway, nil) },
			want:       "502",
			wantStatus: http.StatusBadGateway,
		},
		{
			name:       "no such pull request",
			number:     99,
			want:       "acme/widgets#99",
			wantStatus: http.StatusNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			pr, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Title: "Fix", Head: "h", Base: "main", Draft: true})
			if err != nil {
				t.Fatal(err)
			}
			if tt.inject != nil {
				tt.inject(e.fake)
			}
			num := pr.Number
			if tt.number != 0 {
				num = tt.number
			}
			err = e.app.MarkReadyForReview(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, num)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "ready for review") {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
			if got := StatusCode(err); got != tt.wantStatus {
				t.Errorf("StatusCode = %d, want %d", got, tt.wantStatus)
			}
			var ge GraphQLErrors
			if errors.As(err, &ge) != tt.wantGQL {
				t.Errorf("errors.As(GraphQLErrors) = %v, want %v", !tt.wantGQL, tt.wantGQL)
			}
			if !e.fake.PullRequests(owner, repo)[0].Draft {
				t.Error("the PR is no longer a draft")
			}
		})
	}
}

func TestGraphQLURL(t *testing.T) {
	for base, want := range map[string]string{
		"https://api.github.com":             "https://api.github.com/graphql",
		"https://ghe.example.com/api/v3":     "https://ghe.example.com/api/graphql",
		"http://127.0.0.1:4444":              "http://127.0.0.1:4444/graphql",
		"http://127.0.0.1:4444/some/prefix":  "http://127.0.0.1:4444/some/prefix/graphql",
		"https://ghe.example.com/gh/api/v3":  "https://ghe.example.com/gh/api/graphql",
		"https://ghe.example.com/api/v3beta": "https://ghe.example.com/api/v3beta/graphql",
	} {
		if got := graphQLURL(base); got != want {
			t.Errorf("graphQLURL(%q) = %q, want %q", base, got, want)
		}
	}
}

func TestEnterpriseGraphQL(t *testing.T) {
	fake := fakegithub.NewWithPrefix(t, "/api/v3")
	e := newEnvOn(t, fake, func(c *Config) { c.BaseURL += "/" })
	ctx := context.Background()
	pr, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Title: "t", Head: "h", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.app.MarkReadyForReview(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr.Number); err != nil {
		t.Fatalf("MarkReadyForReview on GHES: %v", err)
	}
	if fake.PullRequests(owner, repo)[0].Draft {
		t.Error("still a draft")
	}
	if n := e.count("POST", "/api/graphql"); n != 1 {
		t.Errorf("POST /api/graphql made %d times, want 1; requests %+v", n, fake.Requests())
	}
	if _, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.CheckRun{Name: "n", HeadSHA: sha}); err != nil {
		t.Errorf("check run on GHES: %v", err)
	}
	for _, r := range fake.Requests() {
		if r.Status >= 400 {
			t.Errorf("request %s %s answered %d", r.Method, r.Path, r.Status)
		}
	}
}

func TestUpsertCommentAnswersWithGitHubsTimes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pr, err := e.app.OpenPullRequest(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pullwright.NewPullRequest{Title: "t", Head: "h", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		issue  int
		prefix string
	}{
		{"issue", 1, "https://github.com/acme/widgets/issues/1#issuecomment-"},
		{"pull request number", pr.Number, fmt.Sprintf("https://github.com/acme/widgets/pull/%d#issuecomment-", pr.Number)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, tt.issue, "status", 0, "hello")
			if err != nil {
				t.Fatal(err)
			}
			id, u := p.ID, p.URL
			if want := fmt.Sprintf("%s%d", tt.prefix, id); u != want {
				t.Errorf("html_url = %q, want %q", u, want)
			}
			// GitHub's created_at, in whole seconds as its API gives it.
			if c, ok := e.fake.Comment(id); !ok || p.CreatedAt.IsZero() || !p.CreatedAt.Equal(c.CreatedAt) {
				t.Errorf("created_at = %v, the fake has %v", p.CreatedAt, c.CreatedAt)
			}
			if !p.UpdatedAt.Equal(p.CreatedAt) {
				t.Errorf("a new comment's updated_at = %v, created_at %v", p.UpdatedAt, p.CreatedAt)
			}
			// Edited by marker, then by id: same comment, same URL, the
			// time it was first written, and the time of this edit, which
			// is when GitHub began showing what the edit wrote.
			last := p.UpdatedAt
			for _, cid := range []int64{0, id} {
				p2, err := e.app.UpsertComment(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, tt.issue, "status", cid, "edited")
				if err != nil || p2.ID != p.ID || p2.URL != p.URL || !p2.CreatedAt.Equal(p.CreatedAt) || !p2.UpdatedAt.After(last) {
					t.Errorf("edit (commentID %d) = %+v %v, want %+v updated after %v", cid, p2, err, p, last)
				}
				last = p2.UpdatedAt
			}
			cs := e.fake.Comments(owner, repo, tt.issue)
			if len(cs) != 1 || cs[0].Edits != 2 || !strings.HasPrefix(cs[0].Body, "edited") {
				t.Errorf("comments on #%d = %+v", tt.issue, cs)
			}
		})
	}
	if is, err := e.app.Issue(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, pr.Number); err != nil || !is.IsPR || len(is.Comments) != 1 {
		t.Errorf("Issue(PR #%d) = %+v, %v; want a PR with the bot's comment", pr.Number, is, err)
	}
	if err := e.app.AddReaction(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, e.fake.Comments(owner, repo, pr.Number)[0].ID, "rocket"); err != nil {
		t.Errorf("reaction on a PR comment: %v", err)
	}
}

// A create repeated after its answer was lost (or a step replayed after a
// crash) finds the first run by its external id instead of making a second.
func TestCreateCheckRunTwiceMakesOne(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cr := pullwright.CheckRun{Name: "pullwright / run", HeadSHA: sha, Status: "in_progress", ExternalID: "7-1", Title: "Running", Summary: "go test"}
	first, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, cr)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, cr)
	if err != nil {
		t.Fatal(err)
	}
	other := cr
	other.ExternalID = "7-2"
	third, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, other)
	if err != nil {
		t.Fatal(err)
	}
	if second != first || third == first {
		t.Fatalf("ids %d, %d, %d: want the same run twice, then a new one for another request", first, second, third)
	}
	if n := len(e.fake.CheckRuns(owner, repo)); n != 2 {
		t.Fatalf("%d check runs, want 2", n)
	}
}

// A run that has concluded since is not the one a create would have made:
// an approval answered once is never turned back into one that asks, so
// its buttons cannot answer a request asked anew under the same id.
func TestCreateCheckRunAfterItConcludedMakesANewOne(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ask := pullwright.CheckRun{Name: "pullwright / approval", HeadSHA: sha, Status: "completed", Conclusion: "action_required",
		ExternalID: "7-1", DetailsURL: "https://github.com/acme/widgets/issues/1", Title: "Approve running: make", Summary: "make",
		Actions: []pullwright.CheckAction{{Label: "Approve", Description: "Run the command", Identifier: "approve"}}}
	first, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, ask)
	if err != nil {
		t.Fatal(err)
	}
	answered := ask
	answered.ID, answered.Conclusion, answered.Actions = first, "success", nil
	if _, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, answered); err != nil {
		t.Fatal(err)
	}
	again, err := e.app.UpsertCheckRun(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, ask)
	if err != nil {
		t.Fatal(err)
	}
	if again == first {
		t.Fatalf("the answered run %d was asked anew", first)
	}
	runs := e.fake.CheckRuns(owner, repo)
	if len(runs) != 2 || runs[0].Conclusion != "success" || runs[1].Conclusion != "action_required" {
		t.Fatalf("check runs = %+v", runs)
	}
}

// Parking a request costs the same calls however many runs of its name the
// commit holds: a first create is one POST, and a replayed one (a crash
// between create and save) finds its run with one listing of the app's
// newest run of that name. A replay that finds nothing reads at most the
// bounded listing, then creates.
func TestCheckRunCallsDoNotGrowWithTheCommitsRuns(t *testing.T) {
	for _, held := range []int{0, 100, 1000} {
		t.Run(fmt.Sprint(held, " runs held"), func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			r := pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}
			for i := range held {
				e.fake.AddCheckRun(owner, repo, fakegithub.CheckRun{Name: "pullwright / approval", HeadSHA: sha,
					ExternalID: fmt.Sprintf("old-%d", i), Conclusion: "success"})
			}
			// The app's slug and the installation token are fetched once,
			// whatever follows: leave them out of the counts.
			if _, err := e.app.UpsertCheckRun(ctx, r, pullwright.CheckRun{Name: "warm-up", HeadSHA: "beef", ExternalID: "0"}); err != nil {
				t.Fatal(err)
			}
			calls := func(f func()) (lists, writes int) {
				before := len(e.fake.Requests())
				f()
				for _, q := range e.fake.Requests()[before:] {
					switch {
					case q.Method == "GET" && strings.HasSuffix(q.Path, "/check-runs"):
						lists++
					case q.Method == "POST" || q.Method == "PATCH":
						writes++
					}
				}
				return lists, writes
			}
			ask := pullwright.CheckRun{Name: "pullwright / approval", HeadSHA: sha, Status: "completed", Conclusion: "action_required",
				ExternalID: "7-1", DetailsURL: "https://github.com/acme/widgets/issues/1", Title: "Approve running: make", Summary: "make",
				Actions: []pullwright.CheckAction{{Label: "Approve", Description: "Run the command", Identifier: "approve"}}}

			first := ask
			first.FirstTry = true
			var id int64
			if lists, writes := calls(func() {
				var err error
				if id, err = e.app.UpsertCheckRun(ctx, r, first); err != nil {
					t.Fatal(err)
				}
			}); lists != 0 || writes != 1 {
				t.Errorf("first create: %d listings, %d writes; want 0 and 1", lists, writes)
			}
			if lists, writes := calls(func() {
				again, err := e.app.UpsertCheckRun(ctx, r, ask)
				if err != nil {
					t.Fatal(err)
				}
				if again != id {
					t.Errorf("replay made run %d, want %d again", again, id)
				}
			}); lists != 1 || writes != 1 {
				t.Errorf("replay: %d listings, %d writes; want 1 and 1", lists, writes)
			}
			other := ask
			other.ExternalID = "7-2"
			if lists, _ := calls(func() {
				if _, err := e.app.UpsertCheckRun(ctx, r, other); err != nil {
					t.Fatal(err)
				}
			}); lists > 1+maxCheckLookupPages {
				t.Errorf("a replay that finds nothing listed %d pages, want at most %d", lists, 1+maxCheckLookupPages)
			}
			n := 0
			for _, c := range e.fake.CheckRuns(owner, repo) {
				if c.ExternalID == "7-1" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d runs carry the request's external id, want 1", n)
			}
		})
	}
}
