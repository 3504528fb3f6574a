package repo_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
)

// addSubmodule commits, on main of the bare repository, a submodule entry
// (a gitlink) at path, as `git submodule add` leaves one in the tree.
func addSubmodule(t *testing.T, bare, path string) {
	t.Helper()
	env := append(os.Environ(), "GIT_INDEX_FILE="+t.TempDir()+"/index",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com")
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", bare}, args...)...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	run("read-tree", "main")
	run("update-index", "--add", "--cacheinfo", "160000,0123456789abcdef0123456789abcdef01234567,"+path)
	tree := run("write-tree")
	commit := run("commit-tree", tree, "-p", "main", "-m", "Add a submodule")
	run("update-ref", "refs/heads/main", commit)
}

// A submodule is not checked out, so its path is empty in the workspace:
// that is no change, and a commit keeps the submodule's entry.
func TestASubmoduleIsNoChange(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	addSubmodule(t, s.BareDir(owner, name), "vendor/lib")
	w := clone(t, u)
	if cs, err := w.Changes(); err != nil || len(cs) != 0 {
		t.Fatalf("a fresh clone with a submodule: Changes = %+v, %v", cs, err)
	}
	if _, err := w.CommitAll("nothing", bot); !errors.Is(err, pullwright.ErrNoChanges) {
		t.Fatalf("CommitAll with only a submodule: %v", err)
	}
	write(t, w, map[string]string{"README.md": "# widgets\nchanged\n"})
	if _, err := w.CommitAll("Change the README", bot); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", w.Dir(), "ls-tree", "HEAD", "vendor/lib").Output()
	if err != nil || !strings.HasPrefix(string(out), "160000 commit 0123456789abcdef0123456789abcdef01234567") {
		t.Errorf("the commit's tree at vendor/lib: %q, %v; want the submodule kept", out, err)
	}
}
