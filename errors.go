package pullwright

import "errors"

// The errors a task's ports report, whichever package implements them. An
// implementation wraps its own cause with one of these (fmt.Errorf("%w:
// %w", ...)), so that task tells the cases apart with errors.Is and the
// message keeps the cause.
var (
	// ErrNoFile means the file does not exist at that ref.
	ErrNoFile = errors.New("no such file")
	// ErrNotAFile means the path is a directory, a symlink or a
	// submodule, or too large to read.
	ErrNotAFile = errors.New("not a readable file")
	// ErrNotPermitted means GitHub refused the call for lack of access
	// (an installation that does not cover a fork, say).
	ErrNotPermitted = errors.New("not permitted")
	// ErrGone means what the call was about was deleted on GitHub (a
	// review thread's first comment, say).
	ErrGone = errors.New("deleted on GitHub")
	// ErrNoChanges means there was nothing to commit.
	ErrNoChanges = errors.New("no changes")
	// ErrPushRejected means the remote branch has commits the push would
	// overwrite; the bot never forces.
	ErrPushRejected = errors.New("push rejected: the remote branch has other commits")
	// ErrSetupFiles means a repository's setup cannot be planned from its
	// files (a manifest that does not parse, or names a path outside the
	// repository): the repository's to fix, and safe to tell it.
	ErrSetupFiles = errors.New("the setup cannot be planned from the repository's files")
	// ErrBaseGone means a commit (the one a task started from, say) is no
	// longer in the history of the branch that should have it.
	ErrBaseGone = errors.New("commit is not in the branch's history")
	// ErrNotGitHubs means a link points to a host that is not the
	// configured GitHub's own: nothing was asked of it.
	ErrNotGitHubs = errors.New("not on GitHub's own hosts")
	// ErrTooLarge means what was fetched is larger than the caller's
	// bound; only the bound and one byte more were read.
	ErrTooLarge = errors.New("larger than the bound")
	// ErrInvalid means GitHub refused what was sent as invalid (422
	// Unprocessable Entity): a review comment on a line it does not take,
	// say. Sending the same again cannot help; sending less may.
	ErrInvalid = errors.New("refused as invalid")
	// ErrNotAnImage means the bytes fetched are not a picture the model
	// can take (PNG, JPEG, GIF, WebP), whatever the server called them.
	ErrNotAnImage = errors.New("not an image")
)
