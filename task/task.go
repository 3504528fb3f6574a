// Package task owns the life of one piece of work the bot was asked to do:
// the task model, its state machine, the interface of the durable store it
// lives in (implemented in task/sqlite), the workers that move it forward,
// and the rooms of the work itself (a fix in Flow, with its checkouts,
// pull request, approval requests and runs; answers to a request;
// one-reply commands). It knows neither GitHub's JSON nor the LLM's wire
// format: those arrive, in the shared vocabulary of package pullwright,
// through the small interfaces in ports.go and beside each room. It must
// not import ghapp, agent, repo or runner. Map: docs/architecture.md.
package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/policy"
)

// State is where a task stands in its lifecycle (docs/architecture.md, "Contract").
type State string

const (
	Queued           State = "queued"
	Preparing        State = "preparing"
	Working          State = "working"
	AwaitingApproval State = "awaiting_approval"
	Running          State = "running"
	Publishing       State = "publishing"
	Done             State = "done"
	Failed           State = "failed"
	Cancelled        State = "cancelled"
)

// Terminal reports whether no worker will ever touch a task in s again.
func (s State) Terminal() bool { return s == Done || s == Failed || s == Cancelled }

// transitions lists, for each state, the states a task may move to. Any
// non-terminal state may also fail or be cancelled.
var transitions = map[State][]State{
	// A task with nothing to do (a reply, a refusal) ends straight away.
	Queued:           {Preparing, Done},
	Preparing:        {Working},
	Working:          {AwaitingApproval, Publishing},
	AwaitingApproval: {Running, Working},
	Running:          {Working},
	Publishing:       {Done},
}

// CanMove reports whether the lifecycle allows going from one state to another.
func CanMove(from, to State) bool {
	if from.Terminal() {
		return false
	}
	if to == Failed || to == Cancelled || from == to {
		return true
	}
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Kind says what a task does.
type Kind string

const (
	// KindFix runs the agent and ends in a pull request.
	KindFix Kind = "fix"
	// KindReply posts one comment (help, usage, a refusal) and ends.
	KindReply Kind = "reply"
	// KindStatus answers "/agent status" with the state of the issue's task.
	KindStatus Kind = "status"
	// KindCancel stops the issue's active task.
	KindCancel Kind = "cancel"
	// KindBusy answers a fix asked while another runs on the issue.
	KindBusy Kind = "busy"
	// KindApprove and KindReject answer a pending execution request.
	KindApprove Kind = "approve"
	KindReject  Kind = "reject"
)

// Delivery is one webhook delivery as recorded for de-duplication and audit.
type Delivery struct {
	ID         string
	Event      string
	Action     string
	ReceivedAt time.Time
	// Head is the commit a pull request's head came to by the delivered
	// event (opened, reopened, synchronize), nil for other deliveries.
	Head *HeadPush
}

// HeadPush is a pull request's head coming to a commit, as GitHub tells of
// it: At is the pull request's updated_at in the delivery, GitHub's clock,
// the same clock as a comment's created_at.
type HeadPush struct {
	PullKey string // PullKey of the pull request
	SHA     string
	At      time.Time
}

// PullKey names the pull request numbered number in r, for its recorded
// heads. Unlike an issue key it leaves out the installation, so that heads
// recorded before the app was installed again still count.
func PullKey(r pullwright.Repo, number int) string {
	return fmt.Sprintf("%s#%d", strings.ToLower(r.FullName()), number)
}

// HeadsAround is what deliveries told of a pull request's head around a
// time, by GitHub's clock.
type HeadsAround struct {
	// Before are the commits the head came to at the latest time before
	// it: one, or several when GitHub gave several the same second; none
	// when nothing is on record from before.
	Before []string
	// Since is true when the head came to the commit asked about at that
	// time or after it.
	Since bool
}

// Person is a GitHub user as the task remembers them.
type Person struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
}

// FileSnapshot is the content of one file the agent changed, kept in the
// store so that a task picked up on another machine can rebuild its workspace.
type FileSnapshot struct {
	Path    string `json:"path"`
	Content []byte `json:"content,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
}

// Verdicts an execution request can get.
const (
	Approved  = "approved"
	Rejected  = "rejected"
	TimedOut  = "timed_out"
	Withdrawn = "cancelled"
)

// Answer is how an execution request was answered. The store sets it with
// a compare-and-swap, so two answers arriving at once cannot both win.
type Answer struct {
	Verdict string `json:"verdict"`
	By      string `json:"by,omitempty"`
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

// SetupRecord is a setup that ran before an approved command: what it ran,
// how it ended, and what the fence let through or refused.
type SetupRecord struct {
	Steps    []string      `json:"steps"`
	ExitCode int           `json:"exit_code"`
	Failed   bool          `json:"failed,omitempty"`
	Duration time.Duration `json:"duration"`
	// Output is the setup's output, bounded.
	Output string `json:"output,omitempty"`
	// Reached and Blocked are the fence's "host:port" of each kind.
	Reached []string `json:"reached,omitempty"`
	Blocked []string `json:"blocked,omitempty"`
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
	SHA      string    `json:"sha,omitempty"`
	Deadline time.Time `json:"deadline,omitzero"`
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
	// Answer is kept by the store apart from the task's data.
	Answer     *Answer               `json:"-"`
	RunCheckID int64                 `json:"run_check_id,omitempty"`
	Result     *pullwright.RunResult `json:"result,omitempty"`
	// Setup is the repository's setup, when one ran before the command.
	Setup *SetupRecord `json:"setup,omitempty"`
	// Closed is true once the approval check run shows the answer.
	Closed bool `json:"closed,omitempty"`
}

// shown records GitHub's time of a comment that shows the request.
func (r *ExecRequest) shown(at time.Time) {
	if at.After(r.ShownAt) {
		r.ShownAt = at.UTC()
	}
}

// Task is one unit of work: the request that created it and everything a
// worker needs to continue it after a restart.
type Task struct {
	ID         int64           `json:"id"`
	Kind       Kind            `json:"kind"`
	State      State           `json:"state"`
	DeliveryID string          `json:"delivery_id"`
	Repo       pullwright.Repo `json:"repo"`
	Issue      int             `json:"issue"`
	// IsPR is true when the task was asked on a pull request (Issue is
	// its number): a fix then changes that pull request.
	IsPR bool `json:"is_pr,omitempty"`
	// Review is the review (line) comment the task was asked in, if it was.
	Review *ReviewRef `json:"review,omitempty"`
	// Pull is what a fix on a pull request knows of it and did to it.
	Pull *PullWork `json:"pull,omitempty"`
	// CommentID is the comment that asked for the task (0 if none).
	CommentID int64 `json:"comment_id,omitempty"`
	// AskedAt is that comment's created_at, GitHub's clock (zero if not
	// known): a fork's code pushed after it is code the asker did not see.
	AskedAt      time.Time `json:"asked_at,omitzero"`
	Requester    Person    `json:"requester"`
	Instructions string    `json:"instructions,omitempty"`
	// Reply is the body a KindReply task posts.
	Reply string `json:"reply,omitempty"`

	StatusCommentID  int64  `json:"status_comment_id,omitempty"`
	StatusCommentURL string `json:"status_comment_url,omitempty"`
	IssueTitle       string `json:"issue_title,omitempty"`
	Branch           string `json:"branch,omitempty"`
	BaseSHA          string `json:"base_sha,omitempty"`
	HeadSHA          string `json:"head_sha,omitempty"`
	Workdir          string `json:"workdir,omitempty"`
	// Conversation is the agent's serialised state; opaque to this package.
	Conversation []byte                `json:"conversation,omitempty"`
	Files        []FileSnapshot        `json:"files,omitempty"`
	Plan         []pullwright.PlanItem `json:"plan,omitempty"`
	Steps        []string              `json:"steps,omitempty"`
	Turns        int                   `json:"turns,omitempty"`
	Tokens       int                   `json:"tokens,omitempty"`
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
	// Request is the agent's current (or last) execution request.
	Request    *ExecRequest `json:"request,omitempty"`
	RequestSeq int          `json:"request_seq,omitempty"`
	// Answers are the sources (Answer.Source) that answered the task's
	// earlier requests: none of them may answer another.
	Answers []string `json:"answers,omitempty"`
	// Answering is what an approve or reject task answers; zero on
	// other kinds.
	Answering AnswerRef `json:"answering,omitzero"`
	PRNumber  int       `json:"pr_number,omitempty"`
	PRURL     string    `json:"pr_url,omitempty"`
	// Error is the user-safe reason a task failed.
	Error string `json:"error,omitempty"`
	// Settings are the repository's rules, resolved against the
	// operator's caps when the task started; later steps and restarts use
	// these, not a file that may have changed since.
	Settings *policy.Settings `json:"settings,omitempty"`
	// AdmittedMS is when (Unix milliseconds) the task passed its permission
	// and rate checks; only admitted tasks count against an installation's
	// rates, so refused requests cannot lock others out.
	AdmittedMS int64 `json:"admitted_ms,omitempty"`
	// Unheard counts the issue's comments left out of the brief because
	// their authors lack write access.
	Unheard int `json:"unheard,omitempty"`
	// Stop is why the agent was stopped (a budget spent); the work so far
	// is pushed before the task fails with it.
	Stop string `json:"stop,omitempty"`
	// Waited is the time spent waiting for answers, which the wall-time
	// budget does not count.
	Waited time.Duration `json:"waited,omitempty"`
	// CancelledBy is who asked to cancel the task ("" if nobody). The store
	// keeps it apart from the rest so that a worker saving its own progress
	// never overwrites a cancel that arrived meanwhile.
	CancelledBy string `json:"-"`
	// Crashes counts claims of the task after its worker vanished without
	// releasing it (kept by the store, like CancelledBy).
	Crashes int `json:"-"`
	// Claim numbers the claims of the task, from 1 (kept by the store).
	Claim int `json:"-"`
	// Attempts counts consecutive failed tries of the current step.
	Attempts  int       `json:"attempts,omitempty"`
	RunAfter  time.Time `json:"run_after"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// AnswerRef is what an answer task (KindApprove, KindReject) answers.
type AnswerRef struct {
	// RequestID is the request answered (empty: the issue's current one).
	RequestID string `json:"request_id,omitempty"`
	// SHA is, for a check run's button, the commit the button was on.
	SHA string `json:"sha,omitempty"`
	// Run is the check run whose button was pressed: only the request's
	// own approval check run answers it, not another run that names the
	// request (any workflow may create one).
	Run int64 `json:"run,omitempty"`
}

// UnmarshalJSON reads a task as the store keeps it, also as stores wrote
// it before an answer's fields moved into Answering (request_id,
// answer_sha and answer_run at the top), so that an answer queued across
// an upgrade answers the same request.
func (t *Task) UnmarshalJSON(b []byte) error {
	type plain Task
	v := struct {
		*plain
		RequestID string `json:"request_id"`
		AnswerSHA string `json:"answer_sha"`
		AnswerRun int64  `json:"answer_run"`
	}{plain: (*plain)(t)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if t.Answering == (AnswerRef{}) {
		t.Answering = AnswerRef{RequestID: v.RequestID, SHA: v.AnswerSHA, Run: v.AnswerRun}
	}
	return nil
}

// MarshalJSON writes Answering also under the keys stores read before it
// existed (request_id, answer_sha and answer_run at the top), so that a
// bot rolled back to that release answers the request a queued answer
// named, not the issue's current one. Drop them a release later.
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	return json.Marshal(struct {
		plain
		RequestID string `json:"request_id,omitempty"`
		AnswerSHA string `json:"answer_sha,omitempty"`
		AnswerRun int64  `json:"answer_run,omitempty"`
	}{plain(t), t.Answering.RequestID, t.Answering.SHA, t.Answering.Run})
}

// ReviewRef is the review comment a task was asked in, as the delivery
// had it.
type ReviewRef struct {
	CommentID int64 `json:"comment_id"`
	// InReplyTo is the thread's first comment when this one is a reply.
	InReplyTo int64  `json:"in_reply_to,omitempty"`
	Path      string `json:"path"`
	Line      int    `json:"line,omitempty"`
	StartLine int    `json:"start_line,omitempty"`
	Side      string `json:"side,omitempty"`
	DiffHunk  string `json:"diff_hunk,omitempty"`
	CommitID  string `json:"commit_id,omitempty"`
	Body      string `json:"body,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Root is the id of the thread's first comment, which replies go under.
func (r *ReviewRef) Root() int64 {
	if r.InReplyTo != 0 {
		return r.InReplyTo
	}
	return r.CommentID
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

// IssueKey names the conversation a task belongs to; at most one fix task
// per key is active at a time.
func (t *Task) IssueKey() string {
	return fmt.Sprintf("%d/%s/%d", t.Repo.InstallationID, t.Repo.FullName(), t.Issue)
}

// PRKey names the pull request the task opened in IssueKey's form, so that
// answers and fixes asked there find the task; "" until it opens one.
func (t *Task) PRKey() string {
	if t.PRNumber == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%s/%d", t.Repo.InstallationID, t.Repo.FullName(), t.PRNumber)
}

// BranchKey names the branch the task pushes to, across installations: one
// repository has one set of branches whoever reaches it. It is "" until
// the task has a branch.
func (t *Task) BranchKey() string {
	if t.Branch == "" {
		return ""
	}
	return strings.ToLower(t.Repo.FullName()) + ":" + t.Branch
}

// Recorded fills in what a Store's Record sets on a new task at now, from
// delivery deliveryID: its creation and first due time unless given, the
// Queued state unless given, its update time and delivery.
func (t *Task) Recorded(deliveryID string, now time.Time) {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	if t.RunAfter.IsZero() {
		t.RunAfter = now
	}
	if t.State == "" {
		t.State = Queued
	}
	t.UpdatedAt = now
	t.DeliveryID = deliveryID
}

// Move changes the task's state, refusing moves the lifecycle forbids.
func (t *Task) Move(to State) error {
	if !CanMove(t.State, to) {
		return fmt.Errorf("task %d: %w: %s → %s", t.ID, ErrBadTransition, t.State, to)
	}
	t.State = to
	t.Attempts = 0
	return nil
}

// ErrBadTransition is a move the lifecycle forbids.
var ErrBadTransition = errors.New("transition not allowed")
