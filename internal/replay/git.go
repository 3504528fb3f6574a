// Package replay turns a real commit into the tool calls a careful model
// would make to write it (issue 40's oracle replay), and compares trees.
// The agent's tests run those calls through the tools directly
// (agent/replay_test.go); localrun's run them through `bot run` with a
// scripted model (localrun/replay_test.go). It holds no tool of its own:
// the tool names and arguments are the model's contract
// (docs/architecture.md "Contract"), written here as the model writes them.
//
// Import rule: no package of this module.
package replay

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// EmptyTree is git's empty tree, the parent of a root commit.
const EmptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// Git runs git in dir, without the machine's system configuration, and
// returns its output.
func Git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// Blobs reads git objects through one `git cat-file --batch`. It is not
// safe for concurrent use.
type Blobs struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// NewBlobs starts reading the objects of repo; Close ends it.
func NewBlobs(repo string) (*Blobs, error) {
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir = repo
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start git cat-file: %w", err)
	}
	return &Blobs{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// Close stops the reader.
func (b *Blobs) Close() {
	b.in.Close()
	_ = b.cmd.Wait()
}

// Blob is the content of the object sha.
func (b *Blobs) Blob(sha string) ([]byte, error) {
	if _, err := fmt.Fprintln(b.in, sha); err != nil {
		return nil, fmt.Errorf("cat-file %s: %w", sha, err)
	}
	head, err := b.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("cat-file %s: %w", sha, err)
	}
	f := strings.Fields(head)
	if len(f) != 3 {
		return nil, fmt.Errorf("cat-file %s: %q", sha, head)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return nil, fmt.Errorf("cat-file %s: %w", sha, err)
	}
	data := make([]byte, n+1) // and the newline after it
	if _, err := io.ReadFull(b.out, data); err != nil {
		return nil, fmt.Errorf("cat-file %s: %w", sha, err)
	}
	return data[:n], nil
}

// Entry is a file of a tree: its git mode and blob id.
type Entry struct{ Mode, SHA string }

// LsTree is the tree of commit (or tree) in repo, by path.
func LsTree(repo, commit string) (map[string]Entry, error) {
	out, err := Git(repo, "ls-tree", "-r", "-z", "--full-tree", commit)
	if err != nil {
		return nil, err
	}
	m := map[string]Entry{}
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("ls-tree: %q", rec)
		}
		m[p] = Entry{Mode: f[0], SHA: f[2]}
	}
	return m, nil
}

// Snapshot is the tree dir holds, as git would record it: each file's
// mode (symlink, executable or not) and blob id.
func Snapshot(dir string) (map[string]Entry, error) {
	m := map[string]Entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var data []byte
		mode := "100644"
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			data, mode = []byte(t), "120000"
		default:
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
			if fi.Mode().Perm()&0o100 != 0 {
				mode = "100755"
			}
		}
		m[rel] = Entry{Mode: mode, SHA: BlobID(data)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	return m, nil
}

// BlobID is git's id of a blob holding data.
func BlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// TreeDiff names how got differs from want, sorted.
func TreeDiff(got, want map[string]Entry) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, p+": missing")
		case g.SHA != w.SHA:
			out = append(out, p+": content differs")
		case g.Mode != w.Mode:
			out = append(out, fmt.Sprintf("%s: mode %s, want %s", p, g.Mode, w.Mode))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, p+": should not exist")
		}
	}
	slices.Sort(out)
	return out
}

// Change is one file a commit changes, as `git diff-tree -M --raw` says.
type Change struct {
	Status           byte // A, C, D, M, R, T
	OldMode, NewMode string
	OldSHA, NewSHA   string
	OldPath, NewPath string
}

// Changes are the files commit changes against parent (a commit or tree),
// renames detected.
func Changes(repo, parent, commit string) ([]Change, error) {
	out, err := Git(repo, "diff-tree", "-r", "-z", "-M", "--raw", parent, commit)
	if err != nil {
		return nil, err
	}
	recs := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	var cs []Change
	for i := 0; i < len(recs); i++ {
		meta := recs[i]
		if meta == "" {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(meta, ":"))
		if len(f) != 5 || i+1 >= len(recs) {
			return nil, fmt.Errorf("diff-tree: %q", meta)
		}
		c := Change{Status: f[4][0], OldMode: f[0], NewMode: f[1], OldSHA: f[2], NewSHA: f[3]}
		i++
		c.OldPath, c.NewPath = recs[i], recs[i]
		if c.Status == 'R' || c.Status == 'C' {
			i++
			if i >= len(recs) {
				return nil, fmt.Errorf("diff-tree: %q has no new path", meta)
			}
			c.NewPath = recs[i]
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// Hunk is one hunk of `git diff -U0`: lines [OldStart, OldStart+OldLen)
// of the old file become [NewStart, NewStart+NewLen) of the new (1-based;
// a zero-length range starts after its line).
type Hunk struct{ OldStart, OldLen, NewStart, NewLen int }

var hunkHeader = regexp.MustCompile(`(?m)^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// Hunks are the hunks that turn blob oldSHA into newSHA, without context.
func Hunks(repo, oldSHA, newSHA string) ([]Hunk, error) {
	out, err := Git(repo, "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv",
		"--diff-algorithm=myers", "--text", oldSHA, newSHA)
	if err != nil {
		return nil, err
	}
	var hs []Hunk
	for _, m := range hunkHeader.FindAllStringSubmatch(string(out), -1) {
		n := func(s string) int {
			if s == "" {
				return 1
			}
			v, _ := strconv.Atoi(s)
			return v
		}
		hs = append(hs, Hunk{n(m[1]), n(m[2]), n(m[3]), n(m[4])})
	}
	return hs, nil
}
