package policy

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pullwright/pullwright"
)

// Bounds of the repository's guidance: it reaches the model in every call
// of a task, so it is bounded like the other text of the first message.
// They are not settings: a repository needing more should say less.
const (
	// MaxInstructionFiles bounds the files read, nested ones included;
	// the shallowest are kept.
	MaxInstructionFiles = 20
	// MaxInstructionBytes bounds one file, MaxGuidanceBytes all of them.
	MaxInstructionBytes = 16 << 10
	MaxGuidanceBytes    = 32 << 10

	maxInstructionEntries = 20
	maxInstructionPath    = 200
)

// DefaultInstructions are the files read when a repository's
// configuration names none: the ones coding agents' conventions name.
func DefaultInstructions() Instructions {
	return Instructions{"AGENTS.md", ".github/copilot-instructions.md", "CLAUDE.md"}
}

// Instructions is a list of instruction files as the instructions key
// writes them, each a path from the repository root:
//
//   - a file name without a slash ("AGENTS.md") is that name in the root
//     and in every directory below it; a nested one applies to its own
//     directory, where it ranks above those nearer the root (the
//     AGENTS.md convention: the nearest file wins);
//   - a path with a slash (".github/copilot-instructions.md",
//     "docs/agents.md") is that one file, for the whole repository;
//   - a leading slash ("/CLAUDE.md") anchors a name to the root alone.
type Instructions []string

// InstructionFiles are the files s reads: the repository's, or
// DefaultInstructions when it named none.
func (s Settings) InstructionFiles() Instructions {
	if s.Instructions == nil {
		return DefaultInstructions()
	}
	return Instructions(s.Instructions)
}

// Match reports whether the file at p, a slash-separated path from the
// root, is one of the instruction files.
func (in Instructions) Match(p string) bool {
	_, _, ok := in.scope(p)
	return ok
}

// vendoredDirs hold other projects' code, committed here: their own
// AGENTS.md speaks for that project, not for this repository's
// maintainers, so a bare name is never matched inside them. A file there
// named by its full path is still read.
var vendoredDirs = []string{"vendor", "node_modules", "third_party", "third-party", "external", "testdata"}

// vendored reports whether p is inside one of vendoredDirs, at any depth.
func vendored(p string) bool {
	parts := strings.Split(path.Dir(p), "/")
	for _, part := range parts {
		if slices.Contains(vendoredDirs, part) {
			return true
		}
	}
	return false
}

// scope is the directory the file at p applies to ("" for the whole
// repository) and the index of the entry that named it.
func (in Instructions) scope(p string) (dir string, entry int, ok bool) {
	for i, e := range in {
		switch {
		case strings.HasPrefix(e, "/"):
			if p == e[1:] {
				return "", i, true
			}
		case !strings.Contains(e, "/"):
			if path.Base(p) == e && !vendored(p) {
				if d := path.Dir(p); d != "." {
					return d, i, true
				}
				return "", i, true
			}
		case p == e:
			return "", i, true
		}
	}
	return "", 0, false
}

// Guidance is what the agent is given of the instruction files read from a
// tree (a reader's answer: at most MaxInstructionFiles, each at most
// MaxInstructionBytes, and more left unread). Files for the whole
// repository come first, in the order of the list, then nested ones,
// shallowest first. What does not fit in MaxGuidanceBytes is cut, or left
// out, and says so; a symbolic link or a file that is not UTF-8 text is
// left out with the reason.
func (in Instructions) Guidance(files []pullwright.TreeFile, more int) pullwright.Guidance {
	type scoped struct {
		f     pullwright.TreeFile
		dir   string
		entry int
	}
	var all []scoped
	for _, f := range files {
		if dir, entry, ok := in.scope(f.Path); ok {
			all = append(all, scoped{f, dir, entry})
		}
	}
	slices.SortStableFunc(all, func(a, b scoped) int {
		if (a.dir == "") != (b.dir == "") {
			if a.dir == "" {
				return -1
			}
			return 1
		}
		if a.dir == "" {
			return cmp.Compare(a.entry, b.entry)
		}
		return cmp.Or(cmp.Compare(strings.Count(a.f.Path, "/"), strings.Count(b.f.Path, "/")), strings.Compare(a.f.Path, b.f.Path))
	})
	g := pullwright.Guidance{More: more}
	left := MaxGuidanceBytes
	for _, s := range all {
		gf := pullwright.GuidanceFile{Path: s.f.Path, Dir: s.dir}
		text, cut := s.f.Data, s.f.Size > int64(len(s.f.Data))
		if cut {
			text = cutText(text, len(text))
		}
		switch {
		case s.f.Link:
			gf.Skipped = "it is a symbolic link, which is not followed"
		case !utf8.Valid(text):
			gf.Skipped = "it is not UTF-8 text"
		case left == 0:
			gf.Skipped = fmt.Sprintf("the guidance's total bound of %d KiB was reached", MaxGuidanceBytes>>10)
		default:
			left -= len(text)
			if left < 0 {
				// What a line ending leaves of the bound is not a file's
				// worth: the files after this one are left out.
				text, cut, left = cutText(text, len(text)+left), true, 0
			}
			gf.Text, gf.Cut = string(text), cut
		}
		g.Files = append(g.Files, gf)
	}
	return g
}

// cutText keeps at most n bytes of the start of b, ending on a line when
// one ends in the second half, and never inside a character.
func cutText(b []byte, n int) []byte {
	if len(b) > n {
		b = b[:n]
	}
	if i := strings.LastIndexByte(string(b), '\n'); i >= len(b)/2 {
		return b[:i+1]
	}
	// A character cut in two ends in up to three bytes that decode as
	// errors; a text that is not UTF-8 anyway is the caller's to refuse.
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

// checkInstructions holds the instructions key to plain paths from the
// root, so that what is read is what a maintainer reads in the list.
func checkInstructions(errs *Errors, at func(string) int, list []string) {
	if len(list) > maxInstructionEntries {
		errs.add(at("instructions"), "instructions", "has %d files; at most %d (a file name such as AGENTS.md already covers every directory)", len(list), maxInstructionEntries)
	}
	for i, e := range list {
		k := fmt.Sprintf("instructions[%d]", i)
		if at(k) == 0 {
			continue // not text; reported already
		}
		if why := instructionProblem(e); why != "" {
			errs.add(at(k), k, "%q %s", shorten(e, 80), why)
		}
	}
}

func instructionProblem(e string) string {
	rel := strings.TrimPrefix(e, "/")
	switch {
	case rel == "":
		return "is not a file path"
	case len(e) > maxInstructionPath:
		return fmt.Sprintf("is longer than %d bytes", maxInstructionPath)
	case strings.ContainsAny(e, "\x00\\*?[{"):
		return "is not a plain path: write it with / and without wildcards (a file name such as AGENTS.md already applies in every directory)"
	case path.Clean(rel) != rel || rel == "." || rel == ".." || strings.HasPrefix(rel, "../"):
		return "is not a clean path from the repository root (no ./, .., // or trailing /)"
	}
	return ""
}
