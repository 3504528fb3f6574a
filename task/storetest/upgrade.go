package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// AdmittedBefore are the tasks an older release's database holds, as a
// store's migration that fills admission's columns must count them at
// now: two running fixes of installation 1 admitted in the hour before
// now or earlier, and an ended one, a never-admitted one, another
// installation's and a task that is no fix, which it must not count as
// running (WantAdmittedBefore).
func AdmittedBefore(now time.Time) []*task.Task {
	hourAgo := now.Add(-time.Hour).UnixMilli()
	rows := []struct {
		kind     task.Kind
		state    task.State
		inst     int64
		admitted int64
	}{
		{task.KindFix, task.AwaitingApproval, 1, hourAgo - 1000}, // running, admitted before the hour
		{task.KindFix, task.Working, 1, hourAgo + 1000},          // running, admitted in the hour
		{task.KindFix, task.Done, 1, hourAgo + 2000},             // ended, admitted in the hour
		{task.KindFix, task.Queued, 1, 0},                        // never admitted
		{task.KindFix, task.Working, 2, hourAgo + 1000},          // another installation's
		{task.KindReply, task.Working, 1, hourAgo + 1000},        // not a fix
	}
	tasks := make([]*task.Task, len(rows))
	for i, r := range rows {
		tasks[i] = &task.Task{Kind: r.kind, State: r.state, Repo: pullwright.Repo{InstallationID: r.inst, Owner: "o", Name: "r"},
			Issue: i + 1, AdmittedMS: r.admitted}
	}
	return tasks
}

// WantAdmittedBefore checks that s, opened on a database holding
// AdmittedBefore(now), counts installation 1's fixes as admission must: 2
// running, 2 admitted in the hour.
func WantAdmittedBefore(t *testing.T, s task.Store, now time.Time) {
	t.Helper()
	probe := &task.Task{Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}}
	active, started, ok, err := s.Admit(context.Background(), probe, now.Add(-time.Hour), now, func(int, int) bool { return false })
	if err != nil || ok {
		t.Fatalf("Admit = %v, %v", ok, err)
	}
	if active != 2 || started != 2 {
		t.Errorf("after the upgrade Admit counted %d active, %d in the hour; want 2, 2", active, started)
	}
}

// ReviewsAdmittedBefore are the tasks of a database from before reviews
// counted against the rates: a running fix and a running review of
// installation 1 admitted in the hour before now, an ended review
// admitted in it, a review never admitted and another installation's.
// A store's test writes the reviews' admission in data only, as a
// release before the admission columns did; the store's migration must
// fill the columns from it (WantReviewsAdmittedBefore).
func ReviewsAdmittedBefore(now time.Time) []*task.Task {
	inHour := now.Add(-30 * time.Minute).UnixMilli()
	rows := []struct {
		kind     task.Kind
		state    task.State
		inst     int64
		admitted int64
	}{
		{task.KindFix, task.Working, 1, inHour},
		{task.KindReview, task.Working, 1, inHour},
		{task.KindReview, task.Done, 1, inHour},
		{task.KindReview, task.Queued, 1, 0},
		{task.KindReview, task.Working, 2, inHour},
	}
	tasks := make([]*task.Task, len(rows))
	for i, r := range rows {
		tasks[i] = &task.Task{Kind: r.kind, State: r.state, Repo: pullwright.Repo{InstallationID: r.inst, Owner: "o", Name: "r"},
			Issue: i + 1, IsPR: r.kind == task.KindReview, AdmittedMS: r.admitted}
	}
	return tasks
}

// WantReviewsAdmittedBefore checks that s, opened on a database holding
// ReviewsAdmittedBefore(now), counts installation 1's fixes and reviews:
// 2 running, 3 admitted in the hour.
func WantReviewsAdmittedBefore(t *testing.T, s task.Store, now time.Time) {
	t.Helper()
	probe := &task.Task{Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}}
	active, started, ok, err := s.Admit(context.Background(), probe, now.Add(-time.Hour), now, func(int, int) bool { return false })
	if err != nil || ok {
		t.Fatalf("Admit = %v, %v", ok, err)
	}
	if active != 2 || started != 3 {
		t.Errorf("after the upgrade Admit counted %d active, %d in the hour; want 2, 3", active, started)
	}
}
