package localrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/ignorefile"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/repo"
)

// checkout is the user's repository, which is read and gets one new
// branch, and nothing else.
type checkout struct {
	top    string // the worktree's top directory
	gitDir string // the repository's (common) git directory: clone from and push to it
	r      *git.Repository
	head   string // the commit HEAD points at
	branch string // the branch HEAD points at
}

// openCheckout opens the repository dir is in. HEAD must be a branch with
// a commit.
func openCheckout(dir string) (*checkout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", dir, err)
	}
	r, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, fmt.Errorf("%s is not in a git repository: give the checkout with --repo PATH", abs)
	}
	if err != nil {
		return nil, fmt.Errorf("open the repository at %s: %w", abs, err)
	}
	wt, err := r.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return nil, fmt.Errorf("%s is a bare repository: bot run works on a checkout", abs)
	}
	if err != nil {
		return nil, fmt.Errorf("open the repository at %s: %w", abs, err)
	}
	c := &checkout{top: wt.Filesystem.Root(), r: r}
	if c.gitDir, err = commonGitDir(c.top); err != nil {
		return nil, fmt.Errorf("repository %s: %w", c.top, err)
	}
	ref, err := r.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, fmt.Errorf("repository %s has no commit yet: commit something for the agent to start from", c.top)
	}
	if err != nil {
		return nil, fmt.Errorf("repository %s: HEAD: %w", c.top, err)
	}
	if !ref.Name().IsBranch() {
		return nil, fmt.Errorf("repository %s: HEAD is detached at %s; bot run starts its branch from the current branch: "+
			"check one out first (git switch NAME, or git switch -c NAME)", c.top, words.Short(ref.Hash().String()))
	}
	c.head, c.branch = ref.Hash().String(), ref.Name().Short()
	return c, nil
}

// commonGitDir finds the git directory of the worktree at top: .git, or, for
// a linked worktree, the main repository's, which holds the objects and
// branches.
func commonGitDir(top string) (string, error) {
	p := filepath.Join(top, ".git")
	info, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if info.IsDir() {
		return p, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	line, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s: not a gitdir file", p)
	}
	dir := strings.TrimSpace(line)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(top, dir)
	}
	if cd, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		common := strings.TrimSpace(string(cd))
		if !filepath.IsAbs(common) {
			common = filepath.Join(dir, common)
		}
		return filepath.Clean(common), nil
	}
	return filepath.Clean(dir), nil
}

// file reads path from HEAD's tree; found is false if HEAD has no such file.
func (c *checkout) file(path string) (data []byte, found bool, err error) {
	commit, err := c.r.CommitObject(plumbing.NewHash(c.head))
	if err != nil {
		return nil, false, fmt.Errorf("read %s at HEAD: %w", path, err)
	}
	f, err := commit.File(path)
	if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s at HEAD: %w", path, err)
	}
	rd, err := f.Reader()
	if err != nil {
		return nil, false, fmt.Errorf("read %s at HEAD: %w", path, err)
	}
	defer rd.Close()
	data, err = io.ReadAll(io.LimitReader(rd, 1<<20))
	if err != nil {
		return nil, false, fmt.Errorf("read %s at HEAD: %w", path, err)
	}
	return data, true, nil
}

// uncommitted lists the paths with changes HEAD does not have (staged,
// unstaged or untracked and not ignored): they stay out of the agent's
// workspace.
func (c *checkout) uncommitted() ([]string, error) {
	wt, err := c.r.Worktree()
	if err != nil {
		return nil, err
	}
	wt.Excludes = append(wt.Excludes, c.globalExcludes()...)
	st, err := wt.Status()
	if err != nil {
		return nil, err
	}
	var out []string
	for p, s := range st {
		if s.Staging != git.Unmodified || s.Worktree != git.Unmodified {
			out = append(out, p)
		}
	}
	return out, nil
}

// globalExcludes are the patterns of the user's global excludes file
// (core.excludesFile, else ~/.config/git/ignore), which git reads and
// go-git does not: without them, files the user never sees in git status
// would be reported.
func (c *checkout) globalExcludes() []gitignore.Pattern {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	path := filepath.Join(home, ".config", "git", "ignore")
	if cfg, err := c.r.ConfigScoped(config.GlobalScope); err == nil {
		if p := cfg.Raw.Section("core").Option("excludesfile"); p != "" {
			if rest, ok := strings.CutPrefix(p, "~/"); ok {
				p = filepath.Join(home, rest)
			}
			path = p
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return ignorefile.Parse(b, nil)
}

// identity is the user's git identity (repository, then global
// configuration), or Pullwright's when none is set.
func (c *checkout) identity() pullwright.Identity {
	id := pullwright.Identity{Name: "Pullwright", Email: "pullwright@localhost"}
	cfg, err := c.r.ConfigScoped(config.GlobalScope)
	if err != nil {
		if cfg, err = c.r.Config(); err != nil {
			return id
		}
	}
	name, email := strings.TrimSpace(cfg.User.Name), strings.TrimSpace(cfg.User.Email)
	if name == "" || email == "" || strings.ContainsAny(name+email, "<>\n\r\x00") {
		return id
	}
	return pullwright.Identity{Name: name, Email: email}
}

// freeBranch returns the branch to create: want if given and free (an error
// if taken), else pullwright/<slug of the instructions>, numbered from -2
// until the name is free.
func (c *checkout) freeBranch(want, instructions string) (string, error) {
	if want != "" {
		if err := plumbing.NewBranchReferenceName(want).Validate(); err != nil || strings.HasPrefix(want, "-") {
			return "", fmt.Errorf("branch %q is not a valid branch name", want)
		}
		taken, err := c.hasBranch(want)
		if err != nil {
			return "", err
		}
		if taken {
			return "", fmt.Errorf("branch %s already exists in %s: bot run only creates new branches; choose another --branch", want, c.top)
		}
		return want, nil
	}
	name := repo.BranchName(BranchPrefix, 0, instructions)
	for i := 1; i <= maxBranchTries; i++ {
		candidate := name
		if i > 1 {
			candidate = name + "-" + strconv.Itoa(i)
		}
		taken, err := c.hasBranch(candidate)
		if err != nil {
			return "", err
		}
		if !taken {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("no free branch name like %s in %s (a branch named %s would also be in the way): choose one with --branch",
		name, c.top, strings.TrimSuffix(BranchPrefix, "/"))
}

// maxBranchTries bounds the numbered names freeBranch tries.
const maxBranchTries = 100

// hasBranch reports whether the user's repository has the branch, or a
// branch that git could not create next to it (name/… or a prefix of it).
func (c *checkout) hasBranch(name string) (bool, error) {
	refs, err := c.r.References()
	if err != nil {
		return false, fmt.Errorf("list branches of %s: %w", c.top, err)
	}
	defer refs.Close()
	full := plumbing.NewBranchReferenceName(name).String()
	taken := false
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		n := ref.Name().String()
		if n == full || strings.HasPrefix(n, full+"/") || strings.HasPrefix(full, n+"/") {
			taken = true
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("list branches of %s: %w", c.top, err)
	}
	return taken, nil
}

// clone makes a shallow clone of the current branch into base/work and
// checks that it is at the commit HEAD was at when the run started.
func (c *checkout) clone(ctx context.Context, base string) (*repo.Workspace, error) {
	dir := filepath.Join(base, "work")
	_, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		// The git directory rather than the worktree: go-git reads a
		// local remote's objects from the URL's directory when it pushes.
		URL:           c.gitDir,
		ReferenceName: plumbing.NewBranchReferenceName(c.branch),
		SingleBranch:  true,
		Depth:         1,
		Tags:          git.NoTags,
	})
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w%s", c.top, err, gitHint(err))
	}
	ws, err := repo.Open(dir)
	if err != nil {
		return nil, err
	}
	head, err := ws.Head()
	if err != nil {
		return nil, err
	}
	if head != c.head {
		return nil, fmt.Errorf("clone %s: branch %s moved from %s to %s while bot run started; run it again",
			c.top, c.branch, words.Short(c.head), words.Short(head))
	}
	return ws, nil
}

// gitHint explains the error go-git gives when the git programs its local
// transport runs are missing.
func gitHint(err error) string {
	if strings.Contains(err.Error(), "executable file not found") {
		return " (bot run needs git installed: it uses git-upload-pack and git-receive-pack to read and write the local repository)"
	}
	return ""
}

// guidance reads the repository's instruction files the way a task does
// (policy.Instructions.Guidance, repo.Workspace.ReadTree), from the
// repository's default branch as origin/HEAD names it, or from HEAD when
// there is no origin/HEAD (a repository without a remote, or one cloned
// by a tool that did not set it). from names what was read.
func (c *checkout) guidance(in policy.Instructions) (g pullwright.Guidance, from string, err error) {
	if len(in) == 0 {
		return pullwright.Guidance{}, "", nil
	}
	sha, from := c.head, "HEAD"
	if ref, err := c.r.Reference(plumbing.NewRemoteHEADReferenceName(git.DefaultRemoteName), true); err == nil {
		sha, from = ref.Hash().String(), ref.Name().Short()
	}
	// The git directory, opened bare: only its objects are read, and a
	// linked worktree's top is no repository go-git opens.
	objects, err := repo.Open(c.gitDir)
	if err != nil {
		return pullwright.Guidance{}, "", fmt.Errorf("read the instructions at %s: %w", from, err)
	}
	files, more, err := objects.ReadTree(sha, in.Match, policy.MaxInstructionFiles, policy.MaxInstructionBytes)
	if err != nil {
		return pullwright.Guidance{}, "", fmt.Errorf("read the instructions at %s: %w", from, err)
	}
	return in.Guidance(files, more), from, nil
}
