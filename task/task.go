// Package task owns the life of one piece of work the bot was asked to do:
// the task model, its state machine, the interface of the durable store it
// lives in (implemented in task/sqlite), the workers that move it forward,
// and the rooms of the work itself (a fix in Flow, with its checkouts,
// pull request, approval requests and runs; answers to a request;
// one-reply commands). It knows neither GitHub's JSON nor the LLM's wire
// format: those arrive, in the shared vocabulary of package pullwright,
// through the small interfaces in ports.go and beside each room, so it
// reaches none of the packages that implement them. Map:
// docs/architecture.md.
//
// Import rule: none of ghapp, agent, repo, runner, setup or mcptools.
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
	Queued: {Preparing, Done},
	// A review of a head it reviewed already has nothing to do.
	Preparing: {Working, Done},
	Working:   {AwaitingApproval, Publishing},
	// A required command (require_passing) is asked for from publishing
	// and, once it passed or was not allowed to run, publishing goes on.
	AwaitingApproval: {Running, Working, Publishing},
	Running:          {Working, Publishing},
	Publishing:       {Done, Working},
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
	// KindBusy answers a fix asked while another runs on the issue, or a
	// review asked while another runs on the pull request (Task.Refused).
	KindBusy Kind = "busy"
	// KindApprove and KindReject answer a pending execution request.
	KindApprove Kind = "approve"
	KindReject  Kind = "reject"
	// KindReview reviews a pull request: the agent reads it with read
	// tools only and the task posts one GitHub review; nothing is pushed.
	KindReview Kind = "review"
	// KindTrigger weighs an issue event that may start or stop a fix: a
	// label added or removed, the bot assigned (Task.Trigger). Whether the
	// label is the repository's takes its configuration, which only a
	// worker reads, so the delivery records this and the worker decides.
	KindTrigger Kind = "trigger"
)

// The issue events a KindTrigger task weighs, as GitHub names their actions.
const (
	TriggerLabeled   = "labeled"
	TriggerUnlabeled = "unlabeled"
	TriggerAssigned  = "assigned"
)

// TriggerRef is the issue event a KindTrigger task weighs. Its time, on
// GitHub's clock, is the task's AskedAt.
type TriggerRef struct {
	// Action is TriggerLabeled, TriggerUnlabeled or TriggerAssigned.
	Action string `json:"action"`
	// Label is the name of the label added or removed.
	Label string `json:"label,omitempty"`
}

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

// Task is one unit of work: the request that created it and everything a
// worker needs to continue it after a restart.
type Task struct {
	ID         int64           `json:"id"`
	Kind       Kind            `json:"kind"`
	State      State           `json:"state"`
	DeliveryID string          `json:"delivery_id"`
	Repo       pullwright.Repo `json:"repo"`
	Issue      int             `json:"issue"`
	// IssueTitle is the title of the issue or pull request asked on, as
	// the delivery had it. Only a fix reads it, but it is part of where a
	// task was asked, and tasks of every kind asked in a comment carry it.
	IssueTitle string `json:"issue_title,omitempty"`
	// IsPR is true when the task was asked on a pull request (Issue is
	// its number): a fix then changes that pull request.
	IsPR bool `json:"is_pr,omitempty"`
	// Review is the review (line) comment the task was asked in, if it was.
	Review *ReviewRef `json:"review,omitempty"`
	// CommentID is the comment that asked for the task (0 if none).
	CommentID int64 `json:"comment_id,omitempty"`
	// AskedAt is that comment's created_at, GitHub's clock (zero if not
	// known): a fork's code pushed after it is code the asker did not see.
	AskedAt      time.Time `json:"asked_at,omitzero"`
	Requester    Person    `json:"requester"`
	Instructions string    `json:"instructions,omitempty"`
	// Mode is how a fix must prove its work: "" or one of Modes (tdd,
	// debug, refactor), a prompt for the agent and a check of Work.Runs.
	Mode Mode `json:"mode,omitempty"`
	// Reply is the body a KindReply task posts.
	Reply string `json:"reply,omitempty"`
	// Trigger is the event a KindTrigger task weighs; nil on other kinds.
	Trigger *TriggerRef `json:"trigger,omitempty"`
	// Refused is, on a KindBusy task, the kind of the task asked for and
	// refused because one of its kind runs: KindFix when empty.
	Refused Kind `json:"refused,omitempty"`

	StatusCommentID  int64  `json:"status_comment_id,omitempty"`
	StatusCommentURL string `json:"status_comment_url,omitempty"`
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
	// Pictured counts the pictures the issue's text showed, given to the
	// agent or left out; nil when it showed none.
	Pictured *Pictured `json:"pictured,omitempty"`
	// CancelledBy is who asked to cancel the task ("" if nobody). The store
	// keeps it apart from the rest so that a worker saving its own progress
	// never overwrites a cancel that arrived meanwhile.
	CancelledBy string `json:"-"`
	// Crashes counts claims of the task after its worker vanished without
	// releasing it (kept by the store, like CancelledBy).
	Crashes int `json:"-"`
	// Claim numbers the claims of the task, from 1 (kept by the store).
	Claim int `json:"-"`
	// savedIn is the claim in which this worker last saved a step's
	// effects; never stored (firstTry).
	savedIn int
	// Attempts counts consecutive failed tries of the current step.
	Attempts  int       `json:"attempts,omitempty"`
	RunAfter  time.Time `json:"run_after"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Trace is the W3C traceparent of the task's root span (package
	// tracing), "" when the bot that took it up traced nothing: every
	// step's span is its child, on whichever replica claims the step.
	Trace string `json:"trace,omitempty"`

	// Reviewing is what a review does (KindReview); nil on other kinds.
	Reviewing *ReviewWork `json:"reviewing,omitempty"`
	// agentWork is what the agent did for a fix or a review (Kind.Works),
	// nil on the other kinds, which never touch it: code reaches it only
	// through Job, which a task of another kind does not give, and only
	// this file names it (TestOnlyTaskGoTouchesWork). It is stored at the
	// top of the task's JSON, beside the rest, where every release before
	// it wrote it.
	agentWork *Work
	// Answering is what an approve or reject task answers; zero on
	// other kinds.
	Answering AnswerRef `json:"answering,omitzero"`
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
	// Digest is the digest of the request as the console or the API
	// showed it (approval.Request): the answer is to that value only.
	Digest string `json:"digest,omitempty"`
}

// Works reports whether a task of kind k runs the agent and so has Work:
// a fix, or a review (which asks for runs the fix's way).
func (k Kind) Works() bool { return k == KindFix || k == KindReview }

// Job is a task of a kind that works (Kind.Works) with its Work in hand:
// the only way to a fix's or a review's branch, conversation, requests,
// runs and pull request. The two share no field name, so each reads as
// its own (j.Repo, j.Branch).
type Job struct {
	*Task
	*Work
}

// Job gives t with its Work, which it makes on first use; ok is false
// for a kind that does not work, which has none.
func (t *Task) Job() (j Job, ok bool) {
	if !t.Kind.Works() {
		return Job{}, false
	}
	if t.agentWork == nil {
		t.agentWork = &Work{}
	}
	return Job{Task: t, Work: t.agentWork}, true
}

// Clone copies t deeply: nothing the copy holds is shared with t. It is
// the task as the store would give it back (Task.snapshot), for tests and
// tools; it panics on a task the store's codec refuses, which could not be
// saved either (the worker uses snapshot, which returns that error).
func (t *Task) Clone() *Task {
	s, err := t.snapshot()
	if err != nil {
		panic(fmt.Sprintf("task %d: clone: %v", t.ID, err))
	}
	c, err := s.restore()
	if err != nil {
		panic(fmt.Sprintf("task %d: clone: %v", t.ID, err))
	}
	return c
}

// A taskSnapshot is a task as the store keeps it: its document, written by
// the store's own codec (MarshalJSON), and the fields the store keeps
// apart from the document. Restoring one gives a task that shares nothing
// with the one it was taken of, however deep a step reaches into it (a
// pull request's commits, a request, the settings), so a failed step's
// rollback is correct by construction: whatever a field's type, it comes
// back as the store would load it.
type taskSnapshot struct {
	doc []byte
	// Kept by the store apart from the document, or never stored.
	cancelledBy    string
	crashes, claim int
	savedIn        int
	answer         *Answer
}

func (t *Task) snapshot() (taskSnapshot, error) {
	doc, err := json.Marshal(t)
	if err != nil {
		return taskSnapshot{}, fmt.Errorf("snapshot task %d: %w", t.ID, err)
	}
	s := taskSnapshot{doc: doc, cancelledBy: t.CancelledBy, crashes: t.Crashes, claim: t.Claim, savedIn: t.savedIn}
	if r := t.CurrentRequest(); r != nil && r.Answer != nil {
		a := *r.Answer
		s.answer = &a
	}
	return s, nil
}

func (s taskSnapshot) restore() (*Task, error) {
	t := new(Task)
	if err := json.Unmarshal(s.doc, t); err != nil {
		return nil, fmt.Errorf("restore a task's snapshot: %w", err)
	}
	t.CancelledBy, t.Crashes, t.Claim, t.savedIn = s.cancelledBy, s.crashes, s.claim, s.savedIn
	if r := t.CurrentRequest(); r != nil && s.answer != nil {
		a := *s.answer
		r.Answer = &a
	}
	return t, nil
}

// UnmarshalJSON reads a task as the store keeps it: a working kind's Work
// from the keys beside the rest (a stored task of another kind has none
// worth reading: releases before Job wrote an empty "changed_files" on
// every kind), and Answering also as stores wrote it before an answer's
// fields moved into it (request_id, answer_sha and answer_run at the
// top), so that an answer queued across an upgrade answers the same
// request.
func (t *Task) UnmarshalJSON(b []byte) error {
	type plain Task
	w := new(Work)
	v := struct {
		*plain
		*Work
		RequestID string `json:"request_id"`
		AnswerSHA string `json:"answer_sha"`
		AnswerRun int64  `json:"answer_run"`
	}{plain: (*plain)(t), Work: w}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	t.agentWork = nil
	if t.Kind.Works() {
		t.agentWork = w
	}
	if t.Answering == (AnswerRef{}) {
		t.Answering = AnswerRef{RequestID: v.RequestID, SHA: v.AnswerSHA, Run: v.AnswerRun}
	}
	return nil
}

// MarshalJSON writes a working kind's Work at the top of the object, as
// every release wrote it, and Answering also under the keys stores read
// before it existed (request_id, answer_sha and answer_run at the top),
// so that a bot rolled back to that release answers the request a queued
// answer named, not the issue's current one. Drop them a release later.
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	var w *Work
	if t.Kind.Works() {
		w = t.agentWork
		if w == nil {
			w = &Work{}
		}
	}
	return json.Marshal(struct {
		plain
		*Work
		RequestID string `json:"request_id,omitempty"`
		AnswerSHA string `json:"answer_sha,omitempty"`
		AnswerRun int64  `json:"answer_run,omitempty"`
	}{plain(t), w, t.Answering.RequestID, t.Answering.SHA, t.Answering.Run})
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

// IssueKey names the conversation a task belongs to; at most one fix task
// per key is active at a time.
func (t *Task) IssueKey() string {
	return fmt.Sprintf("%d/%s/%d", t.Repo.InstallationID, t.Repo.FullName(), t.Issue)
}

// PRKey names the pull request the task opened in IssueKey's form, so that
// answers and fixes asked there find the task; "" until it opens one.
func (t *Task) PRKey() string {
	if t.agentWork == nil || t.agentWork.PRNumber == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%s/%d", t.Repo.InstallationID, t.Repo.FullName(), t.agentWork.PRNumber)
}

// BranchKey names the branch the task pushes to, across installations: one
// repository has one set of branches whoever reaches it. It is "" until
// the task has a branch.
func (t *Task) BranchKey() string {
	if t.agentWork == nil || t.agentWork.Branch == "" {
		return ""
	}
	return strings.ToLower(t.Repo.FullName()) + ":" + t.agentWork.Branch
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

// CurrentRequest is t's current (or last) execution request, nil when it
// has none or is of a kind that never asks: what a store keeps the answer
// of apart from the task's data.
func (t *Task) CurrentRequest() *ExecRequest {
	if t.agentWork == nil {
		return nil
	}
	return t.agentWork.Request
}
