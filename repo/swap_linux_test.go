package repo_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A directory of the workspace that becomes a symbolic link out of it
// after the changes were read and before the commit is made (a process
// left running in the workspace could do it) changes nothing in the
// commit: the commit is the tree that was read, through the workspace
// root, once. It used to be go-git's Add, which read every changed path
// again by its name: here its file system refused the link on the way and
// the commit failed; a file swapped for a link between its look and its
// read was followed. The moment is held by a named pipe as an ignore
// file: every status of the worktree waits on it, and the test swaps the
// directory at the second one, which only a commit that looks at the
// worktree again has. (Linux: whether the pipe is open is read in /proc.)
func TestADirectorySwappedForALinkIsNotCommittedThrough(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	w := clone(t, u)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "keep.md"), []byte("SECRET-outside-the-workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, w, map[string]string{"docs/keep.md": "changed\n"})
	fifo := filepath.Join(w.Dir(), "hold", ".gitignore")
	if err := os.Mkdir(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	real, err := filepath.EvalSymlinks(fifo) // as /proc names it
	if err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join(w.Dir(), "docs")
	parked := t.TempDir()
	link := filepath.Join(parked, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}

	// A status opens the pipe to read it, waiting for a writer, and
	// reads until the writer closes it. waitReader opens it for writing
	// once a status waits; then the status's descriptor is waited for,
	// and after the writer closed, for none to be left (probing with
	// another open for writing would serve the next status).
	finished, done := make(chan struct{}), make(chan struct{})
	wait := func(ok func() bool) bool {
		for !ok() {
			select {
			case <-finished:
				return false
			default:
				time.Sleep(50 * time.Microsecond)
			}
		}
		return true
	}
	var f *os.File
	waitReader := func() bool {
		return wait(func() bool {
			var err error
			f, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			return err == nil
		})
	}
	// opened counts the descriptors of the pipe the process holds.
	opened := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Error(err)
			return 0
		}
		n := 0
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == real {
				n++
			}
		}
		return n
	}
	swapped := false
	go func() {
		defer close(done)
		for n := 1; waitReader(); n++ {
			if !wait(func() bool { return opened() == 2 }) { // the writer's and the status's
				f.Close()
				return
			}
			if n == 2 {
				swapped = os.Rename(docs, filepath.Join(parked, "docs")) == nil && os.Rename(link, docs) == nil
			}
			f.Close()
			if !wait(func() bool { return opened() == 0 }) {
				return
			}
		}
	}()
	sha, err := w.CommitAll("change the docs", bot)
	close(finished)
	<-done
	if err != nil {
		t.Fatalf("CommitAll: %v (swapped during it: %v)", err, swapped)
	}
	files, _, err := w.ReadTree(sha, func(string) bool { return true }, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.Contains(string(f.Data), "SECRET") {
			t.Errorf("the commit has %s with the file outside's bytes (swapped during the commit: %v)", f.Path, swapped)
		}
		if f.Path == "docs/keep.md" && string(f.Data) != "changed\n" {
			t.Errorf("docs/keep.md = %q, want what the changes read", f.Data)
		}
	}
}
