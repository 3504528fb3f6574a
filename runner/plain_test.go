package runner_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/runner"
)

// plainRun runs command in a container of image as `docker run --network
// none` would make it, through the engine's API, and returns its output.
func plainRun(t *testing.T, image, command string) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// A terminal, so that the log is the output as written, not framed.
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Cmd: []string{"/bin/sh", "-c", command}, Tty: true},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, client.ContainerRemoveOptions{Force: true})
	wait := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		t.Fatal(err)
	}
	logs, err := cli.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	out, err := io.ReadAll(logs)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(out), "\r\n", "\n")
}

// loopbackNames are the lines of /etc/hosts (in out, after "hosts:") that
// name the loopback addresses, sorted.
func loopbackNames(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && (f[0] == "127.0.0.1" || f[0] == "::1") {
			lines = append(lines, strings.Join(f, " "))
		}
	}
	slices.Sort(lines)
	return lines
}

// To the code inside, the sandbox is a plain container with no network:
// the loopback names resolve as `docker run --network none` of the same
// image has them (test suites listen on and dial "localhost"), though
// everything the sandbox takes away on purpose stays away.
func TestDockerLooksLikeAPlainContainer(t *testing.T) {
	t.Parallel()
	d := newDocker(t, runner.DockerConfig{})
	const probe = "cat /etc/hosts"
	sandbox := dockerRun(t, d, "", probe, time.Minute)
	plain := plainRun(t, sandboxImage(t), probe)
	got, want := loopbackNames(sandbox.Output), loopbackNames(plain)
	if !slices.Equal(got, want) || len(want) == 0 {
		t.Fatalf("the sandbox's loopback names %q, a plain container's %q", got, want)
	}
	if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "127.0.0.1 ") && strings.Contains(l, "localhost") }) {
		t.Errorf("localhost is not 127.0.0.1 in the sandbox: %q", got)
	}
}
