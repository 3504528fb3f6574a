package repo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/gitserver"
	"github.com/pullwright/pullwright/repo"
)

func TestContains(t *testing.T) {
	s, w, base, mine := pushedWork(t, "main")
	// A person builds on the bot's commit; another branch does not.
	person := s.Push(t, owner, name, "main", map[string]string{"NOTES.md": "notes\n"}, "Person")
	other := s.Push(t, owner, name, "other", map[string]string{"OTHER.md": "x\n"}, "Elsewhere")
	if err := w.Fetch(ctxT(t), token, person); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		tip, sha  string
		want      bool
		wantError bool
	}{
		{"itself", mine, mine, true, false},
		{"a parent", mine, base, true, false},
		{"the bot's commit under a person's", person, mine, true, false},
		{"a child is not in its parent", mine, person, false, false},
		{"a commit the workspace lacks", person, other, false, false},
		{"not a SHA", "main", mine, false, true},
		{"a short SHA", mine, base[:12], false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.Contains(ctxT(t), token, tt.tip, tt.sha)
			if got != tt.want || (err != nil) != tt.wantError {
				t.Errorf("Contains = %v, %v; want %v, error %v", got, err, tt.want, tt.wantError)
			}
		})
	}
}

// A person may push many commits on top of the bot's, more than the first
// deepening of a shallow clone brings: Contains fetches deeper history when
// the walk ends at the clone's boundary, and only then.
func TestContainsDeepensPastTheShallowBoundary(t *testing.T) {
	s, w, _, mine := pushedWork(t, "main")
	push := func(n int) string {
		var tip string
		for i := range n {
			tip = s.Push(t, owner, name, "main", map[string]string{"NOTES.md": fmt.Sprint("note ", i, "\n")}, fmt.Sprint("Person ", i))
		}
		return tip
	}
	fetches := func() int {
		n := 0
		for _, r := range s.Requests() {
			if r.Method == "POST" && r.Path == "/"+owner+"/"+name+".git/git-upload-pack" {
				n++
			}
		}
		return n
	}

	// A few commits on the bot's: a commit of the bot's own on top of
	// its pushed one is known not to be there without more history.
	tip := push(3)
	if err := w.Fetch(ctxT(t), token, tip); err != nil {
		t.Fatal(err)
	}
	write(t, w, map[string]string{"README.md": "# widgets\nmine, again\n"})
	unpushed, err := w.CommitAll("mine again", bot)
	if err != nil {
		t.Fatal(err)
	}
	before := fetches()
	if in, err := w.Contains(ctxT(t), token, tip, unpushed); err != nil || in {
		t.Fatalf("Contains(tip, unpushed) = %v, %v; want false", in, err)
	}
	if in, err := w.Contains(ctxT(t), token, tip, mine); err != nil || !in {
		t.Fatalf("Contains(tip, mine) = %v, %v; want true", in, err)
	}
	if n := fetches() - before; n != 0 {
		t.Fatalf("Contains fetched %d times with the history at hand", n)
	}

	// Twenty more: Fetch brings the tip with sixteen commits of history,
	// which end before the bot's commit.
	tip = push(20)
	if err := w.Fetch(ctxT(t), token, tip); err != nil {
		t.Fatal(err)
	}
	before = fetches()
	if in, err := w.Contains(ctxT(t), token, tip, mine); err != nil || !in {
		t.Fatalf("Contains(tip, mine) under 23 commits = %v, %v; want true", in, err)
	}
	if n := fetches() - before; n == 0 {
		t.Fatal("Contains found the commit without deepening; the test no longer crosses the boundary")
	}
}

// pushedWork is a workspace cloned from main (depth 1), at base, that has
// pushed the bot's commit, mine, to branch (main, or a new one of its own).
func pushedWork(t *testing.T, branch string) (s *gitserver.Server, w *repo.Workspace, base, mine string) {
	t.Helper()
	s = newServer(t)
	u, base := seed(t, s)
	w = clone(t, u)
	if branch != "main" {
		if err := w.CreateBranch(branch); err != nil {
			t.Fatal(err)
		}
	}
	write(t, w, map[string]string{"README.md": "# widgets\nmine\n"})
	mine, err := w.CommitAll("mine", bot)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(ctxT(t), token, branch); err != nil {
		t.Fatal(err)
	}
	return s, w, base, mine
}

// A task clones one ref and pushes to another: commits a person pushes to
// the task's branch are found only once the workspace tracks that branch,
// and it still does when opened again.
func TestTrackFollowsTheTasksBranch(t *testing.T) {
	s, w, _, mine := pushedWork(t, "work")
	var tip string
	for i := range 3 {
		tip = s.Push(t, owner, name, "work", map[string]string{"NOTES.md": fmt.Sprint("note ", i, "\n")}, "Person")
	}
	if err := w.Fetch(ctxT(t), token, tip); !errors.Is(err, pullwright.ErrBaseGone) {
		t.Fatalf("Fetch of the work branch's tip along main = %v, want pullwright.ErrBaseGone", err)
	}
	if err := w.Track("work"); err != nil {
		t.Fatal(err)
	}
	again, err := repo.Open(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Fetch(ctxT(t), token, tip); err != nil {
		t.Fatalf("Fetch after Track: %v", err)
	}
	if in, err := again.Contains(ctxT(t), token, tip, mine); err != nil || !in {
		t.Fatalf("Contains(tip, mine) = %v, %v", in, err)
	}
	if err := again.Track("no such..branch"); err == nil {
		t.Fatal("Track took a bad branch name")
	}
}

// A person merges a long-lived base branch into the task's branch: the
// walk goes down the base's history. Contains deepens at most twice and
// answers false rather than fetch the whole repository.
func TestContainsStopsShortOfTheWholeHistory(t *testing.T) {
	s, w, _, mine := pushedWork(t, "work")
	write(t, w, map[string]string{"README.md": "# widgets\nmine, again\n"})
	unpushed, err := w.CommitAll("mine again", bot)
	if err != nil {
		t.Fatal(err)
	}
	// 300 commits on main, then main merged into work.
	gitOut := func(args ...string) string {
		t.Helper()
		out, err := s.Git(owner, name, args...)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(out)
	}
	tree := gitOut("rev-parse", "main^{tree}")
	tip := gitOut("rev-parse", "main")
	for i := range 300 {
		tip = gitOut("-c", "user.name=P", "-c", "user.email=p@example.com", "commit-tree", tree, "-p", tip, "-m", fmt.Sprint("base ", i))
	}
	gitOut("update-ref", "refs/heads/main", tip)
	merge := gitOut("-c", "user.name=P", "-c", "user.email=p@example.com", "commit-tree", gitOut("rev-parse", mine+"^{tree}"), "-p", mine, "-p", tip, "-m", "Merge main")
	gitOut("update-ref", "refs/heads/work", merge)

	if err := w.Track("work"); err != nil {
		t.Fatal(err)
	}
	if err := w.Fetch(ctxT(t), token, merge); err != nil {
		t.Fatal(err)
	}
	fetches := func() int {
		n := 0
		for _, r := range s.Requests() {
			if r.Method == "POST" && strings.HasSuffix(r.Path, "/git-upload-pack") {
				n++
			}
		}
		return n
	}
	before := fetches()
	if in, err := w.Contains(ctxT(t), token, merge, unpushed); err != nil || in {
		t.Fatalf("Contains(merge, unpushed) = %v, %v; want false", in, err)
	}
	if n := fetches() - before; n == 0 || n > 2 {
		t.Fatalf("Contains fetched %d times; want it to deepen, at most twice", n)
	}
	if in, err := w.Contains(ctxT(t), token, merge, mine); err != nil || !in {
		t.Fatalf("Contains(merge, mine) = %v, %v; want true", in, err)
	}
}
