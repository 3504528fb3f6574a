// Command gotest runs go test with the arguments it is given and prints
// what a plain go test prints (each package's ok or FAIL line, a failing
// test's output in full), then, at the end, what it could not run here: the
// tests skipped because this machine lacks a part they need (a Docker
// engine, Postgres, a browser; internal/prereq), counted by part, with how
// to get each. A plain go test ./... hides those skips among its ok lines,
// and on a laptop without Docker most of what matters is skipped. Last come
// the ten slowest packages with their times, where to look when the whole
// run is slow.
//
//	go run ./scripts/gotest -race -timeout 30m ./...
//
// Its exit status is go test's.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

func main() {
	start := time.Now()
	args := append([]string{"test", "-json"}, os.Args[1:]...)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest: start go test:", err)
		os.Exit(2)
	}
	r := newReport(os.Stdout)
	if err := r.read(out); err != nil {
		fmt.Fprintln(os.Stderr, "gotest: read go test's output:", err)
	}
	err = cmd.Wait()
	r.summary(time.Since(start))
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

type report struct {
	w io.Writer
	// out is the output of each test not yet ended, and of each package
	// (Test ""), by package and test.
	out map[[2]string][]string
	// missing are the tests skipped for want of each part.
	missing map[string]*part
	// skipped counts the tests skipped for other reasons.
	skipped int
	// took is each package's time, as its ending event gave it.
	took map[string]float64
}

// part is what a run lacked of one part: how many tests, in which
// packages, and how to get it (the first skip's words).
type part struct {
	tests    int
	packages map[string]bool
	how      string
}

func newReport(w io.Writer) *report {
	return &report{w: w, out: map[[2]string][]string{}, missing: map[string]*part{}, took: map[string]float64{}}
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event: go test printed it as it is.
			fmt.Fprintln(r.w, sc.Text())
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) event(e event) {
	pkg := e.Package
	if pkg == "" {
		pkg = e.ImportPath
	}
	key := [2]string{pkg, e.Test}
	if e.Test == "" && (e.Action == "pass" || e.Action == "fail") && e.Elapsed > 0 {
		r.took[pkg] = e.Elapsed
	}
	switch e.Action {
	case "output", "build-output":
		r.out[key] = append(r.out[key], e.Output)
	case "build-fail":
		fmt.Fprint(r.w, strings.Join(r.out[key], ""))
		delete(r.out, key)
	case "fail":
		// A failing test's output in full; a failing package's own
		// output (its FAIL line among it), as go test prints them.
		fmt.Fprint(r.w, strings.Join(r.out[key], ""))
		delete(r.out, key)
	case "skip":
		if e.Test == "" {
			r.packageLine(pkg, r.out[key])
			delete(r.out, key)
			return
		}
		r.skip(pkg, r.out[key])
		delete(r.out, key)
	case "pass":
		if e.Test == "" {
			r.packageLine(pkg, r.out[key])
		}
		delete(r.out, key)
	}
}

// packageLine prints a package's last line ("ok  \tpkg\t1.2s", "?   \tpkg
// [no test files]") as go test does.
func (r *report) packageLine(pkg string, out []string) {
	for i := len(out) - 1; i >= 0; i-- {
		if l := out[i]; strings.HasPrefix(l, "ok  \t") || strings.HasPrefix(l, "?   \t") {
			fmt.Fprint(r.w, l)
			return
		}
	}
}

// skipReason is what a test said as it was skipped: "    x_test.go:12: why".
var skipReason = regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)`)

const marker = "missing part: " // internal/prereq.Marker

func (r *report) skip(pkg string, out []string) {
	reason := ""
	for _, l := range out {
		if m := skipReason.FindStringSubmatch(strings.TrimRight(l, "\n")); m != nil {
			reason = m[1]
		}
	}
	name, how, ok := strings.Cut(strings.TrimPrefix(reason, marker), ": ")
	if !strings.HasPrefix(reason, marker) || !ok {
		r.skipped++
		return
	}
	p := r.missing[name]
	if p == nil {
		p = &part{packages: map[string]bool{}, how: strings.TrimSuffix(how, " (set CI=true to make this a failure)")}
		r.missing[name] = p
	}
	p.tests++
	p.packages[pkg] = true
}

func (r *report) summary(took time.Duration) {
	fmt.Fprintf(r.w, "\ngotest: %s in all.", took.Round(time.Second))
	r.notRun()
	r.slowest()
}

// notRun ends the line summary began with what was not run, and why.
func (r *report) notRun() {
	if len(r.missing) == 0 {
		fmt.Fprintf(r.w, " No test was skipped for a part this machine lacks")
		if r.skipped > 0 {
			fmt.Fprintf(r.w, " (%d skipped for other reasons, such as -short or a variable a test needs)", r.skipped)
		}
		fmt.Fprintln(r.w, ".")
		return
	}
	fmt.Fprintln(r.w, " Not run on this machine, for want of a part (with CI=true each is a failure):")
	names := make([]string, 0, len(r.missing))
	for n := range r.missing {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := r.missing[n]
		pkgs := make([]string, 0, len(p.packages))
		for k := range p.packages {
			pkgs = append(pkgs, k)
		}
		slices.Sort(pkgs)
		fmt.Fprintf(r.w, "- %s: %d %s in %s. %s\n", n, p.tests, plural(p.tests, "test", "tests"), strings.Join(pkgs, ", "), p.how)
	}
	if r.skipped > 0 {
		fmt.Fprintf(r.w, "%d more %s skipped for other reasons (-short, or a variable a test needs).\n", r.skipped, plural(r.skipped, "test was", "tests were"))
	}
	fmt.Fprintln(r.w, "README.md's Tests section says what each part is for and how to get it.")
}

// slowestShown is how many packages slowest lists.
const slowestShown = 10

// slowest prints the packages that took longest, slowest first, with go
// test's time for each (packages run side by side, so the times add up to
// more than the run took).
func (r *report) slowest() {
	pkgs := make([]string, 0, len(r.took))
	for p := range r.took {
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b string) int {
		if c := cmp.Compare(r.took[b], r.took[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	if len(pkgs) > slowestShown {
		pkgs = pkgs[:slowestShown]
	}
	if len(pkgs) == 0 {
		return
	}
	fmt.Fprintf(r.w, "The %d slowest %s:\n", len(pkgs), plural(len(pkgs), "package", "packages"))
	for _, p := range pkgs {
		fmt.Fprintf(r.w, "%8.1fs  %s\n", r.took[p], p)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
