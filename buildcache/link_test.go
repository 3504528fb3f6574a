package buildcache_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/buildcache"
)

// A run's build cache directory reads the shared layer without being able
// to write it: action entries are copies of its own, outputs (files, and
// an executable's directory) are links, its trim.txt is its own and
// fresh, and what is not part of a build cache is left out.
func TestLinkMakesARunsOwnDirectoryOfTheSharedLayer(t *testing.T) {
	shared := t.TempDir()
	entry := "v1 " + strings.Repeat("ab", 32) + " " + strings.Repeat("cd", 32) + "                  12 1700000000000000000\n"
	write(t, shared, map[string]string{
		"README":                                   "This directory holds cached build artifacts from the Go build system.\n",
		"trim.txt":                                 "1700000000",
		"ab/" + strings.Repeat("ab", 32) + "-a":    entry,
		"cd/" + strings.Repeat("cd", 32) + "-d":    "the output",
		"ef/" + strings.Repeat("ef", 32) + "-d/nm": "an executable",
		"ab/big-a":                                 strings.Repeat("x", 5000), // not an entry: linked
		"fuzz/corpus":                              "not the build cache's",
		"zz/x":                                     "not a subdirectory the go command makes",
	})
	into := filepath.Join(t.TempDir(), "gocache")
	now := time.Unix(1800000000, 0)
	if err := buildcache.Link(shared, into, now); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want string // "copy", "link" or "none"
	}{
		{"README", "link"},
		{"ab/" + strings.Repeat("ab", 32) + "-a", "copy"},
		{"ab/big-a", "link"},
		{"cd/" + strings.Repeat("cd", 32) + "-d", "link"},
		{"ef/" + strings.Repeat("ef", 32) + "-d", "link"},
		{"fuzz", "none"},
		{"zz", "none"},
	} {
		fi, err := os.Lstat(filepath.Join(into, tc.name))
		got := "none"
		switch {
		case err != nil && !errors.Is(err, os.ErrNotExist):
			t.Fatal(err)
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			got = "link"
			if target, _ := os.Readlink(filepath.Join(into, tc.name)); target != filepath.Join(shared, tc.name) {
				t.Errorf("%s links to %s", tc.name, target)
			}
		case fi.Mode().IsRegular():
			got = "copy"
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(into, "ef", strings.Repeat("ef", 32)+"-d", "nm")); string(b) != "an executable" {
		t.Errorf("the executable through its link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(into, "trim.txt")); string(b) != "1800000000" {
		t.Errorf("trim.txt = %q, want the link step's time", b)
	}
	// A run whose Prepare ran twice still has its directory.
	if err := buildcache.Link(shared, into, now); err != nil {
		t.Errorf("a second link into the same directory: %v", err)
	}
}

func TestMainUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"-shared", "/x"}, {"/y"}, {"-shared", "/x", "/y", "/z"}, {"-own", "/y"}} {
		if err := buildcache.Main(args, io.Discard); !errors.Is(err, buildcache.ErrUsage) {
			t.Errorf("Main(%q) = %v, want the usage", args, err)
		}
	}
	if err := buildcache.Main([]string{"-shared", filepath.Join(t.TempDir(), "missing"), t.TempDir()}, io.Discard); err == nil {
		t.Error("Main with a shared layer that is not there succeeded")
	}
}
