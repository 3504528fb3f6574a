package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestReportSaysWhatWasNotRun reads what go test -json printed for a
// package with a failing test, a test skipped for a missing part and one
// skipped for another reason, and prints what go test would, then the
// missing part, counted, at the end.
func TestReportSaysWhatWasNotRun(t *testing.T) {
	got := reportOf(t, readFile(t, "testdata/skips.json"), 3*time.Second)
	for _, want := range []string{
		"    a_test.go:3: boom\n--- FAIL: TestA",
		"FAIL\tgtx/a\t",
		"gotest: 3s in all. Not run on this machine, for want of a part (with CI=true each is a failure):\n- Docker: 1 test in gtx/a. no engine\n",
		"1 more test was skipped for other reasons",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestB") || strings.Contains(got, "=== RUN   TestC") {
		t.Errorf("the report shows the output of tests that did not fail:\n%s", got)
	}
}

// TestReportEndsWithTheSlowestPackages reads the run of fourteen packages
// (twelve that pass, one without tests, one that fails) and lists the ten
// that took longest, slowest first, after the skip report.
func TestReportEndsWithTheSlowestPackages(t *testing.T) {
	got := reportOf(t, readFile(t, "testdata/slowest.json"), 40*time.Second)
	want := "gotest: 40s in all. No test was skipped for a part this machine lacks.\n" +
		"The 10 slowest packages:\n" +
		"    30.0s  gtx/f\n" +
		"    20.0s  gtx/slow\n" +
		"    12.5s  gtx/b\n" +
		"     9.0s  gtx/i\n" +
		"     7.5s  gtx/d\n" +
		"     6.0s  gtx/l\n" +
		"     5.0s  gtx/k\n" +
		"     4.0s  gtx/h\n" +
		"     3.0s  gtx/c\n" +
		"     2.0s  gtx/g\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("the report does not end with the slowest packages:\n%s\nwant it to end with:\n%s", got, want)
	}
	for _, pkg := range []string{"ok  \tgtx/a\t0.500s\n", "?   \tgtx/none\t[no test files]\n", "FAIL\tgtx/slow\t20.010s\n"} {
		if !strings.Contains(got, pkg) {
			t.Errorf("the report lacks go test's line %q", pkg)
		}
	}
}

// A run whose packages report no time (all without tests, or not built)
// lists no slowest packages.
func TestReportListsNoSlowestWithoutTimes(t *testing.T) {
	in := `{"Action":"start","Package":"gtx/none"}
{"Action":"output","Package":"gtx/none","Output":"?   \tgtx/none\t[no test files]\n"}
{"Action":"skip","Package":"gtx/none","Elapsed":0}
`
	if got := reportOf(t, in, time.Second); strings.Contains(got, "slowest") {
		t.Errorf("the report lists slowest packages of a run that timed none:\n%s", got)
	}
}

// reportOf is what gotest prints for a run whose go test -json output is
// in, which took elapsed in all.
func reportOf(t *testing.T, in string, elapsed time.Duration) string {
	t.Helper()
	var b strings.Builder
	r := newReport(&b)
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	r.summary(elapsed)
	return b.String()
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
