package ghapp

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v88/github"

	"github.com/pullwright/pullwright"
)

// PostReview posts one review of pull request pr with event COMMENT on
// rv.CommitID: its body, tagged with marker so that BotReviews finds it
// again, and its line comments on the diff's right side. GitHub takes the
// review whole or refuses it whole: its 422 (a line not in the diff, say)
// wraps pullwright.ErrInvalid.
func (a *App) PostReview(ctx context.Context, r pullwright.Repo, pr int, marker string, rv pullwright.NewReview) (pullwright.PostedReview, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return pullwright.PostedReview{}, fmt.Errorf("post a review of %s/%s#%d: %w", owner, repo, pr, err)
	}
	body := fitBody(strings.TrimRight(rv.Body, "\n"), "\n\n"+Marker(marker))
	req := &github.PullRequestReviewRequest{
		CommitID: github.Ptr(rv.CommitID),
		Body:     github.Ptr(body),
		Event:    github.Ptr("COMMENT"),
	}
	for _, c := range rv.Comments {
		dc := &github.DraftReviewComment{
			Path: github.Ptr(c.Path), Body: github.Ptr(c.Body),
			Line: github.Ptr(c.Line), Side: github.Ptr("RIGHT"),
		}
		if c.StartLine > 0 && c.StartLine < c.Line {
			dc.StartLine, dc.StartSide = github.Ptr(c.StartLine), github.Ptr("RIGHT")
		}
		req.Comments = append(req.Comments, dc)
	}
	got, _, err := gh.PullRequests.CreateReview(ctx, owner, repo, pr, req)
	if StatusCode(err) == http.StatusUnprocessableEntity {
		err = fmt.Errorf("%w: %w", pullwright.ErrInvalid, err)
	}
	if err != nil {
		return pullwright.PostedReview{}, fmt.Errorf("post a review of %s/%s#%d: %w", owner, repo, pr, err)
	}
	return pullwright.PostedReview{ID: got.GetID(), CommitID: got.GetCommitID(), Marker: marker, URL: got.GetHTMLURL()}, nil
}

// BotReviews lists the reviews of pull request pr that the bot posted,
// oldest first, each with the key of the marker that ends its body.
func (a *App) BotReviews(ctx context.Context, r pullwright.Repo, pr int) ([]pullwright.PostedReview, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return nil, fmt.Errorf("list the reviews of %s/%s#%d: %w", owner, repo, pr, err)
	}
	slug, err := a.appSlug(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the reviews of %s/%s#%d: %w", owner, repo, pr, err)
	}
	login := slug + "[bot]"
	var out []pullwright.PostedReview
	opts := &github.ListOptions{PerPage: a.pageSize}
	_, err = eachPage(opts, func() (*github.Response, bool, error) {
		rs, resp, err := gh.PullRequests.ListReviews(ctx, owner, repo, pr, opts)
		if err != nil {
			return nil, false, err
		}
		for _, rv := range rs {
			u := rv.GetUser()
			if u.GetType() != "Bot" || !strings.EqualFold(u.GetLogin(), login) {
				continue
			}
			out = append(out, pullwright.PostedReview{ID: rv.GetID(), CommitID: rv.GetCommitID(), Marker: markerKey(rv.GetBody()), URL: rv.GetHTMLURL()})
		}
		return resp, true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the reviews of %s/%s#%d: %w", owner, repo, pr, err)
	}
	return out, nil
}

// markerKey is the key of the Marker that ends body, "" if none does.
func markerKey(body string) string {
	body = strings.TrimRight(body, " \t\r\n")
	const open, end = "<!-- pullwright:", " -->"
	if !strings.HasSuffix(body, end) {
		return ""
	}
	i := strings.LastIndex(body, open)
	if i < 0 {
		return ""
	}
	key := body[i+len(open) : len(body)-len(end)]
	if strings.ContainsAny(key, "<>\n") {
		return ""
	}
	return key
}
