// Command clone benchmarks the workspace clone: go-git's shallow clone
// (repo.Clone) against `git clone --depth 1` of the same URL, served by a real
// `git http-backend` (internal/gitserver) on the loopback interface.
//
//	go run ./bench/clone [-files 4000] [-mb 40] [-runs 3]
//
// It generates a repository of -files files holding about -mb MiB (three
// quarters incompressible bytes, one quarter text) with a few commits of
// history, then clones it -runs times with each client, each clone in a child
// process so that its peak resident set size (wait4's ru_maxrss) is its own:
// the go-git side re-executes this program with -child-gogit, the git side is
// the git CLI (whose figure is its largest process: git clone,
// git-remote-http or index-pack). It prints the median wall time and peak RSS
// of both, and the ratios go-git/git.
//
// Each clone is started through a small "-measure" process of its own rather
// than from the benchmark process: Go starts children with vfork (CLONE_VM),
// and Linux keeps the spawner's high-water RSS in the child's ru_maxrss across
// execve, so clones started from the benchmark (which generated the
// repository) would all report at least its peak. The -measure process's own
// small footprint is the floor; the output shows it ("baseline").
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pullwright/pullwright/internal/gitserver"
	"github.com/pullwright/pullwright/repo"
)

const (
	benchToken = "bench-token-not-secret"
	tokenEnv   = "PULLWRIGHT_BENCH_TOKEN"
	owner      = "bench"
	name       = "big"
	branch     = "main"
)

func main() {
	files := flag.Int("files", 4000, "number of files in the generated repository (1..100000)")
	mb := flag.Int("mb", 40, "approximate worktree size in MiB (1..1024)")
	runs := flag.Int("runs", 3, "timed clones per client (1..20)")
	childGoGit := flag.Bool("child-gogit", false, "internal: clone with repo.Clone and exit")
	childNoop := flag.Bool("child-noop", false, "internal: exit at once (baseline RSS of this binary)")
	measure := flag.Bool("measure", false, "internal: run the command after -- and print its wall time and peak RSS")
	url := flag.String("url", "", "internal: clone URL for -child-gogit")
	dir := flag.String("dir", "", "internal: target directory for -child-gogit")
	flag.Parse()

	switch {
	case *childNoop:
		return
	case *measure:
		if err := measureChild(flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "measure:", err)
			os.Exit(1)
		}
		return
	case *childGoGit:
		if err := childClone(*url, *dir); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	if *files < 1 || *files > 100000 || *mb < 1 || *mb > 1024 || *runs < 1 || *runs > 20 {
		fmt.Fprintln(os.Stderr, "clone: -files must be 1..100000, -mb 1..1024, -runs 1..20")
		os.Exit(2)
	}
	if err := run(*files, *mb, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "clone:", err)
		os.Exit(1)
	}
}

func childClone(url, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, err := repo.Clone(ctx, repo.CloneOptions{URL: url, Branch: branch, Token: os.Getenv(tokenEnv), Dir: dir, Depth: 1})
	return err
}

// measureChild runs args, then prints "<wall ns> <maxrss KiB>" on stdout.
func measureChild(args []string) error {
	if len(args) == 0 {
		return errors.New("no command")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	wall := time.Since(start)
	_, err := fmt.Printf("%d %d\n", wall.Nanoseconds(), maxRSS(cmd.ProcessState)/1024)
	return err
}

// measured runs cmd through "-measure" and returns its wall time and peak RSS.
func measured(self string, cmd *exec.Cmd) (sample, string, error) {
	m := exec.Command(self, append([]string{"-measure", "--", cmd.Path}, cmd.Args[1:]...)...)
	m.Env = cmd.Env
	var stderr strings.Builder
	m.Stderr = &stderr
	out, err := m.Output()
	if err != nil {
		return sample{}, stderr.String(), err
	}
	var ns, kib int64
	if _, err := fmt.Sscan(string(out), &ns, &kib); err != nil {
		return sample{}, stderr.String(), fmt.Errorf("measure output %q: %w", out, err)
	}
	return sample{wall: time.Duration(ns), maxRSS: kib * 1024}, stderr.String(), nil
}

type sample struct {
	wall   time.Duration
	maxRSS int64 // bytes
}

func run(nFiles, mb, runs int) error {
	srv, err := gitserver.Start(gitserver.Options{Auth: func(u, p string) bool {
		return u == "x-access-token" && p == benchToken
	}})
	if err != nil {
		return err
	}
	defer srv.Close()

	genStart := time.Now()
	url, commits, worktreeBytes, err := generate(srv, nFiles, int64(mb)<<20)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	bareBytes, err := dirSize(srv.BareDir(owner, name))
	if err != nil {
		return err
	}
	fmt.Printf("repository: %d files, %.1f MiB worktree, %d commits, %.1f MiB packed on the server (generated in %v)\n",
		nFiles, mib(worktreeBytes), commits, mib(bareBytes), time.Since(genStart).Round(100*time.Millisecond))
	fmt.Printf("server: git http-backend via net/http/cgi on %s; clones: depth 1, single branch, with checkout\n", srv.URL)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bench-clone-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	home := filepath.Join(tmp, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + benchToken))

	clients := []struct {
		label string
		cmd   func(dir string) *exec.Cmd
		head  func(dir string) (string, error)
	}{
		{
			label: "go-git repo.Clone",
			cmd: func(dir string) *exec.Cmd {
				c := exec.Command(self, "-child-gogit", "-url", url, "-dir", dir)
				c.Env = append(slices.Clone(env), tokenEnv+"="+benchToken)
				return c
			},
			head: func(dir string) (string, error) {
				w, err := repo.Open(dir)
				if err != nil {
					return "", err
				}
				return w.Head()
			},
		},
		{
			label: "git clone --depth 1",
			cmd: func(dir string) *exec.Cmd {
				c := exec.Command("git", "clone", "--quiet", "--depth", "1", "--single-branch", "--branch", branch, url, dir)
				// The credentials go in the environment, not on the command line.
				c.Env = append(slices.Clone(env), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader",
					"GIT_CONFIG_VALUE_0=Authorization: Basic "+basic)
				return c
			},
			head: func(dir string) (string, error) {
				out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
				return strings.TrimSpace(string(out)), err
			},
		},
	}

	want, err := srv.Git(owner, name, "rev-parse", branch)
	if err != nil {
		return err
	}
	want = strings.TrimSpace(want)

	once := func(i int) (sample, error) {
		c := clients[i]
		dir := filepath.Join(tmp, fmt.Sprintf("clone-%d", i))
		defer os.RemoveAll(dir)
		s, stderr, err := measured(self, c.cmd(dir))
		if err != nil {
			return sample{}, fmt.Errorf("%s: %w: %s", c.label, err, stderr)
		}
		head, err := c.head(dir)
		if err != nil || head != want {
			return sample{}, fmt.Errorf("%s: HEAD %q (%v), want %s", c.label, head, err, want)
		}
		if n, err := countFiles(dir); err != nil || n != nFiles {
			return sample{}, fmt.Errorf("%s: %d files checked out (%v), want %d", c.label, n, err, nFiles)
		}
		return s, nil
	}

	// One untimed warm-up each, so both find the server's pack in the page cache.
	for i := range clients {
		if _, err := once(i); err != nil {
			return err
		}
	}
	samples := make([][]sample, len(clients))
	for r := 0; r < runs; r++ {
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			s, err := once(i)
			if err != nil {
				return err
			}
			samples[i] = append(samples[i], s)
		}
	}
	noopCmd := exec.Command(self, "-child-noop")
	noopCmd.Env = env
	noop, _, err := measured(self, noopCmd)
	if err != nil {
		return err
	}

	fmt.Printf("runs: %d per client after 1 warm-up each, alternating order\n\n", runs)
	fmt.Printf("%-22s %12s %12s %16s %16s\n", "client", "median time", "min time", "median peak RSS", "max peak RSS")
	var med [2]sample
	for i, c := range clients {
		walls, rss := split(samples[i])
		med[i] = sample{wall: median(walls), maxRSS: median(rss)}
		fmt.Printf("%-22s %12s %12s %12.1f MiB %12.1f MiB\n", c.label,
			med[i].wall.Round(time.Millisecond), slices.Min(walls).Round(time.Millisecond),
			mib(med[i].maxRSS), mib(slices.Max(rss)))
	}
	fmt.Printf("%-22s %11.2fx %12s %15.2fx\n", "ratio go-git/git",
		float64(med[0].wall)/float64(med[1].wall), "", float64(med[0].maxRSS)/float64(med[1].maxRSS))
	fmt.Printf("\nbaseline: peak RSS of this binary doing nothing, measured the same way: %.1f MiB (a floor for both, included in go-git's figure)\n", mib(noop.maxRSS))
	fmt.Println("git's peak RSS is its largest single process (git clone, git-remote-http, index-pack), not their sum")
	return nil
}

// generate creates the repository and returns its clone URL, the number of
// commits and the size of the worktree.
func generate(srv *gitserver.Server, nFiles int, total int64) (string, int, int64, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	bin := rand.NewChaCha8([32]byte{7})
	avg := max(total/int64(nFiles), 1)
	content := func(i int) string {
		size := avg/2 + rng.Int64N(avg+1) // avg/2 .. 3avg/2
		if i%4 == 3 {
			return text(rng, size)
		}
		b := make([]byte, size)
		bin.Read(b)
		return string(b)
	}
	path := func(i int) string {
		ext := ".bin"
		if i%4 == 3 {
			ext = ".txt"
		}
		return fmt.Sprintf("pkg%02d/sub%d/file%05d%s", i%50, (i/50)%8, i, ext)
	}

	files := make(map[string]string, nFiles)
	var size int64
	for i := 0; i < nFiles; i++ {
		files[path(i)] = content(i)
	}
	url, err := srv.InitRepo(owner, name, branch, files)
	if err != nil {
		return "", 0, 0, err
	}
	commits := 1
	// A few commits of history, each rewriting about 2% of the files.
	for c := 1; c <= 3; c++ {
		change := map[string]string{}
		for j := 0; j < max(nFiles/50, 1); j++ {
			i := rng.IntN(nFiles)
			files[path(i)] = content(i)
			change[path(i)] = files[path(i)]
		}
		if _, err := srv.CommitFiles(owner, name, branch, change, fmt.Sprintf("Change %d", c)); err != nil {
			return "", 0, 0, err
		}
		commits++
	}
	for _, c := range files {
		size += int64(len(c))
	}
	// Serve from one pack, as a hosted repository would.
	if _, err := srv.Git(owner, name, "repack", "-a", "-d", "-q"); err != nil {
		return "", 0, 0, err
	}
	return url, commits, size, nil
}

var words = strings.Fields(`the of pagination handler request response error context token
	branch commit push clone workspace diff tree blob object server client retry budget policy
	approval sandbox runner agent webhook delivery install permission config default value`)

func text(rng *rand.Rand, size int64) string {
	var b strings.Builder
	b.Grow(int(size) + 16)
	for int64(b.Len()) < size {
		for w := 0; w < 8+rng.IntN(8); w++ {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d\n", rng.IntN(100000))
	}
	return b.String()[:size]
}

func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024 // KiB on Linux
	}
	return 0
}

func split(ss []sample) ([]time.Duration, []int64) {
	var w []time.Duration
	var r []int64
	for _, s := range ss {
		w = append(w, s.wall)
		r = append(r, s.maxRSS)
	}
	return w, r
}

func median[T time.Duration | int64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	return n, err
}
