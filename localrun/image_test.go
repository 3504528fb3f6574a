package localrun_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/localrun"
)

// A missing sandbox image stops bot run before the agent starts, with the
// commands that get one: no model call, no branch, no report of work.
func TestRunRefusesAMissingImage(t *testing.T) {
	sandboxtest.Image(t) // the engine answers: only the image is missing
	const missing = "pullwright/no-such-image:never-built"
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string, o *localrun.Options)
		why   string
	}{
		{name: "--image", setup: func(t *testing.T, dir string, o *localrun.Options) { o.Image = missing }, why: "--image"},
		{
			name: "the repository's sandbox.image",
			setup: func(t *testing.T, dir string, o *localrun.Options) {
				o.DefaultImage = sandboxtest.Image(t) // below the repository's
				writeFile(t, dir, ".github/pullwright.yml", "sandbox:\n  image: "+missing+"\n")
				gitCmd(t, dir, "add", ".")
				gitCmd(t, dir, "commit", "-q", "-m", "Configure")
			},
			why: "the repository's sandbox.image",
		},
		{name: "BOT_SANDBOX_IMAGE", setup: func(t *testing.T, dir string, o *localrun.Options) { o.DefaultImage = missing }, why: "the default image, BOT_SANDBOX_IMAGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, false, nil)
			llm := fakellm.New(t, readStep, editStep, finishStep)
			o, stdout, stderr := options(t, dir, llm, strings.NewReader("y\n"), true)
			o.Runner = localrun.RunnerDocker
			tt.setup(t, dir, &o)
			_, err := localrun.Run(context.Background(), o)
			if err == nil {
				t.Fatalf("Run succeeded without the image\nstdout:\n%s", stdout)
			}
			mustContain(t, "the error", err.Error(),
				"sandbox image "+missing+" ("+tt.why, "is not in the Docker engine",
				"docker pull "+missing, "scripts/sandbox-image.sh", "--image "+sandboxtest.DefaultImage, "--runner local")
			if n := llm.Calls(); n != 0 {
				t.Errorf("the model was called %d times before the image was found missing", n)
			}
			if got := branches(t, dir); len(got) != 1 {
				t.Errorf("branches %q, want only main", got)
			}
			if stdout.String() != "" {
				t.Errorf("a report for work that never started:\n%s", stdout)
			}
			noLogLines(t, stderr.String())
		})
	}
}
