package pullwright

// LineRange is lines Start to End (inclusive, from 1) of a file at a
// pull request's head: where a review may comment, on the diff's right
// side.
type LineRange struct {
	Path  string `json:"path"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// ReviewScope is what a review task hands the agent: what to look at and
// where its comments may go.
type ReviewScope struct {
	// Focus is what the maintainer asked the review to look at, or "".
	Focus string
	// Head is the commit reviewed; Since, when set, the head an earlier
	// review saw: only what changed between the two is reviewed.
	Head, Since string
	// Diff is the unified diff under review (the pull request's, or
	// Since to Head), cut to a bound when Cut.
	Diff string
	Cut  bool
	// Lines are the lines comments may be placed on: each range lies in
	// one hunk of the pull request's diff, on its right side.
	Lines []LineRange
}

// ReviewDraft is the review the agent wrote: a summary and its line
// comments, not yet checked against the diff.
type ReviewDraft struct {
	Summary  string         `json:"summary"`
	Comments []DraftComment `json:"comments,omitempty"`
}

// DraftComment is one comment of a ReviewDraft on lines StartLine to Line
// of Path at the reviewed head (StartLine 0: Line alone).
type DraftComment struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`
	StartLine int    `json:"start_line,omitempty"`
	Body      string `json:"body"`
	// Suggestion, when set, is the text that replaces the commented lines
	// as a whole; the bot writes the suggestion block around it.
	Suggestion *string `json:"suggestion,omitempty"`
}

// NewReview is a pull request review as the bot posts it: one review with
// event COMMENT on CommitID, its body and its line comments, on the
// diff's right side.
type NewReview struct {
	CommitID string
	Body     string
	Comments []NewReviewComment
	// LeftOut counts the draft's comments that fit neither on a line nor
	// in the body (whose note says so); nothing of them is sent.
	LeftOut int
}

// NewReviewComment is one line comment of a NewReview (StartLine 0: a
// comment on Line alone).
type NewReviewComment struct {
	Path            string
	Line, StartLine int
	Body            string
}

// PostedReview is a review the bot posted on a pull request, as GitHub
// lists it: the commit it was on and the key of the bot's marker that
// ends its body ("" when it has none).
type PostedReview struct {
	ID       int64
	CommitID string
	Marker   string
	URL      string // web address
}
