package tasktest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/pullwright/pullwright"
)

// Run is one scripted answer of the Runner.
type Run struct {
	Result pullwright.RunResult
	Err    error
}

// Runner is a fake of task.Runner: it records each spec and the files the
// run was given, and answers from Script, then with exit code 0.
type Runner struct {
	mu     sync.Mutex
	Script []Run
	Specs  []pullwright.RunSpec
	// Files are the files of each run's Dir, by path, as the run saw them.
	Files []map[string]string
}

func (r *Runner) Run(ctx context.Context, s pullwright.RunSpec) (pullwright.RunResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Specs = append(r.Specs, s)
	files := map[string]string{}
	err := filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(s.Dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		return pullwright.RunResult{}, err
	}
	r.Files = append(r.Files, files)
	if len(r.Script) == 0 {
		return pullwright.RunResult{ExitCode: 0, Output: "ok\n"}, nil
	}
	next := r.Script[0]
	r.Script = r.Script[1:]
	return next.Result, next.Err
}
