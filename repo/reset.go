package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/pullwright/pullwright"
)

// deepenSteps are the history depths tried, in turn, to find a commit a
// shallow clone lacks: most tasks resume within a few commits of the tip.
var deepenSteps = []int{16, 256, 1 << 20}

// ResetTo moves the checked-out branch and the worktree to commit sha,
// fetching deeper history of the cloned branch first when the shallow clone
// does not have it. The worktree's changes are discarded.
func (w *Workspace) ResetTo(ctx context.Context, token, sha string) error {
	if err := w.Fetch(ctx, token, sha); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	wt, err := w.repo.Worktree()
	if err != nil {
		return fmt.Errorf("reset to %s: %w", sha, err)
	}
	if err := wt.Reset(&git.ResetOptions{Commit: plumbing.NewHash(sha), Mode: git.HardReset}); err != nil {
		return fmt.Errorf("reset to %s: %w", sha, err)
	}
	return nil
}

// Fetch makes sure the workspace has commit sha, deepening the shallow
// clone's history of its branch (or pull request head: the fetch uses the
// refspec Clone configured) until it appears. pullwright.ErrBaseGone if the whole
// history lacks it.
func (w *Workspace) Fetch(ctx context.Context, token, sha string) error {
	h := plumbing.NewHash(sha)
	if h.IsZero() || h.String() != sha {
		return fmt.Errorf("fetch %q: not a commit SHA", sha)
	}
	for _, depth := range append([]int{0}, deepenSteps...) {
		if _, err := w.repo.CommitObject(h); err == nil {
			return nil
		} else if !errors.Is(err, plumbing.ErrObjectNotFound) {
			return fmt.Errorf("fetch %s: %w", sha, err)
		}
		if depth == 0 {
			continue
		}
		if err := w.deepen(ctx, token, depth); err != nil {
			return fmt.Errorf("fetch %s: %w", sha, err)
		}
	}
	if _, err := w.repo.CommitObject(h); err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return fmt.Errorf("fetch %s: %w", sha, pullwright.ErrBaseGone)
		}
		return fmt.Errorf("fetch %s: %w", sha, err)
	}
	return nil
}

// Track makes origin's branch the ref that Fetch, ResetTo and Contains
// fetch history of, in place of the ref Clone configured. A task clones one
// ref (the default branch, a pull request's head) and pushes to another:
// once a person has pushed to the task's branch, that branch's history is
// the one to follow. The change is in the workspace's git config, so it
// holds when the workspace is opened again.
func (w *Workspace) Track(branch string) error {
	ref := plumbing.NewBranchReferenceName(branch)
	if err := ref.Validate(); err != nil {
		return fmt.Errorf("track branch %q: %w", branch, err)
	}
	spec := config.RefSpec("+" + ref.String() + ":" + plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch).String())
	cfg, err := w.repo.Config()
	if err != nil {
		return fmt.Errorf("track branch %s: %w", branch, err)
	}
	remote, ok := cfg.Remotes[git.DefaultRemoteName]
	if !ok {
		return fmt.Errorf("track branch %s: no remote %s", branch, git.DefaultRemoteName)
	}
	if len(remote.Fetch) == 1 && remote.Fetch[0] == spec {
		return nil
	}
	remote.Fetch = []config.RefSpec{spec}
	if err := w.repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("track branch %s: %w", branch, err)
	}
	return nil
}

// deepen fetches the followed ref (the refspec Clone configured, or Track
// set) with depth commits of history.
func (w *Workspace) deepen(ctx context.Context, token string, depth int) error {
	err := w.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		Depth:      depth,
		Auth:       auth(token),
		Tags:       git.NoTags,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return opError(fmt.Sprintf("deepen to %d commits", depth), err, token)
	}
	return nil
}

// RemoteBranch returns the commit origin's branch points at, or "" when
// origin has no such branch.
func (w *Workspace) RemoteBranch(ctx context.Context, token, branch string) (string, error) {
	remote, err := w.repo.Remote(git.DefaultRemoteName)
	if err != nil {
		return "", fmt.Errorf("look up remote branch %s: %w", branch, err)
	}
	h, err := w.remoteBranch(ctx, remote, plumbing.NewBranchReferenceName(branch), token)
	if err != nil {
		return "", opError("look up remote branch "+branch, err, token)
	}
	if h.IsZero() {
		return "", nil
	}
	return h.String(), nil
}

// RemoteHead returns the commit a branch of the repository at url points
// at, or "" when there is no such branch, without a local clone: it is one
// ref listing, cheap enough to check an approval against the branch.
func RemoteHead(ctx context.Context, url, token, branch string) (string, error) {
	safe, err := checkURL(url)
	if err != nil {
		return "", fmt.Errorf("look up %s on %s: %w", branch, safe, err)
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{url}})
	w := &Workspace{}
	h, err := w.remoteBranch(ctx, remote, plumbing.NewBranchReferenceName(branch), token)
	if err != nil {
		return "", opError(fmt.Sprintf("look up %s on %s", branch, safe), err, token)
	}
	if h.IsZero() {
		return "", nil
	}
	return h.String(), nil
}
