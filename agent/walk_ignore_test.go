package agent

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// ignoreHeavyRepo is a repository with a large root .gitignore (root, at
// most maxIgnoreBytes) and dirs directories with a .gitignore of their
// own (own) and a file each.
func ignoreHeavyRepo(t testing.TB, root string, dirs int, own string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(root), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range dirs {
		d := filepath.Join(dir, "d"+strconv.Itoa(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string]string{".gitignore": own, "f.go": "package f\n", "x.tmp": ""} {
			if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// ignoreLines is n lines of format, filled with 0..n-1, in at most max bytes.
func ignoreLines(format string, n, max int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		l := fmt.Sprintf(format+"\n", i)
		if b.Len()+len(l) > max {
			break
		}
		b.WriteString(l)
	}
	return b.String()
}

// walkCost walks dir and returns what the walk saw, its files and the
// bytes it allocated.
func walkCost(t testing.TB, dir string) (walked, int, uint64) {
	t.Helper()
	w, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	files := 0
	res, err := w.walkIgnoring(context.Background(), func(string, fs.DirEntry) error { files++; return nil })
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return res, files, after.TotalAlloc - before.TotalAlloc
}

// A root .gitignore of maxIgnoreBytes and hundreds of directories with one
// of their own made the walk copy the root's patterns into each and match
// every entry against all of them: 2.8 GB and 35 s for 1000 directories.
// Now that file, over the bounds, is left unread, and the map says so.
func TestWalkIgnoresBounded(t *testing.T) {
	dirs := 300
	dir := ignoreHeavyRepo(t, ignoreLines("p%d", 1<<30, maxIgnoreBytes-16), dirs, "x\n*.tmp\n")
	res, files, alloc := walkCost(t, dir)
	if res.ignoresSkipped != 1 || files != 1+2*dirs {
		t.Errorf("skipped %d ignore files and walked %d files, want 1 and %d", res.ignoresSkipped, files, 1+2*dirs)
	}
	entries := int64(1 + 3*dirs + dirs)
	if res.work > 2*entries {
		t.Errorf("%d pattern matches for %d entries", res.work, entries)
	}
	if alloc > 64<<20 {
		t.Errorf("the walk allocated %d MiB", alloc>>20)
	}
	w, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	m, err := w.repoMap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m, " 1 .gitignore file was not read, being over the bounds on ignore patterns, so files it ignore may be listed.") {
		t.Errorf("the map does not say a .gitignore was left unread:\n%s", m)
	}
}

// Within the bounds, every file is read once and honoured: plain names
// are looked up, and each entry is matched one by one against at most
// walkIgnoreLimits.Generic patterns.
func TestWalkIgnoresWithinBounds(t *testing.T) {
	dirs := 300
	root := ignoreLines("p%d", 60000, maxIgnoreBytes) + ignoreLines("q*%d", 450, maxIgnoreBytes) + "d7/\n"
	dir := ignoreHeavyRepo(t, root, dirs, "*.tmp\n!f.go\n")
	res, files, alloc := walkCost(t, dir)
	if want := 1 + 2*(dirs-1); res.ignoresSkipped != 0 || files != want {
		t.Errorf("skipped %d ignore files and walked %d files, want 0 and %d", res.ignoresSkipped, files, want)
	}
	entries := int64(1 + 3*dirs + dirs)
	if max := entries * int64(walkIgnoreLimits.Generic+8); res.work > max {
		t.Errorf("%d pattern matches for %d entries, want at most %d", res.work, entries, max)
	}
	if alloc > 128<<20 {
		t.Errorf("the walk allocated %d MiB", alloc>>20)
	}
}

func BenchmarkWalkIgnores(b *testing.B) {
	for _, bc := range []struct {
		name, root string
	}{
		{"over", ignoreLines("p%d", 1<<30, maxIgnoreBytes-16)},
		{"names", ignoreLines("p%d", 90000, maxIgnoreBytes)},
		{"generic", ignoreLines("q*%d", walkIgnoreLimits.Generic-1, maxIgnoreBytes)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := ignoreHeavyRepo(b, bc.root, 1000, "x\n")
			b.ReportAllocs()
			for b.Loop() {
				walkCost(b, dir)
			}
		})
	}
}
