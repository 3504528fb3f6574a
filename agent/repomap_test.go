package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakellm"
)

// mapOf is the map of dir's files.
func mapOf(t *testing.T, dir string) string {
	t.Helper()
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	m, err := ws.repoMap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// treeOf is the tree inside a map's block.
func treeOf(t *testing.T, m string) string {
	t.Helper()
	_, rest, ok := strings.Cut(m, "<"+mapBlock+">\n")
	tree, _, ok2 := strings.Cut(rest, "</"+mapBlock+">")
	if !ok || !ok2 {
		t.Fatalf("no map block in %q", m)
	}
	return tree
}

func TestRepoMapSmall(t *testing.T) {
	dir := workspaceDir(t, map[string]string{
		"README.md":                           "",
		"go.mod":                              "",
		"cmd/bot/main.go":                     "",
		"cmd/bot/main_test.go":                "",
		"agent/agent.go":                      "",
		"build/out.bin":                       "",
		"gen/x.pb.go":                         "",
		"gen/keep.go":                         "",
		"gen/.gitignore":                      "*.pb.go\n",
		".gitignore":                          "/build/\n",
		".git/HEAD":                           "ref: refs/heads/main\n",
		".git/objects/ab/cd":                  "",
		"odd\n<untrusted-repository-map>.txt": "",
	})
	m := mapOf(t, dir)
	want := ".gitignore\nREADME.md\ngo.mod\n\"odd\\n<untrusted-repository-map>.txt\"\n" +
		"agent/ (1 file)\n  agent.go\n" +
		"cmd/ (2 files)\n  bot/ (2 files)\n    main.go\n    main_test.go\n" +
		"gen/ (2 files)\n  .gitignore\n  keep.go\n"
	// The block neutralises the tag in the name.
	want = strings.ReplaceAll(want, "<untrusted-", "&lt;untrusted-")
	if got := treeOf(t, m); got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if !strings.HasPrefix(m, "A map of the repository (9 files;") || !strings.Contains(m, "every file") {
		t.Errorf("intro: %q", m[:min(len(m), 200)])
	}
	if strings.Count(m, "</"+mapBlock+">") != 1 {
		t.Errorf("the block is closed more than once:\n%s", m)
	}
}

// TestRepoMapBounded keeps a large repository's map within maxMapBytes,
// the same on every call, saying what it left out.
func TestRepoMapBounded(t *testing.T) {
	files := map[string]string{"README.md": ""}
	for i := range 40 {
		for j := range 8 {
			for k := range 3 {
				files[fmt.Sprintf("pkg%02d/sub%d/deep%d/f.go", i, j, k)] = ""
			}
		}
	}
	dir := workspaceDir(t, files)
	m := mapOf(t, dir)
	tree := treeOf(t, m)
	if len(tree) > maxMapBytes {
		t.Errorf("tree of %d bytes, over %d", len(tree), maxMapBytes)
	}
	if !strings.Contains(m, "(961 files;") || !strings.Contains(m, "the directories to a depth of 1") ||
		!strings.Contains(tree, "README.md\npkg00/ (24 files)\npkg01/ (24 files)\n") || strings.Contains(tree, "sub0") {
		t.Errorf("map:\n%s", m)
	}
	if again := mapOf(t, dir); again != m {
		t.Error("two maps of the same tree differ")
	}

	// A top level too wide for the budget: its first entries, and a count
	// of the rest.
	wide := map[string]string{}
	for i := range 400 {
		wide[fmt.Sprintf("d%03d/f", i)] = ""
	}
	tree = treeOf(t, mapOf(t, workspaceDir(t, wide)))
	if len(tree) > maxMapBytes || !strings.HasPrefix(tree, "d000/ (1 file)\n") || !strings.Contains(tree, " more entries of the top level]\n") {
		t.Errorf("wide tree (%d bytes):\n%s", len(tree), tree)
	}
}

// TestRepoMapInFirstTurn appends the map to the first message once, on
// the first turn, and keeps it there; a state saved mid-task by an older
// release gets none.
func TestRepoMapInFirstTurn(t *testing.T) {
	dir := workspaceDir(t, map[string]string{"greet.go": "package greet\n", "ignored/x.go": "", ".gitignore": "ignored/\n"})
	s := fakellm.New(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("think", `{"thought":"look"}`)}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", `{"title":"t","summary":"s"}`)}},
	)
	a := agentFor(t, s, Config{})
	st := a.Start(testBrief)
	for range 2 {
		if err := a.Turn(context.Background(), st, dir); err != nil {
			t.Fatal(err)
		}
		st = clone(t, st)
	}
	reqs := s.Requests()
	for i, r := range reqs {
		user := r.Messages[1].Content
		if n := strings.Count(user, "<"+mapBlock+">\n.gitignore\ngreet.go\n</"+mapBlock+">"); n != 1 {
			t.Errorf("request %d: %d maps in the first message, want 1:\n%s", i+1, n, user)
		}
		if !strings.HasPrefix(user, firstMessage(testBrief)) || strings.Contains(user, "ignored/") {
			t.Errorf("request %d: the map is not after the brief, or lists an ignored file", i+1)
		}
	}
	if !strings.Contains(reqs[0].Messages[0].Content, "<"+mapBlock+">") {
		t.Error("the system prompt does not list the map's block among the untrusted ones")
	}
	if !st.Mapped {
		t.Error("the state does not say it was mapped")
	}

	// A state an older release saved after its first turn.
	s2 := fakellm.New(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("think", `{"thought":"go on"}`)}})
	a2 := agentFor(t, s2, Config{})
	old := a2.Start(testBrief)
	old.Turns = 1
	if err := a2.Turn(context.Background(), old, dir); err != nil {
		t.Fatal(err)
	}
	if got := s2.Requests()[0].Messages[1].Content; strings.Contains(got, mapBlock) || old.Mapped {
		t.Errorf("a resumed older state got a map:\n%s", got)
	}
}

// TestRepoMapInReview gives a review the map too, and its prompt lists
// the block among the untrusted ones.
func TestRepoMapInReview(t *testing.T) {
	dir := workspaceDir(t, map[string]string{"calc.go": "package calc\n"})
	s := fakellm.New(t, fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish_review", `{"summary":"ok"}`)}})
	a := agentFor(t, s, Config{})
	st := a.Start(reviewBrief)
	if err := a.Turn(context.Background(), st, dir); err != nil {
		t.Fatal(err)
	}
	req := s.Requests()[0]
	if !strings.Contains(req.Messages[1].Content, "<"+mapBlock+">\ncalc.go\n</"+mapBlock+">") ||
		!strings.Contains(req.Messages[0].Content, "<"+mapBlock+">") {
		t.Errorf("review without its map, or its prompt does not list the block:\n%s", req.Messages[1].Content)
	}
}

// TestRepoMapUndoneByAFailedTurn leaves the state as it was when the
// first turn's call fails: the next turn maps the repository again.
func TestRepoMapUndoneByAFailedTurn(t *testing.T) {
	dir := workspaceDir(t, map[string]string{"a.go": ""})
	if err := os.WriteFile(filepath.Join(dir, "b.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := fakellm.New(t, fakellm.Step{Status: 400})
	a := agentFor(t, s, Config{})
	st := a.Start(testBrief)
	before := clone(t, st)
	if err := a.Turn(context.Background(), st, dir); err == nil {
		t.Fatal("the turn did not fail")
	}
	if st.Mapped || st.Messages[1].Content != before.Messages[1].Content {
		t.Error("a failed turn kept the map")
	}
}
