// Package repo owns workspaces on disk: a shallow clone of one branch, the
// work branch, checkpoint commits, the diff against the base commit, the push
// of the work branch and the clean-up of the directory.
//
// It must not keep credentials on disk. The installation token is handed to
// each network operation (Clone, Push) as HTTP Basic auth and is never written
// to .git/config, a credential helper or any other file; the remote URL kept
// in the workspace is the clone URL without user information. Error messages
// never contain the token.
//
// Everything is done with go-git in process; the git CLI is not required.
//
// It speaks the vocabulary of package pullwright, so that *Workspace is
// task's Workspace port as it is, without knowing task; tokens come from
// its callers, not from ghapp.
//
// Import rule: none of task or ghapp.
package repo

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/pullwright/pullwright"
)

// tokenUser is the Basic-auth user name GitHub expects with an installation
// token.
const tokenUser = "x-access-token"

var (
	// ErrAuthFailed is returned (wrapped) when the server refused the token
	// (HTTP 401 or 403). The caller may refresh the token and retry.
	ErrAuthFailed = errors.New("git authentication failed: the token was rejected or lacks access to the repository")
)

// validIdentity checks a commit author or co-author: git needs a name and
// an email, and neither may break the header.
func validIdentity(id pullwright.Identity) error {
	if strings.TrimSpace(id.Name) == "" || strings.TrimSpace(id.Email) == "" {
		return fmt.Errorf("identity %q <%s>: name and email are required", id.Name, id.Email)
	}
	if strings.ContainsAny(id.Name+id.Email, "<>\n\r\x00") {
		return fmt.Errorf("identity %q <%s>: must not contain '<', '>' or line breaks", id.Name, id.Email)
	}
	return nil
}

// CloneOptions says what to clone and where.
type CloneOptions struct {
	URL string // HTTP(S) clone URL without user information
	// Branch is the branch to clone, as a name ("main") or a full ref name
	// ("refs/heads/main"); empty means the remote's default branch. It may
	// also be "refs/pull/<n>/head", a pull request's head as GitHub serves
	// it in the base repository (fork pull requests included): the clone
	// then has it checked out as the local branch PullHeadBranch. No other
	// full ref name is accepted, nor a branch whose own name starts with
	// "refs/": the ref becomes the workspace's fetch refspec, reused by every
	// Fetch, so the door is kept narrow (see parseCloneRef).
	Branch string
	Token  string // installation token, sent as Basic auth x-access-token:<token>; empty means anonymous
	Dir    string // target directory; must not exist or be empty
	Depth  int    // history depth; 0 means 1
}

// Workspace is a clone on disk.
type Workspace struct {
	dir  string
	repo *git.Repository
}

// Clone makes a shallow, single-branch clone of o.Branch into o.Dir. On
// failure nothing is left in o.Dir; a branch or pull request ref the remote
// does not have gives an error wrapping ErrRefNotFound.
func Clone(ctx context.Context, o CloneOptions) (*Workspace, error) {
	safeURL, err := checkURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", safeURL, err)
	}
	if o.Dir == "" {
		return nil, fmt.Errorf("clone %s: no target directory", safeURL)
	}
	branch, pull, err := parseCloneRef(o.Branch)
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", safeURL, err)
	}
	depth := o.Depth
	if depth <= 0 {
		depth = 1
	}
	created, err := prepareDir(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", safeURL, err)
	}
	if pull != "" {
		w, err := clonePull(ctx, o, pull, depth)
		if err != nil {
			cleanDir(o.Dir, created)
			return nil, opError("clone "+safeURL+" "+pull.String(), err, o.Token)
		}
		return w, nil
	}
	co := &git.CloneOptions{
		URL:          o.URL,
		Auth:         auth(o.Token),
		RemoteName:   git.DefaultRemoteName,
		SingleBranch: true,
		Depth:        depth,
		Tags:         git.NoTags,
	}
	if branch != "" {
		co.ReferenceName = plumbing.NewBranchReferenceName(branch)
	}
	r, err := git.PlainCloneContext(ctx, o.Dir, false, co)
	if err != nil {
		cleanDir(o.Dir, created)
		return nil, opError("clone "+safeURL, notFound(err), o.Token)
	}
	return &Workspace{dir: o.Dir, repo: r}, nil
}

// Open opens an existing workspace.
func Open(dir string) (*Workspace, error) {
	r, err := git.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	return &Workspace{dir: dir, repo: r}, nil
}

// Dir is the workspace's directory.
func (w *Workspace) Dir() string { return w.dir }

// Head returns the SHA of the commit HEAD points at.
func (w *Workspace) Head() (string, error) {
	ref, err := w.repo.Head()
	if err != nil {
		return "", fmt.Errorf("head %s: %w", w.dir, err)
	}
	return ref.Hash().String(), nil
}

// CreateBranch creates branch name at HEAD and checks it out, keeping the
// worktree as it is. It is not an error if the branch already exists and is
// checked out, or exists at HEAD's commit (then it is checked out).
func (w *Workspace) CreateBranch(name string) error {
	refName := plumbing.NewBranchReferenceName(name)
	if err := refName.Validate(); err != nil {
		return fmt.Errorf("create branch %q: %w", name, err)
	}
	head, err := w.repo.Head()
	if err != nil {
		return fmt.Errorf("create branch %s: %w", name, err)
	}
	existing, err := w.repo.Reference(refName, false)
	switch {
	case err == nil:
		if head.Name() == refName {
			return nil
		}
		if existing.Hash() != head.Hash() {
			return fmt.Errorf("create branch %s: already exists at %s, HEAD is at %s", name, existing.Hash(), head.Hash())
		}
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		if err := w.repo.Storer.SetReference(plumbing.NewHashReference(refName, head.Hash())); err != nil {
			return fmt.Errorf("create branch %s: %w", name, err)
		}
	default:
		return fmt.Errorf("create branch %s: %w", name, err)
	}
	// Same commit, so switching HEAD is all `git checkout -b` would do.
	if err := w.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, refName)); err != nil {
		return fmt.Errorf("create branch %s: checkout: %w", name, err)
	}
	return nil
}

// Remove deletes the workspace directory.
func (w *Workspace) Remove() error {
	d := filepath.Clean(w.dir)
	if d == "." || d == string(filepath.Separator) || d == "" {
		return fmt.Errorf("remove workspace: refusing to remove %q", w.dir)
	}
	if err := os.RemoveAll(d); err != nil {
		return fmt.Errorf("remove workspace %s: %w", d, err)
	}
	return nil
}

func auth(token string) transport.AuthMethod {
	if token == "" {
		return nil
	}
	return &githttp.BasicAuth{Username: tokenUser, Password: token}
}

// checkURL returns a printable form of raw and an error if raw is not an
// http(s) URL without user information. The printable form never contains
// user information, so it is safe in error messages.
func checkURL(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("empty clone URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the input; do not echo it.
		return "<invalid URL>", errors.New("invalid clone URL")
	}
	hasUser := u.User != nil
	u.User = nil
	safe := u.String()
	if hasUser {
		return safe, errors.New("clone URL must not contain user information (credentials are passed separately, never stored in the URL)")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return safe, fmt.Errorf("unsupported clone URL scheme %q (want http or https)", u.Scheme)
	}
	if u.Host == "" {
		return safe, errors.New("clone URL has no host")
	}
	return safe, nil
}

// prepareDir makes sure dir exists and is empty; created reports whether it
// had to be created.
func prepareDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
		return true, nil
	case err != nil:
		return false, err
	case len(entries) > 0:
		return false, fmt.Errorf("target directory %s is not empty", dir)
	}
	return false, nil
}

func cleanDir(dir string, created bool) {
	if created {
		os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// opError wraps err with op, classifies authentication failures and makes
// sure the token does not appear in the message.
func opError(op string, err error, token string) error {
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired):
		err = &authError{status: "HTTP 401", err: err}
	case errors.Is(err, transport.ErrAuthorizationFailed):
		err = &authError{status: "HTTP 403", err: err}
	}
	return redact(fmt.Errorf("%s: %w", op, err), token)
}

// authError is ErrAuthFailed with the status that caused it; it unwraps to
// go-git's error, whose message repeats the response body.
type authError struct {
	status string
	err    error
}

func (e *authError) Error() string        { return ErrAuthFailed.Error() + " (" + e.status + ")" }
func (e *authError) Unwrap() error        { return e.err }
func (e *authError) Is(target error) bool { return target == ErrAuthFailed }

// redactedError hides the token in the message and keeps the chain for
// errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redact(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), token, "***"), err: err}
}
