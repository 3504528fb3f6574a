package task

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pullwright/pullwright"
)

// snapshotWS is the part of a Workspace snapshot and syncFiles use.
type snapshotWS struct {
	Workspace
	dir     string
	changes []pullwright.Change
}

func (w snapshotWS) Dir() string                           { return w.dir }
func (w snapshotWS) Changes() ([]pullwright.Change, error) { return w.changes, nil }
func (w snapshotWS) Revert(paths ...string) error          { return nil }

// The executable bit the agent set (set_executable, a kept run) survives
// a workspace rebuilt from the store.
func TestASavedFileKeepsItsExecutableBit(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	for name, mode := range map[string]os.FileMode{"run.sh": 0o755, "notes.txt": 0o644} {
		if err := os.WriteFile(filepath.Join(from, name), []byte("x\n"), mode); err != nil {
			t.Fatal(err)
		}
		// The rebuilt checkout has them with the other mode.
		if err := os.WriteFile(filepath.Join(to, name), []byte("old\n"), mode^0o111); err != nil {
			t.Fatal(err)
		}
	}
	changes := []pullwright.Change{{Path: "notes.txt", Status: pullwright.ChangeModified}, {Path: "run.sh", Status: pullwright.ChangeModified}}
	files, err := snapshot(snapshotWS{dir: from, changes: changes})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Executable || !files[1].Executable {
		t.Fatalf("snapshot %+v", files)
	}
	if err := syncFiles(snapshotWS{dir: to}, files); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"run.sh": 0o755, "notes.txt": 0o644} {
		fi, err := os.Stat(filepath.Join(to, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s restored as %v (%v), want %v", name, fi.Mode().Perm(), err, want)
		}
	}
}
