package pullwright

import "strings"

// Brief is what the agent is asked to do. Everything a user other than the
// requester wrote (the title, the body, the comments, a pull request's
// diff and threads) is data, and reaches the model as such.
type Brief struct {
	Repo         string // owner/name
	Issue        int
	Title, Body  string    // untrusted
	Comments     []Comment // untrusted
	Instructions string    // the maintainer's request, trusted
	// Mode is how the work must prove itself (tdd, debug, refactor), or "".
	Mode      string
	Requester string // login of the maintainer who asked
	// Limits are the task's rules; the agent keeps them in its state.
	Limits Limits
	// Base is the commit the task's work starts from: the agent's diff
	// tool shows the changes since. Empty: no diff tool answer.
	Base string
	// TestCommand is how the maintainers test the repository (its
	// configuration's test_command), a hint for the model; may be empty.
	TestCommand string
	// Pull is set when the task works on a pull request; Title, Body and
	// Comments are then the pull request's. Nil for an issue.
	Pull *PullBrief
	// Guidance is the repository's instructions for coding agents
	// (AGENTS.md and the like), read from its default branch, which
	// neither the work branch nor a pull request can change.
	Guidance Guidance
	// Images are the pictures the issue (or the pull request's
	// description) and the maintainer's request show, as the caller
	// fetched and bounded them, given to a model whose profile takes
	// images. Untrusted, like the text around them.
	Images []Image
	// ImagesLeftOut say, one plain sentence each, which pictures were
	// not given and why; no URL is in them.
	ImagesLeftOut []string
	// Reviewing is set when the task reviews the pull request instead of
	// changing it: the agent gets read tools and review tools only.
	Reviewing *ReviewScope
}

// Image is one picture of the brief. It travels in the agent's saved
// state, so the caller bounds how many and how large.
type Image struct {
	// Where names it for the model without its address: "image 1 of the
	// issue's body".
	Where string `json:"where"`
	// Type is what its bytes are (image/png, image/jpeg, image/gif,
	// image/webp), read from them, not from a header.
	Type string `json:"type"`
	Data []byte `json:"data"`
}

// Guidance is what the maintainers wrote in their repository for coding
// agents: how to build and test it, its conventions. It ranks below the
// bot's own rules, which it cannot lift.
type Guidance struct {
	// Files are in the order the agent reads them: those for the whole
	// repository, then those for a directory, shallowest first.
	Files []GuidanceFile
	// More counts the files that matched beyond the bound on their
	// number, and were not read.
	More int
}

// GuidanceFile is one file of the repository's guidance.
type GuidanceFile struct {
	Path string // from the root
	// Dir is the directory whose files it applies to (a nested AGENTS.md
	// applies to its own), "" for the whole repository.
	Dir  string
	Text string
	// Cut is true when Text is only the file's start; Skipped, when set,
	// says why none of it is given (a symbolic link, the total bound).
	Cut     bool
	Skipped string
}

// Limits are the rules of one task, from its repository's policy as the
// caller resolved it against the operator's caps. They travel in the
// agent's state, so that a task keeps the rules it started under across
// restarts and one agent serves repositories with different rules. A zero
// value means the agent's default (MaxTurns, MaxTokens, Model) or no limit
// (MaxCostUSD, Protected).
type Limits struct {
	MaxTurns  int `json:"max_turns,omitempty"`
	MaxTokens int `json:"max_tokens,omitempty"`
	// MaxCostUSD bounds what the task's model calls cost, priced with
	// PriceInput and PriceOutput: USD per million prompt and completion
	// tokens.
	MaxCostUSD  float64 `json:"max_cost_usd,omitempty"`
	PriceInput  float64 `json:"price_input,omitempty"`
	PriceOutput float64 `json:"price_output,omitempty"`
	// PriceCachedInput prices the prompt tokens the endpoint served from
	// its prompt cache (usage.prompt_tokens_details.cached_tokens), USD
	// per million; 0 prices them as other prompt tokens.
	PriceCachedInput float64 `json:"price_cached_input,omitempty"`
	// Priced is set when the operator has a price for the task's model:
	// without one, the cost shown is unknown rather than free. (Limits
	// saved before it existed are priced when a price is not 0.)
	Priced bool `json:"priced,omitempty"`
	// Model replaces the agent's configured model for this task, and
	// Profile is how to talk to it (the operator's, for that model).
	Model   string       `json:"model,omitempty"`
	Profile ModelProfile `json:"profile,omitzero"`
	// Protected are globs (as policy.ProtectedBy matches them) of paths
	// the model may read but not create, change or delete.
	Protected []string `json:"protected,omitempty"`
	// ToolServers are the MCP servers whose tools the agent may call.
	ToolServers []ToolServer `json:"tool_servers,omitempty"`
}

// PullBrief is what the agent is told about the pull request it works on.
// Everything but the number, the refs and Fork was written by users and is
// rendered as data.
type PullBrief struct {
	Number  int
	Author  string // login of the pull request's author
	HeadRef string // the branch checked out in the workspace
	BaseRef string // the branch the pull request merges into
	// Fork is true when the head is in another repository: its code then
	// comes from outside and is no more trusted than its text.
	Fork bool
	// Diff is the pull request's diff against its base; DiffTruncated says
	// the caller already cut it short.
	Diff          string
	DiffTruncated bool
	// Review is the line comment the task was asked in, if it was.
	Review *ReviewBrief
	// Checklist are the review threads to address, numbered from 1 in
	// order; the agent may reply to each when it finishes.
	Checklist []ThreadBrief
	// Checks are the check runs that failed on CheckedSHA, the commit the
	// agent starts from, as the caller bounded them; MoreChecks counts the
	// failing ones left out. All of their text is data.
	Checks     []CheckFailure
	CheckedSHA string
	MoreChecks int
}

// CheckFailure is a check run that failed on a commit: what its app
// reported, all of it written by CI tools and the code they ran, so
// untrusted. ghapp fills what one list call gives (up to JobID); the
// caller adds the annotations and the log, bounded, and says what it cut.
type CheckFailure struct {
	ID         int64
	Name       string
	App        string // the reporting app's slug, "github-actions" for a workflow's job
	Conclusion string // failure, timed_out or startup_failure
	URL        string // the check run's page on GitHub
	// Title, Summary and Text are the check run's output.
	Title, Summary, Text string
	AnnotationCount      int
	// JobID is the GitHub Actions job whose log tells what failed; 0 for
	// another app's check run, which has no log GitHub serves.
	JobID int64

	// OutputCut is true when Summary or Text is only their start.
	OutputCut       bool
	Annotations     []CheckAnnotation
	MoreAnnotations int // annotations not given
	// Log is the end of the job's log; LogCut says its start is left out.
	Log    string
	LogCut bool
	// Missing says why something the check has is not given (GitHub
	// refused the log, the logs expired, the brief's bound was spent).
	Missing string
}

// CheckAnnotation is a check run's remark on lines of a file.
type CheckAnnotation struct {
	Path               string
	StartLine, EndLine int
	Level              string // notice, warning or failure
	Title, Message     string
}

// ReviewBrief is a review comment on a line, or a range of lines, of the diff.
type ReviewBrief struct {
	Path string
	// StartLine (only for a range) and Line are the commented lines of the
	// file; Line is 0 when the comment no longer applies to the diff.
	StartLine, Line int
	Side            string // RIGHT (the pull request's version) or LEFT (the base's)
	DiffHunk        string // the diff up to the commented line, as GitHub gives it
	Author, Comment string
	// Thread are the earlier comments of the comment's thread, by
	// writers, oldest first.
	Thread []Comment
}

// ThreadBrief is one review thread of the checklist.
type ThreadBrief struct {
	Path     string
	Line     int // 0 when the thread no longer applies to the diff
	DiffHunk string
	// Comments are the thread's comments by writers, oldest first; the
	// first is the request.
	Comments []Comment
}

// PlanItem is one line of the agent's checklist.
type PlanItem struct {
	Title  string `json:"title"`
	Status string `json:"status"` // PlanPending, PlanInProgress or PlanDone
}

// A plan item's statuses, as the agent's plan tool records them.
const (
	PlanPending    = "pending"
	PlanInProgress = "in_progress"
	PlanDone       = "done"
)

// Words is the item's status as a person reads it on every surface (the
// status comment, the console): "pending", "in progress" or "done". The
// status's name stays for classes and the API.
func (p PlanItem) Words() string {
	switch p.Status {
	case PlanInProgress:
		return "in progress"
	case PlanDone:
		return "done"
	case PlanPending, "":
		return "pending"
	}
	// A status of a later release: its name, read as words.
	return strings.ReplaceAll(p.Status, "_", " ")
}

// Price is the price of the task's model, and whether the operator set
// one.
func (l Limits) Price() (Price, bool) {
	p := Price{Input: l.PriceInput, Output: l.PriceOutput, CachedInput: l.PriceCachedInput}
	return p, l.Priced || p.Input > 0 || p.Output > 0
}
