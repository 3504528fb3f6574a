package tasktest

import (
	"fmt"

	"github.com/pullwright/pullwright/task"
)

// Job is t's Job, for a test with a fix or a review in hand; it panics on
// a task of another kind, which has no work to read.
func Job(t *task.Task) task.Job {
	j, ok := t.Job()
	if !ok {
		panic(fmt.Sprintf("tasktest: task %d of kind %q has no work", t.ID, t.Kind))
	}
	return j
}

// WithWork gives t, a fix or a review, w as its Work, and returns it: a
// task built as a store would give it back.
func WithWork(t *task.Task, w task.Work) *task.Task {
	*Job(t).Work = w
	return t
}
