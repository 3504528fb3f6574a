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
	in, err := os.Open("testdata/skips.json")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var b strings.Builder
	r := newReport(&b)
	if err := r.read(in); err != nil {
		t.Fatal(err)
	}
	r.summary(3 * time.Second)
	got := b.String()
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
