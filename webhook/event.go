package webhook

import "github.com/pullwright/pullwright"

// event is the part of a delivery's JSON the handler reads. Every webhook
// event carries action (most), installation (App deliveries), repository and
// sender; issue and comment come with issue_comment, pull_request and comment
// with pull_request_review_comment. Unknown keys are skipped.
type event struct {
	Action       string        `json:"action"`
	Installation *installation `json:"installation"`
	Repository   *repository   `json:"repository"`
	Sender       *user         `json:"sender"`
	Issue        *issue        `json:"issue"`
	Comment      *comment      `json:"comment"`
	PullRequest  *pullRequest  `json:"pull_request"`
	// issues deliveries: the label added or removed (labeled, unlabeled),
	// the user assigned (assigned).
	Label    *label `json:"label"`
	Assignee *user  `json:"assignee"`
	// check_run deliveries.
	CheckRun        *checkRun        `json:"check_run"`
	RequestedAction *requestedAction `json:"requested_action"`
}

// repo is the repository a delivery is about, as a task keeps it; the
// caller has checked that the repository is present, and the installation
// unless the bot acts with one token (Config.OneToken).
func (p *event) repo() pullwright.Repo {
	var inst int64
	if p.Installation != nil {
		inst = p.Installation.ID
	}
	return pullwright.Repo{
		InstallationID: inst,
		Owner:          p.Repository.Owner.Login,
		Name:           p.Repository.Name,
		CloneURL:       p.Repository.CloneURL,
		DefaultBranch:  p.Repository.DefaultBranch,
		ID:             p.Repository.ID,
	}
}

type checkRun struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	ExternalID string `json:"external_id"`
}

type requestedAction struct {
	Identifier string `json:"identifier"`
}

type installation struct {
	ID int64 `json:"id"`
}

type repository struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	Owner         user   `json:"owner"`
	CloneURL      string `json:"clone_url"`
	DefaultBranch string `json:"default_branch"`
}

type user struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"` // "User", "Bot", "Organization"
}

type issue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"` // null when the issue has no description
	Locked bool   `json:"locked"`
	// PullRequest is present (an object) only when the issue is a pull request.
	PullRequest *pullLink `json:"pull_request"`
	// UpdatedAt is GitHub's time of the issue's last change, as text (see
	// pullRequest.UpdatedAt): in an issues delivery, the change delivered.
	UpdatedAt string `json:"updated_at"`
}

type label struct {
	Name string `json:"name"`
}

// pullLink is what an issue_comment delivery says of the pull request an
// issue is.
type pullLink struct {
	URL     string `json:"url"`
	HTMLURL string `json:"html_url"`
}

// pullRequest is the part of a full pull request object the handler reads;
// the task fetches the rest (head, base) when it starts, as it may have
// moved since.
type pullRequest struct {
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Locked  bool   `json:"locked"`
	HTMLURL string `json:"html_url"`
	Head    struct {
		SHA string `json:"sha"`
	} `json:"head"`
	// UpdatedAt is kept as text: a malformed time in an event the handler
	// only records must not fail the delivery.
	UpdatedAt string `json:"updated_at"`
}

type comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User *user  `json:"user"`
	// PerformedVia is the app that posted the comment with a person's token;
	// null otherwise.
	PerformedVia *struct {
		Slug string `json:"slug"`
	} `json:"performed_via_github_app"`
	HTMLURL string `json:"html_url"`
	// CreatedAt is GitHub's time of the comment, as text (see UpdatedAt).
	CreatedAt string `json:"created_at"`

	// Review (line) comments only. InReplyTo is absent on a thread's first
	// comment; line and start_line are null when GitHub has none (a
	// single-line comment, an outdated one).
	InReplyTo int64  `json:"in_reply_to_id"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	StartLine int    `json:"start_line"`
	Side      string `json:"side"`
	DiffHunk  string `json:"diff_hunk"`
	CommitID  string `json:"commit_id"`
}
