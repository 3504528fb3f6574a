package localrun_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/localrun"
)

// A bot run stopped while a command runs in the sandbox (Ctrl-C, SIGTERM:
// its context cancelled) leaves no container behind.
func TestACancelledRunLeavesNoContainer(t *testing.T) {
	image := sandboxtest.Image(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// What the run labels its sandboxes with: this process.
	ours := client.Filters{}.Add("label", "pullwright.run="+strconv.Itoa(os.Getpid())+"@"+host)
	list := func() int {
		l, err := cli.ContainerList(t.Context(), client.ContainerListOptions{All: true, Filters: ours})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	if n := list(); n != 0 {
		t.Fatalf("%d containers of this process before the run", n)
	}
	const cmd = "sleep 600"
	dir := newRepo(t, false, nil)
	llm := fakellm.New(t, run(cmd, "wait"), finishStep)
	o, _, stderr := options(t, dir, llm, strings.NewReader(""), false)
	o.Runner, o.Image, o.YesTo = localrun.RunnerDocker, image, []string{cmd}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		// Cancelled once the command's container runs.
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			l, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: ours.Clone().Add("status", "running")})
			if err == nil && len(l.Items) > 0 {
				break
			}
		}
		cancel()
	}()
	_, err = localrun.Run(ctx, o)
	<-stopped
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Run: %v, want interrupted\n%s", err, stderr)
	}
	if n := list(); n != 0 {
		t.Errorf("the stopped run left %d containers\n%s", n, stderr)
	}
}
