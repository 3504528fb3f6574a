package localrun_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/localrun"
)

func keepRun(command, reason string) fakellm.Step {
	return step(call("run", map[string]any{"command": command, "reason": reason, "keep_changes": true}))
}

// A command whose changes are kept: the user is told so when asked, the
// files it adds, changes, deletes and makes executable are the agent's
// change, the agent is told which, and the branch holds them; the same
// command not kept changes nothing.
func TestRunKeepsWhatACommandChanges(t *testing.T) {
	dir := newRepo(t, false, map[string]string{"old.txt": "old\n", "tool.sh": "#!/bin/sh\necho hi\n"})
	const cmd = "echo added > added.txt && rm old.txt && chmod +x tool.sh && echo more >> README.md"
	llm := fakellm.New(t,
		run("echo thrown > away.txt", "a run that keeps nothing"),
		keepRun(cmd, "the files this fix needs"),
		finishStep,
	)
	o, _, stderr := options(t, dir, llm, strings.NewReader("y\ny\n"), true)
	res, err := localrun.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
	}
	reqs := llm.Requests()
	mustContain(t, "the kept run's result", lastResult(t, reqs, 2), "exit code 0",
		"Kept what the command changed, now part of your change (4 files):", "- README.md changed (+1 -0)",
		"- added.txt added (+1 -0)", "- old.txt deleted (+0 -1)", "- tool.sh changed (+0 -0)")
	if r := lastResult(t, reqs, 1); strings.Contains(r, "Kept") {
		t.Errorf("a run that keeps nothing said %q", r)
	}
	mustContain(t, "stderr", stderr.String(), "This command may change files in the repository; what it changes is kept.")
	if n := strings.Count(stderr.String(), "what it changes is kept"); n != 1 {
		t.Errorf("%d requests said their changes are kept, want 1", n)
	}
	if res.Branch != workBranch {
		t.Fatalf("Result %+v", res)
	}
	if got := gitCmd(t, dir, "diff", "--name-status", "main", workBranch); got != "M\tREADME.md\nA\tadded.txt\nD\told.txt\nM\ttool.sh" {
		t.Errorf("the branch changes:\n%s", got)
	}
	if got := gitCmd(t, dir, "ls-tree", workBranch, "tool.sh"); !strings.HasPrefix(got, "100755") {
		t.Errorf("tool.sh on the branch: %s", got)
	}
}

// The done test of a dependency change: the agent adds an import and its
// require line, and asks for go mod tidy with its changes kept. The setup
// fetches the new dependency through the fence, tidy writes go.sum in the
// sandbox, and the go.sum lines land on the branch, where a plain build
// (go's defaults, -mod=readonly) passes.
func TestRunKeepsTheGoSumTidyWrites(t *testing.T) {
	host, _ := fencetest.ModProxy(t)
	image := sandboxtest.ImageWith(t, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	mod := fencetest.GoModule("")
	dir := newRepo(t, false, map[string]string{
		"go.mod": "module example.com/app\n\ngo 1.21\n",
		"app.go": "package main\n\nfunc main() {}\n",
	})
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fencetest.RemoveCaches(t, "local:"+top)
	llm := fakellm.New(t,
		step(call("write_file", map[string]any{"path": "app.go", "content": strings.Replace(mod["main.go"], "func main", "func run", 1)}),
			call("edit_file", map[string]any{"path": "go.mod", "old_text": "go 1.21\n", "new_text": "go 1.21\n\nrequire github.com/hashicorp/yamux v0.1.2\n"})),
		keepRun("go mod tidy", "write the go.sum lines of the new dependency"),
		run("go build ./...", "build with the new dependency as CI would"),
		finishStep,
	)
	o, _, stderr := options(t, dir, llm, strings.NewReader("y\ny\n"), true)
	o.Runner, o.Image = localrun.RunnerDocker, image
	o.Forwarder, o.Resolver, o.FenceNets = fencetest.Forwarder(t), fencetest.Resolver(), []string{fencetest.Loopback.String()}
	if _, err := localrun.Run(context.Background(), o); err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
	}
	reqs := llm.Requests()
	mustContain(t, "tidy's result", lastResult(t, reqs, 2), "exit code 0", "- go.sum added (+2 -0)")
	mustContain(t, "the build's result", lastResult(t, reqs, 3), "exit code 0")
	if got := gitCmd(t, dir, "show", workBranch+":go.sum"); got != strings.TrimSpace(mod["go.sum"]) {
		t.Errorf("go.sum on the branch:\n%s\nwant\n%s\nstderr:\n%s", got, mod["go.sum"], stderr)
	}
}

// A dependency command with the setup's network: go get fetches through
// the fence, as the setup would, and what it wrote to go.mod and go.sum
// lands on the branch; the user was told it has network, and a plain
// build passes on it.
func TestRunFetchesADependencyThroughTheFence(t *testing.T) {
	host, served := fencetest.ModProxy(t)
	image := sandboxtest.ImageWith(t, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	mod := fencetest.GoModule("")
	dir := newRepo(t, false, map[string]string{
		"go.mod": "module example.com/app\n\ngo 1.21\n",
		"app.go": "package main\n\nfunc main() {}\n",
	})
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fencetest.RemoveCaches(t, "local:"+top)
	llm := fakellm.New(t,
		step(call("write_file", map[string]any{"path": "app.go", "content": strings.Replace(mod["main.go"], "func main", "func run", 1)})),
		step(call("run", map[string]any{"command": "go get github.com/hashicorp/yamux@v0.1.2", "reason": "add the dependency", "network": true})),
		run("go build ./...", "build with the new dependency as CI would"),
		finishStep,
	)
	o, _, stderr := options(t, dir, llm, strings.NewReader("y\ny\n"), true)
	o.Runner, o.Image = localrun.RunnerDocker, image
	o.Forwarder, o.Resolver, o.FenceNets = fencetest.Forwarder(t), fencetest.Resolver(), []string{fencetest.Loopback.String()}
	if _, err := localrun.Run(context.Background(), o); err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
	}
	reqs := llm.Requests()
	mustContain(t, "go get's result", lastResult(t, reqs, 2), "exit code 0", "- go.mod changed", "- go.sum added (+2 -0)")
	mustContain(t, "the build's result", lastResult(t, reqs, 3), "exit code 0")
	mustContain(t, "stderr", stderr.String(), "This command may reach the network, through the fence:", "reached modproxy.test:")
	if served.Load() == 0 {
		t.Error("the module proxy was never asked")
	}
	if got := gitCmd(t, dir, "show", workBranch+":go.sum"); got != strings.TrimSpace(mod["go.sum"]) {
		t.Errorf("go.sum on the branch:\n%s\nwant\n%s", got, mod["go.sum"])
	}
	if got := gitCmd(t, dir, "show", workBranch+":go.mod"); !strings.Contains(got, "require github.com/hashicorp/yamux v0.1.2") {
		t.Errorf("go.mod on the branch:\n%s", got)
	}
}
