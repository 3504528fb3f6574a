package localrun_test

import (
	"context"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/localrun"
	"github.com/pullwright/pullwright/task"
)

// finish is the agent's last step, with its own title and summary: words
// that may claim what never happened.
func finish(title, summary string) fakellm.Step {
	return step(call("finish", map[string]string{"title": title, "summary": summary}))
}

// commitMessage is the message of the new branch's tip.
func commitMessage(t *testing.T, dir, branch string) string {
	t.Helper()
	return gitCmd(t, dir, "log", "-1", "--format=%B", branch)
}

// noClaim fails unless every line of msg that says the tests pass sits in
// the agent's summary, which the message attributes to the agent.
func noClaim(t *testing.T, msg, claim string) {
	t.Helper()
	summary := strings.Index(msg, "The agent's summary, in its own words")
	for i := strings.Index(msg, claim); i >= 0; {
		if summary < 0 || i < summary {
			t.Errorf("the commit message states %q outside the agent's attributed summary:\n%s", claim, msg)
			return
		}
		next := strings.Index(msg[i+1:], claim)
		if next < 0 {
			break
		}
		i += 1 + next
	}
}

// bot run's report, commit message and Result say what the record of
// runs shows of the final commit, never what the agent's summary claims:
// verified only when a command ran on the final commit's files and its
// last result passed.
func TestRunVerification(t *testing.T) {
	const claim = "all tests pass"
	extra := step(call("write_file", map[string]string{"path": "NOTES.md", "content": "checked\n"}))
	tests := []struct {
		name     string
		steps    []fakellm.Step
		stdin    string
		verified bool
		// report and message are what stdout and the commit message must
		// hold; subject is the commit's first line.
		report, message []string
		subject         string
	}{
		{
			name:     "a command passes on the final commit",
			steps:    []fakellm.Step{readStep, editStep, run("grep -q commit README.md", "check the fix"), finish("Fix the typo", "Fixed; "+claim+".")},
			stdin:    "y\n",
			verified: true,
			report: []string{"Done: Fix the typo", "1. `grep -q commit README.md` on the files of the final commit",
				"passed (exit code 0", "Verified: the last run of each command on the final commit"},
			message: []string{"On this commit:\n  - `grep -q commit README.md` passed (exit code 0", "Verified: the last run of each command on this commit passed."},
			subject: "Fix the typo",
		},
		{
			name:  "the approved command fails",
			steps: []fakellm.Step{readStep, editStep, run("grep -q comitt README.md", "check the fix"), finish("Fix the typo; "+claim, "Fixed; "+claim+".")},
			stdin: "y\n",
			report: []string{"Done, not verified: fix the README typo", "failed (exit code 1",
				"Not verified: `grep -q comitt README.md` failed (exit code 1) on the final commit",
				`The agent's summary says "` + claim + `", but the record does not show it.`},
			message: []string{"Not verified: `grep -q comitt README.md` failed (exit code 1) on this commit.",
				`The record of runs above does not back the summary's "` + claim + `".`},
			// The agent's title claims the tests pass: the instructions stand in.
			subject: instr,
		},
		{
			name:    "it passed before the last edit",
			steps:   []fakellm.Step{readStep, editStep, run("grep -q commit README.md", "check"), extra, finish("Fix the typo", "Fixed.")},
			stdin:   "y\n",
			report:  []string{"1. `grep -q commit README.md` on earlier files: passed", "Not verified: no command ran on the final commit"},
			message: []string{"Not verified: no command ran on this commit."},
			subject: "Fix the typo",
		},
		{
			name:    "the command is rejected",
			steps:   []fakellm.Step{readStep, editStep, run("grep -q commit README.md", "check"), finish("Fix the typo", "Fixed.")},
			stdin:   "n not now\n",
			report:  []string{"not run: rejected by", "(not now)", "Not verified: no command ran on the final commit"},
			message: []string{"Not verified: no command ran on this commit."},
			subject: "Fix the typo",
		},
		{
			name:    "nothing ran",
			steps:   []fakellm.Step{readStep, editStep, finish("Fix the typo", "Fixed; "+claim+".")},
			report:  []string{"Not verified: no command ran while the agent worked, so nothing was tested on the final commit"},
			message: []string{"Not verified: no command ran while the agent worked, so nothing was tested on this commit."},
			subject: "Fix the typo",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t, false, nil)
			llm := fakellm.New(t, tt.steps...)
			o, stdout, stderr := options(t, dir, llm, strings.NewReader(tt.stdin), true)
			res, err := localrun.Run(context.Background(), o)
			if err != nil {
				t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
			}
			if res.Verification.Verified != tt.verified || (res.Unverified() == "") != tt.verified {
				t.Errorf("Verified %v (%q), want %v", res.Verification.Verified, res.Unverified(), tt.verified)
			}
			if res.Branch != workBranch || res.Final != res.Commits[len(res.Commits)-1] {
				t.Fatalf("Result: branch %q, final %q, commits %q", res.Branch, res.Final, res.Commits)
			}
			out := stdout.String()
			mustContain(t, "stdout", out, tt.report...)
			mustContain(t, "stdout", out, words.Short(res.Final))
			// The report ends with the verification.
			if verdict := regexp.MustCompile(`(?:^|\n)(Not verified|Verified): [^\n]*\n(The agent's summary says [^\n]*\n)?\z`); !verdict.MatchString(out) {
				t.Errorf("the report does not end with the verdict:\n%s", out)
			}
			if strings.Contains(out, "Not verified") == tt.verified {
				t.Errorf("stdout says Not verified: %v, want %v:\n%s", !tt.verified, !tt.verified, out)
			}

			msg := commitMessage(t, dir, workBranch)
			mustContain(t, "the commit message", msg, tt.message...)
			if subject, _, _ := strings.Cut(msg, "\n"); subject != tt.subject {
				t.Errorf("subject %q, want %q", subject, tt.subject)
			}
			if strings.Contains(msg, "\nVerified:") != tt.verified {
				t.Errorf("the commit message says Verified: %v, want %v:\n%s", !tt.verified, tt.verified, msg)
			}
			if !tt.verified {
				noClaim(t, msg, claim)
			}
		})
	}
}

// In the Docker sandbox: a command that passes on the final commit
// verifies the work; one that fails does not.
func TestRunVerifiedInTheDockerSandbox(t *testing.T) {
	image := sandboxtest.Image(t)
	tests := []struct {
		name, command string
		verified      bool
		want          string
	}{
		{name: "passes", command: "grep -q commit README.md", verified: true, want: "Verified: the last run of each command on the final commit"},
		// The repository has no go.mod: go vet fails in the sandbox.
		{name: "fails", command: "go vet ./...", want: "Not verified: `go vet ./...` failed (exit code 1) on the final commit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, false, nil)
			llm := fakellm.New(t, readStep, editStep, run(tt.command, "check"), finishStep)
			o, stdout, stderr := options(t, dir, llm, strings.NewReader("y\n"), true)
			o.Runner, o.Image = localrun.RunnerDocker, image
			res, err := localrun.Run(context.Background(), o)
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, stderr)
			}
			if res.Verification.Verified != tt.verified {
				t.Errorf("Verified %v, want %v", res.Verification.Verified, tt.verified)
			}
			mustContain(t, "stdout", stdout.String(), tt.want)
			mustContain(t, "the commit message", commitMessage(t, dir, workBranch), map[bool]string{true: "\nVerified:", false: "\nNot verified:"}[tt.verified])
			noLogLines(t, stderr.String())
		})
	}
}

// The image is removed while the agent works: the command cannot run.
// The user reads why in a sentence, the agent gets it as the result, and
// the work ends not verified.
func TestRunImageGoneMidRun(t *testing.T) {
	image := sandboxtest.Commit(t, sandboxtest.Image(t), "LABEL pullwright.test=gone")
	dir := newRepo(t, false, nil)
	llm := fakellm.New(t, readStep, editStep, run("grep -q commit README.md", "check"), finishStep)
	stdin, answer := io.Pipe()
	defer answer.Close()
	o, stdout, stderr := options(t, dir, llm, stdin, true)
	o.Runner, o.Image = localrun.RunnerDocker, image
	asked := make(chan struct{})
	var once sync.Once
	stderr.Watch(func(all string) {
		if strings.Contains(all, "Run it") {
			once.Do(func() { close(asked) })
		}
	})
	go func() {
		<-asked
		if out, err := exec.Command("docker", "image", "rm", "-f", image).CombinedOutput(); err != nil {
			t.Errorf("docker image rm: %v\n%s", err, out)
		}
		io.WriteString(answer, "y\n")
	}()
	res, err := localrun.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	out := stderr.String()
	mustContain(t, "stderr", out, "`grep -q commit README.md` could not run: image "+image+" is not available")
	noLogLines(t, out)
	mustContain(t, "the agent's result", lastResult(t, llm.Requests(), 3), "error: the command did not run: image "+image)
	if res.Verification.Verified {
		t.Error("verified, though nothing ran")
	}
	// The record the shared step ended, as serve's reads the same result.
	if len(res.Runs) != 1 || res.Runs[0].Outcome != task.OutcomeNotRun || res.Runs[0].ExitCode != -1 ||
		!strings.HasPrefix(res.Runs[0].Output, "not run: image "+image) {
		t.Errorf("recorded %+v", res.Runs)
	}
	mustContain(t, "stdout", stdout.String(), "could not run, approved by",
		"Not verified: `grep -q commit README.md` could not run on the final commit")
}
