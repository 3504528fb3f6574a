package main

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// tb is the testing.TB the test servers and botproc are handed in this
// program. The embedded interface is nil: it only supplies testing.TB's
// unexported method, and the methods those packages call are defined here.
// Fatal and Fatalf print and unwind the calling goroutine with a panic that
// main recovers; they are only called on the main goroutine here (the
// senders use TryDeliver and Errorf).
type tb struct {
	testing.TB
	name string

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

type fatal struct{}

func newTB(name string) *tb { return &tb{name: name} }

func (t *tb) Name() string { return t.name }
func (t *tb) Helper()      {}

func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// cleanup runs the registered functions, last first, as testing does.
func (t *tb) cleanup() {
	for {
		t.mu.Lock()
		if len(t.cleanups) == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[len(t.cleanups)-1]
		t.cleanups = t.cleanups[:len(t.cleanups)-1]
		t.mu.Unlock()
		f()
	}
}

func (t *tb) Log(args ...any)                 { fmt.Fprintln(os.Stderr, args...) }
func (t *tb) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func (t *tb) Error(args ...any) { t.Log(args...); t.fail() }
func (t *tb) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.fail()
}

func (t *tb) Fatal(args ...any) { t.Error(args...); panic(fatal{}) }
func (t *tb) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(fatal{})
}

func (t *tb) fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}

func (t *tb) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// TempDir is a new directory removed at cleanup.
func (t *tb) TempDir() string {
	dir, err := os.MkdirTemp("", t.name+"-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
