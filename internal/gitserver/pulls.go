package gitserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// What GitHub does around pull requests, done on the bare repositories
// directly (none of it appears in Requests): forks, the refs/pull/N/head ref
// a pull request gets in its base repository, and the diff a pull request
// shows.

// shaRE is a full object name.
var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkRev refuses a revision the git CLI could read as an option.
func checkRev(rev string) error {
	if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, " \t\n\x00") {
		return fmt.Errorf("invalid revision %q", rev)
	}
	return nil
}

// Ref resolves ref (a branch, a full ref name such as "refs/pull/7/head", a
// tag or a SHA) to a commit of owner/name. found is false, with a nil error,
// when the repository or the ref does not exist; an error means git itself
// failed. A fake API can use it to report the commits of branches
// (fakegithub's Refs hook: fake.Refs = git.Ref).
func (s *Server) Ref(owner, name, ref string) (sha string, found bool, err error) {
	if checkName(owner, name) != nil || checkRev(ref) != nil {
		return "", false, nil
	}
	bare := s.BareDir(owner, name)
	if _, err := os.Stat(bare); errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	out, err := s.git(bare, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		// --verify --quiet exits 1, silently, for a ref that does not exist.
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return "", false, nil
		}
		return "", false, fmt.Errorf("resolve %s in %s/%s: %w", ref, owner, name, err)
	}
	return strings.TrimSpace(out), true, nil
}

// Diff is the diff GitHub shows for a pull request from head into base in
// owner/name: the changes head made since it left base, git diff
// base...head (so commits that reached base meanwhile are not shown as
// reverted). base and head are branches, full ref names or SHAs of owner/name;
// the head of a pull request from a fork is there as refs/pull/N/head (see
// MirrorPullHead). It fits fakegithub's Diffs hook: fake.Diffs = git.Diff.
func (s *Server) Diff(owner, name, base, head string) (string, error) {
	if err := checkName(owner, name); err != nil {
		return "", err
	}
	for _, r := range []string{base, head} {
		if err := checkRev(r); err != nil {
			return "", fmt.Errorf("diff of %s/%s: %w", owner, name, err)
		}
	}
	out, err := s.git(s.BareDir(owner, name), nil,
		"diff", "--no-color", "--no-ext-diff", "--no-textconv", base+"..."+head, "--")
	if err != nil {
		return "", fmt.Errorf("diff %s...%s in %s/%s: %w", base, head, owner, name, err)
	}
	return out, nil
}

// fullRef turns a branch name into refs/heads/<branch>; a name that already
// starts with "refs/" is kept.
func fullRef(ref string) string {
	if strings.HasPrefix(ref, "refs/") {
		return ref
	}
	return "refs/heads/" + ref
}

// SetRef points ref (a branch name, or a full ref name such as
// "refs/pull/7/head") of owner/name at sha, a commit that must already be in
// that repository; it creates the ref or moves it, even backwards, as
// GitHub moves a pull request's ref after a force-push.
func (s *Server) SetRef(owner, name, ref, sha string) error {
	if err := checkName(owner, name); err != nil {
		return err
	}
	if err := checkRev(ref); err != nil {
		return err
	}
	if !shaRE.MatchString(sha) {
		return fmt.Errorf("set %s in %s/%s: %q is not a full commit SHA", ref, owner, name, sha)
	}
	bare := s.BareDir(owner, name)
	full := fullRef(ref)
	if _, err := s.git(bare, nil, "check-ref-format", full); err != nil {
		return fmt.Errorf("set %s in %s/%s: invalid ref name: %w", ref, owner, name, err)
	}
	// update-ref alone would accept a tree or a blob.
	if _, err := s.git(bare, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", sha+"^{commit}"); err != nil {
		return fmt.Errorf("set %s in %s/%s: no commit %s there: %w", ref, owner, name, sha, err)
	}
	if _, err := s.git(bare, nil, "update-ref", full, sha); err != nil {
		return fmt.Errorf("set %s in %s/%s: %w", ref, owner, name, err)
	}
	return nil
}

// Fork makes toOwner/toName a fork of fromOwner/fromName on this server, as
// GitHub does: a new bare repository with the same branches, tags and
// default branch, and nothing else (no refs/pull/*). The two share no
// storage: a push to one does not show in the other.
func (s *Server) Fork(fromOwner, fromName, toOwner, toName string) error {
	if err := checkName(fromOwner, fromName); err != nil {
		return err
	}
	if err := checkName(toOwner, toName); err != nil {
		return err
	}
	from, to := s.BareDir(fromOwner, fromName), s.BareDir(toOwner, toName)
	if _, err := os.Stat(from); err != nil {
		return fmt.Errorf("fork %s/%s: %w", fromOwner, fromName, err)
	}
	if _, err := os.Stat(to); err == nil {
		return fmt.Errorf("fork %s/%s to %s/%s: repository already exists", fromOwner, fromName, toOwner, toName)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	// --no-local copies objects instead of hard-linking them, so the fork
	// is independent of its parent's directory.
	if _, err := s.git(s.root, nil, "clone", "--quiet", "--bare", "--no-local", from, to); err != nil {
		return fmt.Errorf("fork %s/%s to %s/%s: %w", fromOwner, fromName, toOwner, toName, err)
	}
	// The clone remembers its parent's path; a fork on GitHub has no remote.
	if _, err := s.git(to, nil, "remote", "remove", "origin"); err != nil {
		return fmt.Errorf("fork %s/%s to %s/%s: %w", fromOwner, fromName, toOwner, toName, err)
	}
	return nil
}

// MirrorPullHead does what GitHub does when pull request pr of
// baseOwner/baseName comes from branch of the fork forkOwner/forkName (or is
// pushed to): it copies the branch's commits into the base repository and
// points refs/pull/<pr>/head at its head, so that the base repository serves
// the pull request's commits. It returns that commit's SHA. Call it again
// after each push to the fork's branch.
func (s *Server) MirrorPullHead(baseOwner, baseName string, pr int, forkOwner, forkName, branch string) (string, error) {
	if err := checkName(baseOwner, baseName); err != nil {
		return "", err
	}
	if err := checkName(forkOwner, forkName); err != nil {
		return "", err
	}
	if pr <= 0 {
		return "", fmt.Errorf("invalid pull request number %d", pr)
	}
	if err := checkRev(branch); err != nil {
		return "", err
	}
	fork := s.BareDir(forkOwner, forkName)
	if _, err := os.Stat(fork); err != nil {
		return "", fmt.Errorf("mirror pull request head from %s/%s: %w", forkOwner, forkName, err)
	}
	ref := "refs/pull/" + strconv.Itoa(pr) + "/head"
	base := s.BareDir(baseOwner, baseName)
	// "+": a force-push to the fork moves the pull request's ref too.
	if _, err := s.git(base, nil, "fetch", "--quiet", "--no-tags", fork, "+"+fullRef(branch)+":"+ref); err != nil {
		return "", fmt.Errorf("mirror %s of %s/%s into %s/%s %s: %w", branch, forkOwner, forkName, baseOwner, baseName, ref, err)
	}
	out, err := s.git(base, nil, "rev-parse", "--verify", ref)
	if err != nil {
		return "", fmt.Errorf("mirror %s of %s/%s into %s/%s %s: %w", branch, forkOwner, forkName, baseOwner, baseName, ref, err)
	}
	return strings.TrimSpace(out), nil
}
