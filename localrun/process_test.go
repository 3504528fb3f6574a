package localrun

import (
	"context"
	"os/exec"
	"strconv"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
)

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// Only a run of this host whose process is gone is gone: another host's
// (a shared engine), a label not understood, and a pid now another
// process's (a start time that differs) are told apart.
func TestGoneFrom(t *testing.T) {
	alive := func(pid int, started string) bool { return pid == 10 && (started == "" || started == "500") }
	for _, tc := range []struct {
		name   string
		labels map[string]string
		gone   bool
	}{
		{"a dead process of this host", map[string]string{labelRun: "11@here"}, true},
		{"a live process of this host", map[string]string{labelRun: "10@here"}, false},
		{"the same process, started when the label says", map[string]string{labelRun: "10@here", labelRunStarted: "500"}, false},
		{"its pid, now another process's", map[string]string{labelRun: "10@here", labelRunStarted: "400"}, true},
		{"another host's", map[string]string{labelRun: "11@there"}, false},
		{"no host", map[string]string{labelRun: "11"}, false},
		{"no pid", map[string]string{labelRun: "x@here"}, false},
		{"no label", map[string]string{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := goneFrom(tc.labels, "here", alive); got != tc.gone {
				t.Errorf("goneFrom(%v) = %v, want %v", tc.labels, got, tc.gone)
			}
		})
	}
	if goneFrom(map[string]string{labelRun: "11@"}, "", alive) {
		t.Error("a run of an unknown host is gone")
	}
}

func TestProcessAlive(t *testing.T) {
	self := thisProcess()
	if !processAlive(self.pid, self.started) {
		t.Errorf("this process (%d, started %q) is not alive", self.pid, self.started)
	}
	if self.started != "" && processAlive(self.pid, self.started+"1") {
		t.Error("a process that started at another time is this one")
	}
	if pid := deadPID(t); processAlive(pid, "") {
		t.Errorf("the ended process %d is alive", pid)
	}
}

// A bot run that was killed left its sandboxes running; the next one
// removes them, and nothing else: not a live run's, not another host's,
// not a container of another owner or one the runner did not make.
func TestTheNextRunRemovesWhatAKilledRunLeft(t *testing.T) {
	image := sandboxtest.Image(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	self := thisProcess()
	dead := strconv.Itoa(deadPID(t)) + "@" + self.host
	managed := map[string]string{runner.LabelManaged: "true", runner.LabelOwner: sandboxOwner}
	with := func(extra map[string]string, base map[string]string) map[string]string {
		l := map[string]string{}
		for k, v := range base {
			l[k] = v
		}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	cases := []struct {
		name   string
		labels map[string]string
		gone   bool
	}{
		{"a killed run's", with(map[string]string{labelRun: dead}, managed), true},
		{"a killed run's, with its start time", with(map[string]string{labelRun: dead, labelRunStarted: "1"}, managed), true},
		{"this live run's", with(self.labels(), managed), false},
		{"another host's", with(map[string]string{labelRun: strconv.Itoa(deadPID(t)) + "@elsewhere.test"}, managed), false},
		{"another owner's", with(map[string]string{labelRun: dead, runner.LabelOwner: "bot-serve"}, managed), false},
		{"not the runner's", map[string]string{labelRun: dead, runner.LabelOwner: sandboxOwner}, false},
	}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		// As the runner leaves one: a sandbox whose command still runs.
		c, err := cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
			Config:     &container.Config{Image: image, Cmd: []string{"sleep", "600"}, Labels: tc.labels},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = c.ID
		t.Cleanup(func() {
			_, _ = cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
		})
		if _, err := cli.ContainerStart(t.Context(), c.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	vol, err := cli.VolumeCreate(t.Context(), client.VolumeCreateOptions{Labels: cases[0].labels})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.VolumeRemove(context.Background(), vol.Volume.Name, client.VolumeRemoveOptions{Force: true})
	})

	d, err := runner.NewDocker(runner.DockerConfig{Owner: sandboxOwner, Labels: self.labels()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n, err := removeLeftBehind(t.Context(), d, self)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i, tc := range cases {
		_, err := cli.ContainerInspect(t.Context(), ids[i], client.ContainerInspectOptions{})
		if gone := err != nil; gone != tc.gone {
			t.Errorf("%s: removed %v, want %v (%v)", tc.name, gone, tc.gone, err)
		}
		if tc.gone {
			want++
		}
	}
	// Another bot run may have left its own meanwhile: at least ours.
	if n < want {
		t.Errorf("removed %d containers, want at least %d", n, want)
	}
	if _, err := cli.VolumeInspect(t.Context(), vol.Volume.Name, client.VolumeInspectOptions{}); err == nil {
		t.Errorf("the killed run's volume %s is still there", vol.Volume.Name)
	}
}
