package repo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// craft builds a tree from entries as given, unchecked, as a crafted push
// could hold it.
func craft(t *testing.T, entries ...object.TreeEntry) *Tree {
	t.Helper()
	s := &overlayStorer{EncodedObjectStorer: memory.NewStorage(), mem: map[plumbing.Hash]plumbing.EncodedObject{}}
	blob, err := s.put(plumbing.BlobObject, []byte("echo pwned\n"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := buildTree(s, "", map[string]object.TreeEntry{"x": {Name: "x", Mode: filemode.Regular, Hash: blob}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		switch entries[i].Mode {
		case filemode.Dir:
			entries[i].Hash = sub
		default:
			entries[i].Hash = blob
		}
	}
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := s.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := object.GetTree(s, h)
	if err != nil {
		t.Fatal(err)
	}
	return &Tree{tree: tree}
}

func TestExportRefusesCraftedTrees(t *testing.T) {
	tests := []struct {
		name    string
		entries []object.TreeEntry
		want    string
	}{
		{"dot git dir", []object.TreeEntry{{Name: ".git", Mode: filemode.Dir}}, `".git"`},
		{"dot git any case", []object.TreeEntry{{Name: ".GiT", Mode: filemode.Dir}}, `".GiT"`},
		{"parent", []object.TreeEntry{{Name: "..", Mode: filemode.Dir}}, `".."`},
		{"slash", []object.TreeEntry{{Name: "a/../../b", Mode: filemode.Regular}}, "a/../../b"},
		{"twice", []object.TreeEntry{{Name: "a", Mode: filemode.Regular}, {Name: "a", Mode: filemode.Regular}}, `two entries named "a"`},
		{"file and dir of one name", []object.TreeEntry{{Name: "a", Mode: filemode.Symlink}, {Name: "a", Mode: filemode.Dir}}, `two entries named "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "run")
			err := craft(t, tt.entries...).Export(context.Background(), dst)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Export = %v, want an error naming %s", err, tt.want)
			}
			if _, err := os.Lstat(dst); !os.IsNotExist(err) {
				t.Errorf("a refused export left %s behind (%v)", dst, err)
			}
		})
	}
}

// The check reads the export back: a file that differs from the tree, one
// more or one fewer, is found.
func TestCheckExportFindsDifferences(t *testing.T) {
	tree := craft(t, object.TreeEntry{Name: "dir", Mode: filemode.Dir}, object.TreeEntry{Name: "run.sh", Mode: filemode.Executable})
	tests := []struct {
		name   string
		tamper func(dst string) error
		want   string
	}{
		{"content", func(dst string) error { return os.WriteFile(filepath.Join(dst, "run.sh"), []byte("other\n"), 0o755) }, "run.sh differs"},
		{"mode", func(dst string) error { return os.Chmod(filepath.Join(dst, "run.sh"), 0o644) }, "run.sh differs"},
		{"extra file", func(dst string) error { return os.WriteFile(filepath.Join(dst, "dir", "conftest.py"), nil, 0o644) }, "dir/conftest.py is in the export but not in the tree"},
		{"missing file", func(dst string) error { return os.Remove(filepath.Join(dst, "dir", "x")) }, "missing: dir/x"},
		{"link for file", func(dst string) error {
			p := filepath.Join(dst, "dir", "x")
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink("/etc/passwd", p)
		}, "dir/x differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "run")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			root, err := os.OpenRoot(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			want := map[string]exportEntry{}
			if err := writeTree(context.Background(), root, tree.tree, "", want); err != nil {
				t.Fatal(err)
			}
			if err := checkExport(context.Background(), root, want); err != nil {
				t.Fatalf("an untouched export fails the check: %v", err)
			}
			if err := tt.tamper(dst); err != nil {
				t.Fatal(err)
			}
			if err := checkExport(context.Background(), root, want); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("check = %v, want %q", err, tt.want)
			}
		})
	}
}
