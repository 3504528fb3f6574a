package repo

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// PullHeadBranch is the local branch a clone of a pull request's head ref
// (CloneOptions.Branch "refs/pull/<n>/head") has checked out. A pull request
// head is not a branch of the base repository, yet CreateBranch, CommitAll,
// ResetTo and the rest work on "the checked-out branch", so the fetched
// commit gets a local branch of its own. The name is fixed so that a
// reopened workspace can be recognised; it is never pushed by this package.
const PullHeadBranch = "pullwright-pr-head"

// ErrRefNotFound is returned (wrapped) by Clone when the remote has no such
// branch or pull request ref.
var ErrRefNotFound = errors.New("ref not found on the remote")

// pullHeadRE is the only non-branch ref shape Clone accepts. The number is
// what GitHub gives pull requests: positive, without leading zeros.
var pullHeadRE = regexp.MustCompile(`^refs/pull/[1-9][0-9]*/head$`)

// parseCloneRef splits CloneOptions.Branch into a branch name (for go-git's
// own clone) or a pull request head ref (for clonePull).
//
// Full ref names are a narrow door: refs/heads/* (the same as the short
// branch name) and refs/pull/<n>/head, nothing else. The ref ends up in a
// fetch refspec kept in .git/config and reused by every later Fetch, so a
// wildcard or an odd namespace could make the workspace fetch far more than
// one line of history. Tags cannot take the bot's checkpoints, and
// refs/pull/<n>/merge is a merge commit GitHub computes on its own schedule
// (and drops on conflicts): working on it would push commits no person
// wrote on top of a merge they never made. Anything else has no use here.
func parseCloneRef(s string) (branch string, pull plumbing.ReferenceName, err error) {
	if !strings.HasPrefix(s, "refs/") {
		if s != "" {
			if err := plumbing.NewBranchReferenceName(s).Validate(); err != nil {
				return "", "", fmt.Errorf("invalid branch %q: %w", s, err)
			}
		}
		return s, "", nil
	}
	ref := plumbing.ReferenceName(s)
	if err := ref.Validate(); err != nil {
		return "", "", fmt.Errorf("invalid ref %q: %w", s, err)
	}
	switch {
	case ref.IsBranch():
		return strings.TrimPrefix(s, "refs/heads/"), "", nil
	case pullHeadRE.MatchString(s):
		return "", ref, nil
	}
	return "", "", fmt.Errorf("unsupported ref %q: only refs/heads/<branch> and refs/pull/<number>/head can be cloned", s)
}

// clonePull clones the pull request head ref into dir, which prepareDir has
// made ready. go-git's Clone cannot do it: for a ReferenceName that is not a
// branch or tag it builds the refspec "+refs/heads/<ref>:…", a ref that does
// not exist. So this is what `git clone` does, spelt out: init, an origin
// whose fetch refspec is this one ref (Fetch deepens with it later), a
// shallow fetch, and a local branch at the fetched commit.
func clonePull(ctx context.Context, o CloneOptions, ref plumbing.ReferenceName, depth int) (*Workspace, error) {
	local := plumbing.NewBranchReferenceName(PullHeadBranch)
	r, err := git.PlainInitWithOptions(o.Dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: local},
	})
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	// refs/pull/2/head → refs/remotes/origin/pull/2/head, as `git fetch
	// origin refs/pull/2/head:…` users conventionally name it.
	tracking := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, strings.TrimPrefix(ref.String(), "refs/"))
	spec := config.RefSpec("+" + ref.String() + ":" + tracking.String())
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("refspec %s: %w", spec, err)
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{
		Name:  git.DefaultRemoteName,
		URLs:  []string{o.URL},
		Fetch: []config.RefSpec{spec},
	}); err != nil {
		return nil, fmt.Errorf("add remote: %w", err)
	}
	err = r.FetchContext(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{spec},
		Depth:      depth,
		Auth:       auth(o.Token),
		Tags:       git.NoTags,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, notFound(err)
	}
	fetched, err := r.Reference(tracking, true)
	if err != nil {
		// The remote advertised the ref, yet nothing was stored for it.
		return nil, fmt.Errorf("%s after fetch: %w", tracking, err)
	}
	if err := r.Storer.SetReference(plumbing.NewHashReference(local, fetched.Hash())); err != nil {
		return nil, fmt.Errorf("create branch %s: %w", PullHeadBranch, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("checkout: %w", err)
	}
	// HEAD already names the local branch (the init default), so this only
	// writes the index and the files.
	if err := wt.Reset(&git.ResetOptions{Mode: git.HardReset, Commit: fetched.Hash()}); err != nil {
		return nil, fmt.Errorf("checkout %s: %w", fetched.Hash(), err)
	}
	return &Workspace{dir: o.Dir, repo: r}, nil
}

// notFound marks go-git's ways of saying the remote lacks the ref asked for
// with ErrRefNotFound, keeping go-git's message, which names the ref.
func notFound(err error) error {
	if errors.Is(err, git.NoMatchingRefSpecError{}) || errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return fmt.Errorf("%w: %w", ErrRefNotFound, err)
	}
	return err
}
