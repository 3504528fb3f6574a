package repo_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listTree returns every path under dir (directories with a trailing
// slash), with file contents, the mode of executables and symlink targets.
func listTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out[rel+"/"] = ""
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "-> " + target
			return err
		default:
			b, err := os.ReadFile(p)
			if info.Mode()&0o111 != 0 {
				out[rel] = "x " + string(b)
			} else {
				out[rel] = string(b)
			}
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The attack of the review: the agent hides files from git (a .gitignore of
// "*" hides itself too) next to a harmless edit. The checkpoint commit has
// only the edit; the export of that commit must have nothing else.
func TestExportHasOnlyTheCommitsFiles(t *testing.T) {
	s := newServer(t)
	u, _ := seed(t, s)
	w := clone(t, u)
	write(t, w, map[string]string{
		"README.md":            "# widgets, fixed\n",
		".gitignore":           "*\n",
		"GNUmakefile":          "check:\n\techo hidden\n",
		"zz_test.go":           "package main\n",
		"pager/conftest.py":    "import os\n",
		"build/out/artifact.o": "obj",
	})
	if err := os.Chmod(filepath.Join(w.Dir(), "cmd", "main.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../README.md", filepath.Join(w.Dir(), "docs", "readme-link")); err != nil {
		t.Fatal(err)
	}
	sha, err := w.CommitAll("checkpoint", bot)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := w.CommitTree(sha)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "run")
	if err := tree.Export(ctxT(t), dst); err != nil {
		t.Fatalf("Export: %v", err)
	}
	got := listTree(t, dst)
	want := map[string]string{
		"README.md": "# widgets, fixed\n", ".gitignore": "*\n",
		"pager/": "", "pager/pager.go": "package pager\n\nfunc Last(n, size int) int {\n\treturn n / size\n}\n", "pager/util.go": "package pager\n",
		"docs/": "", "docs/old.txt": "obsolete\n", "docs/keep.md": "keep\n",
		"cmd/": "", "cmd/main.go": "x package main\n\nfunc main() {}\n",
		"data/": "", "data/blob.bin": "\x00\x01\x02binary\x00",
		"z/": "", "z/last/": "", "z/last/file.txt": "z\n",
		"CHANGELOG.md": "v1\nv2\n",
	}
	// The symlink is untracked too: ".gitignore" hides it. Only what the
	// commit holds is exported.
	if len(got) != len(want) {
		t.Errorf("exported %d paths, want %d", len(got), len(want))
	}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("export %s = %q, want %q", p, got[p], c)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("export has %s, which the commit does not", p)
		}
	}

	left, more, err := w.LeftOutOf(tree, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"GNUmakefile", "build/", "docs/readme-link"}; !slices.Equal(left, want) || more != 2 {
		t.Errorf("LeftOut = %q and %d more, want %q and 2 more (pager/conftest.py, zz_test.go)", left, more, want)
	}
	all, more, err := w.LeftOutOf(tree, 10)
	if err != nil || more != 0 || len(all) != 5 || !slices.Contains(all, "pager/conftest.py") || !slices.Contains(all, "zz_test.go") {
		t.Errorf("LeftOut(10) = %q, %d, %v", all, more, err)
	}

	// The destination must be new: an export never mixes with what is there.
	if err := tree.Export(ctxT(t), dst); err == nil {
		t.Error("a second export into the same directory succeeded")
	}
}

// Current is what a commit of everything would hold: the export of the
// workspace's state leaves ignored files out, and DiffStatOf shows it.
func TestExportCurrent(t *testing.T) {
	s := newServer(t)
	u, base := seed(t, s)
	w := clone(t, u)
	write(t, w, map[string]string{
		"README.md":     "# widgets\nmore\n",
		"new/file.go":   "package file\n",
		"debug.log":     "ignored by *.log\n",
		"build/hidden":  "ignored by build/\n",
		"pager/util.go": "package pager\n\n// changed\n",
	})
	remove(t, w, "docs/old.txt")
	cur, err := w.Current()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "run")
	if err := cur.Export(ctxT(t), dst); err != nil {
		t.Fatal(err)
	}
	got := listTree(t, dst)
	for _, p := range []string{"debug.log", "build/", "build/hidden", "docs/old.txt", ".git/"} {
		if _, ok := got[p]; ok {
			t.Errorf("the export has %s", p)
		}
	}
	if got["new/file.go"] != "package file\n" || got["README.md"] != "# widgets\nmore\n" {
		t.Errorf("the export lacks the worktree's changes: %q", got)
	}
	shown, err := w.DiffStatOf(base, cur)
	if err != nil {
		t.Fatal(err)
	}
	stat, err := w.DiffStat(base)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shown, stat) || len(shown) != 4 {
		t.Errorf("DiffStatOf = %v, DiffStat = %v", shown, stat)
	}
	left, _, err := w.LeftOutOf(cur, 10)
	if err != nil || !slices.Equal(left, []string{"build/", "debug.log"}) {
		t.Errorf("LeftOut = %q, %v", left, err)
	}
	if _, err := w.CommitTree(strings.Repeat("0", 40)); err == nil {
		t.Error("CommitTree of a commit the workspace lacks succeeded")
	}
}
