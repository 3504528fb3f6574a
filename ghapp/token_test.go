package ghapp

import (
	"context"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
)

// A workflow's token: no app credentials, no installation in the events,
// one token for every call.
func TestWorkflowToken(t *testing.T) {
	fake := fakegithub.New(t)
	fake.AppSlug = "github-actions"
	fake.AddInstallation(inst, owner+"/"+repo)
	fake.AddIssue(owner, repo, fakegithub.Issue{Number: 1, Title: "Off by one", Author: "alice"})
	fake.SetPermission(owner, repo, "alice", "write")
	tok := fake.WorkflowToken(inst)
	who := &pullwright.Identity{Login: "github-actions[bot]", Name: "github-actions[bot]", Email: "41898282+github-actions[bot]@users.noreply.github.com", ID: 41898282}
	a, err := New(Config{Token: tok, Identity: who, BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := a.Token(ctx, 0); err != nil || got != tok {
		t.Fatalf("Token = %v; want the workflow's token", err)
	}
	if id, err := a.Identity(ctx); err != nil || id != *who {
		t.Fatalf("Identity = %+v, %v", id, err)
	}
	// Installation 0, as a workflow's events have none.
	if role, err := a.Permission(ctx, pullwright.Repo{InstallationID: 0, Owner: owner, Name: repo}, "alice"); err != nil || role != "write" {
		t.Fatalf("Permission = %q, %v", role, err)
	}
	id, err := postedID(a.UpsertComment(ctx, pullwright.Repo{InstallationID: 0, Owner: owner, Name: repo}, 1, "task-1-status", 0, "working"))
	if err != nil {
		t.Fatal(err)
	}
	// The marker is found again under the token's own name.
	if again, err := postedID(a.UpsertComment(ctx, pullwright.Repo{InstallationID: 0, Owner: owner, Name: repo}, 1, "task-1-status", 0, "done")); err != nil || again != id {
		t.Fatalf("second upsert = %d, %v; want an edit of %d", again, err, id)
	}
	for _, r := range fake.Requests() {
		if r.Path == "/app" || strings.Contains(r.Path, "/access_tokens") {
			t.Errorf("token mode called %s %s", r.Method, r.Path)
		}
	}
	if _, err := New(Config{Token: tok, BaseURL: fake.URL}); err == nil {
		t.Error("New accepted a token without its identity")
	}
}
