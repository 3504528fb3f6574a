package task

import (
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
)

// Work is what the agent does for a fix or a review (Kind.Works): the
// branch and commits, the agent's conversation and the files it changed,
// the execution requests and their runs, and a fix's pull request. Only
// those kinds have it, and code reaches it through Task.Job: a command or
// an answer reads it only from the task it names. Task's JSON methods
// write its fields at the top of the stored object, where releases before
// it wrote and read them, by embedding it in the value they encode; so it
// must have no JSON methods of its own, which would take their place.
type Work struct {
	Branch  string `json:"branch,omitempty"`
	BaseSHA string `json:"base_sha,omitempty"`
	HeadSHA string `json:"head_sha,omitempty"`
	Workdir string `json:"workdir,omitempty"`
	// Conversation is the agent's serialised state; opaque to this package.
	Conversation []byte                `json:"conversation,omitempty"`
	Files        []FileSnapshot        `json:"files,omitempty"`
	Plan         []pullwright.PlanItem `json:"plan,omitempty"`
	Steps        []string              `json:"steps,omitempty"`
	Turns        int                   `json:"turns,omitempty"`
	Tokens       int                   `json:"tokens,omitempty"`
	// TokensEstimated says Tokens holds estimates (Progress).
	TokensEstimated bool `json:"tokens_estimated,omitempty"`
	// Spend is what the model calls used and cost, by model (Progress);
	// a task saved before it existed has Tokens only.
	Spend        pullwright.Spend      `json:"spend,omitzero"`
	Title        string                `json:"title,omitempty"`
	Summary      string                `json:"summary,omitempty"`
	ChangedFiles []pullwright.FileStat `json:"changed_files"`
	// PushedSHA is the last commit of the task's branch known to be on
	// the remote; Files are the changes relative to it (or to BaseSHA
	// before the first push), so a lost workspace is rebuilt from there.
	PushedSHA string `json:"pushed_sha,omitempty"`
	// Rebased lists the heads pushed by people while the task worked,
	// onto which the bot moved its unpushed commit instead of forcing.
	Rebased []string `json:"rebased,omitempty"`
	// CommitAt dates the next commit, so that remaking it gives the same SHA.
	CommitAt time.Time `json:"commit_at,omitzero"`
	// Final is true once the branch holds all of the agent's work and only
	// the pull request and the report are left to do.
	Final bool `json:"final,omitempty"`
	// Draft is true while the task's pull request is a draft.
	Draft bool `json:"draft,omitempty"`
	// PRFinal is true once publishing gave the pull request its final
	// text (and, when the required command passed, made it ready).
	PRFinal bool `json:"pr_final,omitempty"`
	// Request is the agent's current (or last) execution request.
	Request *ExecRequest `json:"request,omitempty"`
	// Runs are the ends of every request of the task, in order
	// (RunRecord, task/record.go).
	Runs []RunRecord `json:"runs,omitempty"`
	// Calls are the ends of the requests that called an MCP tool, kept
	// apart from Runs: a call tests nothing, so no check of the work
	// (Verify, a mode, require_passing) may count it.
	Calls []RunRecord `json:"calls,omitempty"`
	// APIChanges are the changes to the exported Go API from the base to
	// the final commit, for a refactor's check; APIChecked is true once
	// they were read.
	APIChanges []string `json:"api_changes,omitempty"`
	APIChecked bool     `json:"api_checked,omitempty"`
	RequestSeq int      `json:"request_seq,omitempty"`
	// Answers are the sources (Answer.Source) that answered the task's
	// earlier requests: none of them may answer another.
	Answers  []string `json:"answers,omitempty"`
	PRNumber int      `json:"pr_number,omitempty"`
	PRURL    string   `json:"pr_url,omitempty"`
	// Pull is what a fix on a pull request knows of it and did to it.
	Pull *PullWork `json:"pull,omitempty"`
	// Stop is why the agent was stopped (a budget spent); the work so far
	// is pushed before the task fails with it.
	Stop string `json:"stop,omitempty"`
	// OutOfBudget is why the agent's budget ran out (turns, tokens or
	// cost), in the words the task shows, when it did: the work so far is
	// then published as a draft pull request, with the agent's finish if
	// it made one on its last turn, else the bot's account of its plan and
	// steps (BudgetSummary).
	OutOfBudget string `json:"out_of_budget,omitempty"`
	// Waited is the time spent waiting for answers, which the wall-time
	// budget does not count.
	Waited time.Duration `json:"waited,omitempty"`
	// Guidance is which of the repository's instruction files the agent
	// was given, for the status comment; nil when none was read.
	Guidance *GuidanceUsed `json:"guidance,omitempty"`
}

// FileSnapshot is the content of one file the agent changed, kept in the
// store so that a task picked up on another machine can rebuild its workspace.
type FileSnapshot struct {
	Path    string `json:"path"`
	Content []byte `json:"content,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	// Executable is the file's executable bit, which set_executable and a
	// kept run may change as much as its content.
	Executable bool `json:"executable,omitempty"`
}

// Verdict is the answer an execution request got.
type Verdict string

// Verdicts an execution request can get.
const (
	Approved  Verdict = "approved"
	Rejected  Verdict = "rejected"
	TimedOut  Verdict = "timed_out"
	Withdrawn Verdict = "cancelled"
)

// Answer is how an execution request was answered. The store sets it with
// a compare-and-swap, so two answers arriving at once cannot both win.
type Answer struct {
	Verdict Verdict `json:"verdict"`
	By      string  `json:"by,omitempty"`
	// Via is the delivery that answered, so replaying that answer's step
	// after a crash recognises its own success.
	Via string `json:"via,omitempty"`
	// Source is what answered: "comment <id>" for a comment, "button
	// <delivery>" for a check run's button. One source answers one
	// request, ever (Task.Answers keeps those used).
	Source string    `json:"source,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// ExecRequest is one command the agent asked to run: bound to the commit it
// was asked on, shown on the issue and as a check run, answered once.
type ExecRequest struct {
	// ID is "<task id>-<sequence>", what "/approve <id>" names.
	ID      string    `json:"id"`
	Command string    `json:"command"`
	Reason  string    `json:"reason"`
	AskedAt time.Time `json:"asked_at"`
	// SHA is the checkpoint commit the request is bound to.
	SHA string `json:"sha,omitempty"`
	// Shown is the request as every surface shows it, built once before
	// it is first shown (requests.show), with its digest; nil for a
	// request refused unshown, and for one asked by a release before it.
	Shown    *approval.Request `json:"shown,omitempty"`
	Deadline time.Time         `json:"deadline,omitzero"`
	// Where the request is shown; each is set once that post exists.
	CommentID   int64  `json:"comment_id,omitempty"`
	CommentURL  string `json:"comment_url,omitempty"`
	PRCommentID int64  `json:"pr_comment_id,omitempty"`
	CheckRunID  int64  `json:"check_run_id,omitempty"`
	// PRUpdated is true once an existing draft's body shows this checkpoint.
	PRUpdated bool `json:"pr_updated,omitempty"`
	// ShownAt is GitHub's created_at of the newest comment showing the
	// request, as GitHub answered when the bot posted it. Only a comment
	// GitHub dates later answers the request: one written before it was
	// about something else (an earlier request, or nothing), whenever it
	// reached the bot.
	ShownAt time.Time `json:"shown_at,omitzero"`
	// Asked is true once the request is fully shown and the task waits;
	// ParkedAt is when, on the bot's clock (for the wait's metrics).
	Asked    bool      `json:"asked,omitempty"`
	ParkedAt time.Time `json:"parked_at,omitzero"`
	// StartedIn is the claim (Task.Claim) in which the command was handed
	// to the sandbox: an approval runs it once, and a run cut short (found
	// by a later claim) is reported, not repeated.
	StartedIn int `json:"started_in,omitempty"`
	// RunClosed is true once the run check run shows the end.
	RunClosed bool `json:"run_closed,omitempty"`
	// Auto is the auto_approve rule that answered the request, if one did.
	Auto string `json:"auto,omitempty"`
	// Required is true when the bot asked for the command because the
	// repository requires it to pass (require_passing), not the agent.
	Required bool `json:"required,omitempty"`
	// Answer is kept by the store apart from the task's data.
	Answer     *Answer               `json:"-"`
	RunCheckID int64                 `json:"run_check_id,omitempty"`
	Result     *pullwright.RunResult `json:"result,omitempty"`
	// Setup is the repository's setup, when one ran before the command.
	Setup *pullwright.SetupRecord `json:"setup,omitempty"`
	// Closed is true once the approval check run shows the answer.
	Closed bool `json:"closed,omitempty"`
	// Tool is set when the request calls an MCP tool the operator did not
	// mark read-only: Command is then Tool.Line(), and the call, not a
	// command, is what an approval lets happen (runs.callTool).
	Tool *pullwright.ToolCall `json:"tool,omitempty"`
	// KeepChanges is true when the agent asked to keep what the command
	// changes in the repository: shown so (approval.Request.KeepChanges),
	// and once it ran, its changes become the agent's (Outcome.Workdir).
	KeepChanges bool `json:"keep_changes,omitempty"`
	// Fetch is true when the agent asked for the command to run with the
	// setup's network, through the fence, as a dependency command
	// (Dependencies.Fetch); it keeps its changes too.
	Fetch bool `json:"fetch,omitempty"`
}

// verb is what the request asks to do, as the sentences that name it say.
func (r *ExecRequest) verb() string {
	if r.Tool != nil {
		return "call"
	}
	return "run"
}

// shown records GitHub's time of a comment that shows the request.
func (r *ExecRequest) shown(at time.Time) {
	if at.After(r.ShownAt) {
		r.ShownAt = at.UTC()
	}
}

// How a fix on a pull request delivers its commits.
const (
	// PushToHead pushes onto the pull request's own branch (same repository).
	PushToHead = "push"
	// PullToFork opens a pull request against the fork's head branch, from
	// a branch of the base repository; the fork itself is never pushed to.
	PullToFork = "fork_pr"
	// PullInBase opens a pull request in the base repository, from a branch
	// there that holds the original's commits and the bot's.
	PullInBase = "base_pr"
)

// PullWork is what a fix on a pull request knows of it and did to it.
type PullWork struct {
	// Info is the pull request as it was when the task started.
	Info pullwright.Pull `json:"info"`
	// Mode is how the commits are delivered (PushToHead, PullToFork or
	// PullInBase); Why says why, for the status comment.
	Mode string `json:"mode"`
	Why  string `json:"why,omitempty"`
	// Threads are the review threads the task addresses (its checklist
	// when asked without instructions), and Replied counts the replies
	// posted to them.
	Threads []ThreadRef `json:"threads,omitempty"`
	Replied int         `json:"replied,omitempty"`
	// Commits are the commits the bot pushed, oldest first; Stats sums
	// their changes (which, after a rebase, a diff against the start
	// would mix with the person's).
	Commits []string              `json:"commits,omitempty"`
	Stats   []pullwright.FileStat `json:"stats,omitempty"`
	// Notes are the agent's replies for the threads, by number from 1.
	Notes map[int]string `json:"notes,omitempty"`
	// ForkPRFailed is why opening the pull request against the fork
	// failed, when the task fell back to one in the base repository.
	ForkPRFailed string `json:"fork_pr_failed,omitempty"`
	// ReviewReplied is true once the review comment that asked got its answer.
	ReviewReplied bool `json:"review_replied,omitempty"`
	// Gone counts the review threads deleted before their reply.
	Gone int `json:"gone,omitempty"`
}

// ThreadRef is one review thread a task addresses.
type ThreadRef struct {
	Root   int64  `json:"root"`
	Author string `json:"author"`
	Path   string `json:"path,omitempty"`
	Line   int    `json:"line,omitempty"`
	Body   string `json:"body,omitempty"`
	URL    string `json:"url,omitempty"`
}
