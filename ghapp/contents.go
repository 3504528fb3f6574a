package ghapp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-github/v88/github"

	"github.com/pullwright/pullwright"
)

// maxFileSize is the largest file File reads: the contents API inlines files
// up to about 1 MB and answers bigger ones with encoding "none" and no
// content. File refuses those instead of fetching them raw: the files
// Pullwright reads (its configuration) are small, and one that big is a
// mistake to report, not a megabyte to parse.
const maxFileSize = 1 << 20

// File returns the content of the file at path on ref (a branch, tag or
// commit SHA; empty means the repository's default branch) through the
// contents API, GET /repos/{owner}/{repo}/contents/{path}?ref=.
//
// The error wraps pullwright.ErrNoFile when the file, the ref or the repository does
// not exist. A directory, a submodule, or a symbolic link that does not lead
// to a regular file of the repository (GitHub follows the ones that do) is an
// error, and so is a file over 1 MiB. Errors name the operation:
// "read .github/pullwright.yml at main of o/r: …".
func (a *App) File(ctx context.Context, r pullwright.Repo, ref, path string) ([]byte, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	at := ref
	if at == "" {
		at = "the default branch"
	}
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	b, err := a.file(ctx, inst, owner, repo, ref, path)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s of %s/%s: %w", path, at, owner, repo, err)
	}
	return b, nil
}

func (a *App) file(ctx context.Context, inst int64, owner, repo, ref, path string) ([]byte, error) {
	// The contents API answers a directory listing for "" and for a path
	// ending in "/"; neither is a file.
	p := strings.Trim(path, "/")
	if p == "" {
		return nil, errors.New("empty file path")
	}
	gh, err := a.client(inst)
	if err != nil {
		return nil, err
	}
	fc, dir, _, err := gh.Repositories.GetContents(ctx, owner, repo, p, &github.RepositoryContentGetOptions{Ref: ref})
	if apiNotFound(err) {
		return nil, fmt.Errorf("%w: %w", notFound{pullwright.ErrNoFile}, err)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case dir != nil:
		return nil, fmt.Errorf("it is a directory: %w", pullwright.ErrNotAFile)
	case fc == nil:
		return nil, errors.New("GitHub answered no content")
	}
	switch t := fc.GetType(); t {
	case "file":
	case "symlink":
		return nil, fmt.Errorf("it is a symbolic link to %q, which is not a file of the repository: %w", fc.GetTarget(), pullwright.ErrNotAFile)
	case "submodule":
		return nil, fmt.Errorf("it is a submodule: %w", pullwright.ErrNotAFile)
	default:
		return nil, fmt.Errorf("it is a %q: %w", t, pullwright.ErrNotAFile)
	}
	if fc.GetEncoding() == "none" || fc.GetSize() > maxFileSize {
		return nil, fmt.Errorf("the file is %d bytes; files over 1 MiB are not read: %w", fc.GetSize(), pullwright.ErrNotAFile)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("decode content: %w", err)
	}
	if len(s) > maxFileSize {
		return nil, fmt.Errorf("the file is %d bytes; files over 1 MiB are not read: %w", len(s), pullwright.ErrNotAFile)
	}
	return []byte(s), nil
}

// TeamMember reports whether user is an active member of the team teamSlug
// of organisation org (GET /orgs/{org}/teams/{team_slug}/memberships/{user}).
// A pending membership (invited, not accepted) is not one, and a 404 (not a
// member, no such team or user) is false with a nil error.
//
// The app needs the organisation permission "Members: read"; without it
// GitHub answers 403, which is returned as an error, never as false.
// Answers are cached like Permission's: per installation, team and user,
// case-insensitively, for Config.PermissionTTL (at most a minute).
func (a *App) TeamMember(ctx context.Context, r pullwright.Repo, org, teamSlug, user string) (bool, error) {
	inst := r.InstallationID
	key := answerKey{kind: "team", inst: inst, scope: strings.ToLower(org + "/" + teamSlug), user: strings.ToLower(user)}
	if state, ok := a.answers.get(key); ok {
		return state == "active", nil
	}
	asked := a.cfg.Now()
	state, err := a.teamMembership(ctx, inst, org, teamSlug, user)
	if err != nil {
		return false, fmt.Errorf("membership of %s in team %s/%s: %w", user, org, teamSlug, err)
	}
	a.answers.put(key, state, asked)
	return state == "active", nil
}

// teamMembership returns the membership's state: "active", "pending", or ""
// when there is none.
func (a *App) teamMembership(ctx context.Context, inst int64, org, teamSlug, user string) (string, error) {
	if org == "" || teamSlug == "" || user == "" {
		return "", errors.New("organisation, team and user are required")
	}
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return "", err
	}
	m, _, err := gh.Teams.GetTeamMembershipBySlug(ctx, url.PathEscape(org), url.PathEscape(teamSlug), url.PathEscape(user))
	if apiNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return m.GetState(), nil
}

// notFound is GitHub's 404 as ghapp words it, "not found", standing for
// the vocabulary's error of the call that got it: pullwright.ErrNoFile
// for a file, pullwright.ErrGone for a deleted thread.
type notFound struct{ what error }

func (e notFound) Error() string { return "not found" }
func (e notFound) Unwrap() error { return e.what }
