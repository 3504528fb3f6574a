package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pullwright/pullwright/internal/hardlink"
	"github.com/pullwright/pullwright/internal/ignorefile"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
)

// Bounds of the file tools. The tool output as a whole is further bounded by
// Config.MaxToolOutput.
const (
	defaultReadLines = 400
	maxReadLines     = 2000
	maxLineBytes     = 2000    // read_file: longer lines are cut
	binarySniffBytes = 8000    // like git: a NUL in the first 8000 bytes means binary
	maxWriteBytes    = 4 << 20 // write_file and edit_file results
	maxEditFileBytes = 8 << 20 // edit_file refuses larger files
	maxGrepFileBytes = 4 << 20 // grep skips larger files
	maxGrepMatches   = 100
	maxGrepLineBytes = 300
	maxGlobResults   = 500
	maxWalkEntries   = 100000 // entries visited by one glob or grep
	maxSymlinkHops   = 40
	maxIgnoreBytes   = 1 << 20
)

// workspace is the repository checkout the tools act on. Every access goes
// through an os.Root, so neither ".." nor a symlink can leave it, even if the
// lexical checks below were wrong.
type workspace struct {
	root *os.Root
	dir  string // for the diff tool, which reads the git repository there
}

func openWorkspace(dir string) (*workspace, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &workspace{root: r, dir: dir}, nil
}

func (w *workspace) Close() error { return w.root.Close() }

// toolError is an error whose text is shown to the model as is.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func errorf(format string, args ...any) error { return &toolError{fmt.Sprintf(format, args...)} }

// clean validates a path given by the model and returns it cleaned, relative
// to the workspace root, with forward slashes.
func clean(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errorf("path is empty; give a path relative to the repository root, e.g. src/main.go")
	}
	if strings.ContainsRune(p, 0) {
		return "", errorf("path %q contains a NUL byte", p)
	}
	p = strings.ReplaceAll(p, `\`, "/")
	if path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return "", errorf("absolute path %q refused: paths are relative to the repository root, e.g. src/main.go", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", errorf("path %q is outside the workspace: paths are relative to the repository root and may not climb out of it", p)
	}
	if err := checkGitDir(c, p); err != nil {
		return "", err
	}
	return c, nil
}

func checkGitDir(c, orig string) error {
	for _, part := range strings.Split(c, "/") {
		if strings.EqualFold(part, ".git") {
			return errorf("path %q refused: the .git directory is off limits", orig)
		}
	}
	return nil
}

// resolve follows the symlinks along p (a clean relative path) inside the
// workspace and returns the path they lead to. A link that leaves the
// workspace, has an absolute target, or leads into .git is refused. The final
// access still goes through os.Root, which refuses escapes on its own.
func (w *workspace) resolve(p string) (string, error) {
	if p == "." {
		return ".", nil
	}
	todo := strings.Split(p, "/")
	var done []string
	hops := 0
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", errorf("path %q leads outside the workspace through a symlink", p)
			}
			done = done[:len(done)-1]
			continue
		}
		cur := path.Join(append(done, part)...)
		fi, err := w.root.Lstat(cur)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			// Missing components are taken lexically: the caller reports
			// "not found" or creates them.
			done = append(done, part)
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", errorf("path %q: too many levels of symlinks", p)
		}
		target, err := w.root.Readlink(cur)
		if err != nil {
			return "", errorf("path %q: cannot read symlink %s: %v", p, cur, describe(err))
		}
		target = filepath.ToSlash(target)
		if path.IsAbs(target) || filepath.IsAbs(target) {
			return "", errorf("path %q refused: %s is a symlink to an absolute path outside the workspace", p, cur)
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	r := path.Join(done...)
	if r == "" {
		r = "."
	}
	if err := checkGitDir(r, p); err != nil {
		return "", errorf("path %q refused: it is a symlink into the .git directory", p)
	}
	return r, nil
}

// target validates and resolves a path from the model.
func (w *workspace) target(p string) (string, error) {
	c, err := clean(p)
	if err != nil {
		return "", err
	}
	return w.resolve(c)
}

// writable validates and resolves a path from the model for a tool that
// creates, changes or deletes a file: every such tool goes through it. A path
// is refused when one of the protected globs matches it as given or the path
// its symlinks lead to, so that neither a symlink in the repository
// (notes.yml -> .github/workflows/ci.yml) nor a symlinked directory opens a
// protected file up.
func (w *workspace) writable(p string, protected []string) (string, error) {
	c, err := clean(p)
	if err != nil {
		return "", err
	}
	if g, ok := policy.ProtectedBy(protected, c); ok {
		return "", protectedError(p, "", g)
	}
	r, err := w.resolve(c)
	if err != nil {
		return "", err
	}
	if r != c {
		if g, ok := policy.ProtectedBy(protected, r); ok {
			return "", protectedError(p, r, g)
		}
	}
	return r, nil
}

// protectedError tells the model why it may not change p (which leads to
// target, if p is a symlink) and what to do instead.
func protectedError(p, target, glob string) error {
	what := p + " is protected"
	if target != "" {
		what = fmt.Sprintf("%s leads through a symlink to %s, which is protected", p, target)
	}
	return errorf("%s: it matches %q, one of the paths the maintainers of this repository protected, "+
		"so it may be read but not created, changed or deleted. Do not try another way to change it; "+
		"leave it as it is and say in your finish summary what change you would have made there.", what, glob)
}

// describe turns an error from the file system into text for the model
// without leaking host paths.
func describe(err error) string {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.As(err, &pe):
		if strings.Contains(pe.Err.Error(), "escapes") {
			return "path escapes the workspace"
		}
		return pe.Err.Error()
	}
	return err.Error()
}

// oneName refuses a regular file that has more than one name (hard link).
// Another name may be outside the workspace, where os.Root does not look:
// reading the file could show the model a file the task may not see, and
// writing it in place would change that file too. Git never checks out a
// hard link, so nothing a task needs is lost; deleting this name and
// writing the file anew gives the workspace a file of its own.
func oneName(p string, fi fs.FileInfo, done string) error {
	if !fi.Mode().IsRegular() {
		return nil
	}
	if n := hardlink.Count(fi); n > 1 {
		return errorf("%s is a hard link: the file has %d names, and another may be outside the workspace, so it is not %s. "+
			"Git never checks out such a file; delete_file removes this name alone, and write_file then makes a file of its own.", p, n, done)
	}
	return nil
}

func fileErr(p string, err error) error {
	var te *toolError
	if errors.As(err, &te) {
		return err
	}
	return errorf("%s: %s", p, describe(err))
}

// readFile renders lines [start, start+max) of a file, numbered, in at
// most budget bytes, and ends by saying which lines it showed of how many:
// a result cut further on would lose where to resume.
func (w *workspace) readFile(p string, start, max, budget int) (out string, first, last int, err error) {
	rp, err := w.target(p)
	if err != nil {
		return "", 0, 0, err
	}
	f, err := w.root.Open(rp)
	if err != nil {
		return "", 0, 0, fileErr(p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, 0, fileErr(p, err)
	}
	if fi.IsDir() {
		return "", 0, 0, errorf("%s is a directory; use glob to list files, e.g. %s/*", p, strings.TrimSuffix(p, "/"))
	}
	if !fi.Mode().IsRegular() {
		return "", 0, 0, errorf("%s is not a regular file", p)
	}
	if err := oneName(p, fi, "read"); err != nil {
		return "", 0, 0, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(binarySniffBytes)
	if bytes.IndexByte(head, 0) >= 0 {
		return "", 0, 0, errorf("%s is a binary file (%d bytes); it cannot be shown", p, fi.Size())
	}
	if fi.Size() == 0 {
		return "(empty file: 0 lines)", 0, 0, nil
	}

	var b strings.Builder
	n := 0
	first, last = 0, 0
	full := false // the byte budget ended the window
	for {
		line, cut, eof, rerr := readLine(br, maxLineBytes)
		if rerr != nil {
			return "", 0, 0, fileErr(p, rerr)
		}
		if eof && line == nil {
			break
		}
		n++
		if n >= start && n < start+max && !full {
			l := fmt.Sprintf("%5d\t%s", n, strings.TrimSuffix(string(line), "\r"))
			if cut > 0 {
				l += fmt.Sprintf(" [… line cut, %d more bytes]", cut)
			}
			if b.Len()+len(l)+1 > budget && first != 0 {
				full = true
			} else {
				if first == 0 {
					first = n
				}
				last = n
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		if eof {
			break
		}
	}
	switch {
	case first == 0:
		return "", 0, 0, errorf("%s has %d lines; start_line %d is past the end", p, n, start)
	case full:
		fmt.Fprintf(&b, "[showing lines %d-%d of %d, as much as one result holds; use start_line %d to read on]\n", first, last, n, last+1)
	case last < n:
		fmt.Fprintf(&b, "[showing lines %d-%d of %d; use start_line %d to read on]\n", first, last, n, last+1)
	case first > 1:
		fmt.Fprintf(&b, "[showing lines %d-%d of %d: the end of the file]\n", first, last, n)
	default:
		fmt.Fprintf(&b, "[the whole file: %s]\n", words.Count(n, "line", "lines"))
	}
	return b.String(), first, last, nil
}

// readLine returns the next line without its newline, keeping at most max
// bytes of it and counting the bytes dropped. eof reports that the input
// ended; line is nil when there was nothing left to read.
func readLine(br *bufio.Reader, max int) (line []byte, cut int, eof bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		chunk = bytes.TrimSuffix(chunk, []byte("\n"))
		if room := max - len(line); room > 0 {
			take := min(room, len(chunk))
			line = append(line, chunk[:take]...)
			cut += len(chunk) - take
		} else {
			cut += len(chunk)
		}
		if line == nil {
			line = []byte{}
		}
		switch {
		case rerr == nil:
			return line, cut, false, nil
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case errors.Is(rerr, io.EOF):
			if len(line) == 0 && cut == 0 {
				return nil, 0, true, nil
			}
			return line, cut, true, nil
		default:
			return nil, 0, false, rerr
		}
	}
}

// written is what writeFile did.
type written struct {
	created bool
	// kept names what of the replaced file's style the content was given
	// ("CRLF line ends", "a byte order mark", "a final newline", "no final
	// newline"), since the model writes "\n" and sees no BOM.
	kept []string
	size int // bytes written
	// before (nil for a new file) and after are the file's bytes, for
	// the syntax check.
	before, after []byte
}

// writeFile creates or replaces a file, creating parent directories, unless
// protected (globs) refuses it. A replaced file keeps its style: its line
// ends, its byte order mark, and whether it ends with a newline.
func (w *workspace) writeFile(p, content string, protected []string) (written, error) {
	if len(content) > maxWriteBytes {
		return written{}, errorf("content is %d bytes; the limit is %d", len(content), maxWriteBytes)
	}
	rp, err := w.writable(p, protected)
	if err != nil {
		return written{}, err
	}
	if rp == "." {
		return written{}, errorf("%s is the repository root, not a file", p)
	}
	fi, err := w.root.Stat(rp)
	switch {
	case err == nil && fi.IsDir():
		return written{}, errorf("%s is a directory", p)
	case err == nil && !fi.Mode().IsRegular():
		return written{}, errorf("%s is not a regular file", p)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return written{}, fileErr(p, err)
	case err == nil:
		// Refused, not replaced by a new file: writes go in place, and a
		// second way to write, for a file git never makes, would be one
		// more to get wrong. The message names the two calls that do it.
		if err := oneName(p, fi, "read or changed"); err != nil {
			return written{}, err
		}
	}
	res := written{created: err != nil}
	if !res.created && fi.Size() <= maxEditFileBytes {
		old, err := w.root.ReadFile(rp)
		if err != nil {
			return written{}, fileErr(p, err)
		}
		content, res.kept = keepStyle(string(old), content)
		res.before = old
	}
	if dir := path.Dir(rp); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return written{}, fileErr(p, err)
		}
	}
	// WriteFile keeps the mode of an existing file (it truncates it).
	if err := w.root.WriteFile(rp, []byte(content), 0o644); err != nil {
		return written{}, fileErr(p, err)
	}
	res.size, res.after = len(content), []byte(content)
	return res, nil
}

// keepStyle gives content, which replaces old, old's style, and names what
// it changed for that. A file of mixed or "\n" line ends takes the
// content's line ends as they are.
func keepStyle(old, content string) (string, []string) {
	if strings.TrimPrefix(old, bom) == "" {
		return content, nil // an empty file has no style to keep
	}
	_, style := splitStyle(old)
	var kept []string
	text := strings.TrimPrefix(content, bom)
	if style.crlf {
		if strings.Count(text, "\r\n") != strings.Count(text, "\n") {
			kept = append(kept, "CRLF line ends")
		}
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	if style.bom && !strings.HasPrefix(content, bom) {
		kept = append(kept, "a byte order mark")
	}
	switch {
	case text == "":
	case style.final && !strings.HasSuffix(text, "\n"):
		text += "\n"
		kept = append(kept, "a final newline")
	case !style.final && strings.HasSuffix(text, "\n"):
		text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		kept = append(kept, "no final newline")
	}
	return style.join(text), kept
}

// editFile replaces old with new in a file, which must hold old exactly
// want times (or once by a tolerant match: planEdit), unless protected
// (globs) refuses the file. The file keeps its style; old and new are read
// as the tools show text, with "\n" line ends.
func (w *workspace) editFile(p, old, repl string, want int, protected []string) (edited, error) {
	if old == "" {
		return edited{}, errorf("old_text is empty; give the exact text to replace (use write_file to create a file)")
	}
	if old == repl {
		return edited{}, errorf("old_text and new_text are identical; nothing to change")
	}
	if want < 1 {
		return edited{}, errorf("expected_matches must be at least 1, got %d", want)
	}
	rp, err := w.writable(p, protected)
	if err != nil {
		return edited{}, err
	}
	fi, err := w.root.Stat(rp)
	if err != nil {
		return edited{}, fileErr(p, err)
	}
	if !fi.Mode().IsRegular() {
		return edited{}, errorf("%s is not a regular file", p)
	}
	if err := oneName(p, fi, "read or changed"); err != nil {
		return edited{}, err
	}
	if fi.Size() > maxEditFileBytes {
		return edited{}, errorf("%s is %d bytes; edit_file handles files up to %d bytes", p, fi.Size(), maxEditFileBytes)
	}
	data, err := w.root.ReadFile(rp)
	if err != nil {
		return edited{}, fileErr(p, err)
	}
	content, style := splitStyle(string(data))
	old, repl = modelText(old, style), modelText(repl, style)
	if old == repl {
		return edited{}, errorf("old_text and new_text differ only in line ends; nothing to change (the file keeps its own)")
	}
	e, err := planEdit(content, old, repl, want, p)
	if err != nil {
		return edited{}, err
	}
	out := style.join(e.text)
	if len(out) > maxWriteBytes && len(out) > len(data) {
		return edited{}, errorf("the edit would make %s %d bytes; the limit is %d", p, len(out), maxWriteBytes)
	}
	if err := w.root.WriteFile(rp, []byte(out), fi.Mode().Perm()); err != nil {
		return edited{}, fileErr(p, err)
	}
	e.before, e.after = data, []byte(out)
	return e, nil
}

// walkFunc is called for each file (not directory) that is neither ignored
// nor inside .git, in lexical order. Returning errStopWalk stops the walk.
type walkFunc func(rel string, d fs.DirEntry) error

var errStopWalk = errors.New("stop walk")

// walkIgnoreLimits bound the ignore files one walk reads (see
// ignorefile.Limits): a .gitignore over them is not read, so the files it
// would hide are listed, which is the lesser harm for a listing (a
// tracked file hidden would be the greater). Generic bounds the patterns
// each entry is matched against one by one, and so the walk's time.
var walkIgnoreLimits = ignorefile.Limits{
	FileBytes:  maxIgnoreBytes,
	TotalBytes: 4 * maxIgnoreBytes,
	Patterns:   100000,
	Generic:    512,
}

// walkCheckWork is how many pattern matches may pass between two looks at
// the walk's context, besides one every 1024 entries.
const walkCheckWork = 1 << 14

// walked is what a walk saw besides its files.
type walked struct {
	truncated bool // maxWalkEntries cut it short
	// ignoresSkipped counts the .gitignore files it did not read, being
	// over walkIgnoreLimits: files they ignore may have been visited.
	ignoresSkipped int
	work           int64 // patterns matched, for the tests
}

// walk visits the files of the workspace, honouring .gitignore files (and
// .git/info/exclude) the way git does, never entering .git, never following
// symlinked directories, and visiting at most maxWalkEntries entries. It
// reports whether that bound cut the walk short.
func (w *workspace) walk(ctx context.Context, fn walkFunc) (truncated bool, err error) {
	res, err := w.walkIgnoring(ctx, fn)
	return res.truncated, err
}

// walkIgnoring is walk, reporting also what it did with the ignore files.
// Each directory with a .gitignore gets a scope of its own patterns linked
// to its parent's, so the patterns are read once, whatever the depth.
func (w *workspace) walkIgnoring(ctx context.Context, fn walkFunc) (res walked, err error) {
	root := ignorefile.NewRoot(walkIgnoreLimits)
	tally := root.Tally()
	defer func() { res.ignoresSkipped, res.work = tally.Skipped, tally.Work }()
	scopes := map[string]*ignorefile.Scope{}
	visited := 0
	checked := int64(0)
	err = fs.WalkDir(w.root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if rel == "." {
				return err
			}
			return nil // unreadable entry: skip it, keep walking
		}
		if rel == "." {
			s := w.ignoreScope(root, ".git/info/exclude", nil)
			scopes["."] = w.ignoreScope(s, ".gitignore", nil)
			return nil
		}
		if visited++; visited > maxWalkEntries {
			res.truncated = true
			return fs.SkipAll
		}
		if visited%1024 == 0 || tally.Work-checked >= walkCheckWork {
			checked = tally.Work
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		parts := strings.Split(rel, "/")
		scope := scopes[path.Dir(rel)]
		if scope.Ignored(parts, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			scopes[rel] = w.ignoreScope(scope, rel+"/.gitignore", parts)
			return nil
		}
		if err := fn(rel, d); err != nil {
			if errors.Is(err, errStopWalk) {
				return fs.SkipAll
			}
			return err
		}
		return nil
	})
	return res, err
}

// ignoreScope is the scope under parent of the ignore file at file, in the
// directory domain.
func (w *workspace) ignoreScope(parent *ignorefile.Scope, file string, domain []string) *ignorefile.Scope {
	fi, err := w.root.Stat(file)
	if err != nil || !fi.Mode().IsRegular() {
		return parent
	}
	return parent.Child(domain, fi.Size(), func() ([]byte, error) { return w.root.ReadFile(file) })
}

// isBinary reports whether data looks binary (a NUL byte near the start).
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniffBytes)], 0) >= 0
}
