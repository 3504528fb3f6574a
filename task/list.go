package task

import "context"

// MaxList is the most tasks one List call returns.
const MaxList = 100

// ListQuery asks a Lister for one page of fix tasks, newest first.
type ListQuery struct {
	// Repo, when set, keeps the tasks of that repository, "owner/name"
	// compared as GitHub compares names: ignoring case.
	Repo string
	// State, when set, keeps the tasks in that state.
	State State
	// Before, when above 0, keeps the tasks whose id is below it. Pages
	// are keyed by id rather than by offset, so that tasks recorded while
	// someone reads page two do not push page three's first task onto it.
	Before int64
	// Limit is the most tasks returned; 0, or more than MaxList, is MaxList.
	Limit int
}

// PageSize is q.Limit as a Lister applies it.
func (q ListQuery) PageSize() int {
	if q.Limit <= 0 || q.Limit > MaxList {
		return MaxList
	}
	return q.Limit
}

// Lister lists fix tasks for people looking at them (the console). It is
// apart from Store because no worker needs it: the console declares what
// it reads, and every store implements it (task/storetest checks).
type Lister interface {
	// List returns the fix tasks q asks for, newest (highest id) first.
	// Their Conversation and Files are left out: they are the agent's
	// working state, the largest part of a task, and no list shows them;
	// Get reads a whole task.
	List(ctx context.Context, q ListQuery) ([]*Task, error)
}
