package localrun_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/localrun"
)

// bot run gives the agent the repository's instruction files as a task
// does: from the default branch origin/HEAD names, else from HEAD.
func TestRunGivesTheRepositorysInstructions(t *testing.T) {
	cases := []struct {
		name string
		// origin, when set, makes origin/HEAD point at a commit with
		// these files, before HEAD's last commit.
		origin   map[string]string
		want     []string
		notWant  []string
		fromNote string
	}{
		{
			name:     "without origin/HEAD, HEAD's",
			want:     []string{`<repository-guidance path="AGENTS.md" applies-to="the whole repository">` + "\nlocal rules\n", `path="pkg/AGENTS.md" applies-to="pkg/"`},
			fromNote: "note: repository instructions from HEAD: AGENTS.md, pkg/AGENTS.md",
		},
		{
			name:     "with origin/HEAD, the default branch's",
			origin:   map[string]string{"AGENTS.md": "the maintainers' rules\n"},
			want:     []string{`<repository-guidance path="AGENTS.md" applies-to="the whole repository">` + "\nthe maintainers' rules\n"},
			notWant:  []string{"local rules", "pkg/AGENTS.md"},
			fromNote: "note: repository instructions from origin/main: AGENTS.md",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t, false, nil)
			if tc.origin != nil {
				for name, content := range tc.origin {
					writeFile(t, dir, name, content)
				}
				gitCmd(t, dir, "add", ".")
				gitCmd(t, dir, "commit", "-q", "-m", "The maintainers' rules")
				gitCmd(t, dir, "update-ref", "refs/remotes/origin/main", "HEAD")
				gitCmd(t, dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
			}
			writeFile(t, dir, "AGENTS.md", "local rules\n")
			writeFile(t, dir, "pkg/AGENTS.md", "pkg rules\n")
			gitCmd(t, dir, "add", ".")
			gitCmd(t, dir, "commit", "-q", "-m", "Local rules")

			llm := fakellm.New(t, finishStep)
			o, _, stderr := options(t, dir, llm, strings.NewReader(""), true)
			if _, err := localrun.Run(context.Background(), o); err != nil {
				t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
			}
			reqs := llm.Requests()
			if len(reqs) == 0 || len(reqs[0].Messages) < 2 {
				t.Fatal("the model got no first message")
			}
			first := reqs[0].Messages[1].Content
			mustContain(t, "the first message", first, tc.want...)
			for _, no := range tc.notWant {
				if strings.Contains(first, no) {
					t.Errorf("the first message has %q:\n%s", no, first)
				}
			}
			mustContain(t, "stderr", stderr.String(), tc.fromNote)
		})
	}
}
