package ghapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/go-github/v88/github"

	"github.com/pullwright/pullwright"
)

// refused reports whether GitHub answered the API call itself with 403 or
// 404. Rate-limit 403s are other error types (and retried); a 404 while
// minting the token is ghinstallation's, not an *github.ErrorResponse.
func refused(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		return false
	}
	return er.Response.StatusCode == http.StatusForbidden || er.Response.StatusCode == http.StatusNotFound
}

// PullRequest reads pull request number of owner/repo
// (GET /repos/{o}/{r}/pulls/{n}).
func (a *App) PullRequest(ctx context.Context, r pullwright.Repo, number int) (pullwright.Pull, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return pullwright.Pull{}, fmt.Errorf("get pull request %s/%s#%d: %w", owner, repo, number, err)
	}
	p, _, err := gh.PullRequests.Get(ctx, owner, repo, number)
	if err != nil {
		return pullwright.Pull{}, fmt.Errorf("get pull request %s/%s#%d: %w", owner, repo, number, err)
	}
	return pullOf(p), nil
}

func pullOf(p *github.PullRequest) pullwright.Pull {
	head, base := p.GetHead(), p.GetBase()
	out := pullwright.Pull{
		Number: p.GetNumber(), URL: p.GetHTMLURL(), NodeID: p.GetNodeID(),
		Title: p.GetTitle(), Body: p.GetBody(), Author: p.GetUser().GetLogin(),
		State: p.GetState(), Merged: p.GetMerged(), Locked: p.GetLocked(), Draft: p.GetDraft(),
		HeadRef: head.GetRef(), HeadSHA: head.GetSHA(),
		HeadRepo: head.GetRepo().GetFullName(), HeadCloneURL: head.GetRepo().GetCloneURL(),
		BaseRef: base.GetRef(), BaseSHA: base.GetSHA(), BaseRepo: base.GetRepo().GetFullName(),
		MaintainerCanModify: p.GetMaintainerCanModify(),
	}
	out.Fork = !strings.EqualFold(out.HeadRepo, out.BaseRepo)
	return out
}

// maxDiffBytes bounds what PullRequestDiff reads when its caller sets no
// smaller bound.
const maxDiffBytes = 10 << 20

// PullRequestDiff returns pull request number's diff against its base, as
// GitHub renders it (the diff media type of GET /repos/{o}/{r}/pulls/{n}),
// cut to at most max bytes (max <= 0: 10 MiB) at the end of a line, with
// truncated set when it was cut. GitHub refuses to render a diff that is
// too large (406, or 422 on some servers); that is "", true and no error:
// the caller can only go on without the diff.
//
// The answer is read through a limit instead of go-github's GetRaw, which
// buffers the whole body: a diff GitHub renders can be many megabytes.
func (a *App) PullRequestDiff(ctx context.Context, r pullwright.Repo, number, max int) (diff string, truncated bool, err error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	if max <= 0 || max > maxDiffBytes {
		max = maxDiffBytes
	}
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	diff, truncated, err = a.pullRequestDiff(ctx, inst, owner, repo, number, max)
	if err != nil {
		return "", false, fmt.Errorf("get diff of pull request %s/%s#%d: %w", owner, repo, number, err)
	}
	return diff, truncated, nil
}

func (a *App) pullRequestDiff(ctx context.Context, inst int64, owner, repo string, number, max int) (string, bool, error) {
	gh, err := a.client(inst)
	if err != nil {
		return "", false, err
	}
	req, err := gh.NewRequest(ctx, http.MethodGet, fmt.Sprintf("repos/%s/%s/pulls/%d", owner, repo, number), nil)
	if err != nil {
		return "", false, err
	}
	req.Header.Set("Accept", "application/vnd.github.diff")
	resp, err := gh.BareDo(req)
	if s := StatusCode(err); s == http.StatusNotAcceptable || s == http.StatusUnprocessableEntity {
		a.log.InfoContext(ctx, "github will not render the pull request's diff; going on without it",
			"repo", owner+"/"+repo, "issue", number, "status", s)
		return "", true, nil
	}
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
	if err != nil {
		return "", false, fmt.Errorf("read: %w", err)
	}
	if len(b) <= max {
		return string(b), false, nil
	}
	return cutDiff(b[:max]), true, nil
}

// cutDiff ends b after its last complete line; a first line longer than b
// is cut at a character boundary instead, so that something is left.
func cutDiff(b []byte) string {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return string(b[:i+1])
		}
	}
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return string(b)
}

// maxReviewComments bounds the review comments ReviewThreads and
// ReplyInThread read (30 pages of 100): a pull request with more is
// pathological, and the oldest threads are the ones kept.
const maxReviewComments = 3000

// reviewComments lists a pull request's review comments, oldest first, at
// most maxReviewComments of them (cut says when there were more).
func (a *App) reviewComments(ctx context.Context, gh *github.Client, owner, repo string, number int) (all []*github.PullRequestComment, cut bool, err error) {
	opts := &github.PullRequestListCommentsOptions{
		Sort: "created", Direction: "asc", ListOptions: github.ListOptions{PerPage: a.pageSize},
	}
	rest, err := eachPage(&opts.ListOptions, func() (*github.Response, bool, error) {
		cs, resp, err := gh.PullRequests.ListComments(ctx, owner, repo, number, opts)
		if err != nil {
			return nil, false, err
		}
		all = append(all, cs...)
		return resp, len(all) < maxReviewComments, nil
	})
	if err != nil {
		return nil, false, err
	}
	if len(all) > maxReviewComments {
		return all[:maxReviewComments], true, nil
	}
	return all, rest, nil
}

func reviewCommentOf(c *github.PullRequestComment) pullwright.ReviewComment {
	return pullwright.ReviewComment{
		ID: c.GetID(), InReplyTo: c.GetInReplyTo(),
		Author: c.GetUser().GetLogin(), AuthorType: c.GetUser().GetType(),
		Body: c.GetBody(), Path: c.GetPath(),
		Line: c.GetLine(), StartLine: c.GetStartLine(), OriginalLine: c.GetOriginalLine(),
		Side: c.GetSide(), DiffHunk: c.GetDiffHunk(), CommitID: c.GetCommitID(),
		URL: c.GetHTMLURL(), CreatedAt: c.GetCreatedAt().Time,
	}
}

// ReviewThreads returns the review threads of pull request number, in the
// order their first comments were made, each with its replies oldest first.
//
// The comments come from REST (GET /repos/{o}/{r}/pulls/{n}/comments, all
// pages, at most 3000 comments): a reply's in_reply_to_id names its
// thread's first comment, and a first comment whose line is null no longer
// applies to the diff (Outdated). REST does not say whether a conversation
// was resolved; one GraphQL query (reviewThreads, paginated) does. If that
// query fails, the threads are returned anyway, all with Resolved false,
// and a warning is logged: a resolved thread shown as open costs the agent
// a look at a settled remark, while failing here would stop the whole task
// for want of a detail.
func (a *App) ReviewThreads(ctx context.Context, r pullwright.Repo, number int) ([]pullwright.ReviewThread, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return nil, fmt.Errorf("list review threads of %s/%s#%d: %w", owner, repo, number, err)
	}
	cs, cut, err := a.reviewComments(ctx, gh, owner, repo, number)
	if err != nil {
		return nil, fmt.Errorf("list review comments of %s/%s#%d: %w", owner, repo, number, err)
	}
	if cut {
		a.log.WarnContext(ctx, "pull request has more review comments than are read; the newest are left out",
			"repo", owner+"/"+repo, "issue", number, "read", maxReviewComments)
	}
	threads := groupThreads(cs)
	if len(threads) == 0 {
		return nil, nil
	}
	resolved, err := a.resolvedThreads(ctx, gh, owner, repo, number)
	if err != nil {
		a.log.WarnContext(ctx, "could not learn which review threads are resolved; treating all as open",
			"repo", owner+"/"+repo, "issue", number, "err", err)
		return threads, nil
	}
	for i := range threads {
		threads[i].Resolved = resolved[threads[i].Comments[0].ID]
	}
	return threads, nil
}

// groupThreads groups comments (oldest first) into threads by their first
// comment. A reply whose first comment is not among cs (deleted, or past the
// bound) starts a thread of its own rather than being dropped.
func groupThreads(cs []*github.PullRequestComment) []pullwright.ReviewThread {
	byID := map[int64]*github.PullRequestComment{}
	for _, c := range cs {
		byID[c.GetID()] = c
	}
	// rootOf follows in_reply_to_id to the first comment, in case GitHub
	// ever names a reply instead; seen guards against a cycle.
	rootOf := func(c *github.PullRequestComment) int64 {
		seen := map[int64]bool{}
		for c.GetInReplyTo() != 0 && !seen[c.GetID()] {
			seen[c.GetID()] = true
			parent, ok := byID[c.GetInReplyTo()]
			if !ok {
				return c.GetInReplyTo()
			}
			c = parent
		}
		return c.GetID()
	}
	var threads []pullwright.ReviewThread
	index := map[int64]int{}
	for _, c := range cs {
		root := rootOf(c)
		i, ok := index[root]
		if !ok {
			i = len(threads)
			index[root] = i
			threads = append(threads, pullwright.ReviewThread{Outdated: c.Line == nil})
		}
		threads[i].Comments = append(threads[i].Comments, reviewCommentOf(c))
	}
	return threads
}

const reviewThreadsQuery = `query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes {
          isResolved
          isOutdated
          comments(first: 1) { nodes { databaseId } }
        }
      }
    }
  }
}`

// maxThreadPages bounds the GraphQL pages read: as many threads as
// maxReviewComments could start.
const maxThreadPages = maxReviewComments / 100

// resolvedThreads returns the first-comment ids of the pull request's
// resolved review threads.
func (a *App) resolvedThreads(ctx context.Context, gh *github.Client, owner, repo string, number int) (map[int64]bool, error) {
	resolved := map[int64]bool{}
	var cursor *string
	for range maxThreadPages {
		var out struct {
			Repository *struct {
				PullRequest *struct {
					ReviewThreads struct {
						PageInfo struct {
							HasNextPage bool    `json:"hasNextPage"`
							EndCursor   *string `json:"endCursor"`
						} `json:"pageInfo"`
						Nodes []struct {
							IsResolved bool `json:"isResolved"`
							Comments   struct {
								Nodes []struct {
									DatabaseID int64 `json:"databaseId"`
								} `json:"nodes"`
							} `json:"comments"`
						} `json:"nodes"`
					} `json:"reviewThreads"`
				} `json:"pullRequest"`
			} `json:"repository"`
		}
		vars := map[string]any{"owner": owner, "name": repo, "number": number, "cursor": cursor}
		if err := a.graphQL(ctx, gh, reviewThreadsQuery, vars, &out); err != nil {
			return nil, fmt.Errorf("reviewThreads: %w", err)
		}
		if out.Repository == nil || out.Repository.PullRequest == nil {
			return nil, errors.New("reviewThreads: GitHub returned no pull request")
		}
		rt := out.Repository.PullRequest.ReviewThreads
		for _, n := range rt.Nodes {
			if n.IsResolved && len(n.Comments.Nodes) > 0 {
				resolved[n.Comments.Nodes[0].DatabaseID] = true
			}
		}
		if !rt.PageInfo.HasNextPage || rt.PageInfo.EndCursor == nil {
			return resolved, nil
		}
		cursor = rt.PageInfo.EndCursor
	}
	return resolved, nil
}

// ReplyInThread writes the bot's reply tagged with Marker(marker) in the
// review thread whose first comment is rootID, on pull request pr, and
// returns the reply's id. Marker(marker) is appended to body on its own
// line; bodies too long for GitHub are cut with a note.
//
// Like UpsertComment it is idempotent: if the thread already has a reply by
// this app ending with the marker, that reply is edited
// (PATCH /repos/{o}/{r}/pulls/comments/{id}); only otherwise is one created
// (POST /repos/{o}/{r}/pulls/{pr}/comments/{rootID}/replies). So a retried
// step, even after a create whose answer was lost, does not reply twice.
// When the thread's first comment no longer exists, the error wraps
// pullwright.ErrGone.
func (a *App) ReplyInThread(ctx context.Context, r pullwright.Repo, pr int, rootID int64, marker, body string) (int64, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	mk := Marker(marker)
	full := fitBody(strings.TrimRight(body, "\n"), "\n\n"+mk)
	gh, err := a.client(inst)
	if err != nil {
		return 0, fmt.Errorf("reply in review thread %d of %s/%s#%d: %w", rootID, owner, repo, pr, err)
	}
	id, err := a.findMarkedReply(ctx, gh, owner, repo, pr, rootID, mk)
	if err != nil {
		return 0, fmt.Errorf("find reply %s in review thread %d of %s/%s#%d: %w", mk, rootID, owner, repo, pr, err)
	}
	if id != 0 {
		c, _, err := gh.PullRequests.EditComment(ctx, owner, repo, id, &github.PullRequestComment{Body: &full})
		if err != nil {
			return 0, fmt.Errorf("edit review comment %d of %s/%s#%d: %w", id, owner, repo, pr, err)
		}
		return c.GetID(), nil
	}
	// The dedicated replies endpoint, rather than a create with
	// in_reply_to: it refuses a rootID that is not a thread's first
	// comment instead of silently starting elsewhere.
	req, err := gh.NewRequest(ctx, http.MethodPost,
		fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", owner, repo, pr, rootID),
		map[string]string{"body": full})
	if err != nil {
		return 0, fmt.Errorf("reply in review thread %d of %s/%s#%d: %w", rootID, owner, repo, pr, err)
	}
	var c github.PullRequestComment
	if _, err := gh.Do(req, &c); err != nil {
		if StatusCode(err) == http.StatusNotFound {
			// The thread's first comment was deleted (or never was one).
			err = fmt.Errorf("%w: %w", notFound{pullwright.ErrGone}, err)
		}
		return 0, fmt.Errorf("reply in review thread %d of %s/%s#%d: %w", rootID, owner, repo, pr, err)
	}
	return c.GetID(), nil
}

// findMarkedReply returns the id of the oldest reply to rootID written by
// this app's bot account and tagged with mk (botTagged), or 0.
func (a *App) findMarkedReply(ctx context.Context, gh *github.Client, owner, repo string, pr int, rootID int64, mk string) (int64, error) {
	slug, err := a.appSlug(ctx)
	if err != nil {
		return 0, err
	}
	login := slug + "[bot]"
	cs, _, err := a.reviewComments(ctx, gh, owner, repo, pr)
	if err != nil {
		return 0, err
	}
	for _, c := range cs {
		if c.GetInReplyTo() == rootID && botTagged(c.GetUser(), login, c.GetBody(), mk) {
			return c.GetID(), nil
		}
	}
	return 0, nil
}

// AddReviewReaction adds a reaction ("+1", "eyes", "rocket", ...) to a
// review (line) comment. Adding one that already exists succeeds.
func (a *App) AddReviewReaction(ctx context.Context, r pullwright.Repo, commentID int64, content string) error {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	return a.addReaction(ctx, inst, owner, repo, "review comment", commentID, content, (*github.ReactionsService).CreatePullRequestCommentReaction)
}
