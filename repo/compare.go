package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// FetchBranch brings the tip of origin's branch into the workspace (depth
// 1, under refs/remotes/origin/<branch>) and returns its SHA, leaving the
// checked-out branch, the files and the fetch refspec Clone configured as
// they are. It is how a workspace cloned from one ref (a pull request's
// head) gets a second tree to compare with.
func (w *Workspace) FetchBranch(ctx context.Context, token, branch string) (string, error) {
	ref := plumbing.NewBranchReferenceName(branch)
	if err := ref.Validate(); err != nil {
		return "", fmt.Errorf("fetch branch %q: %w", branch, err)
	}
	tracking := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch)
	spec := config.RefSpec("+" + ref.String() + ":" + tracking.String())
	err := w.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{spec},
		Depth:      1,
		Auth:       auth(token),
		Tags:       git.NoTags,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return "", opError("fetch branch "+branch, notFound(err), token)
	}
	got, err := w.repo.Reference(tracking, true)
	if err != nil {
		return "", fmt.Errorf("fetch branch %s: %s after fetch: %w", branch, tracking, err)
	}
	return got.Hash().String(), nil
}

// ChangedPaths lists every path whose file differs between the trees of
// commits from and to (added, deleted, or changed in content or mode), both
// in the workspace; a rename counts as both of its paths. The list is
// sorted. Unlike a diff against a merge base it compares the two trees as
// they are: a file that to has in an older version than from is a change.
func (w *Workspace) ChangedPaths(from, to string) ([]string, error) {
	a, b, err := w.commitTrees(from, to)
	if err != nil {
		return nil, fmt.Errorf("changed paths %s..%s: %w", from, to, err)
	}
	changes, err := object.DiffTree(a, b)
	if err != nil {
		return nil, fmt.Errorf("changed paths %s..%s: %w", from, to, err)
	}
	seen := map[string]bool{}
	for _, c := range changes {
		for _, p := range []string{c.From.Name, c.To.Name} {
			if p != "" {
				seen[p] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}
