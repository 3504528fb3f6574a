package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
)

// The tools that delete, move and change the mode of files: with
// write_file and edit_file they express any patch git can hold. They are
// separate small tools rather than one patch format (Codex CLI's
// apply_patch): each is one JSON argument shape that every model with
// function calling fills reliably, the local models on Ollama included,
// and a mistake costs that one call, not a whole patch.

// maxTreeEntries bounds the entries of a directory that delete_file or
// move_file handles in one call.
const maxTreeEntries = 2000

// Tool names of the file-shaped changes beyond write_file and edit_file.
const (
	ToolDeleteFile    = "delete_file"
	ToolMoveFile      = "move_file"
	ToolSetExecutable = "set_executable"
)

var fileTools = []*tool{
	{
		name: ToolDeleteFile,
		description: "Delete a file, a symlink (the link itself, not what it points to) or a directory with " +
			"everything in it. " + protectedNote,
		schema: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path relative to the repository root."}
  },
  "required": ["path"],
  "additionalProperties": false
}`,
		run: runDeleteFile,
	},
	{
		name: ToolMoveFile,
		description: "Move or rename a file, a symlink or a directory (like git mv): the content and mode are " +
			"kept, and parent directories of the destination are created. The destination must not exist. " +
			"Update what refers to the old path yourself (imports, references). " + protectedNote,
		schema: `{
  "type": "object",
  "properties": {
    "from": {"type": "string", "description": "Current path, relative to the repository root."},
    "to": {"type": "string", "description": "New path, relative to the repository root."}
  },
  "required": ["from", "to"],
  "additionalProperties": false
}`,
		run: runMoveFile,
	},
	{
		name: ToolSetExecutable,
		description: "Make a file executable (mode 755, e.g. a script run as ./build.sh) or not (mode 644): " +
			"git records only this of a file's mode. " + protectedNote,
		schema: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the repository root."},
    "executable": {"type": "boolean", "description": "true to make it executable, false to make it not."}
  },
  "required": ["path", "executable"],
  "additionalProperties": false
}`,
		run: runSetExecutable,
	},
}

func runDeleteFile(env toolEnv, raw json.RawMessage) (toolResult, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := toolsByName[ToolDeleteFile].decodeArgs(raw, &a); err != nil {
		return toolResult{}, err
	}
	what, err := env.ws.deleteFile(a.Path, env.st.Limits.Protected)
	if err != nil {
		return toolResult{}, err
	}
	return toolResult{text: "deleted " + what, step: "deleted " + a.Path}, nil
}

func runMoveFile(env toolEnv, raw json.RawMessage) (toolResult, error) {
	var a struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	if err := toolsByName[ToolMoveFile].decodeArgs(raw, &a); err != nil {
		return toolResult{}, err
	}
	what, err := env.ws.moveFile(a.From, a.To, env.st.Limits.Protected)
	if err != nil {
		return toolResult{}, err
	}
	return toolResult{text: fmt.Sprintf("moved %s to %s", what, a.To), step: fmt.Sprintf("moved %s to %s", a.From, a.To)}, nil
}

func runSetExecutable(env toolEnv, raw json.RawMessage) (toolResult, error) {
	var a struct {
		Path       string `json:"path"`
		Executable *bool  `json:"executable"`
	}
	if err := toolsByName[ToolSetExecutable].decodeArgs(raw, &a); err != nil {
		return toolResult{}, err
	}
	changed, err := env.ws.setExecutable(a.Path, *a.Executable, env.st.Limits.Protected)
	if err != nil {
		return toolResult{}, err
	}
	state := "executable (mode 755)"
	if !*a.Executable {
		state = "not executable (mode 644)"
	}
	text := a.Path + " is now " + state
	if !changed {
		text = a.Path + " was already " + state + "; nothing changed"
	}
	step := "made " + a.Path + " executable"
	if !*a.Executable {
		step = "made " + a.Path + " not executable"
	}
	return toolResult{text: text, step: step}, nil
}

// entry validates a path from the model that names an entry itself, not
// what it points to: the directories along it are resolved (a symlinked
// directory leads where it leads), the last element is not. It is refused
// when protected, as given or as resolved.
func (w *workspace) entry(p string, protected []string) (string, error) {
	c, err := clean(p)
	if err != nil {
		return "", err
	}
	if c == "." {
		return "", errorf("%s is the repository root", p)
	}
	if g, ok := policy.ProtectedBy(protected, c); ok {
		return "", protectedError(p, "", g)
	}
	dir, err := w.resolve(path.Dir(c))
	if err != nil {
		return "", err
	}
	r := path.Join(dir, path.Base(c))
	if err := checkGitDir(r, p); err != nil {
		return "", errorf("path %q refused: it leads into the .git directory", p)
	}
	if r != c {
		if g, ok := policy.ProtectedBy(protected, r); ok {
			return "", protectedError(p, r, g)
		}
	}
	return r, nil
}

// tree lists the entries under dir (a resolved directory), itself
// excluded, without following symlinks, and refuses a tree that holds a
// .git entry or more than maxTreeEntries entries.
func (w *workspace) tree(dir, p string) ([]string, error) {
	var out []string
	err := fs.WalkDir(w.root.FS(), dir, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel == dir {
			return nil
		}
		if strings.EqualFold(d.Name(), ".git") {
			return errorf("%s holds a .git entry, which is off limits", p)
		}
		if len(out) == maxTreeEntries {
			return errorf("%s holds more than %d entries; handle its subdirectories one by one", p, maxTreeEntries)
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		return nil, fileErr(p, err)
	}
	return out, nil
}

// checkTree refuses a change to the entries under a directory when one of
// them is protected, at its path now (from) or after a move (to, if set).
func checkTree(entries []string, from, to, p string, protected []string) error {
	for _, e := range entries {
		if g, ok := policy.ProtectedBy(protected, e); ok {
			return protectedError(p+"/"+strings.TrimPrefix(e, from+"/"), "", g)
		}
		if to != "" {
			moved := to + strings.TrimPrefix(e, from)
			if g, ok := policy.ProtectedBy(protected, moved); ok {
				return protectedError(moved, "", g)
			}
		}
	}
	return nil
}

// deleteFile removes the entry at p, a directory with its content, and
// says what it removed.
func (w *workspace) deleteFile(p string, protected []string) (string, error) {
	rp, err := w.entry(p, protected)
	if err != nil {
		return "", err
	}
	fi, err := w.root.Lstat(rp)
	if err != nil {
		return "", fileErr(p, err)
	}
	what := p
	switch {
	case fi.IsDir():
		entries, err := w.tree(rp, p)
		if err != nil {
			return "", err
		}
		if err := checkTree(entries, rp, "", p, protected); err != nil {
			return "", err
		}
		if err := w.root.RemoveAll(rp); err != nil {
			return "", fileErr(p, err)
		}
		what = fmt.Sprintf("the directory %s and the %s in it", p, words.Count(len(entries), "entry", "entries"))
	case fi.Mode()&fs.ModeSymlink != 0:
		if err := w.root.Remove(rp); err != nil {
			return "", fileErr(p, err)
		}
		what = "the symlink " + p
	default:
		if err := w.root.Remove(rp); err != nil {
			return "", fileErr(p, err)
		}
	}
	return what, nil
}

// moveFile renames the entry at from to to, which must not exist, and
// says what it moved.
func (w *workspace) moveFile(from, to string, protected []string) (string, error) {
	src, err := w.entry(from, protected)
	if err != nil {
		return "", err
	}
	dst, err := w.entry(to, protected)
	if err != nil {
		return "", err
	}
	fi, err := w.root.Lstat(src)
	if err != nil {
		return "", fileErr(from, err)
	}
	if _, err := w.root.Lstat(dst); err == nil {
		return "", errorf("%s already exists; delete it first if it should be replaced", to)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fileErr(to, err)
	}
	if src == dst {
		return "", errorf("%s and %s are the same path", from, to)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A link goes on pointing where its new place leads: never
		// outside the workspace, nor into .git, from there.
		target, err := w.root.Readlink(src)
		if err != nil {
			return "", fileErr(from, err)
		}
		t := filepath.ToSlash(target)
		r, err := w.resolve(path.Dir(dst) + "/" + t)
		if err == nil && (path.IsAbs(t) || filepath.IsAbs(target)) {
			err = errorf("it points to an absolute path")
		}
		if err == nil {
			err = checkGitDir(r, to)
		}
		if err != nil {
			return "", errorf("%s is a symbolic link that would lead outside the workspace or into .git from %s, so it is not moved", from, to)
		}
	}
	what := from
	if fi.IsDir() {
		if strings.HasPrefix(dst+"/", src+"/") {
			return "", errorf("cannot move %s into itself (%s)", from, to)
		}
		entries, err := w.tree(src, from)
		if err != nil {
			return "", err
		}
		if err := checkTree(entries, src, dst, from, protected); err != nil {
			return "", err
		}
		what = fmt.Sprintf("the directory %s (%s)", from, words.Count(len(entries), "entry", "entries"))
	}
	if dir := path.Dir(dst); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return "", fileErr(to, err)
		}
	}
	if err := w.root.Rename(src, dst); err != nil {
		return "", fileErr(from, err)
	}
	return what, nil
}

// setExecutable gives a regular file mode 755 or 644, and reports whether
// that changed it.
func (w *workspace) setExecutable(p string, executable bool, protected []string) (bool, error) {
	rp, err := w.writable(p, protected)
	if err != nil {
		return false, err
	}
	fi, err := w.root.Stat(rp)
	if err != nil {
		return false, fileErr(p, err)
	}
	if !fi.Mode().IsRegular() {
		return false, errorf("%s is not a regular file", p)
	}
	// The mode is the file's, not the name's: it would change for every
	// name.
	if err := oneName(p, fi, "changed"); err != nil {
		return false, err
	}
	mode := fs.FileMode(0o644)
	if executable {
		mode = 0o755
	}
	if fi.Mode().Perm()&0o111 != 0 == executable {
		return false, nil
	}
	if err := w.root.Chmod(rp, mode); err != nil {
		return false, fileErr(p, err)
	}
	return true, nil
}
