package task_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

const goSumLine = "example.com/dep v1.2.0 h1:abc=\nexample.com/dep v1.2.0/go.mod h1:def=\n"

// A run that keeps its changes: it is shown so, runs asking the runner
// for them, and what it changed (a go.sum line go mod tidy added) is the
// agent's change from then on, in the record and in the pull request.
func TestAKeptRunLandsInThePullRequest(t *testing.T) {
	w := newWorld(t)
	ask := pending("go mod tidy", map[string]string{"go.mod": "module widget\n\nrequire example.com/dep v1.2.0\n"})
	ask.Progress.Pending.KeepChanges = true
	w.agent.Script = []tasktest.Turn{ask, finish("Bump dep", nil)}
	w.runner.Script = []tasktest.Run{{Result: pullwright.RunResult{ExitCode: 0, Output: "", Duration: time.Second,
		Changes: []pullwright.FileChange{{Path: "go.sum", Content: []byte(goSumLine)}}}}}
	fix := w.fix("bump dep")
	w.drain()
	parked := w.want(fix.ID, task.AwaitingApproval)
	r := tasktest.Job(parked).Request
	if !r.KeepChanges || r.Shown == nil || !r.Shown.KeepChanges {
		t.Fatalf("request %+v shown %+v: not marked as keeping its changes", r, r.Shown)
	}
	if c := w.gh.Comment(1, "task-1-request-"+r.ID); c == nil || !strings.Contains(c.Text(), "what it changes is kept") {
		t.Errorf("the request comment does not say its changes are kept: %v", c)
	}
	if cr := w.gh.CheckRuns[r.CheckRunID]; cr == nil || !strings.Contains(cr.Summary, "what it changes is kept") {
		t.Errorf("the approval check run does not say its changes are kept: %+v", cr)
	}
	w.clock.Advance(time.Minute)
	w.answer(task.KindApprove, "maint", 12, r.ID)
	w.drain()
	done := w.want(fix.ID, task.Done)
	if len(w.runner.Specs) != 1 || !w.runner.Specs[0].KeepChanges {
		t.Fatalf("runs %+v: the runner was not asked for the changes", w.runner.Specs)
	}
	if o := w.agent.Outcomes; len(o) != 1 || o[0].Workdir == "" {
		t.Fatalf("the agent heard %+v, without the workspace to keep the changes in", o)
	}
	job := tasktest.Job(done)
	if len(job.Runs) != 1 || len(job.Runs[0].Kept) != 1 || job.Runs[0].Kept[0].Path != "go.sum" {
		t.Errorf("the record of runs %+v does not show what was kept", job.Runs)
	}
	if job.Request.Result != nil && job.Request.Result.Changes != nil {
		t.Error("the stored request still carries the changes' contents")
	}
	head := w.ws.Ref(cloneURL, job.Branch)
	if got := w.ws.Lookup(head).Files["go.sum"]; got != goSumLine {
		t.Errorf("the pull request's go.sum = %q, want the kept %q", got, goSumLine)
	}
	if len(w.gh.Opened) != 1 {
		t.Fatalf("pull requests opened: %+v", w.gh.Opened)
	}
}

// A request that does not keep its changes runs without asking for them,
// and nothing of what a runner might return is applied.
func TestARunThatKeepsNothingChangesNothing(t *testing.T) {
	w := newWorld(t)
	w.agent.Script = []tasktest.Turn{pending("go test ./...", map[string]string{"README.md": "x\n"}), finish("Fix", nil)}
	w.runner.Script = []tasktest.Run{{Result: pullwright.RunResult{ExitCode: 0,
		Changes: []pullwright.FileChange{{Path: "go.sum", Content: []byte(goSumLine)}}}}}
	fix := w.fix("")
	w.drain()
	parked := w.want(fix.ID, task.AwaitingApproval)
	w.clock.Advance(time.Minute)
	w.answer(task.KindApprove, "maint", 12, tasktest.Job(parked).Request.ID)
	w.drain()
	done := w.want(fix.ID, task.Done)
	if w.runner.Specs[0].KeepChanges {
		t.Error("a request that keeps nothing asked the runner for the changes")
	}
	if o := w.agent.Outcomes; len(o) != 1 || o[0].Workdir != "" {
		t.Errorf("the agent was handed a workspace to keep changes in: %+v", o)
	}
	if got, ok := w.ws.Lookup(w.ws.Ref(cloneURL, tasktest.Job(done).Branch)).Files["go.sum"]; ok {
		t.Errorf("go.sum %q reached the pull request", got)
	}
}

// A dependency command that asks for network runs as the setup does, in
// its place, with the setup's allow-list, shown so; what it changed lands
// in the pull request. A bot without the fence refuses it unshown.
func TestADependencyCommandFetchesThroughTheFence(t *testing.T) {
	w := newWorld(t)
	deps := &tasktest.Deps{
		Fetched:     pullwright.RunResult{ExitCode: 0, Changes: []pullwright.FileChange{{Path: "go.sum", Content: []byte(goSumLine)}}},
		FetchRecord: &pullwright.SetupRecord{Steps: []string{"go get example.com/dep@v1.2.0"}, Reached: []string{"proxy.example:443"}},
	}
	w.flow.Deps = deps
	ask := pending("go get example.com/dep@v1.2.0", map[string]string{"main.go": "package main\n\nimport _ \"example.com/dep\"\n"})
	ask.Progress.Pending.Network = true
	w.agent.Script = []tasktest.Turn{ask, finish("Use dep", nil)}
	fix := w.fix("use dep")
	w.drain()
	parked := w.want(fix.ID, task.AwaitingApproval)
	r := tasktest.Job(parked).Request
	if !r.Fetch || !r.KeepChanges || r.Shown == nil || r.Shown.Fetch == nil || !r.Shown.KeepChanges || r.Shown.Setup != nil {
		t.Fatalf("request %+v shown %+v", r, r.Shown)
	}
	if c := w.gh.Comment(1, "task-1-request-"+r.ID); c == nil || !strings.Contains(c.Text(), "may reach the network, through the fence") {
		t.Errorf("the request comment does not say it has network: %v", c)
	}
	w.clock.Advance(time.Minute)
	w.answer(task.KindApprove, "maint", 12, r.ID)
	w.drain()
	done := w.want(fix.ID, task.Done)
	if len(w.runner.Specs) != 0 || len(deps.Fetches) != 1 || len(deps.Requests) != 0 {
		t.Fatalf("runs %d, fetches %d, setups %d: want the fetch alone", len(w.runner.Specs), len(deps.Fetches), len(deps.Requests))
	}
	f := deps.Fetches[0]
	if !f.Spec.KeepChanges || f.Spec.Command != "go get example.com/dep@v1.2.0" || f.Request.Dir != f.Spec.Dir || f.Request.Base != "" {
		t.Errorf("fetch %+v", f)
	}
	job := tasktest.Job(done)
	if len(job.Runs) != 1 || len(job.Runs[0].Kept) != 1 || job.Runs[0].Outcome != task.OutcomePassed {
		t.Errorf("record %+v", job.Runs)
	}
	if got := w.ws.Lookup(w.ws.Ref(cloneURL, job.Branch)).Files["go.sum"]; got != goSumLine {
		t.Errorf("the pull request's go.sum = %q", got)
	}

	// No fence: refused before it is shown.
	w = newWorld(t)
	ask.Progress.Pending.Network = true
	w.agent.Script = []tasktest.Turn{ask, finish("Use dep", nil)}
	fix = w.fix("use dep")
	w.drain()
	w.want(fix.ID, task.Done)
	if o := w.agent.Outcomes; len(o) != 1 || o[0].Verdict != task.Rejected || !strings.Contains(o[0].Reason, "no network fence") {
		t.Errorf("the agent heard %+v", o)
	}
	if len(w.runner.Specs) != 0 || w.gh.Comment(1, "task-1-request-1-1") != nil {
		t.Error("a request for network was shown or run without a fence")
	}
}
