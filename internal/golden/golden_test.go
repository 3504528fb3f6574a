package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that notes failures instead of stopping.
type recorder struct {
	testing.TB
	failed, fatal bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed, r.fatal = true, true }
func (r *recorder) Fatal(...any)          { r.failed, r.fatal = true, true }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.golden")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		path, got     string
		failed, fatal bool
	}{
		{name: "equal", path: path, got: "same\n"},
		{name: "different", path: path, got: "other\n", failed: true},
		{name: "missing", path: filepath.Join(dir, "none.golden"), got: "x", failed: true, fatal: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, tc.path, tc.got)
			if r.failed != tc.failed || r.fatal != tc.fatal {
				t.Errorf("failed, fatal = %v, %v; want %v, %v", r.failed, r.fatal, tc.failed, tc.fatal)
			}
		})
	}
}

func TestCheckUpdateWrites(t *testing.T) {
	defer func(was bool) { *update = was }(*update)
	*update = true
	path := filepath.Join(t.TempDir(), "new", "b.golden")
	Check(t, path, "fresh\n")
	if b, err := os.ReadFile(path); err != nil || string(b) != "fresh\n" {
		t.Errorf("after -update the file holds %q, %v; want %q", b, err, "fresh\n")
	}
}
