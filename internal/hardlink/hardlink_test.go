package hardlink_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pullwright/pullwright/internal/hardlink"
)

func TestCount(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	lstat := func() os.FileInfo {
		t.Helper()
		fi, err := os.Lstat(a)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	if n := hardlink.Count(lstat()); n != 1 {
		t.Errorf("a file of one name: %d names", n)
	}
	if err := os.Link(a, filepath.Join(dir, "b")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if n := hardlink.Count(lstat()); n != 2 {
		t.Errorf("a file of two names: %d names", n)
	}
}
