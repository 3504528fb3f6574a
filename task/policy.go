package task

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
)

// loadSettings reads .github/pullwright.yml from the default branch (never
// from a work branch, which the agent writes) and resolves it against the
// operator's caps. A broken file is a permanent failure whose message
// names the file, line and key; no file means the defaults.
func (f *Flow) loadSettings(ctx context.Context, t *Task) (policy.Settings, error) {
	op := f.desk().operator()
	data, err := f.GitHub.File(ctx, t.Repo, t.Repo.DefaultBranch, policy.Path)
	if errors.Is(err, pullwright.ErrNotAFile) {
		return policy.Settings{}, Fatal(configProblem(t, errors.New("the path exists but is not a file the bot reads: a directory, a symbolic link, a submodule, or a file over 1 MiB")), err)
	}
	if err != nil && !errors.Is(err, pullwright.ErrNoFile) {
		return policy.Settings{}, retryf(err, "reading %s failed", policy.Path)
	}
	var cfg *policy.Config
	if err == nil {
		cfg, err = policy.Load(data)
		if err != nil {
			return policy.Settings{}, Fatal(configProblem(t, err), err)
		}
	}
	s, err := op.Resolve(cfg)
	if err != nil {
		return policy.Settings{}, Fatal(configProblem(t, err), err)
	}
	if s.MCP, err = op.ToolServers(t.Repo.FullName(), cfg); err != nil {
		return policy.Settings{}, Fatal(configProblem(t, err), err)
	}
	return s, nil
}

// configProblem is what the issue is told about a configuration file that
// cannot be used.
func configProblem(t *Task, err error) string {
	var list *policy.Errors
	detail := "\n\n" + err.Error()
	if errors.As(err, &list) {
		detail = "\n\n" + list.Markdown()
	}
	return fmt.Sprintf("`%s` on `%s` cannot be used, so the task did not start. Fix it on the default branch and ask again:%s",
		policy.Path, t.Repo.DefaultBranch, detail)
}

// admitRate admits t within its installation's rates (Store.Admit, which
// sets t.AdmittedMS), or says why the installation may not start another
// task now.
func (f *Flow) admitRate(ctx context.Context, t *Task) (string, error) {
	rate := f.desk().operator().Rate
	fits := func(active, started int) bool {
		return (rate.ConcurrentTasks <= 0 || active < rate.ConcurrentTasks) &&
			(rate.TasksPerHour <= 0 || started < rate.TasksPerHour)
	}
	now := f.now()
	active, started, ok, err := f.Store.Admit(ctx, t, now.Add(-time.Hour), now, fits)
	if err != nil {
		return "", retryf(err, "counting this installation's tasks failed")
	}
	if ok {
		return "", nil
	}
	switch {
	case rate.ConcurrentTasks > 0 && active >= rate.ConcurrentTasks:
		return fmt.Sprintf("%s already running for this installation, the most this bot runs at once", words.Count(active, "task is", "tasks are")), nil
	case rate.TasksPerHour > 0 && started >= rate.TasksPerHour:
		return fmt.Sprintf("%s started for this installation in the last hour, the most this bot starts in an hour", words.Count(started, "task was", "tasks were")), nil
	}
	return "this installation's rate is used up", nil
}

// protectedChanges lists the changed paths that t's rules protect, each
// with the glob that protects it. The agent's tools refuse these already;
// this is the second check, on what would actually be committed.
// A changed symlink is refused when it leads out of the workspace or into
// a protected path: the sandbox or a later tool would follow it.
func protectedChanges(s policy.Settings, dir string, changes []pullwright.Change) []string {
	var out []string
	for _, c := range changes {
		if g, ok := s.Protects(c.Path); ok {
			out = append(out, fmt.Sprintf("%s (protected by %s)", code(c.Path), code(g)))
			continue
		}
		if c.Status == pullwright.ChangeDeleted {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(c.Path)))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(c.Path)))
		if err != nil {
			out = append(out, fmt.Sprintf("%s (a symlink that cannot be read)", code(c.Path)))
			continue
		}
		to := path.Join(path.Dir(c.Path), filepath.ToSlash(target))
		switch {
		case filepath.IsAbs(target) || path.IsAbs(filepath.ToSlash(target)) || to == ".." || strings.HasPrefix(to, "../"):
			out = append(out, fmt.Sprintf("%s (a symlink out of the repository)", code(c.Path)))
		default:
			if g, ok := s.Protects(to); ok {
				out = append(out, fmt.Sprintf("%s (a symlink to %s, protected by %s)", code(c.Path), code(to), code(g)))
			}
		}
	}
	return out
}
