package runner

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The engine's tar of a run's copy sends a second name of a file (ln,
// or a tool that hard-links) as a link to the first, without contents:
// it is refused, never kept as an empty file.
func TestAHardLinkIsNotKeptEmpty(t *testing.T) {
	dir := t.TempDir()
	const body = "package a\n"
	for _, n := range []string{"a.go", "z.go"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "keep/tree/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "keep/tree/a.go", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))},
		{Name: "keep/tree/z.go", Typeflag: tar.TypeLink, Mode: 0o644, Linkname: "keep/tree/a.go"},
		{Name: "keep/copied", Typeflag: tar.TypeReg, Mode: 0o644},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := newChangeSet(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := readKept(&buf, c.add); err != nil {
		t.Fatal(err)
	}
	out, note, err := c.finish(t.Context())
	if err != nil || note != "" || len(out) != 1 || out[0].Path != "z.go" || out[0].Refused == "" {
		t.Fatalf("changes %+v, note %q, err %v; want z.go refused", out, note, err)
	}
}
