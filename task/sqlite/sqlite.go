// Package sqlite is the default task.Store: the deliveries and tasks of one
// bot in one SQLite file. It owns the schema and its migrations and speaks
// task's types and errors only; the rules of a task's life stay in task.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/internal/sqlstore"
)

// Store is one file, WAL journal, safe for one process with many workers.
// Several replicas need the Postgres store instead.
type Store struct {
	// read is a pool of read-only connections: in WAL, readers neither wait
	// for the writer nor hold it up, so they stay concurrent.
	read *sql.DB
	// write is the one connection that writes, taken in turn.
	write *writer
	// records gathers concurrent Records into one transaction.
	records recordBatches
	now     func() time.Time
}

var (
	_ task.Store  = (*Store)(nil)
	_ task.Lister = (*Store)(nil)
	_ task.Due    = (*Store)(nil)
)

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
	claims       INTEGER NOT NULL DEFAULT 0,
	-- The current execution request and its answer live outside data so
	-- that an answer can be set with a compare-and-swap by whoever handles
	-- the "/approve", while no worker holds the task.
	request_id   TEXT NOT NULL DEFAULT '',
	answer       TEXT NOT NULL DEFAULT '',
	-- The pull request the task opened, so answers given there find it.
	pr_key       TEXT NOT NULL DEFAULT '',
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
CREATE INDEX IF NOT EXISTS tasks_pr ON tasks(pr_key, id) WHERE pr_key <> '';
`

// sqliteMigrations bring a database made by an earlier version up to date.
// PRAGMA user_version counts those that have run; sqliteSchema is the
// shape before the first, so a new file and an old one take the same path.
// Append only: a migration that shipped is never edited.
var sqliteMigrations = []string{
	// 1: the branch a task pushes to. Two pull requests may share a head
	// branch, and a person may open one from a task's branch: the
	// database itself keeps two active tasks off one branch. Tasks active
	// at the upgrade hold their branches as Task.BranchKey names them; where
	// two already share one, the older holds it.
	`ALTER TABLE tasks ADD COLUMN branch_key TEXT NOT NULL DEFAULT '';
CREATE TEMP VIEW active_branches AS SELECT id,
	lower(json_extract(data, '$.repo.owner') || '/' || json_extract(data, '$.repo.name')) || ':' || json_extract(data, '$.branch') AS k
	FROM tasks WHERE kind = 'fix' AND state NOT IN ('done', 'failed', 'cancelled') AND json_valid(data)
	AND coalesce(json_extract(data, '$.branch'), '') <> ''
	AND json_extract(data, '$.repo.owner') IS NOT NULL AND json_extract(data, '$.repo.name') IS NOT NULL;
UPDATE tasks SET branch_key = (SELECT k FROM active_branches a WHERE a.id = tasks.id)
	WHERE id IN (SELECT min(id) FROM active_branches GROUP BY k);
DROP VIEW active_branches;
CREATE UNIQUE INDEX tasks_one_per_branch ON tasks(branch_key)
	WHERE branch_key <> '' AND state NOT IN ('done', 'failed', 'cancelled');`,
	// 2: when each pull request's head came to each commit, by GitHub's
	// clock, so a fork's code pushed after the comment that asked for work
	// on it is known as such. A row per delivery that moved a head.
	`CREATE TABLE pull_heads (
	delivery_id TEXT PRIMARY KEY REFERENCES deliveries(id),
	pull_key    TEXT NOT NULL,
	sha         TEXT NOT NULL,
	at          INTEGER NOT NULL
);
CREATE INDEX pull_heads_sha ON pull_heads(pull_key, sha, at);
CREATE INDEX pull_heads_at ON pull_heads(pull_key, at);`,
	// 3: what Store.Admit counts, in columns: the installation and when
	// the task was admitted (Unix ms, 0 for never), which data holds too.
	// Read from data, an admission parsed every task's document; these
	// partial indexes hold only admitted fix tasks, the first only while
	// they run, so a count reads the few rows the limits are about.
	`ALTER TABLE tasks ADD COLUMN installation_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN admitted_ms INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET
	installation_id = coalesce(json_extract(data, '$.repo.installation_id'), 0),
	admitted_ms = json_extract(data, '$.admitted_ms')
	WHERE kind = 'fix' AND CASE WHEN json_valid(data) THEN json_extract(data, '$.admitted_ms') > 0 END;
CREATE INDEX tasks_admitted_active ON tasks(installation_id, id)
	WHERE kind = 'fix' AND admitted_ms > 0 AND state NOT IN ('done', 'failed', 'cancelled');
CREATE INDEX tasks_admitted ON tasks(installation_id, admitted_ms, id)
	WHERE kind = 'fix' AND admitted_ms > 0;`,
	// 4: a review runs the agent as a fix does, so Store.Admit counts
	// both: the indexes of migration 3 hold admitted reviews too, under
	// their old names (Admit names one). Reviews admitted since migration
	// 3 have the columns already, from Admit; older ones get them from
	// data as fixes did there.
	`UPDATE tasks SET
	installation_id = coalesce(json_extract(data, '$.repo.installation_id'), 0),
	admitted_ms = json_extract(data, '$.admitted_ms')
	WHERE kind = 'review' AND admitted_ms = 0 AND CASE WHEN json_valid(data) THEN json_extract(data, '$.admitted_ms') > 0 END;
DROP INDEX tasks_admitted_active;
DROP INDEX tasks_admitted;
CREATE INDEX tasks_admitted_active ON tasks(installation_id, id)
	WHERE kind IN ('fix', 'review') AND admitted_ms > 0 AND state NOT IN ('done', 'failed', 'cancelled');
CREATE INDEX tasks_admitted ON tasks(installation_id, admitted_ms, id)
	WHERE kind IN ('fix', 'review') AND admitted_ms > 0;`,
}

// migrate runs the migrations the file has not had, each in the
// transaction that counts it: the transaction takes the write lock when it
// begins (_txlock=immediate), so two processes opening one file at once
// run each migration once.
func migrate(ctx context.Context, db *sql.DB) error {
	for {
		done, err := migrateOne(ctx, db)
		if err != nil || done {
			return err
		}
	}
}

func migrateOne(ctx context.Context, db *sql.DB) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return false, fmt.Errorf("migrate: read version: %w", err)
	}
	if current, err := sqlstore.CheckVersion(version, len(sqliteMigrations)); err != nil || current {
		return current, err
	}
	if _, err := tx.ExecContext(ctx, sqliteMigrations[version]); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", version+1, err)
	}
	// PRAGMA takes no parameters; version is an int we read.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, version+1)); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", version+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: commit: %w", version+1, err)
	}
	return false, nil
}

// Open opens (creating if needed) the database file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	// Another process on the same file (a test reading it, an operator's
	// sqlite3) still queues on SQLite's busy handler; this process's own
	// writers queue in writer instead.
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	// Writers take the lock when the transaction begins, so a writer of
	// another process queues on busy_timeout instead of failing with
	// SQLITE_BUSY on upgrade.
	q.Set("_txlock", "immediate")
	wdb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// One connection: writes queue for it in writer.wait, not in the pool.
	wdb.SetMaxOpenConns(1)
	if _, err := wdb.ExecContext(ctx, sqliteSchema); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("create sqlite schema in %s: %w", path, err)
	}
	if err := migrate(ctx, wdb); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// The readers come after the schema, so the file is in WAL before
	// any of them opens it. query_only turns a write sent down the read
	// path by mistake into an error instead of a second writer.
	q.Add("_pragma", "query_only(1)")
	q.Del("_txlock")
	rdb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open sqlite %s for reading: %w", path, err)
	}
	return &Store{read: rdb, write: newWriter(wdb), now: time.Now}, nil
}

// Close closes the database.
func (s *Store) Close() error { return errors.Join(s.read.Close(), s.write.db.Close()) }

func isUniqueViolation(err error) bool {
	var se *sqlitedrv.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// Record implements task.Store. Records that arrive while another write
// holds the connection are committed together (see batch.go), each in a
// savepoint of its own, so that one refused does not undo the others.
func (s *Store) Record(ctx context.Context, d task.Delivery, t *task.Task) error {
	return s.records.record(ctx, s, d, t)
}

// recordIn writes a delivery and its task in tx, in the savepoint the
// batch gives it, and returns the task's id (0 without a task).
func (s *Store) recordIn(ctx context.Context, tx *sql.Tx, d task.Delivery, t *task.Task) (int64, error) {
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = s.now()
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO deliveries (id, event, action, received_at) VALUES (?, ?, ?, ?)`,
		d.ID, d.Event, d.Action, d.ReceivedAt.UnixMilli()); err != nil {
		if isUniqueViolation(err) {
			return 0, fmt.Errorf("record delivery %s: %w", d.ID, task.ErrDuplicate)
		}
		return 0, fmt.Errorf("record delivery %s: %w", d.ID, err)
	}
	if h := d.Head; h != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO pull_heads (delivery_id, pull_key, sha, at) VALUES (?, ?, ?, ?)`,
			d.ID, h.PullKey, h.SHA, h.At.UnixMilli()); err != nil {
			return 0, fmt.Errorf("record delivery %s: head of %s: %w", d.ID, h.PullKey, err)
		}
	}
	if t == nil {
		return 0, nil
	}
	now := s.now()
	t.Recorded(d.ID, now)
	data, err := json.Marshal(t)
	if err != nil {
		return 0, fmt.Errorf("record delivery %s: encode task: %w", d.ID, err)
	}
	// busy is the count of active tasks that keep t from starting, by
	// its kind. A fix asked on the pull request an active task opened is
	// a fix on that task's conversation too. One review of a pull request
	// runs at a time; no unique index says so, as one does for fixes:
	// databases of before may hold two active reviews of one pull
	// request, which an index would refuse. The one writer makes the
	// count and the insert atomic.
	busy := map[task.Kind]string{
		task.KindFix:    `SELECT count(*) FROM tasks WHERE pr_key = ? AND kind = 'fix' AND state NOT IN ('done', 'failed', 'cancelled')`,
		task.KindReview: `SELECT count(*) FROM tasks WHERE issue_key = ? AND kind = 'review' AND state NOT IN ('done', 'failed', 'cancelled')`,
	}[t.Kind]
	if busy != "" {
		var n int
		if err := tx.QueryRowContext(ctx, busy, t.IssueKey()).Scan(&n); err != nil {
			return 0, fmt.Errorf("record delivery %s: %w", d.ID, err)
		}
		if n > 0 {
			return 0, fmt.Errorf("record delivery %s: %s: %w", d.ID, t.IssueKey(), task.ErrActive)
		}
	}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at, installation_id, admitted_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.Kind, t.State, t.IssueKey(), t.RunAfter.UnixMilli(), data, t.CreatedAt.UnixMilli(), now.UnixMilli(), t.Repo.InstallationID, t.AdmittedMS)
	if err != nil {
		if isUniqueViolation(err) {
			return 0, fmt.Errorf("record delivery %s: %s: %w", d.ID, t.IssueKey(), task.ErrActive)
		}
		return 0, fmt.Errorf("record delivery %s: insert task: %w", d.ID, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("record delivery %s: task id: %w", d.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET task_id = ? WHERE id = ?`, id, d.ID); err != nil {
		return 0, fmt.Errorf("record delivery %s: link task: %w", d.ID, err)
	}
	return id, nil
}

// claimable is the SQL condition for a task a worker may take: not finished,
// due, and free of a live lease. A task waiting for approval is due at its
// deadline, or at once when it is answered or cancelled.
const claimable = `state NOT IN ('done', 'failed', 'cancelled')
	AND run_after <= ? AND (lease_owner = '' OR lease_until < ?)`

// Claim implements task.Store.
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration) (*task.Task, error) {
	tx, err := s.write.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim task: begin: %w", err)
	}
	defer tx.Rollback()
	now := s.now().UnixMilli()
	var (
		id, crashes int64
		runAfter    int64
		data        string
		cancelledBy string
		answer      string
		leaseOwner  string
	)
	err = tx.QueryRowContext(ctx, `SELECT id, data, cancelled_by, answer, run_after, crashes, lease_owner FROM tasks WHERE `+claimable+` ORDER BY run_after, id LIMIT 1`, now, now).
		Scan(&id, &data, &cancelledBy, &answer, &runAfter, &crashes, &leaseOwner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, task.ErrNoTask
	}
	if err != nil {
		return nil, fmt.Errorf("claim task: %w", err)
	}
	t, derr := decodeTask(id, data, cancelledBy, answer)
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
	t.RunAfter = time.UnixMilli(runAfter).UTC()
	// A lease that ran out with an owner means that worker vanished mid-step.
	if leaseOwner != "" {
		crashes++
	}
	t.Crashes = int(crashes)
	if err := tx.QueryRowContext(ctx, `UPDATE tasks SET lease_owner = ?, lease_until = ?, crashes = ?, claims = claims + 1 WHERE id = ? RETURNING claims`,
		owner, now+lease.Milliseconds(), crashes, t.ID).Scan(&t.Claim); err != nil {
		return nil, fmt.Errorf("claim task %d: %w", t.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim task %d: commit: %w", t.ID, err)
	}
	return t, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanTask(row scanner) (*task.Task, error) {
	var (
		id, runAfter int64
		crashes      int
		data         string
		cancelledBy  string
		answer       string
	)
	if err := row.Scan(&id, &data, &cancelledBy, &answer, &runAfter, &crashes); err != nil {
		return nil, err
	}
	t, err := decodeTask(id, data, cancelledBy, answer)
	if err != nil {
		return nil, err
	}
	t.RunAfter = time.UnixMilli(runAfter).UTC()
	t.Crashes = crashes
	return t, nil
}

// taskColumns are what scanTask reads.
const taskColumns = `id, data, cancelled_by, answer, run_after, crashes`

func decodeTask(id int64, data, cancelledBy, answer string) (*task.Task, error) {
	t := new(task.Task)
	if err := json.Unmarshal([]byte(data), t); err != nil {
		return nil, fmt.Errorf("decode task %d: %w", id, err)
	}
	t.ID = id
	t.CancelledBy = cancelledBy
	if err := setAnswer(t, answer); err != nil {
		return nil, fmt.Errorf("decode task %d: %w", id, err)
	}
	return t, nil
}

func setAnswer(t *task.Task, answer string) error {
	r := t.CurrentRequest()
	if answer == "" || r == nil {
		return nil
	}
	a := new(task.Answer)
	if err := json.Unmarshal([]byte(answer), a); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	r.Answer = a
	return nil
}

func answerColumn(t *task.Task) (requestID, answer string, err error) {
	r := t.CurrentRequest()
	if r == nil {
		return "", "", nil
	}
	if r.Answer == nil {
		return r.ID, "", nil
	}
	b, err := json.Marshal(r.Answer)
	return r.ID, string(b), err
}

// PullHeadsAround implements task.Store. Both answers are read whole, however
// many deliveries the pull request had: no window can push a record out.
func (s *Store) PullHeadsAround(ctx context.Context, pullKey, sha string, at time.Time) (task.HeadsAround, error) {
	var out task.HeadsAround
	err := s.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pull_heads WHERE pull_key = ? AND sha = ? AND at >= ?)`,
		pullKey, sha, at.UnixMilli()).Scan(&out.Since)
	if err != nil {
		return task.HeadsAround{}, fmt.Errorf("heads of %s since %s: %w", pullKey, at, err)
	}
	rows, err := s.read.QueryContext(ctx, `SELECT DISTINCT sha FROM pull_heads WHERE pull_key = ?
		AND at = (SELECT max(at) FROM pull_heads WHERE pull_key = ? AND at < ?) ORDER BY sha`,
		pullKey, pullKey, at.UnixMilli())
	if err != nil {
		return task.HeadsAround{}, fmt.Errorf("head of %s before %s: %w", pullKey, at, err)
	}
	defer rows.Close()
	for rows.Next() {
		var sha string
		if err := rows.Scan(&sha); err != nil {
			return task.HeadsAround{}, fmt.Errorf("head of %s before %s: %w", pullKey, at, err)
		}
		out.Before = append(out.Before, sha)
	}
	if err := rows.Err(); err != nil {
		return task.HeadsAround{}, fmt.Errorf("head of %s before %s: %w", pullKey, at, err)
	}
	return out, nil
}

// HoldBranch implements task.Store.
func (s *Store) HoldBranch(ctx context.Context, t *task.Task) (*task.Task, error) {
	key := t.BranchKey()
	tx, err := s.write.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("hold branch %s for task %d: begin: %w", key, t.ID, err)
	}
	defer tx.Rollback()
	holder, err := scanTask(tx.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks
		WHERE branch_key = ? AND branch_key <> '' AND id <> ? AND state NOT IN ('done', 'failed', 'cancelled')`, key, t.ID))
	switch {
	case err == nil:
		return holder, nil
	case !errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("hold branch %s for task %d: read holder: %w", key, t.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET branch_key = ? WHERE id = ?`, key, t.ID); err != nil {
		return nil, fmt.Errorf("hold branch %s for task %d: %w", key, t.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("hold branch %s for task %d: commit: %w", key, t.ID, err)
	}
	return nil, nil
}

// Save implements task.Store.
func (s *Store) Save(ctx context.Context, t *task.Task, owner string) error {
	now := s.now()
	t.UpdatedAt = now
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("save task %d: encode: %w", t.ID, err)
	}
	requestID, answer, err := answerColumn(t)
	if err != nil {
		return fmt.Errorf("save task %d: encode answer: %w", t.ID, err)
	}
	// An answer given while the worker held the task (it was woken at its
	// deadline, say) is never erased by the worker's older copy: for the
	// same request, a stored answer wins over none, and makes the task due.
	// RETURNING hands back that answer and any cancel that arrived
	// meanwhile, so the worker sees them without another read.
	var (
		stored   string
		runAfter int64
	)
	err = s.write.queryRow(ctx, []any{&t.CancelledBy, &stored, &runAfter}, `
UPDATE tasks SET
	state = ?,
	run_after = CASE WHEN ? = '' AND request_id = ? AND answer <> '' THEN min(?, ?) ELSE ? END,
	answer = CASE WHEN ? = '' AND request_id = ? THEN answer ELSE ? END,
	request_id = ?,
	pr_key = ?,
	data = ?,
	admitted_ms = ?,
	updated_at = ?
WHERE id = ? AND lease_owner = ? AND lease_until >= ?
RETURNING cancelled_by, answer, run_after`,
		t.State,
		answer, requestID, t.RunAfter.UnixMilli(), now.UnixMilli(), t.RunAfter.UnixMilli(),
		answer, requestID, answer,
		requestID, t.PRKey(), data, t.AdmittedMS, now.UnixMilli(),
		t.ID, owner, now.UnixMilli())
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("save task %d: %w", t.ID, task.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("save task %d: %w", t.ID, err)
	}
	if err := setAnswer(t, stored); err != nil {
		return fmt.Errorf("save task %d: %w", t.ID, err)
	}
	t.RunAfter = time.UnixMilli(runAfter).UTC()
	return nil
}

// Answer implements task.Store.
func (s *Store) Answer(ctx context.Context, id int64, requestID string, a task.Answer) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("answer request %s: %w", requestID, err)
	}
	res, err := s.write.exec(ctx,
		`UPDATE tasks SET answer = ?, run_after = ? WHERE id = ? AND request_id = ? AND answer = '' AND state = 'awaiting_approval' AND cancelled_by = ''`,
		string(b), s.now().UnixMilli(), id, requestID)
	if err != nil {
		return fmt.Errorf("answer request %s: %w", requestID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("answer request %s: %w", requestID, err)
	} else if n == 0 {
		return fmt.Errorf("answer request %s: %w", requestID, task.ErrAnswered)
	}
	return nil
}

// RequestShown implements task.Store: the time goes into the request in
// the task's data, where Save would put it.
func (s *Store) RequestShown(ctx context.Context, id int64, requestID string, at time.Time) error {
	res, err := s.write.exec(ctx,
		`UPDATE tasks SET data = json_set(data, '$.request.shown_at', ?)
WHERE id = ? AND request_id = ? AND answer = '' AND state = 'awaiting_approval'
	AND json_type(data, '$.request') = 'object' AND json_type(data, '$.request.shown_at') IS NULL`,
		at.UTC().Format(time.RFC3339Nano), id, requestID)
	if err != nil {
		return fmt.Errorf("date request %s: %w", requestID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("date request %s: %w", requestID, err)
	} else if n == 0 {
		return fmt.Errorf("date request %s: %w", requestID, task.ErrAnswered)
	}
	return nil
}

func leaseHeld(res sql.Result, id int64, op string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s task %d: %w", op, id, err)
	}
	if n == 0 {
		return fmt.Errorf("%s task %d: %w", op, id, task.ErrLeaseLost)
	}
	return nil
}

// Renew implements task.Store.
func (s *Store) Renew(ctx context.Context, id int64, owner string, lease time.Duration) error {
	now := s.now()
	res, err := s.write.exec(ctx, `UPDATE tasks SET lease_until = ? WHERE id = ? AND lease_owner = ? AND lease_until >= ?`,
		now.Add(lease).UnixMilli(), id, owner, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("renew lease on task %d: %w", id, err)
	}
	return leaseHeld(res, id, "renew lease on")
}

// Release implements task.Store.
func (s *Store) Release(ctx context.Context, id int64, owner string) error {
	res, err := s.write.exec(ctx, `UPDATE tasks SET lease_owner = '', lease_until = 0 WHERE id = ? AND lease_owner = ?`, id, owner)
	if err != nil {
		return fmt.Errorf("release task %d: %w", id, err)
	}
	return leaseHeld(res, id, "release")
}

// Get implements task.Store.
func (s *Store) Get(ctx context.Context, id int64) (*task.Task, error) {
	t, err := scanTask(s.read.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get task %d: %w", id, task.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get task %d: %w", id, err)
	}
	return t, nil
}

func (s *Store) oneFor(ctx context.Context, op, where, key string, kinds ...task.Kind) (*task.Task, error) {
	if len(kinds) == 0 {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, task.ErrNotFound)
	}
	args := []any{key, key}
	for _, k := range kinds {
		args = append(args, string(k))
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(kinds)), ", ")
	t, err := scanTask(s.read.QueryRowContext(ctx,
		`SELECT `+taskColumns+` FROM tasks WHERE (issue_key = ? OR pr_key = ?) AND kind IN (`+in+`) `+where+` ORDER BY id DESC LIMIT 1`, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, task.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, err)
	}
	return t, nil
}

// List implements task.Lister. The repository is compared on the task's
// own data: there is no column for it, and a full scan of the fix tasks
// is cheap beside a page's permission checks against GitHub.
func (s *Store) List(ctx context.Context, q task.ListQuery) ([]*task.Task, error) {
	tail, args := sqlstore.ListTail(q, `json_extract(data, '$.repo.owner') || '/' || json_extract(data, '$.repo.name')`,
		func(int) string { return "?" })
	rows, err := s.read.QueryContext(ctx, `SELECT id, json_remove(data, '$.conversation', '$.files'), cancelled_by, answer, run_after, crashes
		FROM tasks `+tail, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, func() (*task.Task, error) { return scanTask(rows) })
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// Active implements task.Store.
func (s *Store) Active(ctx context.Context, issueKey string) (*task.Task, error) {
	return s.Newest(ctx, issueKey, true, task.KindFix)
}

// Latest implements task.Store.
func (s *Store) Latest(ctx context.Context, issueKey string) (*task.Task, error) {
	return s.Newest(ctx, issueKey, false, task.KindFix)
}

// Newest implements task.Store.
func (s *Store) Newest(ctx context.Context, issueKey string, active bool, kinds ...task.Kind) (*task.Task, error) {
	if active {
		return s.oneFor(ctx, "active", `AND state NOT IN ('done', 'failed', 'cancelled')`, issueKey, kinds...)
	}
	return s.oneFor(ctx, "latest", "", issueKey, kinds...)
}

// RequestCancel implements task.Store.
func (s *Store) RequestCancel(ctx context.Context, id int64, by string) error {
	if strings.TrimSpace(by) == "" {
		by = "unknown"
	}
	res, err := s.write.exec(ctx,
		`UPDATE tasks SET cancelled_by = ?, run_after = ? WHERE id = ? AND state NOT IN ('done', 'failed', 'cancelled') AND cancelled_by = ''`,
		by, s.now().UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("cancel task %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("cancel task %d: %w", id, task.ErrNotFound)
	}
	return nil
}

// Admit implements task.Store. Only admitted tasks count
// (task.Task.AdmittedMS): a flood of refused requests must not use up an
// installation's rate. The counts read the columns installation_id and
// admitted_ms through the partial indexes of migration 3, redefined by
// migration 4, never a task's data, so they read the installation's
// admitted fixes and reviews, not the backlog.
// The count and the mark are one write transaction, which SQLite runs
// alone, so admissions are atomic as they are.
func (s *Store) Admit(ctx context.Context, t *task.Task, since, at time.Time, fits func(active, started int) bool) (active, started int, ok bool, err error) {
	inst := t.Repo.InstallationID
	tx, err := s.write.begin(ctx)
	if err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: begin: %w", t.ID, err)
	}
	defer tx.Rollback()
	// The conditions repeat the indexes' predicates word for word, which
	// is how SQLite knows it may use them; INDEXED BY, because without
	// statistics it would count the running ones through tasks_admitted,
	// every admission the installation ever had.
	err = tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM tasks INDEXED BY tasks_admitted_active WHERE installation_id = ?2 AND id <> ?3
			AND kind IN ('fix', 'review') AND admitted_ms > 0 AND state NOT IN ('done', 'failed', 'cancelled')),
		(SELECT count(*) FROM tasks WHERE installation_id = ?2 AND admitted_ms >= ?1 AND id <> ?3
			AND kind IN ('fix', 'review') AND admitted_ms > 0)`,
		since.UnixMilli(), inst, t.ID).Scan(&active, &started)
	if err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: count tasks of installation %d: %w", t.ID, inst, err)
	}
	if !fits(active, started) {
		return active, started, false, nil
	}
	ms := at.UnixMilli()
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET data = json_set(data, '$.admitted_ms', ?1), admitted_ms = ?1, installation_id = ?3
		WHERE id = ?2`, ms, t.ID, inst); err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: %w", t.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: commit: %w", t.ID, err)
	}
	t.AdmittedMS = ms
	return active, started, true, nil
}

// Counts implements task.Store. The tasks_due index holds exactly the tasks
// that are not ended, so the count reads no ended row.
func (s *Store) Counts(ctx context.Context) (map[task.State]int, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT state, count(*) FROM tasks
		WHERE state NOT IN ('done', 'failed', 'cancelled') GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count tasks by state: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.CountByState(rows)
	if err != nil {
		return nil, fmt.Errorf("count tasks by state: %w", err)
	}
	return out, nil
}
