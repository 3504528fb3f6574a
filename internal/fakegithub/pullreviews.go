package fakegithub

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pullwright/pullwright/internal/difftest"
)

// PullReview is a review of a pull request as the fake stores it: posted
// through POST /repos/{o}/{r}/pulls/{n}/reviews (its line comments are
// stored as review comments, ReviewComments lists them).
type PullReview struct {
	ID         int64
	Author     string
	Body       string
	Event      string // as asked: COMMENT, APPROVE, REQUEST_CHANGES
	State      string // as GitHub answers: COMMENTED, APPROVED, CHANGES_REQUESTED
	CommitID   string
	CommentIDs []int64
	At         time.Time
}

type pullReview struct {
	PullReview
	repo string
	pr   int
}

// PullReviews returns the reviews of pull request pr of owner/repo, oldest
// first.
func (s *Server) PullReviews(owner, repo string, pr int) []PullReview {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PullReview
	for _, rv := range s.pullReviews[pullKey(repoKey(owner, repo), pr)] {
		out = append(out, rv.PullReview)
	}
	return out
}

// reviewThreadLine is one comment of a review as GitHub takes it.
type reviewThreadLine struct {
	Path      string  `json:"path"`
	Body      *string `json:"body"`
	Line      int     `json:"line"`
	Side      string  `json:"side"`
	StartLine int     `json:"start_line"`
	StartSide string  `json:"start_side"`
	Position  int     `json:"position"`
}

// createPullReview serves POST /repos/{o}/{r}/pulls/{n}/reviews. As on
// GitHub, the review is taken whole or refused whole: a comment whose line
// is not on the given side of a hunk of the pull request's diff at
// commit_id, or whose start_line is not in the same hunk before line, is
// refused with 422 and nothing is stored.
func (s *Server) createPullReview(w http.ResponseWriter, r *http.Request) {
	var in struct {
		CommitID string             `json:"commit_id"`
		Body     string             `json:"body"`
		Event    string             `json:"event"`
		Comments []reviewThreadLine `json:"comments"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	k := repoKey(owner, repo)
	s.mu.Lock()
	p, ok := s.pullLocked(w, r)
	if !ok {
		s.mu.Unlock()
		return
	}
	v := s.pullViewLocked(k, p)
	diffs := s.Diffs
	s.mu.Unlock()

	state := map[string]string{"COMMENT": "COMMENTED", "APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "": "PENDING"}[in.Event]
	switch {
	case state == "":
		validationFailed(w, "PullRequestReview", "event", "invalid", "")
		return
	case in.Event != "APPROVE" && in.Event != "" && strings.TrimSpace(in.Body) == "" && len(in.Comments) == 0:
		// GitHub: "Unprocessable Entity", Review Body can't be blank.
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"message": "Unprocessable Entity", "errors": []string{"Review Body can't be blank"},
			"documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request", "status": "422",
		})
		return
	}
	if len(in.Comments) > 0 {
		if diffs == nil {
			errorJSON(w, http.StatusNotImplemented, "fakegithub: set Server.Diffs to take reviews with comments")
			return
		}
		head := in.CommitID
		if head == "" {
			head = v.Head
			if !strings.EqualFold(v.HeadOwner+"/"+v.HeadRepo, owner+"/"+repo) {
				head = fmt.Sprintf("refs/pull/%d/head", v.Number)
			}
		}
		d, err := diffs(owner, repo, v.Base, head)
		if err != nil {
			errorJSON(w, http.StatusInternalServerError, "fakegithub: Diffs hook: "+err.Error())
			return
		}
		hunks := difftest.RightHunks(d)
		var errs []string
		for _, c := range in.Comments {
			errs = append(errs, threadErrors(hunks, c)...)
		}
		if len(errs) > 0 {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
				"message": "Unprocessable Entity", "errors": []string{joinErrors(errs)},
				"documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request", "status": "422",
			})
			return
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	commit := in.CommitID
	if commit == "" {
		commit = v.HeadSHA
	}
	s.nextID++
	rv := &pullReview{PullReview: PullReview{
		ID: s.nextID, Author: s.BotLogin(), Body: in.Body, Event: in.Event, State: state, CommitID: commit, At: s.commentTimeLocked(),
	}, repo: k, pr: p.Number}
	for _, c := range in.Comments {
		body := ""
		if c.Body != nil {
			body = *c.Body
		}
		rc := s.addReviewLocked(k, p.Number, ReviewComment{
			Author: s.BotLogin(), AuthorType: "Bot", Body: body, Path: c.Path,
			Line: c.Line, StartLine: c.StartLine, Side: c.Side, CommitID: commit,
		})
		rv.CommentIDs = append(rv.CommentIDs, rc.ID)
	}
	pk := pullKey(k, p.Number)
	if s.pullReviews == nil {
		s.pullReviews = map[string][]*pullReview{}
	}
	s.pullReviews[pk] = append(s.pullReviews[pk], rv)
	writeJSON(w, http.StatusOK, s.pullReviewJSONLocked(rv))
}

// listPullReviews serves GET /repos/{o}/{r}/pulls/{n}/reviews, oldest
// first, paged.
func (s *Server) listPullReviews(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pullLocked(w, r)
	if !ok {
		return
	}
	k := repoKey(r.PathValue("owner"), r.PathValue("repo"))
	out := []map[string]any{}
	for _, rv := range pageOf(w, r, s.pullReviews[pullKey(k, p.Number)]) {
		out = append(out, s.pullReviewJSONLocked(rv))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) pullReviewJSONLocked(rv *pullReview) map[string]any {
	owner, repo, _ := strings.Cut(rv.repo, "/")
	return map[string]any{
		"id":                 rv.ID,
		"node_id":            fmt.Sprintf("PRR_%d", rv.ID),
		"user":               s.userJSONLocked(rv.Author),
		"body":               rv.Body,
		"state":              rv.State,
		"commit_id":          rv.CommitID,
		"html_url":           fmt.Sprintf("%s/%s/%s/pull/%d#pullrequestreview-%d", HTMLBase, owner, repo, rv.pr, rv.ID),
		"pull_request_url":   fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, owner, repo, rv.pr),
		"submitted_at":       rv.At.UTC().Format(time.RFC3339),
		"author_association": "NONE",
	}
}

// threadErrors are GitHub's refusals of one review comment, in its words.
func threadErrors(hunks []difftest.Hunk, c reviewThreadLine) []string {
	if c.Position > 0 {
		return nil // the old way of placing a comment; the bot uses lines
	}
	if c.Side == "LEFT" || c.StartSide == "LEFT" {
		return []string{"fakegithub: LEFT side comments are not modelled"}
	}
	in := -1
	for i, h := range hunks {
		if h.Contains(c.Path, c.Line) {
			in = i
		}
	}
	if in < 0 {
		return []string{"Pull request review thread line must be part of the diff"}
	}
	if c.StartLine == 0 {
		return nil
	}
	var errs []string
	if c.StartLine >= c.Line {
		errs = append(errs, "Pull request review thread start line must precede the end line.")
	}
	if h := hunks[in]; !h.Contains(c.Path, c.StartLine) {
		errs = append(errs, "Pull request review thread start line must be part of the same hunk as the line.")
	}
	return errs
}

// joinErrors joins refusals as GitHub's message does: "a, b, and c".
func joinErrors(errs []string) string {
	switch len(errs) {
	case 1:
		return errs[0]
	case 2:
		return errs[0] + " and " + errs[1]
	}
	return strings.Join(errs[:len(errs)-1], ", ") + ", and " + errs[len(errs)-1]
}
