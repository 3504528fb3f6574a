package fakegithub

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ReviewComment is a review (line) comment of a pull request, as seeded
// with AddReviewComment and as the fake currently stores it.
type ReviewComment struct {
	ID         int64  // set by the fake
	Author     string // login; defaults to "octocat"
	AuthorType string // "User" or "Bot"; set by the fake
	Body       string
	Path       string
	// Line and StartLine (a range) are the commented lines of the file.
	// The answer's line is null when Outdated (original_line keeps Line).
	Line, StartLine int
	Side            string // "RIGHT" (default) or "LEFT"
	DiffHunk        string
	CommitID        string
	// InReplyTo is the thread's first comment for a reply, 0 for the
	// first comment. A seeded reply takes Path, Line, StartLine, Side,
	// DiffHunk, CommitID and Outdated from it when they are not given.
	InReplyTo int64
	// Outdated: the commented line is no longer in the diff.
	Outdated  bool
	Edits     int // successful PATCHes
	CreatedAt time.Time
}

type reviewComment struct {
	ReviewComment
	repo   string // repo key
	pr     int
	update time.Time
}

// AddReviewComment seeds a review comment on pull request pr of owner/repo
// and returns its id. Authors ending in "[bot]" get type "Bot".
func (s *Server) AddReviewComment(owner, repo string, pr int, c ReviewComment) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	if s.pullByNumberLocked(k, pr) == nil {
		panic(fmt.Sprintf("fakegithub: AddReviewComment: no pull request %s#%d", k, pr))
	}
	if c.Author == "" {
		c.Author = "octocat"
	}
	c.AuthorType = "User"
	if strings.HasSuffix(c.Author, "[bot]") {
		c.AuthorType = "Bot"
	} else {
		s.userLocked(c.Author)
	}
	if c.InReplyTo != 0 {
		root := s.review[c.InReplyTo]
		if root == nil || root.repo != k || root.pr != pr || root.InReplyTo != 0 {
			panic(fmt.Sprintf("fakegithub: AddReviewComment: %d is not the first comment of a thread of %s#%d", c.InReplyTo, k, pr))
		}
		inherit(&c, root.ReviewComment)
	}
	return s.addReviewLocked(k, pr, c).ID
}

// inherit fills what a reply shares with its thread's first comment.
func inherit(c *ReviewComment, root ReviewComment) {
	if c.Path == "" {
		c.Path = root.Path
	}
	if c.Line == 0 {
		c.Line, c.StartLine = root.Line, root.StartLine
	}
	if c.Side == "" {
		c.Side = root.Side
	}
	if c.DiffHunk == "" {
		c.DiffHunk = root.DiffHunk
	}
	if c.CommitID == "" {
		c.CommitID = root.CommitID
	}
	c.Outdated = c.Outdated || root.Outdated
}

func (s *Server) addReviewLocked(k string, pr int, c ReviewComment) *reviewComment {
	if c.Side == "" {
		c.Side = "RIGHT"
	}
	s.nextID++
	now := s.commentTimeLocked()
	c.ID, c.CreatedAt, c.Edits = s.nextID, now, 0
	rc := &reviewComment{ReviewComment: c, repo: k, pr: pr, update: now}
	s.review[c.ID] = rc
	pk := pullKey(k, pr)
	s.reviewOrder[pk] = append(s.reviewOrder[pk], c.ID)
	return rc
}

// ReviewComments returns the review comments of pull request pr of
// owner/repo, oldest first, replies included.
func (s *Server) ReviewComments(owner, repo string, pr int) []ReviewComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ReviewComment
	for _, id := range s.reviewOrder[pullKey(repoKey(owner, repo), pr)] {
		out = append(out, s.review[id].ReviewComment)
	}
	return out
}

// ReviewReactions returns the reaction contents on a review comment, in
// creation order.
func (s *Server) ReviewReactions(owner, repo string, commentID int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.review[commentID]
	if c == nil || c.repo != repoKey(owner, repo) {
		return nil
	}
	return s.reactionContentsLocked(commentID)
}

// ResolveThread marks the review thread whose first comment is rootID
// resolved, as a user clicking "Resolve conversation" does. Only GraphQL
// shows it (reviewThreads { isResolved }); REST has no such field.
func (s *Server) ResolveThread(owner, repo string, pr int, rootID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.review[rootID]
	if c == nil || c.repo != repoKey(owner, repo) || c.pr != pr || c.InReplyTo != 0 {
		panic(fmt.Sprintf("fakegithub: ResolveThread: %d is not the first comment of a thread of %s#%d", rootID, repoKey(owner, repo), pr))
	}
	s.resolved[rootID] = true
}

// DeleteReviewComment deletes review comment id of pull request pr of
// owner/repo, as its author can on GitHub: it is gone from the list, and a
// reply to it, an edit or a reaction is answered 404. Its replies stay,
// as GitHub keeps them.
func (s *Server) DeleteReviewComment(owner, repo string, pr int, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	c := s.review[id]
	if c == nil || c.repo != k || c.pr != pr {
		panic(fmt.Sprintf("fakegithub: DeleteReviewComment: no review comment %d on %s#%d", id, k, pr))
	}
	delete(s.review, id)
	pk := pullKey(k, pr)
	s.reviewOrder[pk] = slices.DeleteFunc(s.reviewOrder[pk], func(x int64) bool { return x == id })
}

func (s *Server) reviewJSONLocked(c *reviewComment) map[string]any {
	owner, repo, _ := strings.Cut(c.repo, "/")
	orNull := func(n int) any {
		if n == 0 {
			return nil
		}
		return n
	}
	line, start := orNull(c.Line), orNull(c.StartLine)
	if c.Outdated {
		line, start = nil, nil
	}
	var startSide any
	if c.StartLine != 0 {
		startSide = c.Side
	}
	out := map[string]any{
		"id":                     c.ID,
		"node_id":                fmt.Sprintf("PRRC_%d", c.ID),
		"url":                    fmt.Sprintf("%s/repos/%s/%s/pulls/comments/%d", s.URL, owner, repo, c.ID),
		"html_url":               fmt.Sprintf("%s/%s/%s/pull/%d#discussion_r%d", HTMLBase, owner, repo, c.pr, c.ID),
		"pull_request_url":       fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, owner, repo, c.pr),
		"pull_request_review_id": c.ID + 7000000,
		"user":                   s.userJSONLocked(c.Author),
		"body":                   c.Body,
		"path":                   c.Path,
		"line":                   line,
		"start_line":             start,
		"original_line":          orNull(c.Line),
		"original_start_line":    orNull(c.StartLine),
		"side":                   c.Side,
		"start_side":             startSide,
		"diff_hunk":              c.DiffHunk,
		"commit_id":              c.CommitID,
		"original_commit_id":     c.CommitID,
		"subject_type":           "line",
		"created_at":             c.CreatedAt.Format(time.RFC3339),
		"updated_at":             c.update.Format(time.RFC3339),
		// GitHub sets it for comments an app made through a user's token,
		// not for its own bot's.
		"performed_via_github_app": nil,
	}
	if c.InReplyTo != 0 {
		out["in_reply_to_id"] = c.InReplyTo
	}
	return out
}

// listReviewComments serves GET /repos/{o}/{r}/pulls/{n}/comments, oldest
// first, paginated like listComments.
func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pullLocked(w, r)
	if !ok {
		return
	}
	ids := s.reviewOrder[pullKey(repoKey(r.PathValue("owner"), r.PathValue("repo")), p.Number)]
	out := []map[string]any{}
	for _, id := range pageOf(w, r, ids) {
		out = append(out, s.reviewJSONLocked(s.review[id]))
	}
	writeJSON(w, http.StatusOK, out)
}

// reviewLocked finds the review comment {id} of the request's repository
// (and of pr, unless 0), or answers 404.
func (s *Server) reviewLocked(w http.ResponseWriter, r *http.Request, pr int) (*reviewComment, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	c := s.review[id]
	if err != nil || c == nil || c.repo != repoKey(r.PathValue("owner"), r.PathValue("repo")) || (pr != 0 && c.pr != pr) {
		notFound(w)
		return nil, false
	}
	return c, true
}

// replyLocked adds the app's reply to the thread of root, which must be a
// thread's first comment: GitHub does not take replies to replies.
func (s *Server) replyLocked(w http.ResponseWriter, root *reviewComment, body *string) {
	if root.InReplyTo != 0 {
		validationFailed(w, "PullRequestReviewComment", "in_reply_to", "custom",
			fmt.Sprintf("comment %d is a reply; reply to the first comment of its thread (%d)", root.ID, root.InReplyTo))
		return
	}
	if !checkBody(w, "PullRequestReviewComment", body, true) {
		return
	}
	c := ReviewComment{Author: s.BotLogin(), AuthorType: "Bot", Body: *body, InReplyTo: root.ID}
	inherit(&c, root.ReviewComment)
	rc := s.addReviewLocked(root.repo, root.pr, c)
	writeJSON(w, http.StatusCreated, s.reviewJSONLocked(rc))
}

// createReviewReply serves POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies.
func (s *Server) createReviewReply(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body *string `json:"body"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pullLocked(w, r)
	if !ok {
		return
	}
	root, ok := s.reviewLocked(w, r, p.Number)
	if !ok {
		return
	}
	s.replyLocked(w, root, in.Body)
}

// createReviewComment serves POST /repos/{o}/{r}/pulls/{n}/comments: a reply
// when in_reply_to is given (everything but body is then ignored, as on
// GitHub), else a new comment by the app on a line of the diff.
func (s *Server) createReviewComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body      *string `json:"body"`
		InReplyTo int64   `json:"in_reply_to"`
		Path      string  `json:"path"`
		Line      int     `json:"line"`
		StartLine int     `json:"start_line"`
		Side      string  `json:"side"`
		CommitID  string  `json:"commit_id"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pullLocked(w, r)
	if !ok {
		return
	}
	k := repoKey(r.PathValue("owner"), r.PathValue("repo"))
	if in.InReplyTo != 0 {
		root := s.review[in.InReplyTo]
		if root == nil || root.repo != k || root.pr != p.Number {
			notFound(w)
			return
		}
		s.replyLocked(w, root, in.Body)
		return
	}
	switch {
	case in.CommitID == "":
		validationFailed(w, "PullRequestReviewComment", "commit_id", "missing_field", "")
		return
	case in.Path == "":
		validationFailed(w, "PullRequestReviewComment", "path", "missing_field", "")
		return
	case in.Line <= 0:
		validationFailed(w, "PullRequestReviewComment", "line", "missing_field", "")
		return
	}
	if !checkBody(w, "PullRequestReviewComment", in.Body, true) {
		return
	}
	rc := s.addReviewLocked(k, p.Number, ReviewComment{
		Author: s.BotLogin(), AuthorType: "Bot", Body: *in.Body, Path: in.Path,
		Line: in.Line, StartLine: in.StartLine, Side: in.Side, CommitID: in.CommitID,
	})
	writeJSON(w, http.StatusCreated, s.reviewJSONLocked(rc))
}

// editReviewComment serves PATCH /repos/{o}/{r}/pulls/comments/{id}.
func (s *Server) editReviewComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body *string `json:"body"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.reviewLocked(w, r, 0)
	if !ok {
		return
	}
	if !checkBody(w, "PullRequestReviewComment", in.Body, true) {
		return
	}
	c.Body = *in.Body
	c.Edits++
	c.update = s.commentTimeLocked()
	writeJSON(w, http.StatusOK, s.reviewJSONLocked(c))
}

// createReviewReaction serves POST /repos/{o}/{r}/pulls/comments/{id}/reactions.
func (s *Server) createReviewReaction(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content string `json:"content"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.reviewLocked(w, r, 0)
	if !ok {
		return
	}
	s.reactLocked(w, c.ID, in.Content)
}
