package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pullwright/pullwright/task"
)

// The methods below serve a store that lives for one GitHub Actions run:
// the task waiting for an answer comes back from the state the previous run
// left in the repository, and ids of new tasks must not collide with it.

// Restore writes t, a task saved outside this store, under its own id, with
// its request and answer, as its issue's active task. It fails with
// task.ErrActive if the issue has another active fix task.
func (s *Store) Restore(ctx context.Context, t *task.Task) error {
	if t.ID <= 0 {
		return fmt.Errorf("restore task: id %d", t.ID)
	}
	requestID, answer, err := answerColumn(t)
	if err != nil {
		return fmt.Errorf("restore task %d: encode answer: %w", t.ID, err)
	}
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("restore task %d: encode: %w", t.ID, err)
	}
	now := s.now()
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	_, err = s.write.exec(ctx,
		`INSERT INTO tasks (id, kind, state, issue_key, run_after, cancelled_by, request_id, answer, pr_key, branch_key, data, created_at, updated_at, installation_id, admitted_ms)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Kind, t.State, t.IssueKey(), t.RunAfter.UnixMilli(), t.CancelledBy, requestID, answer, t.PRKey(), t.BranchKey(), data,
		t.CreatedAt.UnixMilli(), now.UnixMilli(), t.Repo.InstallationID, t.AdmittedMS)
	if isUniqueViolation(err) {
		return fmt.Errorf("restore task %d: %s: %w", t.ID, t.IssueKey(), task.ErrActive)
	}
	if err != nil {
		return fmt.Errorf("restore task %d: %w", t.ID, err)
	}
	return nil
}

// StartIDsAt makes the tasks recorded from now on get ids above n.
func (s *Store) StartIDsAt(ctx context.Context, n int64) error {
	tx, err := s.write.begin(ctx)
	if err != nil {
		return fmt.Errorf("start task ids at %d: %w", n, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'tasks'`, n)
	if err != nil {
		return fmt.Errorf("start task ids at %d: %w", n, err)
	}
	if rows, _ := res.RowsAffected(); rows == 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES ('tasks', ?)`, n); err != nil {
			return fmt.Errorf("start task ids at %d: %w", n, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("start task ids at %d: %w", n, err)
	}
	return nil
}

// NextDue implements task.Due: the earliest due time of a task that is not over
// and does not wait for an answer.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	err := s.read.QueryRowContext(ctx, `SELECT min(run_after) FROM tasks
		WHERE state NOT IN ('done', 'failed', 'cancelled')
		AND NOT (state = 'awaiting_approval' AND answer = '' AND cancelled_by = '')`).Scan(&at)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, fmt.Errorf("next due task: %w", err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(at.Int64), true, nil
}
