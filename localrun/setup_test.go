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

// bot run sets up a repository's dependencies before an approved command,
// as bot serve does: through the fence, to the module proxy the image's
// go env names, into a cache shared by the runs whose manifests are
// HEAD's. When the agent changes go.mod, --yes-to no longer answers: the
// user is shown the change and asked, and the setup runs again on the
// approved files.
func TestRunSetsUpTheDependencies(t *testing.T) {
	host, served := fencetest.ModProxy(t)
	image := sandboxtest.ImageWith(t, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	dir := newRepo(t, false, fencetest.GoModule(""))
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fencetest.RemoveCaches(t, "local:"+top)
	const build = "go build ./..."
	llm := fakellm.New(t,
		editStep,
		run(build, "build with the dependencies"),
		step(call("edit_file", map[string]any{"path": "go.mod", "old_text": "go 1.21", "new_text": "go 1.21\n\n// pinned"})),
		run(build, "build with the new go.mod"),
		finishStep,
	)
	o, _, stderr := options(t, dir, llm, strings.NewReader("y\n"), true)
	o.Runner, o.Image, o.YesTo = localrun.RunnerDocker, image, []string{build}
	o.Forwarder, o.Resolver, o.FenceNets = fencetest.Forwarder(t), fencetest.Resolver(), []string{fencetest.Loopback.String()}
	if _, err := localrun.Run(context.Background(), o); err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
	}
	reqs := llm.Requests()
	mustContain(t, "the first build's result", lastResult(t, reqs, 2), "exit code 0")
	mustContain(t, "the second build's result", lastResult(t, reqs, 4), "exit code 0")
	out := stderr.String()
	mustContain(t, "stderr", out,
		"setup done in", "go mod download", "reached modproxy.test:",
		"! The repository's setup runs first, with these manifests. The files to run change `go.mod`", "+// pinned")
	if strings.Count(out, "setup done in") != 2 || served.Load() == 0 {
		t.Errorf("want two setups (HEAD's, then the changed go.mod's), %d requests to the proxy:\n%s", served.Load(), out)
	}
	// The first build was on the --yes-to list and not asked; the second
	// was asked, since its go.mod changed.
	if n := strings.Count(out, "The agent asks to run a command"); n != 1 {
		t.Errorf("asked %d times, want once:\n%s", n, out)
	}
}

// Without a terminal, a listed command whose setup would install the
// go.mod the agent changed is approved by --yes-to only with
// --yes-to-setup, which the record and the output name as the approver;
// without it, it is rejected and the agent is told why.
func TestYesToSetupApprovesAChangedManifest(t *testing.T) {
	host, _ := fencetest.ModProxy(t)
	image := sandboxtest.ImageWith(t, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	const build = "go build ./..."
	tests := []struct {
		name     string
		setupToo bool
		second   []string // the second build's result, as the model sees it
		setups   int
		by       string
		want     []string
	}{
		{
			name: "with --yes-to-setup", setupToo: true, second: []string{"exit code 0"}, setups: 2, by: "--yes-to and --yes-to-setup",
			want: []string{
				"--yes-to-setup: the list also approves",
				"! The repository's setup runs first, with these manifests. The files to run change `go.mod`", "+// pinned",
				"running `go build ./...` (approved by --yes-to and --yes-to-setup: the setup installs the changed manifests first)",
				"), approved by --yes-to and --yes-to-setup\n",
			},
		},
		{
			name: "without", second: []string{"rejected by @pullwright", "--yes-to-setup"}, setups: 1, by: "--yes-to",
			want: []string{
				"(--yes-to-setup lets the list approve it)",
				"rejected `go build ./...` (by --yes-to): it needs the repository's setup",
				"not run: rejected by --yes-to (it needs the repository's setup",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, false, fencetest.GoModule(""))
			top, err := filepath.EvalSymlinks(dir)
			if err != nil {
				t.Fatal(err)
			}
			fencetest.RemoveCaches(t, "local:"+top)
			llm := fakellm.New(t,
				editStep,
				run(build, "build with the dependencies"),
				step(call("edit_file", map[string]any{"path": "go.mod", "old_text": "go 1.21", "new_text": "go 1.21\n\n// pinned"})),
				run(build, "build with the new go.mod"),
				finishStep,
			)
			o, stdout, stderr := options(t, dir, llm, strings.NewReader(""), false)
			o.Runner, o.Image, o.YesTo, o.YesToSetup = localrun.RunnerDocker, image, []string{build}, tt.setupToo
			o.Forwarder, o.Resolver, o.FenceNets = fencetest.Forwarder(t), fencetest.Resolver(), []string{fencetest.Loopback.String()}
			res, err := localrun.Run(context.Background(), o)
			if err != nil {
				t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
			}
			reqs := llm.Requests()
			mustContain(t, "the first build's result", lastResult(t, reqs, 2), "exit code 0")
			mustContain(t, "the second build's result", lastResult(t, reqs, 4), tt.second...)
			out := stderr.String() + stdout.String()
			mustContain(t, "the output", out, tt.want...)
			if n := strings.Count(out, "setup done in"); n != tt.setups {
				t.Errorf("%d setups, want %d:\n%s", n, tt.setups, out)
			}
			if len(res.Runs) != 2 || res.Runs[1].By != tt.by {
				t.Errorf("the record of runs: %+v; want the second answered by %q", res.Runs, tt.by)
			}
			for _, w := range []string{"Run it", "your approval", "waiting for your answer"} {
				if strings.Contains(out, w) {
					t.Errorf("the output says %q:\n%s", w, out)
				}
			}
		})
	}
}
