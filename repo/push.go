package repo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/pullwright/pullwright"
)

// Push pushes the local branch to the same name on origin, never forcing.
//
// It is idempotent: if the remote branch already points at the local commit
// it returns nil without sending anything. If the remote branch has commits
// the local branch does not contain (someone pushed meanwhile), it returns an
// error wrapping pullwright.ErrPushRejected and leaves the remote untouched.
//
// Pushing from a shallow clone works with go-git v5.19: the shallow boundary
// commits are counted as objects the server has, so the pack holds only the
// new commits, trees and blobs. This is covered by TestPushFromShallowClone,
// which also runs `git fsck` on the server's repository.
func (w *Workspace) Push(ctx context.Context, token, branch string) error {
	refName := plumbing.NewBranchReferenceName(branch)
	if err := refName.Validate(); err != nil {
		return fmt.Errorf("push %q: invalid branch: %w", branch, err)
	}
	local, err := w.repo.Reference(refName, true)
	if err != nil {
		return fmt.Errorf("push %s: local branch: %w", branch, err)
	}
	remote, err := w.repo.Remote(git.DefaultRemoteName)
	if err != nil {
		return fmt.Errorf("push %s: %w", branch, err)
	}
	target := branch
	if urls := remote.Config().URLs; len(urls) > 0 {
		safe, _ := checkURL(urls[0])
		target = safe + " " + branch
	}
	op := "push " + target

	// Look at the remote branch first, so "already there" and "someone
	// pushed meanwhile" are decided on the advertised refs, before go-git
	// would try (and fail) to walk history a shallow clone does not have.
	remoteHash, err := w.remoteBranch(ctx, remote, refName, token)
	if err != nil {
		return opError(op, err, token)
	}
	if remoteHash == local.Hash() {
		return nil
	}
	if !remoteHash.IsZero() {
		if ok, _, err := w.contains(local.Hash(), remoteHash); err != nil {
			return opError(op, err, token)
		} else if !ok {
			return fmt.Errorf("%s: remote is at %s: %w", op, remoteHash, pullwright.ErrPushRejected)
		}
	}

	po := &git.PushOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(refName.String() + ":" + refName.String())},
		Auth:       auth(token),
	}
	if !remoteHash.IsZero() {
		// Refuse if the remote moved since we looked.
		po.RequireRemoteRefs = []config.RefSpec{config.RefSpec(remoteHash.String() + ":" + refName.String())}
	}
	err = remote.PushContext(ctx, po)
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	if isRejectedUpdate(err) {
		return redact(fmt.Errorf("%s: %w (%v)", op, pullwright.ErrPushRejected, err), token)
	}
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// go-git walks history to check fast-forward and fails on commits a
		// shallow clone lacks: that happens when the branch appeared or
		// moved on the remote between our look and the push.
		if cur, lerr := w.remoteBranch(ctx, remote, refName, token); lerr == nil && cur != remoteHash {
			return redact(fmt.Errorf("%s: remote moved to %s: %w", op, cur, pullwright.ErrPushRejected), token)
		}
	}
	return opError(op, err, token)
}

// remoteBranch returns the hash the remote's branch points at, or the zero
// hash if it has no such branch.
func (w *Workspace) remoteBranch(ctx context.Context, remote *git.Remote, name plumbing.ReferenceName, token string) (plumbing.Hash, error) {
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth(token)})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("list remote refs: %w", err)
	}
	for _, r := range refs {
		if r.Name() == name && r.Type() == plumbing.HashReference {
			return r.Hash(), nil
		}
	}
	return plumbing.ZeroHash, nil
}

// contains reports whether commit want is reachable from tip in the local
// history, and whether the walk met the shallow boundary before it could
// tell. A commit the workspace does not have at all is not contained. The
// walk stops at want's parents: want cannot be in a parent's history, so
// when a person's commits sit on want's parent, the answer needs no more
// history than those commits.
func (w *Workspace) contains(tip, want plumbing.Hash) (found, truncated bool, err error) {
	wc, err := object.GetCommit(w.repo.Storer, want)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	seen := map[plumbing.Hash]bool{}
	for _, p := range wc.ParentHashes {
		seen[p] = true
	}
	queue := []plumbing.Hash{tip}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == want {
			return true, false, nil
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := object.GetCommit(w.repo.Storer, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			truncated = true // beyond the shallow boundary
			continue
		}
		if err != nil {
			return false, false, err
		}
		queue = append(queue, c.ParentHashes...)
	}
	return false, truncated, nil
}

// isRejectedUpdate recognises go-git's and the server's ways of saying a
// ref update would not be a fast-forward (or the remote moved under us).
func isRejectedUpdate(err error) bool {
	if errors.Is(err, git.ErrForceNeeded) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"non-fast-forward", "fetch first", "required to be", "stale info"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// containsSteps are the history depths Contains fetches, in turn, when the
// walk meets the shallow boundary. Unlike Fetch it stops short of the
// whole history: a person who merged the base branch into the task's
// branch sends the walk down the base's history, and "not contained" is
// the safe answer (the bot keeps its change aside) where "contained" would
// need the whole repository.
var containsSteps = []int{16, 256}

// Contains reports whether commit sha is tip itself or in its history.
// Both are full SHAs, and tip must be in the workspace (Fetch it). When the
// shallow clone's history ends before the answer, it fetches deeper history
// of the followed ref (containsSteps); where even that ends first, the
// answer is false.
func (w *Workspace) Contains(ctx context.Context, token, tip, sha string) (bool, error) {
	for _, s := range []string{tip, sha} {
		if !fullSHA(s) {
			return false, fmt.Errorf("contains %s in %s: %q is not a full lower-case commit SHA", sha, tip, s)
		}
	}
	for _, depth := range append([]int{0}, containsSteps...) {
		if depth > 0 {
			if err := w.deepen(ctx, token, depth); err != nil {
				return false, fmt.Errorf("contains %s in %s: %w", sha, tip, err)
			}
		}
		found, truncated, err := w.contains(plumbing.NewHash(tip), plumbing.NewHash(sha))
		if err != nil {
			return false, fmt.Errorf("contains %s in %s: %w", sha, tip, err)
		}
		if found || !truncated {
			return found, nil
		}
	}
	return false, nil
}
