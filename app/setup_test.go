package app_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

const buildCmd = "GOTOOLCHAIN=local go build -o /tmp/app . && echo built"

// newSetupEnv is a bot with the Docker runner and setups on, whose operator
// allows the test's module proxy, on a repository with a Go module that
// needs a dependency and whose setup fetches it from that proxy.
func newSetupEnv(t *testing.T, llm *fakellm.Server) (e *env, host string, served *atomic.Int64) {
	t.Helper()
	image := sandboxtest.Image(t)
	host, served = fencetest.ModProxy(t)
	op, err := policy.LoadOperator([]byte(fmt.Sprintf("fence:\n  hosts: [%q]\n  allowed_nets: [%s]\n", host, fencetest.Loopback)))
	if err != nil {
		t.Fatal(err)
	}
	fwd := fencetest.Forwarder(t)
	e = newEnv(t, llm, func(c *app.Config) {
		c.Runner, c.SandboxImage, c.Forwarder, c.Operator = "docker", image, fwd, op
		c.FenceResolver = fencetest.Resolver()
	})
	files := fencetest.GoModule("")
	files[policy.Path] = fmt.Sprintf("setup:\n  - GOPROXY=http://%s GOTOOLCHAIN=local go mod download\n", host)
	e.git.Push(t, owner, repoName, "master", files, "A module with a dependency")
	fencetest.RemoveCaches(t, owner+"/"+repoName)
	return e, host, served
}

// The tests of this file do not run in parallel: a repository's
// dependency caches are Docker volumes labelled with its name, the same
// owner/name in every test here, which each test counts and removes
// (fencetest.RemoveCaches).

// An approved test run works on a repository with a dependency: before
// the command, the repository's setup fetches it through the fence (the
// installation allows the module proxy) into the repository's cache, and
// the command, with no network, builds on it. The status comment says what
// setup did.
func TestApprovedRunHasTheRepositorysDependencies(t *testing.T) {
	e, host, served := newSetupEnv(t, newRunLLM(t, buildCmd))
	e.comment("d1", 1, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	e.comment("a1", 1, owner, "/approve "+r.ID)
	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	res, setup := tasktest.Job(done).Request.Result, tasktest.Job(done).Request.Setup
	if res == nil || res.ExitCode != 0 || !strings.Contains(res.Output, "built") {
		t.Fatalf("run result = %+v (setup %+v)", res, setup)
	}
	if setup == nil || setup.Failed || len(setup.Blocked) != 0 || len(setup.Reached) != 1 || setup.Reached[0] != host || served.Load() == 0 {
		t.Fatalf("setup = %+v, %d requests to the proxy", setup, served.Load())
	}
	e.waitComment(1, "📦 Setup done")
	m := e.scrape()
	for result, want := range map[string]float64{"miss": 1, "hit": 0, "failed": 0, "error": 0} {
		if got, ok := m.get("pullwright_dependency_cache_total", "result="+result); !ok || got != want {
			t.Errorf("pullwright_dependency_cache_total{result=%q} = %v (%v), want %v", result, got, ok, want)
		}
	}
	// The setup measured the engine's caches: the module it fetched at
	// least (the sum is the engine's, which other tests' caches share).
	if got, ok := m.get("pullwright_dependency_cache_bytes"); !ok || got < 1000 {
		t.Errorf("pullwright_dependency_cache_bytes = %v (%v), want the fetched module's bytes at least", got, ok)
	}
	if _, ok := m.get("pullwright_dependency_cache_evictions_total"); !ok {
		t.Error("pullwright_dependency_cache_evictions_total is not exported")
	}
}

// When the agent changes a dependency manifest, the next request says the
// setup runs first with it, and the approved run sets up again: the new
// manifests are another cache's.
func TestAChangedManifestSetsUpAgainInTheNextRequest(t *testing.T) {
	llm := fakellm.NewByTurn(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": buildCmd, "reason": "build"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "go.mod", "old_text": "go 1.21", "new_text": "go 1.21\n\n// pinned"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": buildCmd + " again", "reason": "build with the new go.mod"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the typo", "summary": "Fixed."})}},
	)
	e, _, _ := newSetupEnv(t, llm)
	e.comment("d1", 1, owner, "/agent fix the typo")
	first := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	if c := e.waitComment(1, "request `"+first.ID+"`"); strings.Contains(c.Body, "setup runs first") {
		t.Fatalf("a request with no manifest change speaks of setup:\n%s", c.Body)
	}
	e.comment("a1", 1, owner, "/approve "+first.ID)
	second := tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	for second.ID == first.ID {
		second = tasktest.Job(e.waitState(1, task.AwaitingApproval)).Request
	}
	c := e.waitComment(1, "request `"+second.ID+"`")
	if !strings.Contains(c.Body, "setup runs first, with these manifests") || !strings.Contains(c.Body, "`go.mod` (+2 −0)") ||
		!strings.Contains(c.Body, "```diff\ndiff --git a/go.mod b/go.mod\n") || !strings.Contains(c.Body, "\n+// pinned\n") {
		t.Fatalf("the request after a go.mod change:\n%s", c.Body)
	}
	e.comment("a2", 1, owner, "/approve "+second.ID)
	done := e.waitTask(1)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s", done.State, done.Error)
	}
	if s := tasktest.Job(done).Request.Setup; s == nil || s.Failed || tasktest.Job(done).Request.Result.ExitCode != 0 {
		t.Fatalf("the second run: setup %+v, result %+v", s, tasktest.Job(done).Request.Result)
	}
}

// bot action with the Docker runner sets up like bot serve: the approved
// run of the second workflow run builds on the dependencies its setup
// fetched through the fence from the module proxy the image names.
func TestActionRunHasTheRepositorysDependencies(t *testing.T) {
	host, served := fencetest.ModProxy(t)
	image := sandboxtest.ImageWith(t, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	op, err := policy.LoadOperator([]byte(fmt.Sprintf("fence:\n  allowed_nets: [%s]\n", fencetest.Loopback)))
	if err != nil {
		t.Fatal(err)
	}
	fwd := fencetest.Forwarder(t)
	w := newWorkflow(t, newRunLLM(t, buildCmd))
	w.git.Push(t, owner, repoName, "master", fencetest.GoModule(""), "A module with a dependency")
	fencetest.RemoveCaches(t, owner+"/"+repoName)
	w.inputs = map[string]string{"INPUT_RUNNER": "docker", "INPUT_SANDBOX-IMAGE": image}
	w.configure = func(c *app.Config) {
		c.Operator, c.Forwarder, c.FenceResolver = op, fwd, fencetest.Resolver()
	}
	w.firstRun()
	res, err := w.run("issue_comment", w.commentEvent(owner, "/approve"))
	if err != nil || res.Outcome != "done" {
		t.Fatalf("second run = %+v, %v\nlogs:\n%s", res, err, w.logs.String())
	}
	if got := lastToolResult(w.llm); !strings.Contains(got, "exit code 0") || !strings.Contains(got, "built") || served.Load() == 0 {
		t.Fatalf("the model got %q after the approval (%d requests to the proxy)", got, served.Load())
	}
	var status bool
	for _, c := range w.gh.Comments(owner, repoName, 1) {
		status = status || strings.Contains(c.Body, "📦 Setup done") && strings.Contains(c.Body, "`go mod download`")
	}
	if !status {
		t.Errorf("no status comment says what setup did: %+v", w.gh.Comments(owner, repoName, 1))
	}
}

// A fix on a pull request gets its dependencies too. The pull request
// changes go.mod, so its request shows that change against the base
// branch, the setup runs on the approved files into a cache of the run's
// own (never one filled from a contributor's files and shared), and the
// approved build finds the dependency.
func TestAPullRequestWithAChangedManifestSetsUpOnItsFiles(t *testing.T) {
	llm := fakellm.NewByTurn(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "docs.md", "old_text": "comitt", "new_text": "commit"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("run", map[string]any{"command": buildCmd, "reason": "build"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the docs", "summary": "Fixed and built."})}},
	)
	e, host, served := newSetupEnv(t, llm)
	e.servePulls()
	gomod := fencetest.GoModule("")["go.mod"]
	e.git.Push(t, owner, repoName, prBranch, map[string]string{"docs.md": docs, "go.mod": gomod + "\n// pinned by the contributor\n"}, "Add a page, pin a module")
	e.gh.AddPullRequest(owner, repoName, fakegithub.PullRequestSeed{
		Number: pr, Title: prTitle, Body: "A page for newcomers.", Author: contributor, HeadRef: prBranch, BaseRef: "master",
	})
	e.prComment("d1", pr, owner, "/agent fix the typo")
	r := tasktest.Job(e.waitState(pr, task.AwaitingApproval)).Request
	c := e.waitComment(pr, "request `"+r.ID+"`")
	if !strings.Contains(c.Body, "setup runs first, with these manifests") || !strings.Contains(c.Body, "change `go.mod` (+2 −0) against `master`") ||
		!strings.Contains(c.Body, "+// pinned by the contributor\n") {
		t.Fatalf("the request on the pull request:\n%s", c.Body)
	}
	e.prComment("a1", pr, owner, "/approve "+r.ID)
	done := e.waitTask(pr)
	if done.State != task.Done {
		t.Fatalf("task ended %s: %s\n%s", done.State, done.Error, e.logs.String())
	}
	setup := tasktest.Job(done).Request.Setup
	if got := lastToolResult(e.llm); !strings.Contains(got, "built") || setup == nil || setup.Failed || served.Load() == 0 {
		t.Fatalf("the model got %q; setup %+v, %d requests to %s", got, setup, served.Load(), host)
	}
	// The setup ran on the pull request's files: its cache was the run's
	// own, and nothing is left of it; no shared cache was filled.
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.VolumeList(t.Context(), client.VolumeListOptions{Filters: client.Filters{}.Add("label", runner.LabelCacheRepo+"="+owner+"/"+repoName)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("caches left for the repository: %d; a pull request's changed manifests fill none that is shared", len(list.Items))
	}
}
