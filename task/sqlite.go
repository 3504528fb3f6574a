package task

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite is the default Store: one file, WAL journal, safe for one process
// with many workers. Several replicas need the Postgres store instead.
type SQLite struct {
	db  *sql.DB
	now func() time.Time
}

var _ Store = (*SQLite)(nil)

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS deliveries (
	id          TEXT PRIMARY KEY,
	event       TEXT NOT NULL,
	action      TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	task_id     INTEGER
);
CREATE TABLE IF NOT EXISTS tasks (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	kind         TEXT NOT NULL,
	state        TEXT NOT NULL,
	issue_key    TEXT NOT NULL,
	run_after    INTEGER NOT NULL,
	lease_owner  TEXT NOT NULL DEFAULT '',
	lease_until  INTEGER NOT NULL DEFAULT 0,
	cancelled_by TEXT NOT NULL DEFAULT '',
	crashes      INTEGER NOT NULL DEFAULT 0,
	data         TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
);
-- One active fix task per issue: a second "/agent fix" while one runs is
-- refused by the database itself, so two replicas cannot both start one.
CREATE UNIQUE INDEX IF NOT EXISTS tasks_one_active_fix ON tasks(issue_key)
	WHERE kind = 'fix' AND state NOT IN ('done', 'failed', 'cancelled');
CREATE INDEX IF NOT EXISTS tasks_due ON tasks(run_after)
	WHERE state NOT IN ('done', 'failed', 'cancelled');
CREATE INDEX IF NOT EXISTS tasks_issue ON tasks(issue_key, id);
`

// OpenSQLite opens (creating if needed) the database file at path.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	// Writers take the lock when the transaction begins, so two writers
	// queue on busy_timeout instead of failing with SQLITE_BUSY on upgrade.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create sqlite schema in %s: %w", path, err)
	}
	return &SQLite{db: db, now: time.Now}, nil
}

// Close closes the database.
func (s *SQLite) Close() error { return s.db.Close() }

func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// Record implements Store.
func (s *SQLite) Record(ctx context.Context, d Delivery, t *Task) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record delivery %s: begin: %w", d.ID, err)
	}
	defer tx.Rollback()
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = s.now()
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO deliveries (id, event, action, received_at) VALUES (?, ?, ?, ?)`,
		d.ID, d.Event, d.Action, d.ReceivedAt.UnixMilli()); err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("record delivery %s: %w", d.ID, ErrDuplicate)
		}
		return fmt.Errorf("record delivery %s: %w", d.ID, err)
	}
	if t != nil {
		now := s.now()
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
		t.DeliveryID = d.ID
		data, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("record delivery %s: encode task: %w", d.ID, err)
		}
		res, err := tx.ExecContext(ctx,
			`INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.Kind, t.State, t.IssueKey(), t.RunAfter.UnixMilli(), data, t.CreatedAt.UnixMilli(), now.UnixMilli())
		if err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("record delivery %s: %s: %w", d.ID, t.IssueKey(), ErrActive)
			}
			return fmt.Errorf("record delivery %s: insert task: %w", d.ID, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("record delivery %s: task id: %w", d.ID, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET task_id = ? WHERE id = ?`, id, d.ID); err != nil {
			return fmt.Errorf("record delivery %s: link task: %w", d.ID, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("record delivery %s: commit: %w", d.ID, err)
		}
		t.ID = id
		return nil
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record delivery %s: commit: %w", d.ID, err)
	}
	return nil
}

// claimable is the SQL condition for a task a worker may take: not finished,
// not parked waiting for a person unless someone asked to cancel it, due,
// and free of a live lease.
const claimable = `state NOT IN ('done', 'failed', 'cancelled')
	AND (state <> 'awaiting_approval' OR cancelled_by <> '')
	AND run_after <= ? AND (lease_owner = '' OR lease_until < ?)`

// Claim implements Store.
func (s *SQLite) Claim(ctx context.Context, owner string, lease time.Duration) (*Task, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("claim task: begin: %w", err)
	}
	defer tx.Rollback()
	now := s.now().UnixMilli()
	var (
		id, crashes int64
		data        string
		cancelledBy string
		leaseOwner  string
	)
	err = tx.QueryRowContext(ctx, `SELECT id, data, cancelled_by, crashes, lease_owner FROM tasks WHERE `+claimable+` ORDER BY run_after, id LIMIT 1`, now, now).
		Scan(&id, &data, &cancelledBy, &crashes, &leaseOwner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoTask
	}
	if err != nil {
		return nil, fmt.Errorf("claim task: %w", err)
	}
	t, derr := decodeTask(id, data, cancelledBy)
	if derr != nil {
		// A row no worker can read would be first in line forever: take it
		// out of the queue and say why.
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'failed', lease_owner = '', updated_at = ? WHERE id = ?`, now, id); err != nil {
			return nil, fmt.Errorf("claim task %d: fail unreadable task: %w", id, err)
		}
		if err := tx.Commit(); err != nil {
			return nil, fmt.Errorf("claim task %d: commit: %w", id, err)
		}
		return nil, fmt.Errorf("claim task %d: failed it: %w", id, derr)
	}
	// A lease that ran out with an owner means that worker vanished mid-step.
	if leaseOwner != "" {
		crashes++
	}
	t.Crashes = int(crashes)
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET lease_owner = ?, lease_until = ?, crashes = ? WHERE id = ?`,
		owner, now+lease.Milliseconds(), crashes, t.ID); err != nil {
		return nil, fmt.Errorf("claim task %d: %w", t.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim task %d: commit: %w", t.ID, err)
	}
	return t, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanTask(row scanner) (*Task, error) {
	var (
		id          int64
		data        string
		cancelledBy string
	)
	if err := row.Scan(&id, &data, &cancelledBy); err != nil {
		return nil, err
	}
	return decodeTask(id, data, cancelledBy)
}

func decodeTask(id int64, data, cancelledBy string) (*Task, error) {
	t := new(Task)
	if err := json.Unmarshal([]byte(data), t); err != nil {
		return nil, fmt.Errorf("decode task %d: %w", id, err)
	}
	t.ID = id
	t.CancelledBy = cancelledBy
	return t, nil
}

// Save implements Store.
func (s *SQLite) Save(ctx context.Context, t *Task, owner string) error {
	now := s.now()
	t.UpdatedAt = now
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("save task %d: encode: %w", t.ID, err)
	}
	// RETURNING hands back a cancel that arrived while the worker held the
	// task, so the worker sees it without another read.
	err = s.db.QueryRowContext(ctx,
		`UPDATE tasks SET state = ?, run_after = ?, data = ?, updated_at = ? WHERE id = ? AND lease_owner = ? AND lease_until >= ? RETURNING cancelled_by`,
		t.State, t.RunAfter.UnixMilli(), data, now.UnixMilli(), t.ID, owner, now.UnixMilli()).Scan(&t.CancelledBy)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("save task %d: %w", t.ID, ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("save task %d: %w", t.ID, err)
	}
	return nil
}

func leaseHeld(res sql.Result, id int64, op string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s task %d: %w", op, id, err)
	}
	if n == 0 {
		return fmt.Errorf("%s task %d: %w", op, id, ErrLeaseLost)
	}
	return nil
}

// Renew implements Store.
func (s *SQLite) Renew(ctx context.Context, id int64, owner string, lease time.Duration) error {
	now := s.now()
	res, err := s.db.ExecContext(ctx, `UPDATE tasks SET lease_until = ? WHERE id = ? AND lease_owner = ? AND lease_until >= ?`,
		now.Add(lease).UnixMilli(), id, owner, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("renew lease on task %d: %w", id, err)
	}
	return leaseHeld(res, id, "renew lease on")
}

// Release implements Store.
func (s *SQLite) Release(ctx context.Context, id int64, owner string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE tasks SET lease_owner = '', lease_until = 0 WHERE id = ? AND lease_owner = ?`, id, owner)
	if err != nil {
		return fmt.Errorf("release task %d: %w", id, err)
	}
	return leaseHeld(res, id, "release")
}

// Get implements Store.
func (s *SQLite) Get(ctx context.Context, id int64) (*Task, error) {
	t, err := scanTask(s.db.QueryRowContext(ctx, `SELECT id, data, cancelled_by FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get task %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get task %d: %w", id, err)
	}
	return t, nil
}

func (s *SQLite) oneFor(ctx context.Context, op, where, key string) (*Task, error) {
	t, err := scanTask(s.db.QueryRowContext(ctx,
		`SELECT id, data, cancelled_by FROM tasks WHERE issue_key = ? AND kind = 'fix' `+where+` ORDER BY id DESC LIMIT 1`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, err)
	}
	return t, nil
}

// Active implements Store.
func (s *SQLite) Active(ctx context.Context, issueKey string) (*Task, error) {
	return s.oneFor(ctx, "active", `AND state NOT IN ('done', 'failed', 'cancelled')`, issueKey)
}

// Latest implements Store.
func (s *SQLite) Latest(ctx context.Context, issueKey string) (*Task, error) {
	return s.oneFor(ctx, "latest", "", issueKey)
}

// RequestCancel implements Store.
func (s *SQLite) RequestCancel(ctx context.Context, id int64, by string) error {
	if strings.TrimSpace(by) == "" {
		by = "unknown"
	}
	res, err := s.db.ExecContext(ctx,
		`UPDATE tasks SET cancelled_by = ?, run_after = ? WHERE id = ? AND state NOT IN ('done', 'failed', 'cancelled') AND cancelled_by = ''`,
		by, s.now().UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("cancel task %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("cancel task %d: %w", id, ErrNotFound)
	}
	return nil
}
