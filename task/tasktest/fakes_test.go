package tasktest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/testclock"
)

// The fakes answer as ghapp and repo do; these hold the semantics task's
// tests lean on.

// PostReview takes a review whose comments are on the right side of one
// hunk of Diffs[pr], whatever form its header has, and refuses one with a
// comment elsewhere whole, as ghapp reports GitHub's 422.
func TestPostReviewAnswers(t *testing.T) {
	ctx := context.Background()
	g := NewGitHub(testclock.New(time.Unix(0, 0)))
	r := pullwright.Repo{Owner: "acme", Name: "widget"}
	g.Diffs[7] = "diff --git a/n.go b/n.go\nnew file mode 100644\n--- /dev/null\n+++ b/n.go\n@@ -0,0 +1 @@\n+package n\n" +
		"diff --git a/m.go b/m.go\n--- a/m.go\n+++ b/m.go\n@@ -3,2 +3,3 @@\n a\n+b\n c\n"
	ok := pullwright.NewReview{CommitID: "h", Body: "b", Comments: []pullwright.NewReviewComment{
		{Path: "n.go", Line: 1, Body: "x"}, {Path: "m.go", StartLine: 3, Line: 5, Body: "y"},
	}}
	if _, err := g.PostReview(ctx, r, 7, "k", ok); err != nil {
		t.Fatalf("a review on the diff's lines: %v", err)
	}
	for _, c := range []pullwright.NewReviewComment{{Path: "n.go", Line: 2}, {Path: "m.go", StartLine: 1, Line: 3}, {Path: "m.go", StartLine: 4, Line: 4}} {
		bad := ok
		bad.Comments = []pullwright.NewReviewComment{ok.Comments[0], c}
		if _, err := g.PostReview(ctx, r, 7, "k", bad); !errors.Is(err, pullwright.ErrInvalid) {
			t.Errorf("a comment on %+v: %v", c, err)
		}
	}
	if len(g.Reviews[7]) != 1 {
		t.Errorf("%d reviews stored, want 1", len(g.Reviews[7]))
	}
}

func TestUpsertCommentEditsInPlace(t *testing.T) {
	ctx := context.Background()
	c := testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC))
	g := NewGitHub(c)
	r := pullwright.Repo{Owner: "acme", Name: "widget"}
	first, err := g.UpsertComment(ctx, r, 1, "task-1-status", 0, "one")
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	second, err := g.UpsertComment(ctx, r, 1, "task-1-status", 0, "two")
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != first.ID || !second.CreatedAt.Equal(first.CreatedAt) || !second.UpdatedAt.Equal(first.CreatedAt.Add(time.Minute)) {
		t.Errorf("first %+v, second %+v", first, second)
	}
	if first.CreatedAt.Nanosecond() != 0 {
		t.Errorf("GitHub's times are whole seconds: %s", first.CreatedAt)
	}
	if got := g.Comment(1, "task-1-status"); got.Text() != "two" || got.Body != "two\n\n<!-- pullwright:task-1-status -->" || got.Edits != 1 {
		t.Errorf("comment %+v", got)
	}
	other, _ := g.UpsertComment(ctx, r, 2, "task-1-status", 0, "elsewhere")
	if other.ID == first.ID {
		t.Error("a marker on another issue edited this one")
	}
}

func TestGitHubAnswers(t *testing.T) {
	ctx := context.Background()
	g := NewGitHub(testclock.New(time.Unix(0, 0)))
	r := pullwright.Repo{Owner: "acme", Name: "widget"}
	g.Roles["Alice"] = "admin"
	if role, _ := g.Permission(ctx, r, "alice"); role != "admin" {
		t.Errorf("alice is %q", role)
	}
	if role, _ := g.Permission(ctx, r, "stranger"); role != "none" {
		t.Errorf("a stranger is %q", role)
	}
	if _, err := g.File(ctx, r, "main", "missing"); !errors.Is(err, pullwright.ErrNoFile) {
		t.Errorf("missing file: %v", err)
	}
	g.FailNext("Identity", errors.New("boom"))
	if _, err := g.Identity(ctx); err == nil {
		t.Error("FailNext did not fail")
	}
	if _, err := g.Identity(ctx); err != nil {
		t.Errorf("FailNext failed twice: %v", err)
	}
	a, _ := g.OpenPullRequest(ctx, r, pullwright.NewPullRequest{Title: "a", Head: "b", Base: "main", Draft: true})
	b, _ := g.OpenPullRequest(ctx, r, pullwright.NewPullRequest{Title: "again", Head: "b", Base: "main"})
	if a != b || len(g.Opened) != 1 || g.Opened[0].Title != "again" {
		t.Errorf("a second open of head b: %+v, %+v, %+v", a, b, g.Opened)
	}
	if _, err := g.ReplyInThread(ctx, r, 7, 99, "m", "x"); !errors.Is(err, pullwright.ErrGone) {
		t.Errorf("reply in no thread: %v", err)
	}
}

func TestWorkspaceCommitsAndPushes(t *testing.T) {
	ctx := context.Background()
	w := NewWorkspaces()
	const url = "https://git.test/r.git"
	base := w.Commit(url, "main", map[string]string{"a.txt": "a\n"}, "initial")
	dir := filepath.Join(t.TempDir(), "ws")
	ws, err := w.Clone(ctx, url, "main", "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.CreateBranch("work"); err != nil {
		t.Fatal(err)
	}
	when := time.Unix(1700000000, 0)
	me := pullwright.Identity{Name: "bot", Email: "bot@example.com"}
	if _, err := ws.CommitAllAt(when, "msg", me); !errors.Is(err, pullwright.ErrNoChanges) {
		t.Fatalf("commit of nothing: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if cs, _ := ws.Changes(); len(cs) != 1 || cs[0].Path != "b.txt" {
		t.Fatalf("changes %+v", cs)
	}
	sha, err := ws.CommitAllAt(when, "msg", me)
	if err != nil {
		t.Fatal(err)
	}
	// The same commit made again elsewhere is the same commit.
	again, _ := w.Clone(ctx, url, "main", "", filepath.Join(t.TempDir(), "again"))
	os.WriteFile(filepath.Join(again.Dir(), "b.txt"), []byte("b\n"), 0o644)
	if sha2, _ := again.CommitAllAt(when, "msg", me); sha2 != sha {
		t.Errorf("the same inputs gave %s and %s", sha, sha2)
	}
	if err := ws.Push(ctx, "", "work"); err != nil || w.Ref(url, "work") != sha {
		t.Fatalf("push: %v, work at %s", err, w.Ref(url, "work"))
	}
	if err := ws.Push(ctx, "", "work"); err != nil || len(w.Pushes) != 1 {
		t.Errorf("a push the remote has: %v, %d pushes", err, len(w.Pushes))
	}
	theirs := w.Commit(url, "work", map[string]string{"c.txt": "c\n"}, "theirs")
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b2\n"), 0o644)
	if _, err := ws.CommitAllAt(when, "more", me); err != nil {
		t.Fatal(err)
	}
	if err := ws.Push(ctx, "", "work"); !errors.Is(err, pullwright.ErrPushRejected) || w.Ref(url, "work") != theirs {
		t.Errorf("push over a person's commit: %v", err)
	}
	if err := ws.Fetch(ctx, "", theirs); !errors.Is(err, pullwright.ErrBaseGone) {
		t.Errorf("fetch of a commit the followed ref lacks: %v", err)
	}
	ws.Track("work")
	if err := ws.ResetTo(ctx, "", theirs); err != nil {
		t.Fatal(err)
	}
	if ok, _ := ws.Contains(ctx, "", theirs, base); !ok {
		t.Error("base is not in the history of theirs")
	}
	if touched, _ := ws.Touched(sha, theirs, []string{"b.txt", "c.txt"}); len(touched) != 1 || touched[0] != "c.txt" {
		t.Errorf("touched %v", touched)
	}
	if err := ws.Export(ctx, base, dir); err == nil {
		t.Error("export into an existing directory")
	}
}

// ReadTree reads a fetched commit's files as repo's does: shallowest first,
// bounded in number and size, links named, a commit not fetched an error.
func TestWorkspaceReadTree(t *testing.T) {
	ctx := context.Background()
	w := NewWorkspaces()
	const url = "https://git.test/acme/widget.git"
	w.Commit(url, "feature", map[string]string{"AGENTS.md": "feature\n"}, "feature")
	main := w.Commit(url, "main", map[string]string{"b/AGENTS.md": "b\n", "AGENTS.md": "root rules\n", "a/c/AGENTS.md": "ac\n", "x.go": "x"}, "main")
	w.Links = []string{"b/AGENTS.md"}
	ws, err := w.Clone(ctx, url, "feature", "token", filepath.Join(t.TempDir(), "ws"))
	if err != nil {
		t.Fatal(err)
	}
	isAgents := func(p string) bool { return filepath.Base(p) == "AGENTS.md" }
	if _, _, err := ws.ReadTree(main, isAgents, 5, 5); err == nil {
		t.Error("read a commit the workspace has not fetched")
	}
	if _, err := ws.FetchBranch(ctx, "token", "main"); err != nil {
		t.Fatal(err)
	}
	files, more, err := ws.ReadTree(main, isAgents, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []pullwright.TreeFile{{Path: "AGENTS.md", Data: []byte("root"), Size: 11}, {Path: "b/AGENTS.md", Link: true}}
	if !reflect.DeepEqual(files, want) || more != 1 {
		t.Errorf("ReadTree = %+v, %d more; want %+v, 1 more", files, more, want)
	}
	if len(w.Reads) != 2 || w.Reads[1] != main {
		t.Errorf("Reads = %q", w.Reads)
	}
}
