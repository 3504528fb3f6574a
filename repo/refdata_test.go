package repo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/repo"
)

func TestDataRefRoundTrip(t *testing.T) {
	srv := newServer(t)
	srv.CreateRepo(t, "o", "r", "main", map[string]string{"a.txt": "a\n"})
	url := srv.CloneURL("o", "r")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	who := pullwright.Identity{Name: "bot", Email: "bot@example.com"}
	const ref = "refs/pullwright/state/issue-7-task-12"

	refs, err := repo.ListRefs(ctx, url, token, "refs/pullwright/")
	if err != nil || len(refs) != 0 {
		t.Fatalf("ListRefs before any write = %v, %v; want none", refs, err)
	}
	first, err := repo.WriteRefFile(ctx, url, token, ref, "state.json", []byte(`{"v":1}`), who, "state", time.Unix(1700000000, 0), "")
	if err != nil {
		t.Fatal(err)
	}
	// Replacing it needs no history in common with what was there.
	second, err := repo.WriteRefFile(ctx, url, token, ref, "state.json", []byte(`{"v":2}`), who, "state", time.Unix(1700000100, 0), first)
	if err != nil {
		t.Fatal(err)
	}
	if first == second {
		t.Fatal("two different states gave one commit")
	}
	// A writer that read the first state lost the race to the second.
	if _, err := repo.WriteRefFile(ctx, url, token, ref, "state.json", []byte(`{"v":3}`), who, "state", time.Now(), first); !errors.Is(err, repo.ErrRefMoved) {
		t.Fatalf("a write expecting a moved ref = %v, want ErrRefMoved", err)
	}
	if err := repo.DeleteRef(ctx, url, token, ref, first); !errors.Is(err, repo.ErrRefMoved) {
		t.Fatalf("a delete expecting a moved ref = %v, want ErrRefMoved", err)
	}
	got, commit, err := repo.ReadRefFile(ctx, url, token, ref, "state.json")
	if err != nil || string(got) != `{"v":2}` || commit != second {
		t.Fatalf("ReadRefFile = %q, %s, %v; want the second state at %s", got, commit, err, second)
	}
	refs, err = repo.ListRefs(ctx, url, token, "refs/pullwright/")
	if err != nil || refs[ref] != second || len(refs) != 1 {
		t.Fatalf("ListRefs = %v, %v; want only %s at %s", refs, err, ref, second)
	}
	// The data ref is not a branch.
	if out, _ := srv.Git("o", "r", "branch", "--list"); strings.Contains(out, "pullwright") {
		t.Fatalf("the data ref shows as a branch: %s", out)
	}
	if err := repo.DeleteRef(ctx, url, token, ref, ""); err != nil {
		t.Fatal(err)
	}
	if err := repo.DeleteRef(ctx, url, token, ref, ""); err != nil {
		t.Fatalf("deleting a missing ref: %v", err)
	}
	if refs, err := repo.ListRefs(ctx, url, token, "refs/pullwright/"); err != nil || len(refs) != 0 {
		t.Fatalf("ListRefs after delete = %v, %v", refs, err)
	}
	if _, _, err := repo.ReadRefFile(ctx, url, token, ref, "state.json"); err == nil {
		t.Fatal("reading a deleted ref succeeded")
	}
}

func TestDataRefRefusesBranchesAndBadTokens(t *testing.T) {
	srv := newServer(t)
	srv.CreateRepo(t, "o", "r", "main", map[string]string{"a.txt": "a\n"})
	url := srv.CloneURL("o", "r")
	ctx := context.Background()
	who := pullwright.Identity{Name: "bot", Email: "bot@example.com"}
	for _, ref := range []string{"refs/heads/main", "refs/tags/v1", "main", "refs/x", "refs/a/../b", "refs/a/b c"} {
		if _, err := repo.WriteRefFile(ctx, url, token, ref, "f", []byte("x"), who, "m", time.Now(), ""); err == nil {
			t.Errorf("WriteRefFile(%q) succeeded", ref)
		}
	}
	_, err := repo.WriteRefFile(ctx, url, "wrong-token", "refs/pullwright/x", "f", []byte("x"), who, "m", time.Now(), "")
	if !errors.Is(err, repo.ErrAuthFailed) || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("bad token: %v", err)
	}
}
