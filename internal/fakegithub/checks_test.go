package fakegithub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// mintToken returns "token <installation token>" for installation inst.
func mintToken(t *testing.T, s *Server, inst int64) string {
	t.Helper()
	jwt := "Bearer " + signJWT(t, s.key, "RS256", map[string]any{
		"iss": s.AppID, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix(),
	})
	resp, body := do(t, "POST", fmt.Sprintf("%s/app/installations/%d/access_tokens", s.URL, inst), jwt, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("mint token: %d %s", resp.StatusCode, body)
	}
	var tok struct{ Token string }
	if err := json.Unmarshal([]byte(body), &tok); err != nil {
		t.Fatal(err)
	}
	return "token " + tok.Token
}

func TestCheckRuns(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	auth := mintToken(t, s, 1)
	runs := s.URL + "/repos/acme/widgets/check-runs"
	act := func(label, desc, id string) string {
		return fmt.Sprintf(`{"label":%q,"description":%q,"identifier":%q}`, label, desc, id)
	}
	ok := act("Approve", "Run it", "approve")

	resp, body := do(t, "POST", runs, auth, `{"name":"pullwright / approval","head_sha":"abc","external_id":"task-1"}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var created struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal([]byte(body), &created)
	if created.ID == 0 || created.Status != "queued" {
		t.Fatalf("create answered %s", body)
	}
	run := fmt.Sprintf("%s/%d", runs, created.ID)

	tests := []struct {
		name, method, url, body string
		want                    int
		wantMsg                 string
	}{
		{"create without name", "POST", runs, `{"head_sha":"abc"}`, 422, `"field":"name"`},
		{"create without head_sha", "POST", runs, `{"name":"n"}`, 422, `"field":"head_sha"`},
		{"four actions", "PATCH", run, `{"actions":[` + strings.Repeat(ok+",", 3) + ok + `]}`, 422, "more than the maximum of 3"},
		{"label 21", "PATCH", run, `{"actions":[` + act(strings.Repeat("l", 21), "d", "i") + `]}`, 422, "actions/0/label"},
		{"identifier 21", "PATCH", run, `{"actions":[` + ok + "," + act("l", "d", strings.Repeat("i", 21)) + `]}`, 422, "actions/1/identifier"},
		{"description 41", "PATCH", run, `{"actions":[` + act("l", strings.Repeat("d", 41), "i") + `]}`, 422, "actions/0/description"},
		{"missing description", "PATCH", run, `{"actions":[{"label":"l","identifier":"i"}]}`, 422, "description"},
		{"action_required without details_url", "PATCH", run, `{"conclusion":"action_required"}`, 422, `"field":"details_url"`},
		{"conclusion with in_progress", "PATCH", run, `{"status":"in_progress","conclusion":"success"}`, 422, `"field":"conclusion"`},
		{"completed without conclusion", "PATCH", run, `{"status":"completed"}`, 422, `"field":"conclusion"`},
		{"unknown status", "PATCH", run, `{"status":"done"}`, 422, "status"},
		{"unknown conclusion", "PATCH", run, `{"conclusion":"stale"}`, 422, "conclusion"},
		{"output without summary", "PATCH", run, `{"output":{"title":"t"}}`, 422, "summary"},
		{"summary too long", "PATCH", run, `{"output":{"title":"t","summary":"` + strings.Repeat("s", maxCheckOutput+1) + `"}}`, 422, "too long"},
		{"unknown run", "PATCH", runs + "/1", `{"status":"queued"}`, 404, "Not Found"},
		{"other repo's run", "GET", s.URL + fmt.Sprintf("/repos/acme/other/check-runs/%d", created.ID), "", 404, "Not Found"},
		{"at the limits", "PATCH", run, `{"status":"completed","conclusion":"action_required","details_url":"https://example.com/d",` +
			`"output":{"title":"Approval","summary":"needed","text":"more"},"actions":[` +
			ok + "," + act(strings.Repeat("é", 20), strings.Repeat("ß", 40), strings.Repeat("i", 20)) + `]}`, 200, `"conclusion":"action_required"`},
		{"get", "GET", run, "", 200, `"details_url":"https://example.com/d"`},
		{"conclusion alone completes, actions absent are kept", "PATCH", run, `{"conclusion":"success"}`, 200, `"status":"completed"`},
	}
	s.AddInstallation(1, "acme/other")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, tt.method, tt.url, auth, tt.body)
			if resp.StatusCode != tt.want || !strings.Contains(body, tt.wantMsg) {
				t.Errorf("%d %s, want %d containing %q", resp.StatusCode, body, tt.want, tt.wantMsg)
			}
		})
	}
	cr, found := s.CheckRun(created.ID)
	if !found || cr.Updates != 2 || cr.Status != "completed" || cr.Conclusion != "success" || cr.ExternalID != "task-1" ||
		cr.DetailsURL != "https://example.com/d" || cr.Title != "Approval" || cr.Summary != "needed" || cr.Text != "more" ||
		len(cr.Actions) != 2 || cr.Actions[1].Label != strings.Repeat("é", 20) || cr.CompletedAt.IsZero() {
		t.Errorf("stored check run = %+v", cr)
	}
	// An empty list removes the buttons.
	if resp, body := do(t, "PATCH", run, auth, `{"actions":[]}`); resp.StatusCode != 200 {
		t.Fatalf("clear actions: %d %s", resp.StatusCode, body)
	}
	if all := s.CheckRuns("acme", "widgets"); len(all) != 1 || all[0].ID != created.ID || len(all[0].Actions) != 0 || all[0].Updates != 3 {
		t.Errorf("CheckRuns = %+v", all)
	}
}

func TestPullRequestsAndGraphQL(t *testing.T) {
	s := NewWithPrefix(t, "/api/v3")
	s.AddInstallation(1, "acme/widgets")
	s.AddInstallation(2, "acme/other")
	auth, other := mintToken(t, s, 1), mintToken(t, s, 2)
	root := strings.TrimSuffix(s.URL, "/api/v3")
	if s.GraphQLURL != root+"/api/graphql" {
		t.Fatalf("GraphQLURL = %q", s.GraphQLURL)
	}

	resp, body := do(t, "POST", s.URL+"/repos/acme/widgets/pulls", auth, `{"title":"t","head":"h","base":"main","draft":true}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create PR: %d %s", resp.StatusCode, body)
	}
	var pr struct {
		Number int    `json:"number"`
		NodeID string `json:"node_id"`
		Draft  bool   `json:"draft"`
	}
	_ = json.Unmarshal([]byte(body), &pr)
	if !pr.Draft || !strings.HasPrefix(pr.NodeID, "PR_kw") {
		t.Fatalf("created PR %s", body)
	}
	pull := fmt.Sprintf("%s/repos/acme/widgets/pulls/%d", s.URL, pr.Number)
	if resp, body := do(t, "GET", pull, auth, ""); resp.StatusCode != 200 || !strings.Contains(body, `"node_id":"`+pr.NodeID+`"`) || !strings.Contains(body, `"draft":true`) {
		t.Errorf("GET pull: %d %s", resp.StatusCode, body)
	}

	// A PR is an issue: comment on it.
	resp, body = do(t, "POST", fmt.Sprintf("%s/repos/acme/widgets/issues/%d/comments", s.URL, pr.Number), auth, `{"body":"on the PR"}`)
	if want := fmt.Sprintf(`"html_url":"https://github.com/acme/widgets/pull/%d#issuecomment-`, pr.Number); resp.StatusCode != 201 || !strings.Contains(body, want) {
		t.Errorf("comment on PR: %d %s", resp.StatusCode, body)
	}
	if cs := s.Comments("acme", "widgets", pr.Number); len(cs) != 1 || cs[0].Body != "on the PR" {
		t.Errorf("PR comments = %+v", cs)
	}
	// The next issue takes the next number.
	if n := s.AddIssue("acme", "widgets", Issue{Title: "next"}); n != pr.Number+1 {
		t.Errorf("issue after PR #%d got #%d", pr.Number, n)
	}

	gql := func(q string, vars any) string {
		b, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
		return string(b)
	}
	const viaVar = `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }`
	const viaInput = `mutation M($input: MarkPullRequestReadyForReviewInput!) { markPullRequestReadyForReview(input: $input) { pullRequest { isDraft } } }`
	ready := `{"data":{"markPullRequestReadyForReview":{"pullRequest":{"isDraft":false}}}}`
	tests := []struct {
		name, url, auth, body string
		want                  int
		wantBody              string
	}{
		{"not under the REST prefix", s.URL + "/graphql", auth, gql(viaVar, map[string]any{"id": pr.NodeID}), 404, "Not Found"},
		{"no auth", s.GraphQLURL, "", gql(viaVar, map[string]any{"id": pr.NodeID}), 401, "authenticated"},
		{"not json", s.GraphQLURL, auth, "{", 400, "Problems parsing JSON"},
		{"unknown node", s.GraphQLURL, auth, gql(viaVar, map[string]any{"id": "PR_nope"}), 200, `Could not resolve to a node with the global id of 'PR_nope'`},
		{"node of another installation", s.GraphQLURL, other, gql(viaVar, map[string]any{"id": pr.NodeID}), 200, "Could not resolve to a node"},
		{"other operation", s.GraphQLURL, auth, gql(`query { viewer { login } }`, nil), 200, `"errors"`},
		{"variables form", s.GraphQLURL, auth, gql(viaVar, map[string]any{"id": pr.NodeID}), 200, ready},
		{"input variable form", s.GraphQLURL, auth, gql(viaInput, map[string]any{"input": map[string]any{"pullRequestId": pr.NodeID}}), 200, ready},
		{"inline literal form", s.GraphQLURL, auth, gql(`mutation { markPullRequestReadyForReview(input: {pullRequestId: "`+pr.NodeID+`"}) { pullRequest { isDraft } } }`, nil), 200, ready},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, "POST", tt.url, tt.auth, tt.body)
			if resp.StatusCode != tt.want || !strings.Contains(body, tt.wantBody) {
				t.Errorf("%d %s, want %d containing %s", resp.StatusCode, body, tt.want, tt.wantBody)
			}
		})
	}
	if p := s.PullRequests("acme", "widgets")[0]; p.Draft || p.NodeID != pr.NodeID {
		t.Errorf("PR after the mutation = %+v", p)
	}
	var gqlPaths []string
	for _, r := range s.Requests() {
		if strings.Contains(r.Path, "graphql") {
			gqlPaths = append(gqlPaths, r.Path)
		}
	}
	if want := "/graphql " + strings.TrimSpace(strings.Repeat("/api/graphql ", len(tests)-1)); strings.Join(gqlPaths, " ") != want {
		t.Errorf("recorded GraphQL paths %v, want %s", gqlPaths, want)
	}

	s.FailNextGraphQL(1, "Something went wrong")
	if resp, body := do(t, "POST", s.GraphQLURL, auth, gql(viaVar, map[string]any{"id": pr.NodeID})); resp.StatusCode != 200 || !strings.Contains(body, `"errors":[{"message":"Something went wrong"}]`) {
		t.Errorf("injected GraphQL error: %d %s", resp.StatusCode, body)
	}
}

func TestGraphQLWithoutPrefix(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	auth := mintToken(t, s, 1)
	if s.GraphQLURL != s.URL+"/graphql" {
		t.Fatalf("GraphQLURL = %q", s.GraphQLURL)
	}
	body, _ := json.Marshal(map[string]any{"query": "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }", "variables": map[string]string{"id": "PR_x"}})
	if resp, b := do(t, "POST", s.GraphQLURL, auth, string(body)); resp.StatusCode != 200 || !strings.Contains(b, "Could not resolve") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if resp, _ := do(t, "POST", s.URL+"/api/graphql", auth, string(body)); resp.StatusCode != 404 {
		t.Errorf("/api/graphql on a root server: %d, want 404", resp.StatusCode)
	}
}

// TestListCheckRunsForRef checks the listing's filters and paging against
// what GitHub answers: newest first, filter=latest keeping the newest run
// of each name and app, check_name, status and app_id narrowing, and a
// Link header naming the next page.
func TestListCheckRunsForRef(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	auth := mintToken(t, s, 1)
	create := func(name, sha, ext, status string) int64 {
		t.Helper()
		resp, body := do(t, "POST", s.URL+"/repos/acme/widgets/check-runs", auth,
			fmt.Sprintf(`{"name":%q,"head_sha":%q,"external_id":%q,"status":%q}`, name, sha, ext, status))
		if resp.StatusCode != 201 {
			t.Fatalf("create: %d %s", resp.StatusCode, body)
		}
		var c struct{ ID int64 }
		_ = json.Unmarshal([]byte(body), &c)
		return c.ID
	}
	var approvals []int64
	for i := range 5 {
		approvals = append(approvals, create("approval", "abc", fmt.Sprint("r", i), "queued"))
	}
	run := create("run", "abc", "r0", "in_progress")
	other := create("approval", "def", "r9", "queued")
	ci := s.AddCheckRun("acme", "widgets", CheckRun{Name: "approval", HeadSHA: "abc", App: "ci"})

	tests := []struct {
		name  string
		query string // "[sha]?params"; the sha is abc when absent
		want  []int64
		total int
		next  bool
	}{
		{"latest is the default", "", []int64{ci, run, approvals[4]}, 3, false},
		{"all", "?filter=all", []int64{ci, run, approvals[4], approvals[3], approvals[2], approvals[1], approvals[0]}, 7, false},
		{"by name", "?filter=all&check_name=approval", []int64{ci, approvals[4], approvals[3], approvals[2], approvals[1], approvals[0]}, 6, false},
		{"by name and app", fmt.Sprintf("?filter=all&check_name=approval&app_id=%d", s.AppID), []int64{approvals[4], approvals[3], approvals[2], approvals[1], approvals[0]}, 5, false},
		{"latest by name and app", fmt.Sprintf("?check_name=approval&app_id=%d", s.AppID), []int64{approvals[4]}, 1, false},
		{"status", "?filter=all&status=in_progress", []int64{run}, 1, false},
		{"first page", "?filter=all&check_name=approval&per_page=2", []int64{ci, approvals[4]}, 6, true},
		{"second page", "?filter=all&check_name=approval&per_page=2&page=2", []int64{approvals[3], approvals[2]}, 6, true},
		{"last page", "?filter=all&check_name=approval&per_page=2&page=3", []int64{approvals[1], approvals[0]}, 6, false},
		{"another commit", "def?filter=all", []int64{other}, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref, query, _ := strings.Cut(tc.query, "?")
			if ref == "" {
				ref = "abc"
			}
			resp, body := do(t, "GET", s.URL+"/repos/acme/widgets/commits/"+ref+"/check-runs?"+query, auth, "")
			if resp.StatusCode != 200 {
				t.Fatalf("list: %d %s", resp.StatusCode, body)
			}
			var got struct {
				Total int `json:"total_count"`
				Runs  []struct {
					ID int64 `json:"id"`
				} `json:"check_runs"`
			}
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range got.Runs {
				ids = append(ids, r.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.want) || got.Total != tc.total {
				t.Errorf("ids %v total %d, want %v total %d", ids, got.Total, tc.want, tc.total)
			}
			if next := strings.Contains(resp.Header.Get("Link"), `rel="next"`); next != tc.next {
				t.Errorf("Link %q: next page named %v, want %v", resp.Header.Get("Link"), next, tc.next)
			}
		})
	}
	for _, q := range []string{"?status=done", "?filter=newest", "?app_id=x"} {
		if resp, body := do(t, "GET", s.URL+"/repos/acme/widgets/commits/abc/check-runs"+q, auth, ""); resp.StatusCode != 422 {
			t.Errorf("%s: %d %s, want 422", q, resp.StatusCode, body)
		}
	}

	// A run renamed by an update is listed under its new name only.
	if resp, body := do(t, "PATCH", fmt.Sprintf("%s/repos/acme/widgets/check-runs/%d", s.URL, approvals[0]), auth, `{"name":"renamed"}`); resp.StatusCode != 200 {
		t.Fatalf("rename: %d %s", resp.StatusCode, body)
	}
	for q, want := range map[string]int{"?filter=all&check_name=renamed": 1, "?filter=all&check_name=approval": 5} {
		_, body := do(t, "GET", s.URL+"/repos/acme/widgets/commits/abc/check-runs"+q, auth, "")
		if !strings.Contains(body, fmt.Sprintf(`"total_count":%d`, want)) {
			t.Errorf("%s after the rename: %s, want total %d", q, body[:min(len(body), 80)], want)
		}
	}
}
