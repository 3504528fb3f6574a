package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file left out (a binary one) gets no set_executable either: the
// file is not there to set.
func TestScriptLeavesOutTheModeOfAFileLeftOut(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := Git(repo, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
			"-c", "commit.gpgsign=false"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "root")
	parent := git("rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(repo, "tool.wasm"), []byte("\x00asm\x01"), 0o755); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "a binary tool")
	blobs, err := NewBlobs(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	s, err := New(repo, blobs, parent, git("rev-parse", "HEAD"), "t")
	if err != nil {
		t.Fatal(err)
	}
	calls, err := s.Next(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Name != Finish || !s.Skipped["tool.wasm"] {
		t.Errorf("calls %v, skipped %v", calls, s.Skipped)
	}
}
