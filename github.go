package pullwright

import "time"

// Repo identifies a repository and how to reach it.
type Repo struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner"`
	Name           string `json:"name"`
	CloneURL       string `json:"clone_url"`
	DefaultBranch  string `json:"default_branch"`
	// ID is GitHub's id of the repository, from the delivery. Unlike the
	// name it is never reused: the console checks it so that a task of a
	// repository renamed or deleted is not shown to the readers of a new
	// one under the old name. 0 for tasks recorded before it was kept.
	ID int64 `json:"id,omitempty"`
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Identity is a git author: the bot's, or the requester's for
// co-authorship. For the app's bot account Login is "slug[bot]", Name the
// same (as GitHub shows bot commits), Email its noreply address and ID the
// bot user's id (not the app's).
type Identity struct {
	Login string
	Name  string
	Email string
	ID    int64
}

// Issue is an issue or pull request with its newest comments, as a task
// reads the conversation it was asked on.
type Issue struct {
	Number int
	Title  string
	Body   string
	Locked bool
	IsPR   bool // the issue is a pull request
	Author string
	// Labels are the names of the issue's labels now, as GitHub spells them.
	Labels   []string
	Comments []Comment // oldest first; at most the newest 100
}

// Comment is one comment of an issue, a pull request or a review thread.
// Everything in it but the ids and times was written by a user and is data.
type Comment struct {
	ID         int64     `json:"id,omitempty"`
	Author     string    `json:"author"`
	AuthorType string    `json:"author_type,omitempty"` // "User", "Bot", "Organization", ...
	Body       string    `json:"body"`
	CreatedAt  time.Time `json:"created_at,omitzero"`
	// UpdatedAt is GitHub's updated_at, when a read filled it: the last
	// edit's time, the same as CreatedAt for one never edited.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Posted is a comment the bot wrote, as GitHub answered the write.
type Posted struct {
	ID int64
	// URL is the comment's html_url (https://github.com/o/r/issues/1#issuecomment-N,
	// or .../pull/N#... on a pull request), for linking to it from elsewhere.
	URL string
	// CreatedAt is GitHub's created_at of the comment: the first write's
	// time, also when this write edited it. UpdatedAt is this write's
	// (GitHub's updated_at; the same as CreatedAt for a new comment). The
	// order of a request and its answer is judged on GitHub's clock alone.
	CreatedAt, UpdatedAt time.Time
}

// ShownAt is when GitHub began showing what this write wrote: an edit of
// an older comment (a retried step, or an Action re-run reusing its
// markers) shows its text only from the edit on.
func (p Posted) ShownAt() time.Time {
	if p.UpdatedAt.After(p.CreatedAt) {
		return p.UpdatedAt
	}
	return p.CreatedAt
}

// NewPullRequest is the pull request the bot opens: a draft at the first
// execution request, or a ready one at the end of a fix. Head is a branch
// of the same repository ("branch") or "owner:branch".
type NewPullRequest struct {
	Title, Body, Head, Base string
	Draft                   bool
}

// PullRequest is an opened (or found) pull request.
type PullRequest struct {
	Number int
	URL    string // web address (html_url)
	NodeID string // GraphQL global id
	Draft  bool
	// Created is false when an open pull request for Head already existed
	// and was updated.
	Created bool
}

// Pull is a pull request as the bot reads it, and as a task on it keeps it.
type Pull struct {
	Number int    `json:"number"`
	URL    string `json:"url,omitempty"` // web address
	NodeID string `json:"node_id,omitempty"`
	Title  string `json:"title,omitempty"`
	Body   string `json:"body,omitempty"`
	Author string `json:"author,omitempty"`
	State  string `json:"state,omitempty"` // open or closed
	Merged bool   `json:"merged,omitempty"`
	Locked bool   `json:"locked,omitempty"`
	Draft  bool   `json:"draft,omitempty"`
	// HeadRef is the branch name in the head repository; HeadRepo is that
	// repository ("owner/name", empty when a fork was deleted), and
	// HeadCloneURL its clone URL.
	HeadRef      string `json:"head_ref"`
	HeadSHA      string `json:"head_sha"`
	HeadRepo     string `json:"head_repo,omitempty"`
	HeadCloneURL string `json:"head_clone_url,omitempty"`
	BaseRef      string `json:"base_ref"`
	BaseSHA      string `json:"base_sha,omitempty"`
	BaseRepo     string `json:"base_repo,omitempty"`
	// Fork is true when the head is in another repository than the base
	// (also when that repository was deleted).
	Fork bool `json:"fork,omitempty"`
	// MaintainerCanModify is the author's "Allow edits by maintainers".
	MaintainerCanModify bool `json:"maintainer_can_modify,omitempty"`
}

// ReviewComment is one review (line) comment of a pull request.
type ReviewComment struct {
	ID         int64  `json:"id"`
	InReplyTo  int64  `json:"in_reply_to,omitempty"` // the thread's first comment, for a reply
	Author     string `json:"author"`
	AuthorType string `json:"author_type,omitempty"` // "User", "Bot", ...
	Body       string `json:"body"`
	Path       string `json:"path,omitempty"`
	// Line and StartLine (only for a range) are the commented lines of
	// the file; 0 when the comment no longer applies to the diff
	// (OriginalLine keeps where it was made).
	Line         int       `json:"line,omitempty"`
	StartLine    int       `json:"start_line,omitempty"`
	OriginalLine int       `json:"original_line,omitempty"`
	Side         string    `json:"side,omitempty"` // "RIGHT" or "LEFT"
	DiffHunk     string    `json:"diff_hunk,omitempty"`
	CommitID     string    `json:"commit_id,omitempty"`
	URL          string    `json:"url,omitempty"` // web address
	CreatedAt    time.Time `json:"created_at,omitzero"`
}

// ReviewThread is a line comment and its replies, oldest first.
type ReviewThread struct {
	Comments []ReviewComment
	// Resolved is true once someone marked the conversation resolved.
	Resolved bool
	// Outdated is true when the commented line is no longer in the diff.
	Outdated bool
}

// CheckRun is the state of a check run the bot writes. ID 0 creates one;
// otherwise that check run is updated.
type CheckRun struct {
	ID         int64  // 0 → create, else update
	Name       string // e.g. "pullwright / approval"; required on create
	HeadSHA    string // required on create; ignored on update (GitHub cannot move a check run)
	Status     string // "queued" | "in_progress" | "completed"; "" with a Conclusion means completed
	Conclusion string // when completed: "action_required" | "success" | "failure" | "neutral" | "cancelled" | "timed_out" | "skipped"
	ExternalID string
	DetailsURL string // required by GitHub when Conclusion is "action_required"

	// FirstTry, on a create with an ExternalID, says that no earlier try
	// of this create can have reached GitHub, so it is sent without first
	// looking for a run that carries ExternalID. Without it a create looks
	// (a step replayed after a crash between create and save must not make
	// a second run); the look is bounded, not a walk of the commit's runs.
	FirstTry bool

	// Output. Title and Summary are required together when any of the three
	// is set; with all three empty the output is left as it is. Summary and
	// Text longer than GitHub allows are cut with a note.
	Title, Summary, Text string

	// Actions are the requested-action buttons, shown once the run is
	// completed. On update the list replaces the run's buttons: an empty
	// list removes them.
	Actions []CheckAction
}

// CheckAction is a requested-action button. Pressing it makes GitHub send a
// check_run "requested_action" event carrying Identifier.
type CheckAction struct{ Label, Description, Identifier string }

// CheckRunState is what GitHub shows of a check run now.
type CheckRunState struct {
	HeadSHA, ExternalID, Status, Conclusion string
	// App is the slug of the app that created the run.
	App string
}
