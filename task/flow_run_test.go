package task_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// TestApprovedRuns runs an approved request and checks what the agent
// hears of it: the sandbox's result, a setup's, or why nothing ran.
func TestApprovedRuns(t *testing.T) {
	cases := []struct {
		name string
		// write is what the agent writes with its request.
		write map[string]string
		setup func(w *world, deps *tasktest.Deps)
		// exit and output are the result the agent hears; runs how often
		// the runner ran.
		exit   int
		output string
		runs   int
		check  func(t *testing.T, w *world, deps *tasktest.Deps, fix *task.Task)
	}{
		{
			name: "the command fails", write: map[string]string{"README.md": "x\n"},
			setup: func(w *world, deps *tasktest.Deps) {
				w.runner.Script = []tasktest.Run{{Result: pullwright.RunResult{ExitCode: 2, Output: "FAIL\n", Duration: time.Second}}}
			},
			exit: 2, output: "FAIL", runs: 1,
			check: func(t *testing.T, w *world, deps *tasktest.Deps, fix *task.Task) {
				if c := w.gh.CheckRuns[tasktest.Job(fix).Request.RunCheckID]; c.Conclusion != "failure" || !strings.Contains(c.Text, "FAIL") {
					t.Errorf("run check %+v", c)
				}
			},
		},
		{
			name: "the sandbox fails", write: map[string]string{"README.md": "x\n"},
			setup: func(w *world, deps *tasktest.Deps) {
				w.runner.Script = []tasktest.Run{{Err: errors.New("docker: no such image")}}
			},
			exit: -1, output: "the sandbox failed to run the command: the sandbox is not working", runs: 1,
		},
		{
			name: "ignored files stay out of the run", write: map[string]string{"README.md": "x\n", "build/out.bin": "junk"},
			setup: func(w *world, deps *tasktest.Deps) { w.ws.Ignored = []string{"build/"} },
			exit:  0, output: "not part of this run, because git ignores them: build/out.bin", runs: 1,
			check: func(t *testing.T, w *world, deps *tasktest.Deps, fix *task.Task) {
				if _, ok := w.runner.Files[0]["build/out.bin"]; ok {
					t.Error("an ignored file reached the run")
				}
			},
		},
		{
			name: "dependencies from the shared cache", write: map[string]string{"README.md": "x\n"},
			setup: func(w *world, deps *tasktest.Deps) {
				deps.Ready = pullwright.SetupResult{Caches: []pullwright.CacheMount{{Volume: "cache-1", Target: "/cache", ReadOnly: true}}, Env: []string{"GOMODCACHE=/cache/mod"}}
			},
			exit: 0, output: "ok", runs: 1,
			check: func(t *testing.T, w *world, deps *tasktest.Deps, fix *task.Task) {
				spec := w.runner.Specs[0]
				if len(spec.Caches) != 1 || spec.Env[0] != "GOMODCACHE=/cache/mod" || deps.Released != 1 {
					t.Errorf("spec caches %+v env %v, released %d", spec.Caches, spec.Env, deps.Released)
				}
				r := deps.Requests[0]
				if r.Dir != spec.Dir || !strings.HasSuffix(r.Base, ".base") || r.Repo != "acme/widget" {
					t.Errorf("deps request %+v", r)
				}
				// The run's and the base's files are gone after the run.
				for _, dir := range []string{r.Dir, r.Base} {
					if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s is still there: %v", filepath.Base(dir), err)
					}
				}
			},
		},
		{
			name: "a failed setup runs nothing", write: map[string]string{"README.md": "x\n"},
			setup: func(w *world, deps *tasktest.Deps) {
				deps.Ready = pullwright.SetupResult{Record: &pullwright.SetupRecord{Steps: []string{"go mod download"}, ExitCode: 1, Failed: true, Blocked: []string{"evil.example:443"}}}
			},
			exit: -1, output: "The network fence blocked: evil.example:443", runs: 0,
		},
		{
			name: "a setup that cannot run", write: map[string]string{"README.md": "x\n"},
			setup: func(w *world, deps *tasktest.Deps) { deps.Err = errors.New("docker down") },
			exit:  -1, output: "the repository's setup (fetching its dependencies) could not run", runs: 0,
		},
		{
			// The repository's files are at fault: the reason is told,
			// unlike an engine's failure, which stays in the bot's logs.
			name: "a setup whose files cannot be planned says why", write: map[string]string{"README.md": "x\n"},
			setup: func(w *world, deps *tasktest.Deps) {
				deps.Err = fmt.Errorf("plan the setup: %w: %w", pullwright.ErrSetupFiles, errors.New("pyproject.toml: backend-path \"../x\" leaves the repository"))
			},
			exit: -1, output: "could not run: plan the setup: the setup cannot be planned from the repository's files: pyproject.toml: backend-path \"../x\" leaves the repository", runs: 0,
		},
		{
			name: "a changed manifest is shown with the request", write: map[string]string{"go.mod": "module widget\n\nrequire evil v1.0.0\n"},
			exit: 0, output: "ok", runs: 1,
			check: func(t *testing.T, w *world, deps *tasktest.Deps, fix *task.Task) {
				c := w.gh.Comment(1, "task-1-request-"+tasktest.Job(fix).Request.ID)
				if c == nil || !strings.Contains(c.Text(), "+require evil v1.0.0") {
					t.Errorf("request comment %q lacks the manifest's diff", c.Text())
				}
			},
		},
		{
			// The build backend pip imports from pyproject.toml's
			// backend-path is code setup runs: its change is a manifest's,
			// though no fixed name says so.
			name: "a changed build backend is shown with the request", write: map[string]string{"_build/backend.py": "import os\n"},
			setup: func(w *world, deps *tasktest.Deps) {
				w.ws.Commit(cloneURL, "main", map[string]string{
					"pyproject.toml":    "[build-system]\nbuild-backend = \"backend\"\nbackend-path = [\"_build\"]\n",
					"_build/backend.py": "def build_wheel(*a): pass\n",
				}, "an in-tree build backend")
			},
			exit: 0, output: "ok", runs: 1,
			check: func(t *testing.T, w *world, deps *tasktest.Deps, fix *task.Task) {
				c := w.gh.Comment(1, "task-1-request-"+tasktest.Job(fix).Request.ID)
				if c == nil || !strings.Contains(c.Text(), "setup runs first, with these manifests") || !strings.Contains(c.Text(), "+import os") {
					t.Errorf("request comment %q lacks the build backend's diff", c.Text())
				}
			},
		},
		{
			// A pyproject.toml whose backend-path cannot be read leaves
			// the manifests unknown: the request says the comparison
			// failed, rather than that none changed.
			name: "an unreadable backend-path leaves the manifests unknown", write: map[string]string{"src/x.py": "pass\n"},
			setup: func(w *world, deps *tasktest.Deps) {
				w.ws.Commit(cloneURL, "main", map[string]string{"pyproject.toml": "[build-system]\nbackend-path = \"_build\"\n"}, "a bad backend-path")
			},
			exit: 0, output: "ok", runs: 1,
			check: func(t *testing.T, w *world, deps *tasktest.Deps, fix *task.Task) {
				c := w.gh.Comment(1, "task-1-request-"+tasktest.Job(fix).Request.ID)
				if c == nil || !strings.Contains(c.Text(), "The dependency manifests could not be compared") {
					t.Errorf("request comment %q does not say the manifests are unknown", c.Text())
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			deps := &tasktest.Deps{}
			w.flow.Deps = deps
			if c.setup != nil {
				c.setup(w, deps)
			}
			script, ready, depsErr := slices.Clone(w.runner.Script), deps.Ready, deps.Err
			w.agent.Script = []tasktest.Turn{pending("go test ./...", c.write), finish("Fix", nil)}
			fix := w.fix("")
			w.drain()
			parked := w.want(fix.ID, task.AwaitingApproval)
			w.clock.Advance(time.Minute)
			w.answer(task.KindApprove, "maint", 12, tasktest.Job(parked).Request.ID)
			w.drain()
			got := w.want(fix.ID, task.Done)
			o := w.agent.Outcomes
			if len(o) != 1 || o[0].Result == nil || o[0].Result.ExitCode != c.exit || !strings.Contains(o[0].Result.Output, c.output) {
				t.Fatalf("the agent heard %+v", o)
			}
			if len(w.runner.Specs) != c.runs {
				t.Errorf("%d runs, want %d", len(w.runner.Specs), c.runs)
			}
			if c.check != nil {
				c.check(t, w, deps, got)
			}
			// bot run's way: the same step, ending the record it is
			// given. serve's, made when it resolved the request, is the
			// same record, but for the words serve keeps to itself (a
			// failure's explanation, the run's left-out files).
			var botRun task.RunRecord
			ran, err := task.Sandboxed{Runner: &tasktest.Runner{Script: script}, Deps: &tasktest.Deps{Ready: ready, Err: depsErr}}.Run(
				t.Context(), pullwright.RunSpec{Dir: t.TempDir(), Command: "go test ./..."}, &pullwright.SetupRequest{Repo: "acme/widget"}, &botRun)
			if err != nil || len(tasktest.Job(got).Runs) != 1 {
				t.Fatalf("Run = %v; serve recorded %+v", err, tasktest.Job(got).Runs)
			}
			serve := tasktest.Job(got).Runs[0]
			if serve.Outcome != botRun.Outcome || serve.ExitCode != botRun.ExitCode || serve.Duration != botRun.Duration ||
				ran.Err == nil && len(w.ws.Ignored) == 0 && serve.Output != botRun.Output {
				t.Errorf("serve recorded\n%+v\nthe shared step records\n%+v", serve, botRun)
			}
		})
	}
}

// A run cut short is reported, never repeated on the same approval.
func TestAnInterruptedRunIsNotRepeated(t *testing.T) {
	w, fix := parked(t, "")
	w.answer(task.KindApprove, "maint", 12, "")
	w.drain()
	// Replay the run's last step from a later claim: a task that had
	// started the command in claim 1 and is picked up in claim 2.
	got := w.want(fix.ID, task.Done)
	replay := got.Clone()
	r := *tasktest.Job(got).Request
	tasktest.Job(replay).Request, replay.State, replay.Claim = &r, task.Running, 2
	r.Result, r.StartedIn, r.RunClosed = nil, 1, false
	if err := w.flow.Step(w.ctx, replay); err != nil {
		t.Fatal(err)
	}
	if r.Result == nil || r.Result.ExitCode != -1 || !strings.Contains(r.Result.Output, "was not repeated") || len(w.runner.Specs) != 1 {
		t.Errorf("result %+v after %d runs", r.Result, len(w.runner.Specs))
	}
}
