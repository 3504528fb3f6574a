package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The harness must see a wrong tree: a replay whose tools did something
// else than the commit fails.
func TestTreeDiff(t *testing.T) {
	want := map[string]Entry{"a": {"100644", "1"}, "b": {"100755", "2"}, "c": {"100644", "3"}}
	got := map[string]Entry{"a": {"100644", "1"}, "b": {"100644", "2"}, "d": {"100644", "4"}}
	d := TreeDiff(got, want)
	wantD := []string{"b: mode 100644, want 100755", "c: missing", "d: should not exist"}
	if !slices.Equal(d, wantD) {
		t.Errorf("TreeDiff = %q, want %q", d, wantD)
	}
}

func TestMinimalEdit(t *testing.T) {
	content := "a\nx\nb\nx\nc\n"
	for _, tc := range []struct {
		name      string
		h         Hunk
		newLines  []string
		old, repl string
	}{
		{"unique line", Hunk{1, 1, 1, 1}, []string{"A\n"}, "a\n", "A\n"},
		{"repeated line grows before", Hunk{4, 1, 4, 1}, []string{"y\n"}, "b\nx\n", "b\ny\n"},
		{"repeated first line grows after", Hunk{2, 1, 2, 1}, []string{"y\n"}, "a\nx\n", "a\ny\n"},
		{"insertion anchors before", Hunk{5, 0, 6, 1}, []string{"d\n"}, "c\n", "c\nd\n"},
		{"insertion at the top anchors after", Hunk{0, 0, 1, 1}, []string{"z\n"}, "a\n", "z\na\n"},
		{"deletion", Hunk{3, 1, 2, 0}, nil, "b\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, repl, ok := MinimalEdit(content, tc.h, tc.newLines)
			if !ok || old != tc.old || repl != tc.repl {
				t.Errorf("MinimalEdit = %q, %q, %v; want %q, %q", old, repl, ok, tc.old, tc.repl)
			}
		})
	}
}

// Snapshot reads a directory as git would record it.
func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.sh"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Snapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	// git hash-object's ids of "hi\n" and of the empty blob.
	want := map[string]Entry{"a": {"100644", "45b983be36b73c0788dc9cbcb76cbb80fc7bb057"},
		"x.sh": {"100755", "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"}}
	if d := TreeDiff(got, want); len(d) > 0 {
		t.Errorf("Snapshot differs: %q", d)
	}
}

// The script of a commit: reads window by window as the results say, then
// the file operations, then one answer of bottom-up edits per file, then
// finish.
func TestScript(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := Git(repo, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
			"-c", "core.autocrlf=false", "-c", "commit.gpgsign=false"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(p, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, p), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(repo, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	write("a.txt", "one\r\ntwo\r\nthree\r\nfour\r\n", 0o644)
	write("old.txt", "keep\n", 0o644)
	write("gone.txt", "x\n", 0o644)
	write("run.sh", "#!/bin/sh\n", 0o644)
	git("add", "-A")
	git("commit", "-q", "-m", "root")
	parent := git("rev-parse", "HEAD")
	write("a.txt", "ONE\r\ntwo\r\nthree\r\nFOUR\r\n", 0o644)
	if err := os.Rename(filepath.Join(repo, "old.txt"), filepath.Join(repo, "new.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(repo, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	write("run.sh", "#!/bin/sh\n", 0o755)
	write("b.txt", "new\n", 0o644)
	git("add", "-A")
	git("commit", "-q", "-m", "change")
	commit := git("rev-parse", "HEAD")

	blobs, err := NewBlobs(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	s, err := New(repo, blobs, parent, commit, "Change")
	if err != nil {
		t.Fatal(err)
	}
	type turn struct {
		results []string // the results the last answer got
		want    []string // this answer's calls, as name and arguments
	}
	for i, tc := range []turn{
		{nil, []string{`read_file {"max_lines":2000,"path":"a.txt","start_line":1}`}},
		// A footer that says to read on is obeyed.
		{[]string{"1\tone\n2\ttwo\n[showing lines 1-2 of 4; use start_line 3 to read on]"},
			[]string{`read_file {"max_lines":2000,"path":"a.txt","start_line":3}`}},
		{[]string{"3\tthree\n4\tfour\n[lines 3-4 of 4]"}, []string{
			`delete_file {"path":"gone.txt"}`,
			`move_file {"from":"old.txt","to":"new.txt"}`,
			`write_file {"content":"new\n","path":"b.txt"}`,
			`set_executable {"executable":true,"path":"run.sh"}`}},
		// CRLF as the tools show it, bottom-up.
		{[]string{"ok", "ok", "ok", "ok"}, []string{
			`edit_file {"new_text":"FOUR\n","old_text":"four\n","path":"a.txt"}`,
			`edit_file {"new_text":"ONE\n","old_text":"one\n","path":"a.txt"}`}},
		{[]string{"ok", "ok"}, []string{`finish {"summary":"Replays commit ` + commit[:12] + `.","title":"Change"}`}},
		{[]string{"done"}, nil},
	} {
		calls, err := s.Next(tc.results)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range calls {
			var v map[string]any
			if err := json.Unmarshal([]byte(c.Args), &v); err != nil {
				t.Fatalf("answer %d: %s args %q: %v", i, c.Name, c.Args, err)
			}
			b, _ := json.Marshal(v) // sorted keys
			got = append(got, c.Name+" "+string(b))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("answer %d:\n got %q\nwant %q", i, got, tc.want)
		}
	}
	if len(s.Failures) > 0 || s.NotExpressible != "" || s.NeedsKept {
		t.Errorf("failures %q, not expressible %q, needs kept %v", s.Failures, s.NotExpressible, s.NeedsKept)
	}
	for _, k := range "DRAMX" {
		if !s.Kinds[byte(k)] {
			t.Errorf("kind %c not seen", k)
		}
	}
}
