package task_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// undated is parked's world with the waiting request as a release from
// before the clock rule left it: without GitHub's time of its comments.
func undated(t *testing.T) (*world, *task.Task) {
	t.Helper()
	w, fix := parked(t, "")
	if tasktest.Job(fix).Request.CommentID == 0 || tasktest.Job(fix).Request.PRCommentID == 0 {
		t.Fatalf("the request is not shown on the issue and the pull request: %+v", tasktest.Job(fix).Request)
	}
	if err := w.store.(*tasktest.Store).Rewrite(fix.ID, func(tk *task.Task) { tasktest.Job(tk).Request.ShownAt = time.Time{} }); err != nil {
		t.Fatal(err)
	}
	return w, w.get(fix.ID)
}

// shownAt is GitHub's time of the newest write (created_at, or
// updated_at of an edit) of the comments showing fix's request.
func shownAt(w *world, fix *task.Task) time.Time {
	var at time.Time
	for _, c := range w.gh.Comments {
		if c.ID != tasktest.Job(fix).Request.CommentID && c.ID != tasktest.Job(fix).Request.PRCommentID {
			continue
		}
		for _, t := range []time.Time{c.CreatedAt, c.UpdatedAt} {
			if t.After(at) {
				at = t
			}
		}
	}
	return at
}

func TestAnUndatedRequestTakesItsCommentsTimeFromGitHub(t *testing.T) {
	cases := []struct {
		name string
		// answer gives the answers to fix's request, in order.
		answer func(w *world, fix *task.Task) []*task.Task
		state  task.State
		// reply, when set, is part of the first answer's reply.
		reply string
		// reads is how often the request's comments were read back.
		reads int
		// dated is whether the request has GitHub's time after it all.
		dated bool
	}{
		{
			name: "a comment written after the request was shown approves it",
			answer: func(w *world, fix *task.Task) []*task.Task {
				return []*task.Task{w.answer(task.KindApprove, "maint", 12, "")}
			},
			state: task.Done, reads: 2, dated: true,
		},
		{
			name: "a comment GitHub dates in the second the request was shown is before it",
			answer: func(w *world, fix *task.Task) []*task.Task {
				return []*task.Task{w.ask(&task.Task{Kind: task.KindApprove, Issue: 1, CommentID: 12, Requester: person("maint"), AskedAt: shownAt(w, fix)})}
			},
			state: task.AwaitingApproval, reply: "your answer was written before request", reads: 2, dated: true,
		},
		{
			name: "the time is saved: a second answer reads nothing again",
			answer: func(w *world, fix *task.Task) []*task.Task {
				early := w.ask(&task.Task{Kind: task.KindApprove, Issue: 1, CommentID: 12, Requester: person("maint"), AskedAt: shownAt(w, fix)})
				w.drain()
				w.clock.Advance(time.Minute)
				return []*task.Task{early, w.answer(task.KindApprove, "maint", 13, tasktest.Job(fix).Request.ID)}
			},
			state: task.Done, reply: "your answer was written before request", reads: 2, dated: true,
		},
		{
			name: "a comment written before an edit of the request's comment is before it",
			answer: func(w *world, fix *task.Task) []*task.Task {
				var created time.Time
				for _, c := range w.gh.Comments {
					if c.ID == tasktest.Job(fix).Request.CommentID {
						created, c.UpdatedAt = c.CreatedAt, c.CreatedAt.Add(10*time.Minute)
					}
				}
				return []*task.Task{w.ask(&task.Task{Kind: task.KindApprove, Issue: 1, CommentID: 12, Requester: person("maint"), AskedAt: created.Add(time.Minute)})}
			},
			state: task.AwaitingApproval, reply: "your answer was written before request", reads: 2, dated: true,
		},
		{
			name: "a deleted request comment leaves the time unknown",
			answer: func(w *world, fix *task.Task) []*task.Task {
				w.gh.Comments = slices.DeleteFunc(w.gh.Comments, func(c *tasktest.IssueComment) bool { return c.ID == tasktest.Job(fix).Request.CommentID })
				return []*task.Task{w.answer(task.KindApprove, "maint", 12, "")}
			},
			state: task.AwaitingApproval, reply: "is not known, so your answer cannot be matched", reads: 1,
		},
		{
			name: "the button needs no time",
			answer: func(w *world, fix *task.Task) []*task.Task {
				return []*task.Task{w.ask(&task.Task{Kind: task.KindApprove, Requester: person("maint"),
					Answering: task.AnswerRef{RequestID: tasktest.Job(fix).Request.ID, Run: tasktest.Job(fix).Request.CheckRunID, SHA: tasktest.Job(fix).Request.SHA}})}
			},
			state: task.Done,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, fix := undated(t)
			answers := c.answer(w, fix)
			want := shownAt(w, fix)
			w.drain()
			for _, a := range answers {
				w.want(a.ID, task.Done)
			}
			got := w.want(fix.ID, c.state)
			if c.reply != "" {
				if r := w.reply(answers[0]); !strings.Contains(r, c.reply) {
					t.Errorf("reply %q does not say %q", r, c.reply)
				}
			}
			if runs := len(w.runner.Specs); (c.state == task.Done) != (runs == 1) {
				t.Errorf("%d runs with the task %s", runs, c.state)
			}
			if n := w.gh.Asked["ReadComment"]; n != c.reads {
				t.Errorf("the request's comments were read %d times, want %d", n, c.reads)
			}
			if dated := tasktest.Job(got).Request.ShownAt.Equal(want); dated != c.dated {
				t.Errorf("request shown at %v; GitHub's time of its newest comment is %v", tasktest.Job(got).Request.ShownAt, want)
			}
		})
	}
}
