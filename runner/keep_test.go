package runner_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/runner"
)

// keptChange is a FileChange as the tests compare it.
func keptChange(c pullwright.FileChange) string {
	switch {
	case c.Refused != "":
		return c.Path + " refused: " + c.Refused
	case c.Deleted:
		return c.Path + " deleted"
	case c.Executable:
		return fmt.Sprintf("%s +x %q", c.Path, c.Content)
	}
	return fmt.Sprintf("%s %q", c.Path, c.Content)
}

// A run that keeps its changes brings back what the command changed in
// its copy: regular files added, changed (content or executable bit) and
// deleted, in path order. A link it made is refused; .git, the runner's
// own links and new files the repository ignores are not its changes; a
// failed command and too many files keep nothing, with a note; a run
// that did not ask keeps nothing. Both runners, through the same rules.
func TestRunKeepsChanges(t *testing.T) {
	files := map[string]string{
		"go.sum": "a\n", "old.txt": "old\n", "run.sh": "#!/bin/sh\n", "same.txt": "same\n",
		".gitignore": "build/\n*.o\n", ".git/HEAD": "ref: refs/heads/main\n", "sub/keep.txt": "k\n",
	}
	const change = `printf 'b\n' >> go.sum && rm old.txt && chmod +x run.sh && printf 'new\n' > sub/new.txt && ` +
		`touch same.txt && ln -s /etc/passwd out && mkdir -p build && echo y > build/x && echo z > sub/y.o && ` +
		`echo evil > .git/config && rm -f node_modules`
	want := []string{
		"go.sum \"a\\nb\\n\"",
		"old.txt deleted",
		"out refused: a symbolic link (to \"/etc/passwd\"): links a command makes are not kept",
		"run.sh +x \"#!/bin/sh\\n\"",
		"sub/new.txt \"new\\n\"",
	}
	many := "for i in $(seq 1 " + fmt.Sprint(runner.MaxKeptFiles+1) + "); do echo $i > f$i; done"
	cases := []struct {
		name    string
		command string
		keep    bool
		want    []string
		note    string
	}{
		{"kept", change, true, want, ""},
		{"not asked", change, false, nil, ""},
		{"the command failed", change + " && exit 3", true, nil, "did not exit 0"},
		{"too many files", many, true, nil, "more than 200 files"},
	}
	runners := map[string]func(t *testing.T, s pullwright.RunSpec) pullwright.RunResult{
		"local": func(t *testing.T, s pullwright.RunSpec) pullwright.RunResult {
			l, runs := newLocal(t)
			res, err := run(t, l, runs, s)
			if err != nil {
				t.Fatal(err)
			}
			return res
		},
		"docker": func(t *testing.T, s pullwright.RunSpec) pullwright.RunResult {
			res, err := newDocker(t, runner.DockerConfig{}).Run(t.Context(), s)
			if err != nil {
				t.Fatal(err)
			}
			return res
		},
	}
	for rname, runIt := range runners {
		for _, tc := range cases {
			t.Run(rname+"/"+tc.name, func(t *testing.T) {
				if rname == "docker" {
					t.Parallel()
				}
				dir := t.TempDir()
				writeTree(t, dir, files)
				before := snapshot(t, dir)
				res := runIt(t, pullwright.RunSpec{Dir: dir, Command: tc.command, KeepChanges: tc.keep, Timeout: time.Minute,
					Links: []pullwright.Link{{Name: "node_modules", Target: "/nowhere"}}})
				var got []string
				for _, c := range res.Changes {
					got = append(got, keptChange(c))
				}
				if !slices.Equal(got, tc.want) || !strings.Contains(res.KeptNote, tc.note) || (tc.note == "") != (res.KeptNote == "") {
					t.Errorf("changes = %q, note %q; want %q, note %q\n%s", got, res.KeptNote, tc.want, tc.note, res.Output)
				}
				if after := snapshot(t, dir); !equalMaps(before, after) {
					t.Errorf("the run changed the workspace itself")
				}
			})
		}
	}
}

// A file that replaced a directory, a directory of files that is gone:
// every file of the workspace the copy lacks is deleted, and a large file
// unchanged is no change.
func TestRunKeepsDeletesAndLargeFiles(t *testing.T) {
	l, runs := newLocal(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"d/a": "a", "d/b/c": "c", "big": strings.Repeat("x", runner.MaxKeptFileBytes+1)})
	if err := os.WriteFile(filepath.Join(dir, "bigger"), []byte(strings.Repeat("y", runner.MaxKeptFileBytes+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := run(t, l, runs, pullwright.RunSpec{Dir: dir, KeepChanges: true,
		Command: "rm -r d && echo file > d && printf z >> bigger"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Changes {
		got = append(got, keptChange(c))
	}
	want := []string{
		fmt.Sprintf("bigger refused: %d bytes: larger than the %d a kept file may be", runner.MaxKeptFileBytes+2, runner.MaxKeptFileBytes),
		"d \"file\\n\"", "d/a deleted", "d/b/c deleted",
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes = %q\nwant %q", got, want)
	}
}

// A directory that replaced a file: the file is deleted and the
// directory's files are new, so that the changes apply in full.
func TestRunKeepsAFileReplacedByADirectory(t *testing.T) {
	l, runs := newLocal(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f": "was a file\n", "g": "g\n"})
	res, err := run(t, l, runs, pullwright.RunSpec{Dir: dir, KeepChanges: true, Command: "rm f && mkdir f && echo x > f/x"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Changes {
		got = append(got, keptChange(c))
	}
	if want := []string{"f deleted", "f/x \"x\\n\""}; !slices.Equal(got, want) {
		t.Errorf("changes = %q\nwant %q", got, want)
	}
}
