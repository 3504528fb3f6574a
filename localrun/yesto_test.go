package localrun_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/localrun"
	"github.com/pullwright/pullwright/task"
)

// When the --yes-to list answers, the list is named as the approver on
// every surface of the run (the banner, the status, each request's line,
// the report and the commit message, the record of runs), and nothing
// speaks of an approval or an answer of the user's that never was.
func TestYesToIsNamedAsTheApprover(t *testing.T) {
	tests := []struct {
		name  string
		tty   bool
		stdin string
		// by are the record's answerers of cat (listed) and go vet.
		by         [2]string
		want, dont []string
	}{
		{
			name: "no terminal", by: [2]string{"--yes-to", "--yes-to"},
			want: []string{
				"only when on the --yes-to list: the input is not a terminal, so nobody is asked",
				"running `cat README.md` (approved by --yes-to)",
				"rejected `go vet ./...` (by --yes-to): not on the --yes-to list",
				"`cat README.md` on earlier files: passed (exit code 0, ", "s), approved by --yes-to\n",
				"`go vet ./...` on earlier files: not run: rejected by --yes-to (not on the --yes-to list)",
			},
			dont: []string{"your approval", "waiting for your answer", "your answer", "approved by " + userName, "Run it"},
		},
		{
			name: "a terminal asks the rest", tty: true, stdin: "y\n", by: [2]string{"--yes-to", ""},
			want: []string{
				"after your approval, or without asking when on the --yes-to list",
				"running `cat README.md` (approved by --yes-to)",
				"waiting for your answer",
				"Run it",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t, false, nil)
			// cat runs before the edit, so that both runs are on
			// earlier files whatever the clock says.
			llm := fakellm.New(t, readStep, run("cat README.md", "look"), run("go vet ./...", "vet"), editStep, finishStep)
			o, stdout, stderr := options(t, dir, llm, strings.NewReader(tt.stdin), tt.tty)
			o.YesTo = []string{"cat README.md"}
			res, err := localrun.Run(context.Background(), o)
			if err != nil {
				t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
			}
			if len(res.Runs) != 2 {
				t.Fatalf("%d runs recorded, want 2: %+v", len(res.Runs), res.Runs)
			}
			for i, rec := range res.Runs {
				// "" is the local user, whoever runs the test.
				if want := tt.by[i]; want == "" && (rec.By == "" || strings.HasPrefix(rec.By, "--")) || want != "" && rec.By != want {
					t.Errorf("run %d answered by %q, want %q (\"\": the user)", i+1, rec.By, want)
				}
			}
			if res.Runs[0].Verdict != task.Approved {
				t.Errorf("cat: %+v", res.Runs[0])
			}
			msg := gitCmd(t, dir, "log", "-1", "--format=%B", res.Branch)
			all := stderr.String() + stdout.String() + msg
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("the output does not say %q:\n%s", w, all)
				}
			}
			for _, w := range tt.dont {
				if strings.Contains(all, w) {
					t.Errorf("the output says %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestYesToSetupNeedsAList(t *testing.T) {
	dir := newRepo(t, false, nil)
	llm := fakellm.New(t)
	o, _, _ := options(t, dir, llm, strings.NewReader(""), false)
	o.YesToSetup = true
	_, err := localrun.Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "--yes-to-setup") {
		t.Fatalf("Run: %v, want an error about --yes-to-setup without --yes-to", err)
	}
	if llm.Calls() != 0 {
		t.Errorf("the model was called %d times", llm.Calls())
	}
}
