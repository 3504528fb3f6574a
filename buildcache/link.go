package buildcache

// The link step (Link) gives an approved run the shared layer as a Go
// build cache directory of its own, in its /tmp:
//
//	bot gocache -shared DIR RUNLAYER
//
// The go command reads GOCACHE as a plain directory, the fastest way it
// has: no program answers its lookups (a GOCACHEPROG program costs a
// round trip per lookup, about 0.5 s of a cobra test run here). The shared
// layer is mounted read-only and the go command writes its cache, so the
// run's directory is made of links into the shared layer: its outputs are
// symbolic links (the go command reads them, and what it writes beside
// them stays in the run's /tmp), its action entries are copies (the go
// command rewrites an entry in place, which through a link would hit the
// read-only mount). A run's writes live as long as its /tmp, capped like
// it, and never reach the shared layer.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrUsage is Main's answer to arguments it does not take.
var ErrUsage = errors.New("usage: bot gocache -shared DIR RUNLAYER")

// Main is "bot gocache -shared DIR RUNLAYER" (Link).
func Main(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("gocache", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shared := fs.String("shared", "", "the read-only build cache")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("gocache: %w", ErrUsage)
	}
	if *shared == "" || fs.NArg() != 1 {
		return fmt.Errorf("gocache: %w", ErrUsage)
	}
	if err := Link(*shared, fs.Arg(0), time.Now()); err != nil {
		return fmt.Errorf("gocache: %w", err)
	}
	return nil
}

// maxEntry bounds an action entry the link step copies: the go command
// writes them as one line of about 175 bytes. A larger file under that
// name is not one, and is linked like an output.
const maxEntry = 4 << 10

// Link makes into (created if need be) a Go build cache directory that
// reads the one at shared: the same 256 subdirectories, each action entry
// ("…-a") copied, every other file or directory (outputs, "…-d", and an
// executable's directory) a symbolic link to shared's, and a trim.txt of
// now, so that the go command does not trim (it would walk every entry)
// nor try to write shared's. Anything else in shared is left out.
func Link(shared, into string, now time.Time) error {
	shared, err := filepath.Abs(shared)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(into, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", into, err)
	}
	top, err := os.ReadDir(shared)
	if err != nil {
		return fmt.Errorf("read the shared layer: %w", err)
	}
	for _, d := range top {
		name := d.Name()
		switch {
		case name == "README":
			if err := os.Symlink(filepath.Join(shared, name), filepath.Join(into, name)); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		case d.IsDir() && isHexByte(name):
			if err := linkSubdir(filepath.Join(shared, name), filepath.Join(into, name)); err != nil {
				return err
			}
		}
	}
	trim := strconv.FormatInt(now.Unix(), 10)
	if err := os.WriteFile(filepath.Join(into, "trim.txt"), []byte(trim), 0o644); err != nil {
		return fmt.Errorf("write trim.txt: %w", err)
	}
	return nil
}

func linkSubdir(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src, dst := filepath.Join(from, e.Name()), filepath.Join(to, e.Name())
		if strings.HasSuffix(e.Name(), "-a") && e.Type().IsRegular() {
			if b, err := readSmall(src); err == nil {
				if err := os.WriteFile(dst, b, 0o644); err != nil {
					return err
				}
				continue
			}
		}
		if err := os.Symlink(src, dst); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}

// readSmall reads a file of at most maxEntry bytes.
func readSmall(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEntry+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxEntry {
		return nil, errors.New("not an action entry")
	}
	return b, nil
}

func isHexByte(s string) bool {
	if len(s) != 2 {
		return false
	}
	_, err := strconv.ParseUint(s, 16, 8)
	return err == nil && strings.ToLower(s) == s
}
