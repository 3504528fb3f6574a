package tasktest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/difftest"
	"github.com/pullwright/pullwright/internal/testclock"
)

// IssueComment is a comment the bot wrote on an issue or pull request.
type IssueComment struct {
	ID    int64
	Issue int
	// Marker is the hidden tag UpsertComment found it by; Body ends with
	// it, as ghapp writes it.
	Marker               string
	Body                 string
	CreatedAt, UpdatedAt time.Time
	Edits                int
}

// Text is the body without the trailing marker.
func (c IssueComment) Text() string {
	return strings.TrimSuffix(c.Body, "\n\n"+Marker(c.Marker))
}

// Reaction is a reaction the bot put on a comment; Review is true for a
// review (line) comment.
type Reaction struct {
	CommentID int64
	Content   string
	Review    bool
}

// Pull is a pull request the bot opened (or one a test put there).
type Pull struct {
	Number      int
	Repo        string // owner/name it was opened in
	Head, Base  string // Head as "owner:branch"
	Title, Body string
	Draft       bool
	Open        bool
}

// GitHub is a stateful fake of task.GitHub. Fill the exported maps before
// the test; read the recorded fields after it (under no lock: the Flow has
// returned by then).
type GitHub struct {
	faults
	mu sync.Mutex
	// Clock is GitHub's clock, which dates comments (whole seconds).
	Clock *testclock.Clock
	Bot   pullwright.Identity
	// Roles maps a login (any case) to its permission; missing is "none".
	Roles map[string]string
	// Teams maps "org/team" to its members.
	Teams map[string][]string
	// Files maps ref, then path, to content.
	Files   map[string]map[string]string
	Issues  map[int]pullwright.Issue
	Pulls   map[int]pullwright.Pull
	Diffs   map[int]string
	Threads map[int][]pullwright.ReviewThread
	// Forbidden are the repositories ("owner/name") where opening a pull
	// request is refused with pullwright.ErrNotPermitted.
	Forbidden []string
	// Checks are the check runs of a commit, by SHA, as ghapp lists them
	// (failing or not: FailingChecks keeps the failing ones, like ghapp).
	// Annotations are a check run's, by its id. Logs are a job's log, by
	// its id; a job without one answers pullwright.ErrGone (expired), and
	// LogErrs answer a job's log with an error instead (ErrNotPermitted for
	// an app without actions: read).
	Checks      map[string][]pullwright.CheckFailure
	Annotations map[int64][]pullwright.CheckAnnotation
	Logs        map[int64]string
	LogErrs     map[int64]error

	Comments  []*IssueComment
	Reactions []Reaction
	// Reviews are the reviews posted (PostReview), by pull request,
	// oldest first; seed one to stand for an earlier review.
	Reviews        map[int][]Review
	Opened         []*Pull
	CheckRuns      map[int64]*pullwright.CheckRun
	CheckRunWrites []pullwright.CheckRun
	// HeldRuns is how many runs of each name every commit already holds
	// when the bot first creates one there (other requests', answered
	// long ago): a create that looks for its run by external id must not
	// take one of them for its own.
	HeldRuns int
	// LoseCheckRunCreates is how many of the next creates are made but
	// answered with an error, as when the answer is lost or the bot stops
	// before saving the id.
	LoseCheckRunCreates int
	// Replies are the bot's replies in review threads, by root comment.
	Replies map[int64][]pullwright.ReviewComment
	// Asked counts calls by method name.
	Asked map[string]int

	nextID int64
	held   map[string]bool // commit and name that hold HeldRuns
}

// NewGitHub is an empty repository's GitHub with the bot's identity, its
// clock at c.
func NewGitHub(c *testclock.Clock) *GitHub {
	return &GitHub{
		Clock: c,
		Bot:   pullwright.Identity{Login: "pullwright[bot]", Name: "pullwright[bot]", Email: "1+pullwright[bot]@users.noreply.github.com"},
		Roles: map[string]string{}, Teams: map[string][]string{}, Files: map[string]map[string]string{},
		Issues: map[int]pullwright.Issue{}, Pulls: map[int]pullwright.Pull{}, Diffs: map[int]string{},
		Threads: map[int][]pullwright.ReviewThread{}, CheckRuns: map[int64]*pullwright.CheckRun{},
		Replies: map[int64][]pullwright.ReviewComment{}, Asked: map[string]int{}, nextID: 1000,
		Checks: map[string][]pullwright.CheckFailure{}, Annotations: map[int64][]pullwright.CheckAnnotation{},
		Logs: map[int64]string{}, LogErrs: map[int64]error{},
	}
}

// Marker is the hidden tag ghapp puts at the end of a marked comment.
func Marker(key string) string { return "<!-- pullwright:" + key + " -->" }

// call counts method and returns the error queued for it.
func (g *GitHub) call(method string) error {
	g.mu.Lock()
	g.Asked[method]++
	g.mu.Unlock()
	return g.take(method)
}

func (g *GitHub) id() int64 {
	g.nextID++
	return g.nextID
}

// now is GitHub's time, in whole seconds as its API gives it.
func (g *GitHub) now() time.Time { return g.Clock.Now().UTC().Truncate(time.Second) }

func (g *GitHub) Identity(ctx context.Context) (pullwright.Identity, error) {
	if err := g.call("Identity"); err != nil {
		return pullwright.Identity{}, err
	}
	return g.Bot, nil
}

func (g *GitHub) Token(ctx context.Context, installationID int64) (string, error) {
	if err := g.call("Token"); err != nil {
		return "", err
	}
	return fmt.Sprintf("token-%d", installationID), nil
}

func (g *GitHub) AddReaction(ctx context.Context, r pullwright.Repo, commentID int64, content string) error {
	if err := g.call("AddReaction"); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Reactions = append(g.Reactions, Reaction{CommentID: commentID, Content: content})
	return nil
}

func (g *GitHub) AddReviewReaction(ctx context.Context, r pullwright.Repo, commentID int64, content string) error {
	if err := g.call("AddReviewReaction"); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Reactions = append(g.Reactions, Reaction{CommentID: commentID, Content: content, Review: true})
	return nil
}

// UpsertComment edits the comment commentID, or else the one carrying
// marker, keeping its CreatedAt and bumping UpdatedAt; it creates one when
// there is neither (as ghapp does when the comment to edit is gone).
func (g *GitHub) UpsertComment(ctx context.Context, r pullwright.Repo, issue int, marker string, commentID int64, body string) (pullwright.Posted, error) {
	if err := g.call("UpsertComment"); err != nil {
		return pullwright.Posted{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	full := strings.TrimRight(body, "\n") + "\n\n" + Marker(marker)
	var c *IssueComment
	for _, old := range g.Comments {
		if old.Issue == issue && ((commentID != 0 && old.ID == commentID) || (commentID == 0 && old.Marker == marker)) {
			c = old
			break
		}
	}
	now := g.now()
	if c == nil {
		c = &IssueComment{ID: g.id(), Issue: issue, Marker: marker, CreatedAt: now}
		g.Comments = append(g.Comments, c)
	} else {
		c.Edits++
	}
	c.Body, c.UpdatedAt = full, now
	return pullwright.Posted{ID: c.ID, URL: g.commentURL(r, c), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}, nil
}

func (g *GitHub) commentURL(r pullwright.Repo, c *IssueComment) string {
	return fmt.Sprintf("https://github.test/%s/issues/%d#issuecomment-%d", r.FullName(), c.Issue, c.ID)
}

// Comment is the bot's comment on issue carrying marker, or nil.
func (g *GitHub) Comment(issue int, marker string) *IssueComment {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.Comments {
		if c.Issue == issue && c.Marker == marker {
			return c
		}
	}
	return nil
}

// CommentsOn are the bot's comments on issue, oldest first.
func (g *GitHub) CommentsOn(issue int) []*IssueComment {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*IssueComment
	for _, c := range g.Comments {
		if c.Issue == issue {
			out = append(out, c)
		}
	}
	return out
}

func (g *GitHub) Issue(ctx context.Context, r pullwright.Repo, number int) (pullwright.Issue, error) {
	return find(g, "Issue", func() (pullwright.Issue, bool) {
		is, ok := g.Issues[number]
		is.Comments = slices.Clone(is.Comments)
		return is, ok
	}, fmt.Errorf("issue %s#%d: 404 Not Found", r.FullName(), number))
}

// ReadComment is the bot's comment id as GitHub reads it back; one a test
// removed from Comments is gone (pullwright.ErrGone), as a deleted one is.
func (g *GitHub) ReadComment(ctx context.Context, r pullwright.Repo, id int64) (pullwright.Comment, error) {
	return find(g, "ReadComment", func() (pullwright.Comment, bool) {
		for _, c := range g.Comments {
			if c.ID == id {
				return pullwright.Comment{ID: c.ID, Author: g.Bot.Login, AuthorType: "Bot", Body: c.Body, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}, true
			}
		}
		return pullwright.Comment{}, false
	}, fmt.Errorf("comment %d in %s: 404 Not Found: %w", id, r.FullName(), pullwright.ErrGone))
}

// find is, as method, what at finds under the lock, or notFound when it
// finds nothing.
func find[V any](g *GitHub, method string, at func() (V, bool), notFound error) (V, error) {
	var zero V
	if err := g.call(method); err != nil {
		return zero, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := at()
	if !ok {
		return zero, notFound
	}
	return v, nil
}

// OpenPullRequest opens a pull request, or, when one from pr.Head is open
// already, gives it pr's title and body and returns it (ghapp's retry
// safety).
func (g *GitHub) OpenPullRequest(ctx context.Context, r pullwright.Repo, pr pullwright.NewPullRequest) (pullwright.PullRequest, error) {
	if err := g.call("OpenPullRequest"); err != nil {
		return pullwright.PullRequest{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if slices.Contains(g.Forbidden, r.FullName()) {
		return pullwright.PullRequest{}, fmt.Errorf("open pull request in %s: 403: %w", r.FullName(), pullwright.ErrNotPermitted)
	}
	if pr.Title == "" || pr.Head == "" || pr.Base == "" {
		return pullwright.PullRequest{}, fmt.Errorf("open pull request: title, head and base are required")
	}
	head := pr.Head
	if !strings.Contains(head, ":") {
		head = r.Owner + ":" + head
	}
	for _, p := range g.Opened {
		if p.Open && p.Repo == r.FullName() && p.Head == head {
			p.Title, p.Body = pr.Title, pr.Body
			return pullwright.PullRequest{Number: p.Number, URL: pullURL(p)}, nil
		}
	}
	p := &Pull{Number: int(g.id()), Repo: r.FullName(), Head: head, Base: pr.Base, Title: pr.Title, Body: pr.Body, Draft: pr.Draft, Open: true}
	g.Opened = append(g.Opened, p)
	return pullwright.PullRequest{Number: p.Number, URL: pullURL(p)}, nil
}

func pullURL(p *Pull) string { return fmt.Sprintf("https://github.test/%s/pull/%d", p.Repo, p.Number) }

func (g *GitHub) pull(number int) (*Pull, error) {
	for _, p := range g.Opened {
		if p.Number == number {
			return p, nil
		}
	}
	return nil, fmt.Errorf("pull request #%d: 404 Not Found", number)
}

// UpdatePullRequest sets the title (unless empty) and body.
func (g *GitHub) UpdatePullRequest(ctx context.Context, r pullwright.Repo, number int, title, body string) error {
	return g.editPull("UpdatePullRequest", number, func(p *Pull) {
		if title != "" {
			p.Title = title
		}
		if body != "" {
			p.Body = body
		}
	})
}

func (g *GitHub) MarkReadyForReview(ctx context.Context, r pullwright.Repo, number int) error {
	return g.editPull("MarkReadyForReview", number, func(p *Pull) { p.Draft = false })
}

// editPull is, as method, edit applied under the lock to the opened pull
// request number.
func (g *GitHub) editPull(method string, number int, edit func(p *Pull)) error {
	if err := g.call(method); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p, err := g.pull(number)
	if err != nil {
		return err
	}
	edit(p)
	return nil
}

// UpsertCheckRun creates a check run (ID 0) or replaces an existing one's
// fields; every write is kept in CheckRunWrites. A create with an
// ExternalID that is not FirstTry looks first, as ghapp does, for the run
// of that name on that commit carrying the id, status and conclusion, and
// updates it instead; each look counts as a call of "FindCheckRun".
func (g *GitHub) UpsertCheckRun(ctx context.Context, r pullwright.Repo, cr pullwright.CheckRun) (int64, error) {
	if err := g.call("UpsertCheckRun"); err != nil {
		return 0, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if cr.ID == 0 {
		g.holdRunsLocked(cr.HeadSHA, cr.Name)
	}
	if cr.ID == 0 && cr.ExternalID != "" && !cr.FirstTry {
		g.Asked["FindCheckRun"]++
		for id, run := range g.CheckRuns {
			if run.HeadSHA == cr.HeadSHA && run.Name == cr.Name && run.ExternalID == cr.ExternalID &&
				run.Status == cr.Status && run.Conclusion == cr.Conclusion {
				cr.ID = id
				break
			}
		}
	}
	cr.FirstTry = false
	created := cr.ID == 0
	if created {
		cr.ID = g.id()
	} else if _, ok := g.CheckRuns[cr.ID]; !ok {
		return 0, fmt.Errorf("check run %d: 404 Not Found", cr.ID)
	}
	cr.Actions = slices.Clone(cr.Actions)
	stored := cr
	g.CheckRuns[cr.ID] = &stored
	g.CheckRunWrites = append(g.CheckRunWrites, cr)
	if created && g.LoseCheckRunCreates > 0 {
		g.LoseCheckRunCreates--
		return 0, fmt.Errorf("create check run %q: %w", cr.Name, context.DeadlineExceeded)
	}
	return cr.ID, nil
}

// holdRunsLocked puts HeldRuns runs named name on sha the first time the
// bot creates one there.
func (g *GitHub) holdRunsLocked(sha, name string) {
	if g.HeldRuns == 0 || g.held[sha+"\x00"+name] {
		return
	}
	if g.held == nil {
		g.held = map[string]bool{}
	}
	g.held[sha+"\x00"+name] = true
	for i := range g.HeldRuns {
		id := g.id()
		g.CheckRuns[id] = &pullwright.CheckRun{ID: id, Name: name, HeadSHA: sha, Status: "completed", Conclusion: "success",
			ExternalID: fmt.Sprintf("held-%d", i)}
	}
}

// Permission is the login's role in Roles, "none" when it has none.
func (g *GitHub) Permission(ctx context.Context, r pullwright.Repo, user string) (string, error) {
	if err := g.call("Permission"); err != nil {
		return "", err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for login, role := range g.Roles {
		if strings.EqualFold(login, user) {
			return role, nil
		}
	}
	return "none", nil
}

func (g *GitHub) TeamMember(ctx context.Context, r pullwright.Repo, org, team, user string) (bool, error) {
	if err := g.call("TeamMember"); err != nil {
		return false, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.ContainsFunc(g.Teams[org+"/"+team], func(m string) bool { return strings.EqualFold(m, user) }), nil
}

// SetFile puts a file on a ref.
func (g *GitHub) SetFile(ref, path, content string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.Files[ref] == nil {
		g.Files[ref] = map[string]string{}
	}
	g.Files[ref][path] = content
}

// File is a file's content at ref, pullwright.ErrNoFile when there is none.
func (g *GitHub) File(ctx context.Context, r pullwright.Repo, ref, path string) ([]byte, error) {
	c, err := find(g, "File", func() (string, bool) {
		c, ok := g.Files[ref][path]
		return c, ok
	}, fmt.Errorf("%w: %s at %s: 404 Not Found", pullwright.ErrNoFile, path, ref))
	if err != nil {
		return nil, err
	}
	return []byte(c), nil
}

func (g *GitHub) PullRequest(ctx context.Context, r pullwright.Repo, number int) (pullwright.Pull, error) {
	return find(g, "PullRequest", func() (pullwright.Pull, bool) {
		p, ok := g.Pulls[number]
		return p, ok
	}, fmt.Errorf("pull request %s#%d: 404 Not Found", r.FullName(), number))
}

// PullRequestDiff is Diffs[number], cut to max bytes.
func (g *GitHub) PullRequestDiff(ctx context.Context, r pullwright.Repo, number, max int) (string, bool, error) {
	if err := g.call("PullRequestDiff"); err != nil {
		return "", false, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	d := g.Diffs[number]
	if len(d) > max {
		return d[:max], true, nil
	}
	return d, false, nil
}

// ReviewThreads are Threads[number] with the bot's replies in them.
func (g *GitHub) ReviewThreads(ctx context.Context, r pullwright.Repo, number int) ([]pullwright.ReviewThread, error) {
	if err := g.call("ReviewThreads"); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []pullwright.ReviewThread
	for _, th := range g.Threads[number] {
		th.Comments = slices.Clone(th.Comments)
		if len(th.Comments) > 0 {
			th.Comments = append(th.Comments, g.Replies[th.Comments[0].ID]...)
		}
		out = append(out, th)
	}
	return out, nil
}

// ReplyInThread replies under rootID, or edits the reply carrying marker;
// pullwright.ErrGone when the pull request has no thread starting at rootID.
func (g *GitHub) ReplyInThread(ctx context.Context, r pullwright.Repo, pr int, rootID int64, marker, body string) (int64, error) {
	if err := g.call("ReplyInThread"); err != nil {
		return 0, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	found := false
	for _, th := range g.Threads[pr] {
		if len(th.Comments) > 0 && th.Comments[0].ID == rootID {
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("reply in review thread %d: 404 Not Found: %w", rootID, pullwright.ErrGone)
	}
	full := strings.TrimRight(body, "\n") + "\n\n" + Marker(marker)
	replies := g.Replies[rootID]
	for i, c := range replies {
		if strings.HasSuffix(c.Body, Marker(marker)) {
			replies[i].Body = full
			return c.ID, nil
		}
	}
	c := pullwright.ReviewComment{ID: g.id(), InReplyTo: rootID, Author: g.Bot.Login, AuthorType: "Bot", Body: full}
	g.Replies[rootID] = append(replies, c)
	return c.ID, nil
}

// failed are the conclusions ghapp's FailingChecks keeps.
var failed = map[string]bool{"failure": true, "timed_out": true, "startup_failure": true}

// FailingChecks are the failing ones of Checks[sha], in order, each with
// its AnnotationCount, and JobID set for a "github-actions" run, as ghapp
// fills them.
func (g *GitHub) FailingChecks(ctx context.Context, r pullwright.Repo, sha string) ([]pullwright.CheckFailure, error) {
	if err := g.call("FailingChecks"); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []pullwright.CheckFailure
	for _, c := range g.Checks[sha] {
		if !failed[c.Conclusion] {
			continue
		}
		c.AnnotationCount = len(g.Annotations[c.ID])
		if c.App == "github-actions" {
			c.JobID = c.ID
		}
		out = append(out, c)
	}
	return out, nil
}

// CheckAnnotations are the first max of Annotations[checkRunID].
func (g *GitHub) CheckAnnotations(ctx context.Context, r pullwright.Repo, checkRunID int64, max int) ([]pullwright.CheckAnnotation, error) {
	if err := g.call("CheckAnnotations"); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.Annotations[checkRunID]
	return slices.Clone(a[:min(len(a), max)]), nil
}

// JobLogTail is the last max bytes of Logs[jobID] (cut says so), or
// LogErrs[jobID]; ErrGone for a job without a log, as GitHub's 404 and
// 410 are.
func (g *GitHub) JobLogTail(ctx context.Context, r pullwright.Repo, jobID int64, max int) (string, bool, error) {
	if err := g.call("JobLogTail"); err != nil {
		return "", false, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.LogErrs[jobID]; err != nil {
		return "", false, err
	}
	l, ok := g.Logs[jobID]
	if !ok {
		return "", false, fmt.Errorf("%w: job %d: 410 Gone", pullwright.ErrGone, jobID)
	}
	if len(l) > max {
		return l[len(l)-max:], true, nil
	}
	return l, false, nil
}

// Review is a review posted with PostReview.
type Review struct {
	pullwright.NewReview
	ID     int64
	Marker string
	URL    string
}

// BotReviews lists Reviews[pr] as GitHub lists the bot's reviews.
func (g *GitHub) BotReviews(ctx context.Context, r pullwright.Repo, pr int) ([]pullwright.PostedReview, error) {
	if err := g.call("BotReviews"); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []pullwright.PostedReview
	for _, rv := range g.Reviews[pr] {
		out = append(out, pullwright.PostedReview{ID: rv.ID, CommitID: rv.CommitID, Marker: rv.Marker, URL: rv.URL})
	}
	return out, nil
}

// PostReview records a review, or refuses it whole as GitHub does (422,
// pullwright.ErrInvalid as ghapp wraps it) when a comment's lines are not
// in one hunk of Diffs[pr], on its right side.
func (g *GitHub) PostReview(ctx context.Context, r pullwright.Repo, pr int, marker string, rv pullwright.NewReview) (pullwright.PostedReview, error) {
	if err := g.call("PostReview"); err != nil {
		return pullwright.PostedReview{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	hunks := difftest.RightHunks(g.Diffs[pr])
	for _, c := range rv.Comments {
		ok := false
		for _, h := range hunks {
			if h.Contains(c.Path, c.Line) && (c.StartLine == 0 || (h.Contains(c.Path, c.StartLine) && c.StartLine < c.Line)) {
				ok = true
			}
		}
		if !ok {
			return pullwright.PostedReview{}, fmt.Errorf("post a review of #%d: %w: 422 Pull request review thread line must be part of the diff", pr, pullwright.ErrInvalid)
		}
	}
	if g.Reviews == nil {
		g.Reviews = map[int][]Review{}
	}
	id := g.id()
	posted := Review{NewReview: rv, ID: id, Marker: marker, URL: fmt.Sprintf("https://github.test/%s/pull/%d#pullrequestreview-%d", r.FullName(), pr, id)}
	g.Reviews[pr] = append(g.Reviews[pr], posted)
	return pullwright.PostedReview{ID: id, CommitID: rv.CommitID, Marker: marker, URL: posted.URL}, nil
}
