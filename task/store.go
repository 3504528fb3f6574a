package task

import (
	"context"
	"errors"
	"time"
)

// The errors a Store returns, wrapped, whatever the database behind it.
var (
	// ErrDuplicate means the delivery was seen before; nothing was written.
	ErrDuplicate = errors.New("delivery already recorded")
	// ErrActive means the issue already has an active fix task, or the
	// pull request an active review; Record wrote nothing and the caller
	// may record a reply instead.
	ErrActive = errors.New("issue already has an active task")
	// ErrNotFound means no such task.
	ErrNotFound = errors.New("task not found")
	// ErrLeaseLost means another worker owns the task now.
	ErrLeaseLost = errors.New("lease lost")
	// ErrNoTask means nothing is ready to run.
	ErrNoTask = errors.New("no task ready")
	// ErrAnswered means the request already has an answer, or is no longer
	// the task's current request, or the task no longer waits for one.
	ErrAnswered = errors.New("request already answered or no longer waiting")
)

// Store keeps deliveries and tasks durably. The SQLite implementation
// (package task/sqlite) is the default; a Postgres one serves several
// replicas. Every implementation passes the suite in package task/storetest.
type Store interface {
	// Record commits the delivery and, when t is not nil, enqueues t, in one
	// transaction, and sets t.ID. A delivery seen before returns ErrDuplicate;
	// a fix task for an issue that already has an active one, or a review
	// task for a pull request that already has an active review, returns
	// ErrActive. In both cases nothing is written.
	Record(ctx context.Context, d Delivery, t *Task) error
	// Claim leases the oldest task that is ready to run: not terminal, due,
	// and not leased by a live worker. It returns ErrNoTask when none is.
	Claim(ctx context.Context, owner string, lease time.Duration) (*Task, error)
	// Save writes t back; it fails with ErrLeaseLost unless owner holds t's lease.
	Save(ctx context.Context, t *Task, owner string) error
	// Renew extends owner's lease on a task.
	Renew(ctx context.Context, id int64, owner string, lease time.Duration) error
	// Release gives up owner's lease so another worker may claim the task at once.
	Release(ctx context.Context, id int64, owner string) error
	// Get reads a task.
	Get(ctx context.Context, id int64) (*Task, error)
	// Active returns the active fix task of an issue key, or of the pull
	// request a task opened (same key form), or ErrNotFound.
	Active(ctx context.Context, issueKey string) (*Task, error)
	// PullHeadsAround tells what deliveries (Delivery.Head) said of the
	// head of the pull request with key pullKey around time at, and of
	// commit sha coming to it.
	PullHeadsAround(ctx context.Context, pullKey, sha string, at time.Time) (HeadsAround, error)
	// HoldBranch marks t.Branch as t's: while t is active, no other task
	// may hold it. When another active task holds it, nothing is written
	// and that task is returned; otherwise the result is nil.
	HoldBranch(ctx context.Context, t *Task) (*Task, error)
	// Latest returns the newest fix task of an issue key, or ErrNotFound.
	Latest(ctx context.Context, issueKey string) (*Task, error)
	// Newest returns the newest task of an issue key, or of the pull
	// request a task opened (same key form), whose kind is one of kinds,
	// or ErrNotFound; with active, the newest that has not ended. Active
	// and Latest are Newest of KindFix: a bare /approve answers fixes
	// only, while /agent status and /agent cancel see reviews too.
	Newest(ctx context.Context, issueKey string, active bool, kinds ...Kind) (*Task, error)
	// Answer records the answer to a task's waiting execution request and
	// makes the task due, if and only if requestID is its current request,
	// it waits, and nobody answered before: ErrAnswered otherwise.
	Answer(ctx context.Context, id int64, requestID string, a Answer) error
	// RequestShown sets GitHub's time of the comments showing a task's
	// waiting request (ExecRequest.ShownAt) when a release from before the
	// clock rule asked it without one, and makes nothing due. It writes
	// only if requestID is the current request, the task waits for it
	// unanswered, and the request has no time: ErrAnswered otherwise.
	RequestShown(ctx context.Context, id int64, requestID string, at time.Time) error
	// RequestCancel marks a task to be cancelled by a worker at its next
	// step, and makes it due at once so a waiting task is cancelled now.
	RequestCancel(ctx context.Context, id int64, by string) error
	// Admit counts the admitted fix and review tasks (the kinds that run
	// the agent) of t's installation other than t: those active now, and
	// those admitted since since. If fits says one more may start, it
	// marks t admitted at at (Task.AdmittedMS), in the same transaction
	// and under a lock of the installation, so that workers of several
	// replicas admitting at once cannot all take the last place. It
	// returns the counts and whether t was admitted.
	Admit(ctx context.Context, t *Task, since, at time.Time, fits func(active, started int) bool) (active, started int, ok bool, err error)
	// Counts returns how many tasks are in each non-terminal state, for
	// the metrics; a state without tasks is absent. Ended tasks are not
	// counted: their number only grows, and counting them would read the
	// whole table.
	Counts(ctx context.Context) (map[State]int, error)
	// Close releases the store's resources.
	Close() error
}
