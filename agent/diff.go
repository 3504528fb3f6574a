package agent

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/repo"
)

// ToolDiff shows the task's changes so far. It reads git's objects and the
// files, and runs nothing, so it needs no approval: SWE-agent shows the
// model its diff before it submits, and a model that looks at its own
// change finds the stray edit before a reviewer does.
const ToolDiff = "diff"

var diffTool = &tool{
	name: ToolDiff,
	description: "Show your changes so far against the commit the task started from, as a unified diff (git's " +
		"format), with a count of lines added and removed per file: new, deleted, moved files and mode changes " +
		"included. Needs no approval. Look at it before you finish. Give path to see one file or directory.",
	schema: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Only the changes to this file, or to the files under this directory."}
  },
  "additionalProperties": false
}`,
	run: runDiff,
}

func runDiff(env toolEnv, raw json.RawMessage) (toolResult, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := toolsByName[ToolDiff].decodeArgs(raw, &a); err != nil {
		return toolResult{}, err
	}
	if env.st.Base == "" {
		return toolResult{}, errorf("the diff is not available in this task: the commit it started from is not known")
	}
	prefix := ""
	if strings.TrimSpace(a.Path) != "" {
		c, err := clean(a.Path)
		if err != nil {
			return toolResult{}, err
		}
		if c != "." {
			prefix = c
		}
	}
	text, n, err := env.ws.diff(env.st.Base, prefix, env.readBudget())
	if err != nil {
		return toolResult{}, err
	}
	step := "looked at the diff"
	if prefix != "" {
		step += " of " + prefix
	}
	return toolResult{text: text, block: "untrusted-diff", step: fmt.Sprintf("%s (%s)", step, words.Count(n, "file", "files"))}, nil
}

// diff renders the changes since base of the files at or under prefix
// ("" for all): the stat of every file, then their diffs while they fit
// in budget bytes, and the names of those left out.
func (w *workspace) diff(base, prefix string, budget int) (string, int, error) {
	r, err := repo.Open(w.dir)
	if err != nil {
		return "", 0, fmt.Errorf("diff: %w", err)
	}
	stats, err := r.DiffStat(base)
	if err != nil {
		return "", 0, fmt.Errorf("diff: %w", err)
	}
	var files []pullwright.FileStat
	for _, s := range stats {
		if prefix == "" || s.Path == prefix || strings.HasPrefix(s.Path, prefix+"/") {
			files = append(files, s)
		}
	}
	if len(files) == 0 {
		what := "no changes yet"
		if prefix != "" {
			what = "no changes to " + prefix
		}
		return what + " since the commit the task started from\n", 0, nil
	}
	var b strings.Builder
	added, deleted := 0, 0
	for _, f := range files {
		added, deleted = added+f.Added, deleted+f.Deleted
	}
	fmt.Fprintf(&b, "%s changed, +%d -%d:\n", words.Count(len(files), "file", "files"), added, deleted)
	for _, f := range files {
		fmt.Fprintf(&b, "  %s +%d -%d\n", f.Path, f.Added, f.Deleted)
	}
	b.WriteByte('\n')
	var left []string
	for i, f := range files {
		d, err := r.DiffOf(base, f.Path)
		if err != nil {
			return "", 0, fmt.Errorf("diff: %w", err)
		}
		if b.Len()+len(d) > budget {
			if i == 0 {
				// One file larger than a result: its start, rather than
				// nothing however the model asks.
				d, _ = cutLines(d, budget-b.Len())
				b.WriteString(strings.TrimSuffix(d, "\n") + "\n")
				fmt.Fprintf(&b, "[the diff of %s is cut here: it does not fit in one result; read the file for the rest]\n", strconv.Quote(f.Path))
				i++
				if i == len(files) {
					break
				}
			}
			for _, f := range files[i:] {
				left = append(left, f.Path)
			}
			break
		}
		b.WriteString(d)
	}
	if len(left) > 0 {
		shown := left[:min(len(left), 20)]
		more := ""
		if len(left) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(left)-len(shown))
		}
		fmt.Fprintf(&b, "[the diffs of %s%s are not shown, as they do not fit in one result; call diff with path to see one]\n",
			strings.Join(quoted(shown), ", "), more)
	}
	return b.String(), len(files), nil
}

func quoted(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strconv.Quote(x)
	}
	return out
}
