package policy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkLoaded holds Load's and LoadOperator's contract: a result, or an
// *Errors with at least one problem, every one with a message and a line
// within the file.
func checkLoaded(t *testing.T, data []byte, got bool, err error) {
	t.Helper()
	if err == nil {
		if !got {
			t.Fatal("no result and no error")
		}
		return
	}
	if got {
		t.Fatalf("a result with the error %v", err)
	}
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %T, want *Errors: %v", err, err)
	}
	if len(errs.List) == 0 || len(errs.List) > maxErrors {
		t.Fatalf("%d problems reported", len(errs.List))
	}
	lines := bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) + 2
	for _, e := range errs.List {
		if e.Line < 0 || e.Line > lines {
			t.Fatalf("line %d in a file of fewer lines: %v", e.Line, e)
		}
		if e.Msg == "" {
			t.Fatalf("empty message: %+v", e)
		}
	}
	// One line per problem: nothing in the file can forge another.
	want := len(errs.List)
	if errs.More > 0 {
		want++
	}
	if n := strings.Count(errs.Error(), "\n") + 1; n != want {
		t.Fatalf("%d problems in %d lines:\n%s", want, n, errs.Error())
	}
	if n := strings.Count(errs.Markdown(), "\n"); n != want {
		t.Fatalf("%d problems in %d markdown lines:\n%s", want, n, errs.Markdown())
	}
}

func FuzzLoad(f *testing.F) {
	for _, ex := range docExamples(f) {
		f.Add([]byte(ex.text))
	}
	files, _ := filepath.Glob("testdata/load/*.yml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Load(data)
		checkLoaded(t, data, c != nil, err)
		if c != nil {
			s, err := DefaultOperator().Resolve(c)
			checkLoaded(t, data, err == nil, err)
			_, _ = s.AutoApproved("go test ./...")
		}
		o, err := LoadOperator(data)
		checkLoaded(t, data, o != nil, err)
		if o != nil {
			_, err := o.Resolve(nil)
			if err != nil {
				t.Fatalf("a loaded operator does not resolve an empty repository file: %v", err)
			}
		}
	})
}
