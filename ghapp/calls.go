package ghapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/go-github/v88/github"

	"github.com/pullwright/pullwright"
)

// MaxBodyChars is the longest comment or pull request body GitHub accepts, in
// Unicode code points (see FACTS.md §6: 65536 code points passes both the
// "characters" and the 262144-byte reading of the limit).
const MaxBodyChars = 65536

const truncatedNote = "\n\n---\n*This text was cut: it exceeded GitHub's 65536-character limit.*"

// Marker returns the hidden HTML comment that tags a bot comment:
// "<!-- pullwright:" + key + " -->". Characters that could end or confuse
// the HTML comment ('<', '>', line breaks) are replaced by '_'.
func Marker(key string) string {
	key = strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == '\r' {
			return '_'
		}
		return r
	}, key)
	return "<!-- pullwright:" + key + " -->"
}

// botTagged reports whether a comment by u with body is the bot's (login)
// and tagged with marker mk: the marker ends the body, where UpsertComment
// and ReplyInThread put it. A marker elsewhere is text the comment quotes
// (a file name from a fork, say) and tags nothing.
func botTagged(u *github.User, login, body, mk string) bool {
	return u.GetType() == "Bot" && strings.EqualFold(u.GetLogin(), login) &&
		strings.HasSuffix(strings.TrimRight(body, " \t\r\n"), mk)
}

// fitBody cuts body so that body+tail is at most MaxBodyChars code points,
// adding a visible note when it cuts.
func fitBody(body, tail string) string {
	if utf8.RuneCountInString(body)+utf8.RuneCountInString(tail) <= MaxBodyChars {
		return body + tail
	}
	keep := MaxBodyChars - utf8.RuneCountInString(truncatedNote) - utf8.RuneCountInString(tail)
	n := 0
	for i := range body {
		if n == keep {
			body = body[:i]
			break
		}
		n++
	}
	return body + truncatedNote + tail
}

// AddReaction adds a reaction ("+1", "eyes", "rocket", ...) to an issue
// comment. Adding one that already exists succeeds.
func (a *App) AddReaction(ctx context.Context, r pullwright.Repo, commentID int64, content string) error {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	return a.addReaction(ctx, inst, owner, repo, "comment", commentID, content, (*github.ReactionsService).CreateIssueCommentReaction)
}

// createReaction is go-github's call that adds a reaction to one kind of
// comment; the issue and review comment ones have the same shape.
type createReaction func(*github.ReactionsService, context.Context, string, string, int64, string) (*github.Reaction, *github.Response, error)

// addReaction adds content to comment commentID (of the kind what names,
// for the error) with create.
func (a *App) addReaction(ctx context.Context, inst int64, owner, repo, what string, commentID int64, content string, create createReaction) error {
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	err := func() error {
		gh, err := a.client(inst)
		if err != nil {
			return err
		}
		_, _, err = create(gh.Reactions, ctx, owner, repo, commentID, content)
		return err
	}()
	if err != nil {
		return fmt.Errorf("add reaction %q to %s %d in %s/%s: %w", content, what, commentID, owner, repo, err)
	}
	return nil
}

func posted(c *github.IssueComment) pullwright.Posted {
	return pullwright.Posted{ID: c.GetID(), URL: c.GetHTMLURL(), CreatedAt: c.GetCreatedAt().Time, UpdatedAt: c.GetUpdatedAt().Time}
}

// UpsertComment writes the bot's comment tagged with Marker(marker) on an
// issue or pull request and returns it as GitHub answered: its id, address
// and GitHub's times of it. Marker(marker) is appended to body on its own
// line; bodies too long for GitHub are cut with a note.
//
// With commentID != 0 that comment is edited; if it is gone (404) a comment
// is created instead. With commentID == 0 the issue's comments are searched
// for one written by this app that ends with the marker, and that one is
// edited; only if there is none is a comment created. So a retried step
// (even after a create whose answer was lost) edits instead of posting twice.
func (a *App) UpsertComment(ctx context.Context, r pullwright.Repo, issue int, marker string, commentID int64, body string) (pullwright.Posted, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	mk := Marker(marker)
	full := fitBody(strings.TrimRight(body, "\n"), "\n\n"+mk)
	gh, err := a.client(inst)
	if err != nil {
		return pullwright.Posted{}, fmt.Errorf("upsert comment on %s/%s#%d: %w", owner, repo, issue, err)
	}
	edit := func(id int64) (pullwright.Posted, error) {
		c, _, err := gh.Issues.EditComment(ctx, owner, repo, id, &github.IssueComment{Body: &full})
		if err != nil {
			return pullwright.Posted{}, err
		}
		return posted(c), nil
	}

	if commentID != 0 {
		p, err := edit(commentID)
		if err == nil {
			return p, nil
		}
		if StatusCode(err) != http.StatusNotFound {
			return pullwright.Posted{}, fmt.Errorf("edit comment %d on %s/%s#%d: %w", commentID, owner, repo, issue, err)
		}
		a.log.InfoContext(ctx, "github comment to edit is gone; creating a new one",
			"repo", owner+"/"+repo, "issue", issue, "comment_id", commentID)
	} else {
		id, err := a.findMarked(ctx, gh, owner, repo, issue, mk)
		if err != nil {
			return pullwright.Posted{}, fmt.Errorf("find comment %s on %s/%s#%d: %w", mk, owner, repo, issue, err)
		}
		if id != 0 {
			p, err := edit(id)
			if err != nil {
				return pullwright.Posted{}, fmt.Errorf("edit comment %d on %s/%s#%d: %w", id, owner, repo, issue, err)
			}
			return p, nil
		}
	}

	c, _, err := gh.Issues.CreateComment(ctx, owner, repo, issue, &github.IssueComment{Body: &full})
	if err != nil {
		return pullwright.Posted{}, fmt.Errorf("create comment on %s/%s#%d: %w", owner, repo, issue, err)
	}
	return posted(c), nil
}

// findMarked returns the id of the oldest comment on the issue written by this
// app's bot account and tagged with mk (botTagged), or 0.
func (a *App) findMarked(ctx context.Context, gh *github.Client, owner, repo string, issue int, mk string) (int64, error) {
	slug, err := a.appSlug(ctx)
	if err != nil {
		return 0, err
	}
	login := slug + "[bot]"
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: a.pageSize}}
	var id int64
	_, err = eachPage(&opts.ListOptions, func() (*github.Response, bool, error) {
		cs, resp, err := gh.Issues.ListComments(ctx, owner, repo, issue, opts)
		if err != nil {
			return nil, false, err
		}
		for _, c := range cs {
			if botTagged(c.GetUser(), login, c.GetBody(), mk) {
				id = c.GetID()
				return resp, false, nil
			}
		}
		return resp, true, nil
	})
	return id, err
}

// ReadComment reads an issue or pull request comment by id, as GitHub dates
// it; a deleted one (404) is pullwright.ErrGone.
func (a *App) ReadComment(ctx context.Context, r pullwright.Repo, id int64) (pullwright.Comment, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return pullwright.Comment{}, fmt.Errorf("get comment %d in %s/%s: %w", id, owner, repo, err)
	}
	c, _, err := gh.Issues.GetComment(ctx, owner, repo, id)
	if StatusCode(err) == http.StatusNotFound {
		return pullwright.Comment{}, fmt.Errorf("get comment %d in %s/%s: %w: %w", id, owner, repo, pullwright.ErrGone, err)
	}
	if err != nil {
		return pullwright.Comment{}, fmt.Errorf("get comment %d in %s/%s: %w", id, owner, repo, err)
	}
	return pullwright.Comment{
		ID:         c.GetID(),
		Author:     c.GetUser().GetLogin(),
		AuthorType: c.GetUser().GetType(),
		Body:       c.GetBody(),
		CreatedAt:  c.GetCreatedAt().Time,
		UpdatedAt:  c.GetUpdatedAt().Time,
	}, nil
}

// Issue returns an issue (or pull request) with its comments, oldest first.
// Only the newest 100 comments are returned: on a longer thread the oldest
// ones are left out (the first pages are not even fetched).
func (a *App) Issue(ctx context.Context, r pullwright.Repo, number int) (pullwright.Issue, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return pullwright.Issue{}, fmt.Errorf("get issue %s/%s#%d: %w", owner, repo, number, err)
	}
	is, _, err := gh.Issues.Get(ctx, owner, repo, number)
	if err != nil {
		return pullwright.Issue{}, fmt.Errorf("get issue %s/%s#%d: %w", owner, repo, number, err)
	}
	out := pullwright.Issue{
		Number: is.GetNumber(),
		Title:  is.GetTitle(),
		Body:   is.GetBody(),
		Locked: is.GetLocked(),
		IsPR:   is.IsPullRequest(),
		Author: is.GetUser().GetLogin(),
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	cs, err := a.newestComments(ctx, gh, owner, repo, number)
	if err != nil {
		return pullwright.Issue{}, fmt.Errorf("list comments of %s/%s#%d: %w", owner, repo, number, err)
	}
	for _, c := range cs {
		out.Comments = append(out.Comments, pullwright.Comment{
			ID:         c.GetID(),
			Author:     c.GetUser().GetLogin(),
			AuthorType: c.GetUser().GetType(),
			Body:       c.GetBody(),
			CreatedAt:  c.GetCreatedAt().Time,
		})
	}
	return out, nil
}

// newestComments returns the newest a.commentCap comments, oldest first. It
// reads page 1 to learn the last page, then only the pages that can hold the
// newest comments, following "next" links in case the thread grows meanwhile.
func (a *App) newestComments(ctx context.Context, gh *github.Client, owner, repo string, number int) ([]*github.IssueComment, error) {
	per := a.pageSize
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: per, Page: 1}}
	all, resp, err := gh.Issues.ListComments(ctx, owner, repo, number, opts)
	if err != nil {
		return nil, err
	}
	if resp.NextPage != 0 {
		start := 2
		if resp.LastPage != 0 {
			// The last page holds at least one comment; the newest cap-1
			// others fit in the ceil((cap-1)/per) pages before it.
			start = max(2, resp.LastPage-(a.commentCap-1+per-1)/per)
		}
		if start > 2 {
			all = nil
		}
		for page := start; page != 0; {
			opts.Page = page
			cs, resp, err := gh.Issues.ListComments(ctx, owner, repo, number, opts)
			if err != nil {
				return nil, err
			}
			all = append(all, cs...)
			page = resp.NextPage
		}
	}
	if len(all) > a.commentCap {
		all = all[len(all)-a.commentCap:]
	}
	return all, nil
}

func pullRequestOf(p *github.PullRequest, created bool) pullwright.PullRequest {
	return pullwright.PullRequest{
		Number: p.GetNumber(), URL: p.GetHTMLURL(), NodeID: p.GetNodeID(), Draft: p.GetDraft(), Created: created,
	}
}

// OpenPullRequest opens a pull request (a draft when pr.Draft),
// idempotently: if an open pull request from the same head exists, its title
// and body are updated and it is returned with Created=false (its draft state
// is left as it is and reported in Draft). Bodies too long for GitHub are cut
// with a note.
//
// The head may be in another repository ("owner:branch"), for example a
// pull request against a contributor's fork from a branch of the base
// repository. When GitHub refuses for lack of access (403 or 404: the
// installation does not cover the repository, "Resource not accessible by
// integration"), the error wraps pullwright.ErrNotPermitted.
func (a *App) OpenPullRequest(ctx context.Context, r pullwright.Repo, pr pullwright.NewPullRequest) (pullwright.PullRequest, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	out, err := a.openPullRequest(ctx, inst, owner, repo, pr)
	if refused(err) {
		err = fmt.Errorf("%w: %w", pullwright.ErrNotPermitted, err)
	}
	if err != nil {
		return pullwright.PullRequest{}, fmt.Errorf("open pull request %s → %s in %s/%s: %w", pr.Head, pr.Base, owner, repo, err)
	}
	return out, nil
}

func (a *App) openPullRequest(ctx context.Context, inst int64, owner, repo string, pr pullwright.NewPullRequest) (pullwright.PullRequest, error) {
	if pr.Title == "" || pr.Head == "" || pr.Base == "" {
		return pullwright.PullRequest{}, errors.New("title, head and base are required")
	}
	gh, err := a.client(inst)
	if err != nil {
		return pullwright.PullRequest{}, err
	}
	body := fitBody(pr.Body, "")
	head := pr.Head
	if !strings.Contains(head, ":") {
		head = owner + ":" + head
	}
	update := func() (pullwright.PullRequest, bool, error) {
		open, _, err := gh.PullRequests.List(ctx, owner, repo, &github.PullRequestListOptions{
			State: "open", Head: head, ListOptions: github.ListOptions{PerPage: 1},
		})
		if err != nil || len(open) == 0 {
			return pullwright.PullRequest{}, false, err
		}
		p, _, err := gh.PullRequests.Edit(ctx, owner, repo, open[0].GetNumber(), &github.PullRequest{
			Title: &pr.Title, Body: &body,
		})
		if err != nil {
			return pullwright.PullRequest{}, true, fmt.Errorf("update #%d: %w", open[0].GetNumber(), err)
		}
		return pullRequestOf(p, false), true, nil
	}

	if out, found, err := update(); found || err != nil {
		return out, err
	}
	p, _, err := gh.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
		Title: &pr.Title, Head: &pr.Head, Base: &pr.Base, Body: &body, Draft: &pr.Draft,
	})
	if StatusCode(err) == http.StatusUnprocessableEntity {
		// Someone (or an earlier attempt whose answer was lost) opened it meanwhile.
		if out, found, uerr := update(); found || uerr != nil {
			return out, uerr
		}
	}
	if err != nil {
		return pullwright.PullRequest{}, err
	}
	return pullRequestOf(p, true), nil
}

// UpdatePullRequest sets a pull request's title and body (PATCH). An empty
// title or body leaves that field as it is; a body too long for GitHub is cut
// with a note.
func (a *App) UpdatePullRequest(ctx context.Context, r pullwright.Repo, number int, title, body string) error {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	if title == "" && body == "" {
		return nil
	}
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	err := func() error {
		gh, err := a.client(inst)
		if err != nil {
			return err
		}
		var edit github.PullRequest
		if title != "" {
			edit.Title = &title
		}
		if body != "" {
			b := fitBody(body, "")
			edit.Body = &b
		}
		_, _, err = gh.PullRequests.Edit(ctx, owner, repo, number, &edit)
		return err
	}()
	if err != nil {
		return fmt.Errorf("update pull request %s/%s#%d: %w", owner, repo, number, err)
	}
	return nil
}

// Permission returns a user's role on a repository: "admin", "maintain",
// "write", "triage", "read" or "none". The role_name field is preferred when
// it is one of these (it tells maintain and triage apart); otherwise, for
// example with a custom organisation role, the legacy permission field is
// used. A 404 (not a collaborator, no such user) means "none".
//
// Answers are cached per installation, repository and user (compared case
// insensitively) for Config.PermissionTTL, at most a minute; errors are not.
func (a *App) Permission(ctx context.Context, r pullwright.Repo, user string) (string, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	key := answerKey{kind: "permission", inst: inst, scope: strings.ToLower(owner + "/" + repo), user: strings.ToLower(user)}
	if role, ok := a.answers.get(key); ok {
		return role, nil
	}
	asked := a.cfg.Now()
	role, err := a.permission(ctx, inst, owner, repo, user)
	if err != nil {
		return "", err
	}
	a.answers.put(key, role, asked)
	return role, nil
}

func (a *App) permission(ctx context.Context, inst int64, owner, repo, user string) (string, error) {
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return "", fmt.Errorf("permission of %s on %s/%s: %w", user, owner, repo, err)
	}
	lvl, _, err := gh.Repositories.GetPermissionLevel(ctx, owner, repo, user)
	if apiNotFound(err) {
		return "none", nil
	}
	if err != nil {
		return "", fmt.Errorf("permission of %s on %s/%s: %w", user, owner, repo, err)
	}
	switch r := lvl.GetRoleName(); r {
	case "admin", "maintain", "write", "triage", "read", "none":
		return r, nil
	}
	switch p := lvl.GetPermission(); p {
	case "admin", "write", "read", "none":
		return p, nil
	case "":
		return "", fmt.Errorf("permission of %s on %s/%s: GitHub returned no permission", user, owner, repo)
	default:
		return "", fmt.Errorf("permission of %s on %s/%s: unknown permission %q", user, owner, repo, p)
	}
}
