package gitserver_test

import (
	"strings"
	"testing"
)

func TestRef(t *testing.T) {
	s := newServer(t)
	s.CreateRepo(t, "acme", "widgets", "main", map[string]string{"a": "a\n"})
	seed, err := s.RevParse(t, "acme", "widgets", "main")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, owner, repo, ref string
		want                   string
		found                  bool
	}{
		{"branch", "acme", "widgets", "main", seed, true},
		{"full ref", "acme", "widgets", "refs/heads/main", seed, true},
		{"sha", "acme", "widgets", seed, seed, true},
		{"missing ref", "acme", "widgets", "nope", "", false},
		{"option-like ref", "acme", "widgets", "--all", "", false},
		{"missing repository", "acme", "nothing", "main", "", false},
		{"invalid name", "..", "widgets", "main", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := s.Ref(tt.owner, tt.repo, tt.ref)
			if err != nil || found != tt.found || got != tt.want {
				t.Errorf("Ref(%q) = %q, %v, %v; want %q, %v, nil", tt.ref, got, found, err, tt.want, tt.found)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	s := newServer(t)
	s.CreateRepo(t, "acme", "widgets", "main", map[string]string{"a.txt": "one\ntwo\n", "b.txt": "b\n"})
	head := s.Push(t, "acme", "widgets", "feature", map[string]string{"a.txt": "one\nTWO\n"}, "Change a")
	// A commit that reaches main after the branch left it is not part of
	// the pull request's diff (three dots, as GitHub shows it).
	s.Push(t, "acme", "widgets", "main", map[string]string{"b.txt": "changed on main\n"}, "Change b")

	for _, h := range []string{"feature", head} {
		d, err := s.Diff("acme", "widgets", "main", h)
		if err != nil {
			t.Fatalf("Diff(main, %s): %v", h, err)
		}
		if !strings.HasPrefix(d, "diff --git a/a.txt b/a.txt\n") || !strings.Contains(d, "\n-two\n+TWO\n") {
			t.Errorf("Diff(main, %s) = %q", h, d)
		}
		if strings.Contains(d, "b.txt") {
			t.Errorf("Diff(main, %s) shows main's own change:\n%s", h, d)
		}
	}
	if d, err := s.Diff("acme", "widgets", "main", "main"); err != nil || d != "" {
		t.Errorf("empty diff = %q, %v", d, err)
	}
	for _, bad := range [][2]string{{"main", "nope"}, {"--output=/tmp/x", "main"}, {"main", ""}} {
		if d, err := s.Diff("acme", "widgets", bad[0], bad[1]); err == nil {
			t.Errorf("Diff(%q, %q) = %q, want an error", bad[0], bad[1], d)
		}
	}
	if _, err := s.Diff("..", "widgets", "main", "main"); err == nil {
		t.Error("Diff accepted an invalid repository name")
	}
}

func TestSetRef(t *testing.T) {
	s := newServer(t)
	s.CreateRepo(t, "acme", "widgets", "main", map[string]string{"a": "a\n"})
	seed, _ := s.RevParse(t, "acme", "widgets", "main")
	next := s.Push(t, "acme", "widgets", "main", map[string]string{"a": "b\n"}, "next")

	if err := s.SetRef("acme", "widgets", "refs/pull/7/head", next); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.RevParse(t, "acme", "widgets", "refs/pull/7/head"); got != next {
		t.Errorf("refs/pull/7/head = %s, want %s", got, next)
	}
	// Moving a ref backwards is allowed, like a force-push.
	if err := s.SetRef("acme", "widgets", "refs/pull/7/head", seed); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.RevParse(t, "acme", "widgets", "refs/pull/7/head"); got != seed {
		t.Errorf("refs/pull/7/head = %s after moving back, want %s", got, seed)
	}
	if err := s.SetRef("acme", "widgets", "topic", next); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.RevParse(t, "acme", "widgets", "refs/heads/topic"); got != next {
		t.Errorf("branch topic = %s, want %s", got, next)
	}

	tree, err := s.Git("acme", "widgets", "rev-parse", "main^{tree}")
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][2]string{
		"missing commit": {"refs/pull/8/head", strings.Repeat("a", 40)},
		"short sha":      {"refs/pull/8/head", seed[:12]},
		"a tree":         {"refs/pull/8/head", strings.TrimSpace(tree)},
		"bad ref name":   {"refs/pull/8/head..x", seed},
		"option ref":     {"--force", seed},
	} {
		if err := s.SetRef("acme", "widgets", args[0], args[1]); err == nil {
			t.Errorf("%s: SetRef(%q, %q) succeeded", name, args[0], args[1])
		}
	}
}

func TestForkAndMirrorPullHead(t *testing.T) {
	s := newServer(t)
	s.CreateRepo(t, "acme", "widgets", "trunk", map[string]string{"a.txt": "a\n"})
	if out, err := s.Git("acme", "widgets", "tag", "v1"); err != nil {
		t.Fatal(err, out)
	}
	seed, _ := s.RevParse(t, "acme", "widgets", "trunk")
	if err := s.SetRef("acme", "widgets", "refs/pull/1/head", seed); err != nil {
		t.Fatal(err)
	}

	if err := s.Fork("acme", "widgets", "alice", "widgets"); err != nil {
		t.Fatal(err)
	}
	if err := s.Fork("acme", "widgets", "alice", "widgets"); err == nil {
		t.Error("forking onto an existing repository succeeded")
	}
	if err := s.Fork("acme", "nothing", "bob", "widgets"); err == nil {
		t.Error("forking a missing repository succeeded")
	}
	for ref, want := range map[string]string{"trunk": seed, "v1": seed, "HEAD": seed} {
		if got, err := s.RevParse(t, "alice", "widgets", ref); err != nil || got != want {
			t.Errorf("fork %s = %q, %v; want %s", ref, got, err, want)
		}
	}
	if _, found, _ := s.Ref("alice", "widgets", "refs/pull/1/head"); found {
		t.Error("the fork has the parent's refs/pull/*")
	}
	if out, err := s.Git("alice", "widgets", "config", "--get-regexp", "^remote\\."); err == nil {
		t.Errorf("the fork has a remote: %s", out)
	}

	// Alice pushes a branch to her fork; the parent does not see it until
	// the pull request's head is mirrored.
	head := s.Push(t, "alice", "widgets", "fix", map[string]string{"a.txt": "fixed\n"}, "Fix a")
	if _, found, _ := s.Ref("acme", "widgets", head); found {
		t.Fatal("the fork's commit is in the parent before mirroring")
	}
	got, err := s.MirrorPullHead("acme", "widgets", 7, "alice", "widgets", "fix")
	if err != nil || got != head {
		t.Fatalf("MirrorPullHead = %q, %v; want %s", got, err, head)
	}
	if sha, found, err := s.Ref("acme", "widgets", "refs/pull/7/head"); err != nil || !found || sha != head {
		t.Errorf("refs/pull/7/head = %q, %v, %v", sha, found, err)
	}
	d, err := s.Diff("acme", "widgets", "trunk", "refs/pull/7/head")
	if err != nil || !strings.Contains(d, "\n-a\n+fixed\n") {
		t.Errorf("diff of the mirrored head = %q, %v", d, err)
	}
	if _, found, _ := s.Ref("acme", "widgets", "fix"); found {
		t.Error("mirroring created a branch in the parent")
	}

	// A force-push to the fork moves the mirrored ref with it.
	if out, err := s.Git("alice", "widgets", "update-ref", "refs/heads/fix", seed); err != nil {
		t.Fatal(err, out)
	}
	again := s.Push(t, "alice", "widgets", "fix", map[string]string{"a.txt": "other\n"}, "Other fix")
	if got, err := s.MirrorPullHead("acme", "widgets", 7, "alice", "widgets", "fix"); err != nil || got != again {
		t.Fatalf("MirrorPullHead after a force-push = %q, %v; want %s", got, err, again)
	}

	if _, err := s.MirrorPullHead("acme", "widgets", 7, "alice", "widgets", "nope"); err == nil {
		t.Error("mirroring a missing branch succeeded")
	}
	if _, err := s.MirrorPullHead("acme", "widgets", 0, "alice", "widgets", "fix"); err == nil {
		t.Error("mirroring to pull request 0 succeeded")
	}
	if _, err := s.MirrorPullHead("acme", "widgets", 7, "carol", "widgets", "fix"); err == nil {
		t.Error("mirroring from a missing fork succeeded")
	}
	if len(s.Requests()) != 0 {
		t.Errorf("helpers went through HTTP: %+v", s.Requests())
	}
}
