package setup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/deps"
	"github.com/pullwright/pullwright/runner"
)

// LabelFetch marks the sandbox and the private cache of a Fetch ("true"),
// beside the spec's own labels: on the engine, a dependency command with
// network is told from a setup and from an approved run. Nothing finds
// or cleans containers by it; the runner's own labels do that.
const LabelFetch = "pullwright.fetch"

// ErrFetchKeepsChanges is Fetch's answer to a spec that does not keep
// its command's changes.
var ErrFetchKeepsChanges = errors.New("a dependency command runs to keep its changes: the spec must set KeepChanges")

// Fetch runs spec's command (an approved dependency command, such as go
// get or npm install --package-lock-only) as the repository's setup runs,
// and gives back the files it changed (RunResult.Changes).
//
// It runs on spec.Dir's files, behind the fence with req's allow-list
// (req.Hosts, req.Nets and, with req.ToolchainHosts, the hosts the
// image's toolchains are configured with for the ecosystems the files
// use: what Prepare's setup of req may reach), with the setup's
// environment for those ecosystems (the tools online and pointed at the
// cache), into a cache of the run's own, mounted writable at Mount and
// removed before Fetch returns, whatever happened: never a shared cache,
// since the command runs code of files the agent wrote. req.Base is not
// read.
//
// From spec it takes the command, the files, the image (or the runner's
// choice for the files, as Prepare makes it), the limits (Memory, Disk,
// NanoCPUs, Timeout), MaxOutput and the labels, to which it adds
// LabelFetch; spec's Network, Caches, Env, Links and Route are not used,
// since the network, the cache and the environment are the setup's.
// spec.KeepChanges must be set (ErrFetchKeepsChanges otherwise), and a
// spec.Image other than req.Image is refused: the image's toolchain hosts
// are req's to allow.
//
// Files with no manifest at all use no ecosystem: the command still runs
// behind the fence, which then allows req.Hosts and req.Nets and no
// toolchain's host (there is no ecosystem to read one for), and its
// environment only names the cache (deps.DirVar): the tools keep their
// own defaults, so what they download goes to the sandbox's /tmp (the
// runner's GOPATH, HOME) and is gone with it.
//
// The record says what ran (its Steps are the command alone), how it
// ended (Failed when it did not exit 0, timed out or was killed), its
// output, bounded, and what the fence let through and refused (Reached,
// Blocked), as a setup's record does; it is set whenever the error is
// nil. Files from which the setup cannot be planned (a manifest that
// does not parse, a tool that would run a file outside the repository)
// are no error: the command does not run, the result is NotStarted and
// its Output, like the record's, says why (pullwright.ErrSetupFiles'
// text). An error is only a misused spec, or the engine's or ctx's
// failure.
func (s *Setup) Fetch(ctx context.Context, req pullwright.SetupRequest, spec pullwright.RunSpec) (pullwright.RunResult, *pullwright.SetupRecord, error) {
	if !spec.KeepChanges {
		return pullwright.RunResult{}, nil, ErrFetchKeepsChanges
	}
	if spec.Image != "" && req.Image != "" && spec.Image != req.Image {
		return pullwright.RunResult{}, nil, fmt.Errorf("fetch: the run's image %s is not the setup's %s", spec.Image, req.Image)
	}
	steps := []string{spec.Command}
	cfg := s.Runner.Config()
	image := runner.ImageFor(spec.Dir, cmp.Or(spec.Image, req.Image, cfg.Image), cfg.FallbackImage)
	// The command stands for the setup's steps: the plan is only read
	// for its ecosystems, and no default step is planned (nor refused).
	plan, err := deps.Detect(os.DirFS(spec.Dir), image, steps)
	if err != nil {
		res := pullwright.RunResult{ExitCode: -1, NotStarted: true,
			Output: fmt.Sprintf("the command did not run: plan the setup: %v: %v", pullwright.ErrSetupFiles, err)}
		return res, &pullwright.SetupRecord{Steps: steps, ExitCode: -1, Failed: true, Output: res.Output}, nil
	}
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelFetch] = "true"
	volume, err := s.Runner.PrivateCache(ctx, labels)
	if err != nil {
		return pullwright.RunResult{}, nil, fmt.Errorf("fetch: %w", err)
	}
	defer func() {
		if err := s.Runner.RemoveCache(context.WithoutCancel(ctx), volume); err != nil {
			s.logger().Warn("setup: remove a fetch's cache", "volume", volume, "err", err)
		}
	}()
	proxy, err := s.proxy(ctx, req, image, plan)
	if err != nil {
		return pullwright.RunResult{}, nil, fmt.Errorf("fetch: %w", err)
	}
	log := s.logger().With("repo", req.Repo, "ecosystems", plan.Ecosystems)
	log.Info("setup: fetching", "command", spec.Command)
	res, err := s.Runner.Run(ctx, pullwright.RunSpec{
		Dir: spec.Dir, Image: image, Command: spec.Command, Route: proxy,
		Caches: []pullwright.CacheMount{{Volume: volume, Target: Mount}},
		Env:    env(plan, true),
		Memory: spec.Memory, Disk: spec.Disk, NanoCPUs: spec.NanoCPUs, Timeout: spec.Timeout,
		MaxOutput: spec.MaxOutput, Labels: labels, KeepChanges: true,
	})
	events, _ := proxy.Events()
	if err != nil {
		return res, nil, fmt.Errorf("fetch: %w", err)
	}
	bad := failed(res)
	if bad {
		log.Warn("setup: fetch failed", "exit_code", res.ExitCode)
	}
	return res, record(steps, res, bad, prepared{Events: events}), nil
}
