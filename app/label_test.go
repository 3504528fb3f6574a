package app_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/task"
)

// The label added to an issue, by someone allowed to ask, ends in a pull
// request as "/agent fix" would: GitHub's labeled delivery as sent, with
// the installation an App's delivery carries and the default label.
func TestLabelBecomesPullRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.New(t, fixScript()...))
	e.gh.AddIssue(owner, repoName, fakegithub.Issue{
		Number: 1,
		Title:  "Spelling error in the README file",
		Body:   "It looks like you accidently spelled 'commit' with two 't's.",
		Author: owner,
		Labels: []string{"pullwright"},
	})
	raw, err := os.ReadFile("../webhook/testdata/issues.labeled.json")
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	p["label"].(map[string]any)["name"] = "pullwright"
	p["installation"] = map[string]any{"id": installID}
	p["repository"].(map[string]any)["clone_url"] = e.git.CloneURL(owner, repoName)
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if code := e.deliver("label-1", "issues", body); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d, want 202", code)
	}
	tk := e.waitTask(1)
	if tk.State != task.Done {
		t.Fatalf("task ended %s: %s\nlogs:\n%s", tk.State, tk.Error, e.logs.String())
	}
	if tk.Requester.Login != "Codertocat" || tk.Instructions != "" {
		t.Errorf("fix asked by %+v with instructions %q", tk.Requester, tk.Instructions)
	}

	// What the fake GitHub was asked: the configuration and the issue's
	// labels before the start, the permission of whoever added the label,
	// and one pull request.
	asked := map[string]bool{}
	for _, r := range e.gh.Requests() {
		asked[r.Method+" "+r.Path] = true
	}
	base := "/repos/" + owner + "/" + repoName
	for _, want := range []string{"GET " + base + "/issues/1", "GET " + base + "/collaborators/Codertocat/permission", "POST " + base + "/pulls"} {
		if !asked[want] {
			t.Errorf("GitHub was not asked %s", want)
		}
	}
	prs := e.gh.PullRequests(owner, repoName)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	if pr := prs[0]; pr.Head != "agent/1-spelling-error-in-the-readme-file" || !strings.Contains(pr.Body, "Fixes #1") {
		t.Errorf("pull request = %+v", pr)
	}
}
