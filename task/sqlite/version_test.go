package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// A task a later release stored (a document version this release does not
// read) is neither handed to a worker nor failed as unreadable: it waits,
// as it was, for a worker of that release. Reading it says why.
func TestALaterReleasesTaskWaitsForThatRelease(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	newer := &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: 1, Instructions: "fix it"}
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, newer); err != nil {
		t.Fatal(err)
	}
	tx, err := s.write.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET data = json_set(data, '$.version', ?) WHERE id = ?`, task.DocumentVersion+1, newer.ID); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.NextDue(ctx); err != nil || ok {
		t.Errorf("NextDue with only a later release's task = %v, %v; want nothing due", ok, err)
	}
	if got, err := s.Claim(ctx, "w", time.Minute); !errors.Is(err, task.ErrNoTask) {
		t.Fatalf("Claim = %+v, %v; want ErrNoTask", got, err)
	}
	if _, err := s.Get(ctx, newer.ID); !errors.Is(err, task.ErrNewerDocument) {
		t.Errorf("Get of a later release's task: %v; want ErrNewerDocument", err)
	}
	var state string
	if err := s.read.QueryRowContext(ctx, `SELECT state FROM tasks WHERE id = ?`, newer.ID).Scan(&state); err != nil || state != string(task.Queued) {
		t.Errorf("the later release's task is %q (%v); want it left queued", state, err)
	}

	// A task of this release's is claimed past it.
	mine := &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: 2, Instructions: "fix it"}
	if err := s.Record(ctx, task.Delivery{ID: "d2"}, mine); err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, "w", time.Minute)
	if err != nil || got.ID != mine.ID {
		t.Fatalf("Claim = %+v, %v; want task %d", got, err, mine.ID)
	}
}
