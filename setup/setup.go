// Package setup makes a repository's dependencies ready for its approved
// runs. It plans the setup (deps.Plan) on the approved commit's files, runs
// it once per plan key in a fenced sandbox (network only through the
// fence, to the hosts its policy allows) into a cache volume of the
// repository's, and gives every approved run that cache, read-only, with
// the variables that point the tools at it. A later task with the same
// manifests finds the cache ready and runs no setup.
//
// It speaks the vocabulary of package pullwright, so that *Setup is
// task's Dependencies port as it is, without knowing task.
//
// Import rule: none of task.
package setup

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/buildcache"
	"github.com/pullwright/pullwright/deps"
	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/runner"
)

// Mount is where a cache is in the sandbox; its files are in CacheFiles.
const Mount = "/deps"

// Dir is the directory the setup fills, as the sandbox sees it.
const Dir = Mount + "/" + runner.CacheFiles

// DefaultKeep is how many ready caches a repository keeps.
const DefaultKeep = 3

// Setup runs setups on a Docker runner.
type Setup struct {
	Runner *runner.Docker
	// Resolver resolves the hosts setup asks for; nil is the system's.
	Resolver fence.Resolver
	// Limits bound the caches on the engine (see Limits).
	Limits Limits
	// Denied are the bot's own addresses (OwnAddresses), which no setup
	// reaches whatever a request allows.
	Denied []netip.Prefix
	// Parent is the network's own proxy, which what the fence allows
	// goes out through (fence.Parent); nil goes direct.
	Parent *fence.Parent
	Logger *slog.Logger

	mu sync.Mutex
	// probed are the toolchains' hosts read from each image, by image and
	// ecosystem: an image's configuration does not change under its name
	// often enough to read it before every setup.
	probed map[string][]string
	// keys lock the setups of one shared cache (lock).
	keys map[string]*sync.Mutex
	// used is when each cache was last given to a run, for eviction;
	// a cache this process has not handed out counts from when it was
	// made ready. held counts the runs a cache was given to that have not
	// released it: eviction leaves those alone, mounted yet or not.
	used map[string]time.Time
	held map[string]int
}

// prepared is what Prepare found and did, before it is told in the
// vocabulary (result).
type prepared struct {
	Plan deps.Plan
	// Caches and Env go into the approved run's Spec.
	Caches []pullwright.CacheMount
	Env    []string
	Links  []pullwright.Link
	// Prepare makes the run's Go build cache directory (buildcache).
	Prepare string
	// Setup is the setup run, when this call ran one (nil when the cache
	// was ready or there is nothing to set up); Events are the
	// connections it asked the fence for.
	Setup  *pullwright.RunResult
	Events []fence.Event
	// Failed is true when the setup ran and did not succeed: the approved
	// command should not run on a half-filled cache.
	Failed bool
	// Private is true when the cache is this run's own (see
	// pullwright.SetupRequest.Base); Release removes it after the run.
	Private bool
	// Measured is set when this call measured the engine's ready caches
	// (after a setup filled one): CacheBytes is what they hold together,
	// after Evicted were removed.
	Measured   bool
	CacheBytes int64
	Evicted    []string
	release    func(context.Context)
}

// Hosts are the hosts ("host:port") the setup reached and those the fence
// refused it, each once, in the order first asked for.
func (p prepared) Hosts() (reached, blocked []string) {
	for _, e := range p.Events {
		hp := net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
		list := &blocked
		if e.Allowed {
			list = &reached
		}
		if !slices.Contains(*list, hp) {
			*list = append(*list, hp)
		}
	}
	return reached, blocked
}

// Release removes what the run alone used; call it once the run ended.
func (p prepared) Release(ctx context.Context) {
	if p.release != nil {
		p.release(ctx)
	}
}

// Prepare plans the setup for req's files and makes its cache ready,
// running the setup if it is not.
func (s *Setup) Prepare(ctx context.Context, req pullwright.SetupRequest) (pullwright.SetupResult, error) {
	p, err := s.prepare(ctx, req)
	return p.result(), err
}

// maxHostsShown bounds the hosts a setup record keeps of each kind, and
// maxOutputLines its output: the record is stored with the task and
// shown in its status.
const (
	maxHostsShown  = 20
	maxOutputLines = 60
)

// result is p told in the vocabulary.
func (p prepared) result() pullwright.SetupResult {
	out := pullwright.SetupResult{Key: p.Plan.Key, Steps: p.Plan.Steps, Caches: p.Caches, Env: p.Env, Links: p.Links, Prepare: p.Prepare,
		Private: p.Private, Measured: p.Measured, CacheBytes: p.CacheBytes, Evicted: p.Evicted, Release: p.Release}
	if p.Setup != nil {
		out.Record = record(p.Plan.Steps, *p.Setup, p.Failed, p)
	}
	return out
}

// failed reports a setup's run that did not succeed.
func failed(res pullwright.RunResult) bool {
	return res.ExitCode != 0 || res.TimedOut || res.OOMKilled
}

// record is the record of a run of steps that ended as res, whose
// connections p.Events holds.
func record(steps []string, res pullwright.RunResult, failed bool, p prepared) *pullwright.SetupRecord {
	reached, blocked := p.Hosts()
	return &pullwright.SetupRecord{Steps: steps, ExitCode: res.ExitCode, Failed: failed, Duration: res.Duration,
		Output: tailLines(res.Output, maxOutputLines), Reached: reached[:min(len(reached), maxHostsShown)], Blocked: blocked[:min(len(blocked), maxHostsShown)]}
}

// tailLines keeps the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return "[…]\n" + strings.Join(lines[len(lines)-n:], "")
}

func (s *Setup) prepare(ctx context.Context, req pullwright.SetupRequest) (prepared, error) {
	cfg := s.Runner.Config()
	image := runner.ImageFor(req.Dir, cmp.Or(req.Image, cfg.Image), cfg.FallbackImage)
	plan, err := deps.Detect(os.DirFS(req.Dir), image, req.Setup)
	if err != nil {
		return prepared{}, fmt.Errorf("plan the setup: %w: %w", pullwright.ErrSetupFiles, err)
	}
	p := prepared{Plan: plan}
	if len(plan.Steps) == 0 {
		return p, nil
	}
	shared := false
	if req.Base != "" {
		base, err := deps.Detect(os.DirFS(req.Base), image, req.Setup)
		if err != nil {
			return p, fmt.Errorf("plan the setup of the default branch's files: %w: %w", pullwright.ErrSetupFiles, err)
		}
		shared = base.Key == plan.Key
	}
	if !shared {
		return s.private(ctx, req, image, plan)
	}
	modules := goModules(plan)
	key := cacheKey(plan.Key, modules)
	unlock := s.lock(key)
	defer unlock()
	// Held from before it is looked up until the run released it, so
	// that no eviction (of this setup or another's) takes it between the
	// lookup and the run's end.
	volume := runner.CacheVolumeName(req.Repo, key)
	s.hold(volume)
	fail := func(p prepared, err error) (prepared, error) {
		s.unhold(volume)
		return p, err
	}
	cache, err := s.Runner.Cache(ctx, req.Repo, key)
	if err != nil {
		return fail(p, err)
	}
	if !cache.Ready {
		// Another bot on the engine may be filling it: wait for it, then
		// look again, since what it filled is ready now.
		release, err := s.Runner.ClaimCache(ctx, cache, image, s.claimTTL(req))
		if err != nil {
			return fail(p, err)
		}
		defer release()
		if cache, err = s.Runner.Cache(ctx, req.Repo, key); err != nil {
			return fail(p, err)
		}
	}
	log := s.logger().With("repo", req.Repo, "cache", cache.Volume, "key", plan.Key[:12])
	if !cache.Ready {
		proxy, err := s.proxy(ctx, req, image, plan)
		if err != nil {
			return fail(p, err)
		}
		log.Info("setup: running", "steps", plan.Steps, "ecosystems", plan.Ecosystems)
		// On the default branch's files: what fills a shared cache is
		// code nobody but the default branch wrote.
		if err := s.run(ctx, &p, req.Base, image, cache.Volume, req, proxy); err != nil || p.Failed {
			// What a failed setup wrote is no cache: the next one starts
			// from nothing, and nothing is left on the engine's disk.
			if rmErr := s.Runner.RemoveCache(context.WithoutCancel(ctx), cache.Volume); rmErr != nil {
				log.Warn("setup: remove a failed cache", "err", rmErr)
			}
			return fail(p, err)
		}
		// Only here is the build cache warmed: it is what every later
		// run of the repository trusts.
		if len(modules) > 0 {
			s.warm(ctx, image, cache.Volume, req, plan, modules)
		}
		bytes, build := s.measure(ctx, image, cache.Volume, req)
		cache.BuildCache = build && len(modules) > 0
		if err := s.Runner.MarkCacheReady(ctx, cache, bytes); err != nil {
			return fail(p, err)
		}
		// The engine dates the marker to the second, and a cache used
		// earlier in that second carries a finer time: the cache just
		// made is the most recently used, whatever the clocks' grain.
		s.touch(cache.Volume)
		if err := s.evict(ctx, &p); err != nil {
			log.Warn("setup: evicting caches", "err", err)
		} else if len(p.Evicted) > 0 {
			log.Info("setup: evicted caches", "volumes", p.Evicted, "bytes_left", p.CacheBytes)
		}
	}
	s.touch(cache.Volume)
	var once sync.Once
	p.release = func(context.Context) { once.Do(func() { s.unhold(cache.Volume) }) }
	p.Caches = []pullwright.CacheMount{{Volume: cache.Volume, Target: Mount, ReadOnly: true}}
	p.Env, p.Links = env(plan, false), links(plan)
	if cache.BuildCache {
		p.Env, p.Prepare = append(p.Env, buildcache.RunEnv()), buildcache.Prepare(Dir)
	}
	return p, nil
}

// claimTTL is how long a claim to fill a cache lasts if its holder dies
// and no successor clears it. A live holder must never outlast it, or a
// waiter fills the cache beside it: the setup's run and the warm, each
// within the run's timeout, the toolchain probes and the measure, and the
// copies of the files that no timeout bounds, with room to spare.
func (s *Setup) claimTTL(req pullwright.SetupRequest) time.Duration {
	return 3*cmp.Or(req.Timeout, s.Runner.Config().Timeout, runner.DefaultTimeout) + 30*time.Minute
}

// goModules are the directories of plan's Go modules, whose packages a
// shared setup compiles into the build cache.
func goModules(plan deps.Plan) []string {
	var dirs []string
	if slices.Contains(plan.Manifests, "go.mod") {
		dirs = append(dirs, ".")
	}
	for _, pr := range plan.Projects {
		if pr.Ecosystem == deps.Go {
			dirs = append(dirs, pr.Dir)
		}
	}
	return dirs
}

// cacheKey is the key of a shared cache of plan key for the Go modules:
// one with a build cache is another cache than one without (a cache
// made before there were build caches has no program to serve one).
func cacheKey(key string, modules []string) string {
	if len(modules) == 0 {
		return key
	}
	sum := sha256.Sum256([]byte(key + "\x00" + buildcache.Version))
	return hex.EncodeToString(sum[:])
}

// private runs the setup on req.Dir into a cache of this run's own.
func (s *Setup) private(ctx context.Context, req pullwright.SetupRequest, image string, plan deps.Plan) (prepared, error) {
	p := prepared{Plan: plan, Private: true}
	volume, err := s.Runner.PrivateCache(ctx, req.Labels)
	if err != nil {
		return p, err
	}
	p.release = func(ctx context.Context) {
		if err := s.Runner.RemoveCache(context.WithoutCancel(ctx), volume); err != nil {
			s.logger().Warn("setup: remove a private cache", "volume", volume, "err", err)
		}
	}
	proxy, err := s.proxy(ctx, req, image, plan)
	if err != nil {
		p.Release(ctx)
		return prepared{Plan: plan}, err
	}
	if err := s.run(ctx, &p, req.Dir, image, volume, req, proxy); err != nil || p.Failed {
		p.Release(ctx)
		p.release = nil
		return p, err
	}
	p.Caches = []pullwright.CacheMount{{Volume: volume, Target: Mount, ReadOnly: true}}
	p.Env, p.Links = env(plan, false), links(plan)
	return p, nil
}

// proxy is the fence of a setup of plan in image.
func (s *Setup) proxy(ctx context.Context, req pullwright.SetupRequest, image string, plan deps.Plan) (*fence.Proxy, error) {
	nets := make([]netip.Prefix, len(req.Nets))
	for i, n := range req.Nets {
		nets[i] = n.Masked()
	}
	policy := fence.Policy{Hosts: slices.Clone(req.Hosts), AllowedNets: nets, Denied: s.Denied, Parent: s.Parent}
	if req.ToolchainHosts {
		hosts, err := s.toolchainHosts(ctx, image, plan, req)
		if err != nil {
			return nil, err
		}
		policy.Hosts = append(slices.Clone(policy.Hosts), hosts...)
	}
	proxy, err := fence.New(policy, s.Resolver, s.logger().With("repo", req.Repo))
	if err != nil {
		return nil, fmt.Errorf("the fence's policy: %w", err)
	}
	return proxy, nil
}

// run runs the plan's steps on the files in dir into volume, behind
// proxy, recording the outcome in p.
func (s *Setup) run(ctx context.Context, p *prepared, dir, image, volume string, req pullwright.SetupRequest, proxy *fence.Proxy) error {
	res, err := s.Runner.Run(ctx, pullwright.RunSpec{
		Dir: dir, Image: image, Command: script(p.Plan), Route: proxy,
		Caches: []pullwright.CacheMount{{Volume: volume, Target: Mount}},
		Env:    env(p.Plan, true),
		Memory: req.Memory, Disk: req.Disk, NanoCPUs: req.NanoCPUs, Timeout: req.Timeout,
		Labels: req.Labels,
	})
	p.Events, _ = proxy.Events()
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	p.Setup = &res
	if failed(res) {
		p.Failed = true
		s.logger().Warn("setup: failed", "repo", req.Repo, "exit_code", res.ExitCode)
	}
	return nil
}

// warm copies the bot's binary into the cache in volume, to serve its
// build cache, and compiles the default branch's packages into it
// (buildcache.Warm), with no network and in the environment of an
// approved run. It is a run of its own after the setup's, and nothing it
// does fails the setup: a build that does not finish in the run's time or
// memory leaves what it compiled, and measure says whether runs can use it.
func (s *Setup) warm(ctx context.Context, image, volume string, req pullwright.SetupRequest, plan deps.Plan, modules []string) {
	log := s.logger().With("repo", req.Repo, "cache", volume)
	// The program that serves the cache is the bot's binary, which the
	// runner puts in the sandbox as it does the forwarder: nothing is
	// compiled for it there.
	prog := buildcache.Program{Files: s.Runner.BotFiles(), Start: s.Runner.BotStart}
	res, err := s.Runner.Run(ctx, pullwright.RunSpec{
		Dir: req.Base, Image: image, Command: buildcache.Warm(Dir, modules, prog), Bot: true,
		Caches: []pullwright.CacheMount{{Volume: volume, Target: Mount}},
		Env:    env(plan, false),
		Memory: req.Memory, Disk: req.Disk, NanoCPUs: req.NanoCPUs, Timeout: req.Timeout, Labels: req.Labels,
	})
	if err != nil || res.ExitCode != 0 {
		log.Warn("setup: the build cache was not warmed whole", "err", err, "exit_code", res.ExitCode,
			"timed_out", res.TimedOut, "oom_killed", res.OOMKilled, "output", tailLines(res.Output, 5))
		return
	}
	log.Info("setup: warmed the build cache", "duration", res.Duration)
}

// measure is what the cache in volume holds on the engine's disk, as
// a trusted image's du counts it in a sandbox of its own that runs
// nothing of the repository's, the cache read-only (bytes is -1 when that cannot be
// told), and whether it holds the program that serves its build cache.
// Runs only read a ready cache, so it is measured once, here.
func (s *Setup) measure(ctx context.Context, image, volume string, req pullwright.SetupRequest) (bytes int64, build bool) {
	log := s.logger().With("repo", req.Repo, "cache", volume)
	empty, err := os.MkdirTemp("", "pullwright-measure-")
	if err != nil {
		log.Warn("setup: measure the cache", "err", err)
		return -1, false
	}
	defer os.RemoveAll(empty)
	const built, noSize = "pullwright: build cache", "pullwright: no size"
	own := image
	if req.Image != "" && !req.ImageTrusted {
		// An image the repository named may carry a du that says
		// anything: the operator's image (or the runner's fallback)
		// measures instead. Without one on the engine, the size is
		// unknown, and under a cap the cache goes first.
		cfg := s.Runner.Config()
		image = runner.ImageFor(empty, cfg.Image, cfg.FallbackImage)
	}
	// du that cannot read all of it (a directory the setup left
	// unreadable) prints a sum of what it could, and fails: that sum is
	// no size. Its status is told in a line of its own, since the
	// script's is the last command's, and its error and its sum may come
	// in either order.
	hasTool := "if [ -x " + path.Join(Dir, buildcache.Tool) + " ]; then echo '" + built + "'; fi"
	spec := pullwright.RunSpec{
		Dir: empty, Image: image, Timeout: 5 * time.Minute,
		Command: "du -sk " + Mount + " || echo '" + noSize + "'; " + hasTool,
		Caches:  []pullwright.CacheMount{{Volume: volume, Target: Mount, ReadOnly: true}},
		Memory:  req.Memory, NanoCPUs: req.NanoCPUs, Labels: req.Labels,
	}
	res, err := s.Runner.Run(ctx, spec)
	if err == nil && res.NotStarted && image != own {
		// The operator's image is not on the engine: the size stays
		// unknown, but whether runs get the build cache is no matter of
		// trust (a repository that fakes it only breaks its own runs),
		// so the image the runs use tells, rather than every run
		// compiling from nothing.
		log.Warn("setup: the image that measures caches is not on the engine; the cache's size is unknown", "image", image, "output", tailLines(res.Output, 1))
		spec.Image, spec.Command = own, hasTool
		if check, cerr := s.Runner.Run(ctx, spec); cerr == nil && check.ExitCode == 0 {
			return -1, strings.Contains(check.Output, built)
		}
		return -1, false
	}
	if err != nil {
		log.Warn("setup: measure the cache", "err", err)
		return -1, false
	}
	var kib int64 = -1
	failed := res.ExitCode != 0
	for line := range strings.Lines(res.Output) {
		switch f := strings.Fields(line); {
		case strings.TrimSpace(line) == noSize:
			failed = true
		case strings.TrimSpace(line) == built:
			build = true
		case len(f) == 2 && f[1] == Mount:
			if n, perr := strconv.ParseInt(f[0], 10, 64); perr == nil && n >= 0 {
				kib = n
			}
		}
	}
	if failed || kib < 0 {
		log.Warn("setup: measure the cache", "exit_code", res.ExitCode, "output", tailLines(res.Output, 3))
		return -1, build
	}
	return kib << 10, build
}

// lock serialises the setups of one key in this process: two tasks must
// not fill one cache at once, nor one mark it ready while the other
// writes.
func (s *Setup) lock(key string) (unlock func()) {
	s.mu.Lock()
	if s.keys == nil {
		s.keys = map[string]*sync.Mutex{}
	}
	m, ok := s.keys[key]
	if !ok {
		m = &sync.Mutex{}
		s.keys[key] = m
	}
	s.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// toolchainHosts reads, in the image, the hosts its package managers for
// plan's ecosystems are configured with (deps.ToolchainProbe): with no
// network, in an empty directory so that a repository's own .npmrc cannot
// widen its fence.
func (s *Setup) toolchainHosts(ctx context.Context, image string, plan deps.Plan, req pullwright.SetupRequest) ([]string, error) {
	var hosts []string
	for _, eco := range plan.Ecosystems {
		cmd, ok := deps.ToolchainProbe(eco)
		if !ok {
			continue
		}
		key := image + "\x00" + string(eco)
		s.mu.Lock()
		known, seen := s.probed[key]
		s.mu.Unlock()
		if !seen {
			empty, err := os.MkdirTemp("", "pullwright-probe-")
			if err != nil {
				return nil, fmt.Errorf("read the %s toolchain's configuration: %w", eco, err)
			}
			res, err := s.Runner.Run(ctx, pullwright.RunSpec{
				Dir: empty, Image: image, Command: cmd, Env: env(plan, true), Timeout: time.Minute,
				Memory: req.Memory, NanoCPUs: req.NanoCPUs, Labels: req.Labels,
			})
			os.RemoveAll(empty)
			if err != nil {
				return nil, fmt.Errorf("read the %s toolchain's configuration in %s: %w", eco, image, err)
			}
			if res.ExitCode != 0 {
				return nil, fmt.Errorf("read the %s toolchain's configuration in %s: %s exited %d: %.300s", eco, image, cmd, res.ExitCode, res.Output)
			}
			if known, err = deps.ParseProbe(eco, res.Output); err != nil {
				return nil, fmt.Errorf("read the %s toolchain's configuration in %s: %w", eco, image, err)
			}
			s.mu.Lock()
			if s.probed == nil {
				s.probed = map[string][]string{}
			}
			s.probed[key] = known
			s.mu.Unlock()
		}
		hosts = append(hosts, known...)
	}
	return hosts, nil
}

// script runs the steps in order and stops at the first that fails;
// then it moves what they installed into the working directory into the
// cache, which the run's copy of the files would otherwise lose.
func script(plan deps.Plan) string {
	lines := append([]string{"set -e"}, plan.Steps...)
	dirs := plan.WorkspaceDirs()
	for _, d := range dirs {
		// d is made of names deps admits into a shell command.
		kept := `"$` + deps.DirVar + "/" + path.Join(deps.WorkspaceKept, path.Dir(d)) + `"`
		lines = append(lines, fmt.Sprintf("if [ -d %[1]s ] && [ ! -L %[1]s ]; then mkdir -p %[2]s && mv %[1]s %[2]s/; fi", d, kept))
	}
	if len(dirs) > 0 {
		lines = append(lines, mirror)
	}
	return strings.Join(lines, "\n")
}

// mirror runs after the moves. A node_modules holds relative links into
// the files beside it (an npm, pnpm or Yarn workspace's packages:
// node_modules/a -> ../packages/a), which, moved into the cache, would
// point at nothing: so each directory the moves made in the cache gets,
// for every entry of the same directory of the files, a link to it in
// the run's copy (/workspace/packages), unless it has that entry itself.
var mirror = `kept="$` + deps.DirVar + "/" + deps.WorkspaceKept + `"
for x in $(cd "$kept" && find . -name node_modules -prune -o -type d -print); do
	for e in "$x"/* "$x"/.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		[ -e "$kept/$e" ] || [ -L "$kept/$e" ] || ln -s "` + runner.SandboxWorkdir + `/$e" "$kept/$e"
	done
done`

// links are the run's links to the WorkspaceDirs setup kept.
func links(plan deps.Plan) []pullwright.Link {
	var out []pullwright.Link
	for _, d := range plan.WorkspaceDirs() {
		out = append(out, pullwright.Link{Name: d, Target: path.Join(Dir, deps.WorkspaceKept, d)})
	}
	return out
}

// env points the ecosystems' tools at the cache: writable for the setup,
// and for an approved run read-only and offline, so that a dependency the
// setup did not fetch fails at once with a clear error instead of a
// network timeout.
//
// Only the setup may change what the files say they need. An approved
// run (and the warm, which must build as runs do for its cache to serve
// them) sees the tree as the user's toolchain would, with its defaults:
// for Go -mod=readonly (or the vendor directory), so a go.mod whose go.sum
// lacks an entry fails with "missing go.sum entry", as it would in CI,
// instead of the go command adding the entry in the run's copy and the
// run passing on a tree nobody else can build.
func env(plan deps.Plan, setup bool) []string {
	e := plan.Env(Dir, "")
	for _, eco := range plan.Ecosystems {
		switch eco {
		case deps.Go:
			e = append(e, "GOMODCACHE="+path.Join(Dir, "go", "mod"))
			if setup {
				// go mod download on manifests the agent changed fetches
				// what go.mod names even when go.sum lags behind; the
				// run that follows then fails on the missing entry, as
				// a checkout would, not on a failed setup.
				e = append(e, "GOFLAGS=-mod=mod")
			} else {
				e = append(e, "GOPROXY=off")
			}
		case deps.NPM, deps.PNPM, deps.Yarn:
			e = append(e, "npm_config_cache="+path.Join(Dir, "npm"), "YARN_CACHE_FOLDER="+path.Join(Dir, "yarn"),
				"npm_config_store_dir="+path.Join(Dir, "pnpm"),
				// Nothing setup needs: each would be one more request
				// to the registry, or to a host the fence refuses.
				"npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false")
			if !setup {
				// The cache is read-only in a run: npm's logs go to /tmp.
				e = append(e, "npm_config_offline=true", "npm_config_logs_dir=/tmp/npm-logs")
			}
		case deps.Cargo:
			e = append(e, "CARGO_HOME="+path.Join(Dir, "cargo"))
			if !setup {
				e = append(e, "CARGO_NET_OFFLINE=true")
			}
		case deps.Python:
			e = append(e, "PIP_DISABLE_PIP_VERSION_CHECK=1")
			if !setup {
				e = append(e, "PIP_NO_INDEX=1")
			}
		}
	}
	slices.Sort(e)
	return slices.Compact(e)
}

// touch records that volume was given to a run now.
func (s *Setup) touch(volume string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used == nil {
		s.used = map[string]time.Time{}
	}
	s.used[volume] = time.Now()
}

// hold and unhold count the runs a cache is given to.
func (s *Setup) hold(volume string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[string]int{}
	}
	s.held[volume]++
}

func (s *Setup) unhold(volume string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[volume]--; s.held[volume] <= 0 {
		delete(s.held, volume)
	}
}

// evict removes the caches beyond the limits, least recently used first,
// never one held for a run, and records in p what it removed and what is
// left.
func (s *Setup) evict(ctx context.Context, p *prepared) error {
	all, err := s.Runner.ReadyCaches(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	used := maps.Clone(s.used)
	held := map[string]bool{}
	for v := range s.held {
		held[v] = true
	}
	s.mu.Unlock()
	victims := Evictions(all, used, held, s.limits())
	gone := map[string]bool{}
	var errs []error
	for _, v := range victims {
		if err := s.Runner.RemoveReadyCache(ctx, v); errors.Is(err, runner.ErrCacheInUse) {
			continue // a run holds it; a later eviction takes it
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		gone[v] = true
		p.Evicted = append(p.Evicted, v)
		s.mu.Lock()
		delete(s.used, v)
		s.mu.Unlock()
	}
	p.Measured = true
	for _, c := range all {
		if !gone[c.Volume] && c.Bytes > 0 {
			p.CacheBytes += c.Bytes
		}
	}
	return errors.Join(errs...)
}

func (s *Setup) limits() Limits {
	l := s.Limits
	if l.Keep <= 0 {
		l.Keep = DefaultKeep
	}
	return l
}

// Limits bound the ready caches on one engine. Beyond any of them the
// least recently used cache goes first.
type Limits struct {
	// Keep is how many a repository keeps (DefaultKeep if 0).
	Keep int
	// RepoBytes caps what one repository's hold, HostBytes what all of
	// them hold; 0 is no cap. Under either cap, a cache whose size is
	// unknown goes first (a run's held cache stays, and counts 0).
	RepoBytes, HostBytes int64
}

// Evictions chooses the caches to remove from all, the engine's ready
// caches: by each one's last use (used, or else when it was made ready),
// the least recent go first until each repository keeps at most l.Keep
// and l.RepoBytes, and all of them together l.HostBytes. A held cache (a
// run has it) is never chosen, even when it alone is over a cap.
func Evictions(all []runner.ReadyCache, used map[string]time.Time, held map[string]bool, l Limits) []string {
	last := func(c runner.ReadyCache) time.Time {
		if t, ok := used[c.Volume]; ok && t.After(c.ReadyAt) {
			return t
		}
		return c.ReadyAt
	}
	// Most recent first; a tie is broken by name, so the choice is the
	// same every time.
	order := slices.Clone(all)
	slices.SortStableFunc(order, func(a, b runner.ReadyCache) int {
		if c := last(b).Compare(last(a)); c != 0 {
			return c
		}
		return strings.Compare(a.Volume, b.Volume)
	})
	size := func(c runner.ReadyCache) int64 { return max(c.Bytes, 0) }
	gone := map[string]bool{}
	var out []string
	drop := func(c runner.ReadyCache) {
		gone[c.Volume] = true
		out = append(out, c.Volume)
	}
	// Per repository: the count, then the bytes.
	count, bytes := map[string]int{}, map[string]int64{}
	for _, c := range order {
		if held[c.Volume] || count[c.Repo] < l.Keep {
			count[c.Repo]++
			bytes[c.Repo] += size(c)
			continue
		}
		drop(c)
	}
	// A cache whose size could not be told may be any size: under a cap
	// on bytes, it is over it. Counting it as nothing would let a setup
	// that hides what it wrote (a directory du cannot read) fill the disk.
	if l.RepoBytes > 0 || l.HostBytes > 0 {
		for _, c := range order {
			if !gone[c.Volume] && !held[c.Volume] && c.Bytes < 0 {
				drop(c)
			}
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		c := order[i]
		if !gone[c.Volume] && !held[c.Volume] && l.RepoBytes > 0 && bytes[c.Repo] > l.RepoBytes {
			bytes[c.Repo] -= size(c)
			drop(c)
		}
	}
	var total int64
	for _, c := range order {
		if !gone[c.Volume] {
			total += size(c)
		}
	}
	for i := len(order) - 1; i >= 0 && l.HostBytes > 0 && total > l.HostBytes; i-- {
		if c := order[i]; !gone[c.Volume] && !held[c.Volume] {
			total -= size(c)
			drop(c)
		}
	}
	return out
}

func (s *Setup) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}
