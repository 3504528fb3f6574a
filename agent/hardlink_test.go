package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
)

// hardLinkedWorkspace is a workspace whose notes.txt is a hard link to a
// file outside it (a secret, say), and whose alias is a symbolic link to
// notes.txt. It returns the workspace and the outside file.
func hardLinkedWorkspace(t *testing.T) (dir, outside string) {
	t.Helper()
	dir = workspaceDir(t, map[string]string{"main.go": "package main\n"})
	outside = filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("SECRET=outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "notes.txt")); err != nil {
		t.Skipf("no hard links between two temporary directories here: %v", err)
	}
	mustSymlink(t, "notes.txt", filepath.Join(dir, "alias"))
	return dir, outside
}

// A hard link in the workspace to a file outside it is neither read nor
// changed by any file tool, directly or through a symbolic link: the
// outside file keeps its bytes and mode, and none of it reaches the
// model. Deleting the name is allowed, and a file written there then is
// the workspace's own.
func TestFileToolsDoNotGoThroughAHardLink(t *testing.T) {
	a := newTestAgent(t, Config{})
	for _, tc := range []toolCase{
		{name: "read", tool: "read_file", args: `{"path":"notes.txt"}`, wantErr: true,
			want: []string{"notes.txt is a hard link: the file has 2 names", "delete_file"}},
		{name: "read through a symlink", tool: "read_file", args: `{"path":"alias"}`, wantErr: true, want: []string{"hard link"}},
		{name: "grep", tool: "grep", args: `{"pattern":"SECRET"}`, want: []string{"no matches"}},
		{name: "grep for files", tool: "grep", args: `{"pattern":"SECRET","output_mode":"files_with_matches"}`,
			notWant: []string{"notes.txt"}},
		{name: "write", tool: "write_file", args: `{"path":"notes.txt","content":"overwritten\n"}`, wantErr: true,
			want: []string{"notes.txt is a hard link", "not read or changed"}},
		{name: "write through a symlink", tool: "write_file", args: `{"path":"alias","content":"overwritten\n"}`, wantErr: true,
			want: []string{"hard link"}},
		{name: "edit", tool: "edit_file", args: `{"path":"notes.txt","old_text":"outside","new_text":"changed"}`, wantErr: true,
			want: []string{"notes.txt is a hard link"}},
		{name: "make executable", tool: "set_executable", args: `{"path":"notes.txt","executable":true}`, wantErr: true,
			want: []string{"notes.txt is a hard link"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, outside := hardLinkedWorkspace(t)
			tc.notWant = append(tc.notWant, "SECRET=", "=outside")
			runToolCases(t, a, dir, []toolCase{tc})
			fi, err := os.Stat(outside)
			if err != nil {
				t.Fatal(err)
			}
			if got := readDisk(t, filepath.Dir(outside), "secret.txt"); got != "SECRET=outside\n" || fi.Mode().Perm() != 0o600 {
				t.Errorf("the file outside the workspace is now %q, mode %v", got, fi.Mode().Perm())
			}
		})
	}

	t.Run("delete, then write anew", func(t *testing.T) {
		dir, outside := hardLinkedWorkspace(t)
		runToolCases(t, a, dir, []toolCase{
			{name: "delete", tool: "delete_file", args: `{"path":"notes.txt"}`, want: []string{"deleted notes.txt"}},
			{name: "write", tool: "write_file", args: `{"path":"notes.txt","content":"mine\n"}`, want: []string{"created notes.txt"}},
			{name: "read", tool: "read_file", args: `{"path":"notes.txt"}`, want: []string{"1\tmine"}},
		})
		if got := readDisk(t, filepath.Dir(outside), "secret.txt"); got != "SECRET=outside\n" {
			t.Errorf("the file outside the workspace is now %q", got)
		}
	})
}

// A command's change to a file that is a hard link in the workspace is
// not kept: written in place, it would land in the file outside too.
func TestKeepRefusesAHardLink(t *testing.T) {
	for _, c := range []pullwright.FileChange{
		{Path: "notes.txt", Content: []byte("from the command\n")},
		{Path: "notes.txt", Deleted: true},
	} {
		dir, outside := hardLinkedWorkspace(t)
		k, err := KeepChanges(&State{}, dir, []pullwright.FileChange{c}, "")
		if err != nil {
			t.Fatal(err)
		}
		if text := k.Text(); !strings.Contains(text, "notes.txt is a hard link in the workspace (the file has 2 names)") {
			t.Errorf("deleted %v: text = %q, want the change refused", c.Deleted, text)
		}
		if got := readDisk(t, filepath.Dir(outside), "secret.txt"); got != "SECRET=outside\n" {
			t.Errorf("deleted %v: the file outside the workspace is now %q", c.Deleted, got)
		}
		if _, err := os.Lstat(filepath.Join(dir, "notes.txt")); err != nil {
			t.Errorf("deleted %v: the workspace's name is gone: %v", c.Deleted, err)
		}
	}
}
