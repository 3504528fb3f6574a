package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
)

// tarEntry is what a test compares of one tar entry.
type tarEntry struct {
	typ            byte
	name           string
	mode           int64
	uid, gid       int
	link, body     string
	modTime        time.Time
	hasContentSize bool // Size equals len(body)
}

func (e tarEntry) String() string {
	return fmt.Sprintf("%c %q %o %d:%d link=%q body=%q", e.typ, e.name, e.mode, e.uid, e.gid, e.link, e.body)
}

// readTar lists the entries of a tar stream, failing the test if it is not a
// well-formed one.
func readTar(t *testing.T, r io.Reader) []tarEntry {
	t.Helper()
	var entries []tarEntry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatalf("reading the tar stream: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s: %v", h.Name, err)
		}
		entries = append(entries, tarEntry{
			typ: h.Typeflag, name: h.Name, mode: h.Mode, uid: h.Uid, gid: h.Gid,
			link: h.Linkname, body: string(body), modTime: h.ModTime,
			hasContentSize: h.Size == int64(len(body)),
		})
	}
}

func mkfile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	// Chmod, so the umask does not decide the mode under test.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestTarTree(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("n", 150) // beyond a ustar header's 100 bytes
	mkfile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\n", 0o755)
	mkfile(t, filepath.Join(dir, "sub", "data"), "data", 0o640)
	mkfile(t, filepath.Join(dir, "empty"), "", 0o600)
	mkfile(t, filepath.Join(dir, "setid"), "s", os.ModeSetuid|os.ModeSetgid|0o755)
	mkfile(t, filepath.Join(dir, long), "long", 0o644)
	mkfile(t, filepath.Join(dir, "caf\xe9 new\nline"), "odd name", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "shared"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "shared"), os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "sub", "data"), filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"abs": "/etc", "rel": "sub/data", "dangling": "nope", "up": "../../outside"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A socket: the walk must skip it without opening it.
	sock, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(sock)
	if err := syscall.Bind(sock, &syscall.SockaddrUnix{Name: filepath.Join(dir, "s")}); err != nil {
		t.Fatalf("bind a socket in the tree (a path of at most 108 bytes): %v", err)
	}
	mtime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "run.sh"), mtime, mtime); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	var reserved []int64
	reserve := func(n int64) error { reserved = append(reserved, n); return nil }
	if err := tarTree(t.Context(), dir, &buf, 1234, 5678, reserve); err != nil {
		t.Fatal(err)
	}
	got := readTar(t, &buf)
	want := []string{
		// No entry for the root: the receiver's directory keeps its own
		// owner and mode. Hard links become copies; symbolic links stay
		// links with their target as written, also when it points out of
		// the tree; the fifo and the socket are left out.
		`2 "abs" 777 1234:5678 link="/etc" body=""`,
		`0 "caf\xe9 new\nline" 644 1234:5678 link="" body="odd name"`,
		`2 "dangling" 777 1234:5678 link="nope" body=""`,
		`0 "empty" 600 1234:5678 link="" body=""`,
		`0 "hard" 640 1234:5678 link="" body="data"`,
		`0 "` + long + `" 644 1234:5678 link="" body="long"`,
		`2 "rel" 777 1234:5678 link="sub/data" body=""`,
		`0 "run.sh" 755 1234:5678 link="" body="#!/bin/sh\n"`,
		`0 "setid" 6755 1234:5678 link="" body="s"`,
		`5 "shared/" 1777 1234:5678 link="" body=""`,
		`5 "sub/" 700 1234:5678 link="" body=""`,
		`0 "sub/data" 640 1234:5678 link="" body="data"`,
		`2 "up" 777 1234:5678 link="../../outside" body=""`,
	}
	var gotS []string
	for _, e := range got {
		gotS = append(gotS, e.String())
		if !e.hasContentSize {
			t.Errorf("%s: header size differs from the content", e.name)
		}
		if e.name == "run.sh" && !e.modTime.Equal(mtime) {
			t.Errorf("run.sh modified %v, want %v", e.modTime, mtime)
		}
	}
	if strings.Join(gotS, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant\n%s", strings.Join(gotS, "\n"), strings.Join(want, "\n"))
	}
	// Regular files only, in the walk's (lexical) order.
	if fmt.Sprint(reserved) != "[8 0 4 4 10 1 4]" {
		t.Errorf("reserved %v, want the regular files' sizes in walk order", reserved)
	}
}

// A root given as a symbolic link is followed, like copyTree's: the agent's
// workspace may sit behind one.
func TestTarTreeRootSymlink(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "real", "f"), "f", 0o644)
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarTree(t.Context(), filepath.Join(dir, "link"), &buf, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := readTar(t, &buf); len(got) != 1 || got[0].name != "f" || got[0].body != "f" {
		t.Errorf("entries %v, want the file of the linked directory", got)
	}
}

// A link is added where the tree's top has nothing of its name, and
// never replaces what the tree has there; a name that is not one entry of
// the top directory is refused rather than written anywhere else.
func TestTarTreeLinks(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "vendor", "x"), "x", 0o644)
	mkfile(t, filepath.Join(dir, "web", "package.json"), "{}", 0o644)
	if err := os.Symlink("web", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	links := []pullwright.Link{{Name: "node_modules", Target: "/deps/files/node_modules"}, {Name: "vendor", Target: "/elsewhere"},
		{Name: "web/node_modules", Target: "/deps/files/workspace/web/node_modules"},
		{Name: "gone/node_modules", Target: "/x"}, {Name: "alias/node_modules", Target: "/x"}}
	if err := tarTree(t.Context(), dir, &buf, 7, 8, nil, links...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range readTar(t, &buf) {
		got = append(got, e.String())
	}
	// A link goes only where the tree has a real directory for it, not
	// into one it lacks, nor through a symbolic link.
	want := []string{
		`2 "alias" 777 7:8 link="web" body=""`,
		`5 "vendor/" 700 7:8 link="" body=""`,
		`0 "vendor/x" 644 7:8 link="" body="x"`,
		`5 "web/" 700 7:8 link="" body=""`,
		`0 "web/package.json" 644 7:8 link="" body="{}"`,
		`2 "node_modules" 777 7:8 link="/deps/files/node_modules" body=""`,
		`2 "web/node_modules" 777 7:8 link="/deps/files/workspace/web/node_modules" body=""`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, name := range []string{"", ".", "..", "../up", "/abs", "a/../b", "a//b", "a/", "./a", "a\\b", "a\x00"} {
		if err := tarTree(t.Context(), dir, io.Discard, 1, 1, nil, pullwright.Link{Name: name, Target: "/x"}); err == nil {
			t.Errorf("link named %q: no error", name)
		}
	}
}

func TestTarTreeErrors(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "a"), "aaaa", 0o644)
	mkfile(t, filepath.Join(dir, "b"), "bbbbbbbb", 0o644)
	full := errors.New("full")
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		src     string
		reserve func(t *testing.T) func(int64) error
		wantErr func(error) bool
		// wantEntries are the names the stream holds before it stops.
		wantEntries string
	}{
		{
			name: "missing", src: filepath.Join(dir, "gone"),
			wantErr: func(err error) bool { return errors.Is(err, os.ErrNotExist) },
		},
		{
			name: "not a directory", src: filepath.Join(dir, "a"),
			wantErr: func(err error) bool { return err != nil && strings.Contains(err.Error(), "is not a directory") },
		},
		{
			name: "cancelled", ctx: cancelled, src: dir,
			wantErr: func(err error) bool { return errors.Is(err, context.Canceled) },
		},
		{
			// A refusal stops the stream before the file it was asked
			// about: nothing of b is sent.
			name: "refused", src: dir,
			reserve: func(*testing.T) func(int64) error {
				return func(n int64) error {
					if n == 8 {
						return full
					}
					return nil
				}
			},
			wantErr:     func(err error) bool { return errors.Is(err, full) },
			wantEntries: "a",
		},
		{
			// The header already promised b's size when it shrinks (the
			// agent edits while a run copies): an error, never a stream
			// padded with what is not in the file.
			name: "file shrank", src: dir,
			reserve: func(t *testing.T) func(int64) error {
				return func(n int64) error {
					if n == 8 {
						if err := os.Truncate(filepath.Join(dir, "b"), 3); err != nil {
							t.Error(err)
						}
					}
					return nil
				}
			},
			wantErr: func(err error) bool {
				return errors.Is(err, io.EOF) && strings.Contains(err.Error(), "read "+filepath.Join(dir, "b"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mkfile(t, filepath.Join(dir, "b"), "bbbbbbbb", 0o644)
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			var reserve func(int64) error
			if tt.reserve != nil {
				reserve = tt.reserve(t)
			}
			var buf bytes.Buffer
			err := tarTree(ctx, tt.src, &buf, 1, 1, reserve)
			if !tt.wantErr(err) {
				t.Fatalf("err = %v", err)
			}
			// What was sent is a prefix of a valid stream: entries whole.
			var names []string
			tr := tar.NewReader(&buf)
			for {
				h, err := tr.Next()
				if err != nil {
					break
				}
				names = append(names, h.Name)
			}
			if tt.wantEntries != "" && strings.Join(names, " ") != tt.wantEntries {
				t.Errorf("stream holds %v, want %s", names, tt.wantEntries)
			}
		})
	}
}

// A file that grew since the walk saw it is cut at the size the header
// promised, so the stream stays well formed.
func TestTarTreeFileGrew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	mkfile(t, path, "1234", 0o644)
	grow := func(int64) error { return os.WriteFile(path, []byte("123456789"), 0o644) }
	var buf bytes.Buffer
	if err := tarTree(t.Context(), dir, &buf, 1, 1, grow); err != nil {
		t.Fatal(err)
	}
	if got := readTar(t, &buf); len(got) != 1 || got[0].body != "1234" {
		t.Errorf("entries %v, want f cut at 4 bytes", got)
	}
}

// A failing writer (the engine stopped reading) ends the walk with its
// error.
func TestTarTreeWriterFails(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "f"), strings.Repeat("x", 1<<16), 0o644)
	gone := errors.New("engine gone")
	pr, pw := io.Pipe()
	pr.CloseWithError(gone)
	if err := tarTree(t.Context(), dir, pw, 1, 1, nil); !errors.Is(err, gone) {
		t.Errorf("err = %v, want %v", err, gone)
	}
}
