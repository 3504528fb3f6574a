package localrun

import (
	"strings"
	"testing"

	"github.com/pullwright/pullwright/task"
)

// TestCommitMessageDefangsTheAgentsWords: GitHub links the mentions of a
// commit message and closes the issues its closing keywords name once it
// reaches the default branch; the agent's title and summary do neither.
func TestCommitMessageDefangsTheAgentsWords(t *testing.T) {
	r := &run{o: Options{Instructions: "fix the parser"}, res: &Result{Finished: true,
		Title: "Fix the parser for @org/team", Summary: "This fixes #3 and closes acme/x#4; thanks @alice."}}
	msg := r.commitMessage(task.Verification{})
	for _, bad := range []string{"@org", "@alice", "fixes #3", "closes acme/x#4"} {
		if strings.Contains(msg, bad) {
			t.Errorf("the commit message holds %q:\n%s", bad, msg)
		}
	}
	if !strings.Contains(msg, "Fix the parser for @\u200dorg/team") {
		t.Errorf("the commit message lost the title:\n%s", msg)
	}
}
