package setup_test

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/setup"
)

// The two figures issue 14 asks for, on Pullwright's own module, each
// against its floor in the same run, interleaved so that the machine's
// load hits both alike:
//
//   - cold: a setup of all its dependencies through the fence into an
//     empty cache, against the same go mod download run directly on this
//     machine against the same module proxy, into an empty module cache;
//   - warm: a second task's approved go test ./policy/ (Prepare finding
//     the cache ready, then the run on it), against docker run of the
//     same command with the same cache mounted and the files bind-mounted.
//
// go test -run '^$' -bench Setup -benchtime 3x ./setup/
func BenchmarkSetup(b *testing.B) {
	fencetest.DownloadModules(b, "..")
	host, _ := fencetest.ModProxy(b)
	image := sandboxtest.ImageWith(b, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	repo := fmt.Sprintf("bench/pullwright-%d", os.Getpid())
	fencetest.RemoveCaches(b, repo)
	d, err := runner.NewDocker(runner.DockerConfig{Forwarder: fencetest.Forwarder(b), Owner: repo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver(), Limits: setup.Limits{Keep: 1}}
	dir := pullwrightTree(b)
	req := pullwright.SetupRequest{
		Repo: repo, Dir: dir, Base: dir, Image: image, Timeout: 10 * time.Minute, ToolchainHosts: true,
		Nets: []netip.Prefix{fencetest.Loopback},
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	const test = "GOTOOLCHAIN=local go test -count=1 ./policy/"
	var cold, direct, warm, floor time.Duration
	var prepared pullwright.SetupResult
	for i := 0; i < b.N; i++ {
		// Cold: an empty cache each time.
		removeCacheVolumes(b, cli, repo)
		start := time.Now()
		prepared, err = s.Prepare(b.Context(), req)
		if err != nil || prepared.Record.Failed || prepared.Record == nil {
			b.Fatalf("setup: %v %+v", err, prepared)
		}
		cold += time.Since(start)

		modcache := b.TempDir()
		start = time.Now()
		cmd := exec.Command("go", "mod", "download")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOMODCACHE="+modcache, "GOPROXY=http://"+strings.Replace(host, "modproxy.test", "127.0.0.1", 1),
			"GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("direct go mod download: %v\n%s", err, out)
		}
		direct += time.Since(start)

		// Warm: the second task finds the cache ready.
		start = time.Now()
		p, err := s.Prepare(b.Context(), req)
		if err != nil || p.Record != nil {
			b.Fatalf("warm prepare: %v %+v", err, p)
		}
		res, err := d.Run(b.Context(), pullwright.RunSpec{Dir: dir, Image: image, Command: test, Caches: p.Caches, Env: p.Env, Timeout: 10 * time.Minute, Memory: 4 << 30})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("warm run: %v exit %d\n%s", err, res.ExitCode, res.Output)
		}
		warm += time.Since(start)

		args := []string{"run", "--rm", "--network", "none", "--memory", "4g", "--user", "65534:65534", "--read-only",
			"--tmpfs", "/tmp:rw,exec,size=1g", "-v", dir + ":/workspace:ro", "-w", "/workspace",
			"-v", p.Caches[0].Volume + ":" + setup.Mount + ":ro", "-e", "HOME=/tmp", "-e", "GOCACHE=/tmp/gocache", "-e", "GOPATH=/tmp/go"}
		for _, e := range p.Env {
			args = append(args, "-e", e)
		}
		args = append(args, image, "/bin/sh", "-c", test)
		start = time.Now()
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			b.Fatalf("docker run: %v\n%s", err, out)
		}
		floor += time.Since(start)
		if err := exec.Command("chmod", "-R", "u+w", modcache).Run(); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(cold.Seconds()/n, "cold-s")
	b.ReportMetric(direct.Seconds()/n, "direct-s")
	b.ReportMetric(cold.Seconds()/direct.Seconds(), "cold/direct")
	b.ReportMetric(warm.Seconds()/n, "warm-s")
	b.ReportMetric(floor.Seconds()/n, "docker-run-s")
	b.ReportMetric(warm.Seconds()/floor.Seconds(), "warm/docker-run")
}

func removeCacheVolumes(b *testing.B, cli *client.Client, repo string) {
	list, err := cli.VolumeList(b.Context(), client.VolumeListOptions{Filters: client.Filters{}.Add("label", runner.LabelCacheRepo+"="+repo)})
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range list.Items {
		if _, err := cli.VolumeRemove(b.Context(), v.Name, client.VolumeRemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
	}
}
