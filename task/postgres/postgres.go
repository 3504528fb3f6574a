// Package postgres is the task.Store of a bot whose deliveries and tasks
// live in Postgres, which several replicas can share. It owns its schema
// and migrations and speaks task's types and errors only; the rules of a
// task's life stay in task. Its behaviour is the SQLite store's, checked
// by the same suite (task/storetest).
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/internal/sqlstore"
)

// Store is a pool of connections to one database.
type Store struct {
	db *pgxpool.Pool
	// queue inserts River jobs in the store's transactions; Serve starts
	// the client that works them.
	queue *river.Client[pgx.Tx]
	// now is the store's clock. Every time it writes or compares comes
	// from here, never from the server's now(), so leases and deadlines
	// mean the same under a test's clock and across replicas whose
	// clocks, not the server's, set them.
	now func() time.Time
}

var (
	_ task.Store  = (*Store)(nil)
	_ task.Lister = (*Store)(nil)
	_ task.Due    = (*Store)(nil)
	_ task.Queue  = (*Store)(nil)
)

// earlyWindow is how far ahead of this replica's clock a job may come and
// still be its task's: clocks of replicas and the database differ by less.
const earlyWindow = 5 * time.Second

// DefaultMaxConns is the size of a replica's connection pool when the
// database URL does not set pool_max_conns.
const DefaultMaxConns = 16

// ended is the SQL list of the states a task never leaves.
const ended = `('done', 'failed', 'cancelled')`

// Open connects to the database url names (postgres:// or postgresql://,
// with pgx's parameters) and brings its schema up to date. It fails when
// the server cannot be reached, or when its schema is newer than this bot
// knows.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message quotes the URL, password and all: say only what is wrong.
		return nil, errors.New("open postgres: the database URL does not parse")
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgx's default, the machine's CPUs (at least 4), is too few here:
		// River's listener holds one connection, its producer, completer
		// and leader election take others, and each worker and webhook
		// write wants one too.
		cfg.MaxConns = DefaultMaxConns
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres %s: %w", where(cfg), err)
	}
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open postgres %s: %w", where(cfg), err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open postgres %s: %w", where(cfg), err)
	}
	if err := migrateRiver(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open postgres %s: %w", where(cfg), err)
	}
	// Insert only: no queues, no workers. River notifies listeners of an
	// insert at most once per FetchCooldown per client: an answer's job,
	// inserted a few milliseconds after the job of the /approve delivery
	// that carries it, would wait for the next poll. Every insert notifies.
	queue, err := river.NewClient(riverpgxv5.New(db), &river.Config{FetchCooldown: river.FetchCooldownMin})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open postgres %s: queue: %w", where(cfg), err)
	}
	return &Store{db: db, queue: queue, now: time.Now}, nil
}

// where names a database for messages without its credentials.
func where(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}

// Close closes the pool; later calls fail.
func (s *Store) Close() error {
	s.db.Close()
	return nil
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// Record implements task.Store.
func (s *Store) Record(ctx context.Context, d task.Delivery, t *task.Task) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("record delivery %s: begin: %w", d.ID, err)
	}
	defer tx.Rollback(ctx)
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = s.now()
	}
	// ON CONFLICT rather than a unique violation: a redelivery is an
	// answer, not an error that aborts the transaction.
	tag, err := tx.Exec(ctx, `INSERT INTO deliveries (id, event, action, received_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
		d.ID, d.Event, d.Action, d.ReceivedAt)
	if err != nil {
		return fmt.Errorf("record delivery %s: %w", d.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("record delivery %s: %w", d.ID, task.ErrDuplicate)
	}
	if h := d.Head; h != nil {
		if _, err := tx.Exec(ctx, `INSERT INTO pull_heads (delivery_id, pull_key, sha, at) VALUES ($1, $2, $3, $4)`,
			d.ID, h.PullKey, h.SHA, h.At); err != nil {
			return fmt.Errorf("record delivery %s: head of %s: %w", d.ID, h.PullKey, err)
		}
	}
	if t != nil {
		now := s.now()
		t.Recorded(d.ID, now)
		data, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("record delivery %s: encode task: %w", d.ID, err)
		}
		// busy asks whether an active task keeps t from starting, by its
		// kind. A fix asked on the pull request an active task opened is
		// a fix on that task's conversation too. One review of a pull
		// request runs at a time; no unique index says so, as one does
		// for fixes: databases of before may hold two active reviews of
		// one pull request, which an index would refuse.
		busy := map[task.Kind]string{
			task.KindFix:    `SELECT EXISTS (SELECT 1 FROM tasks WHERE pr_key = $1 AND kind = 'fix' AND state NOT IN ` + ended + `)`,
			task.KindReview: `SELECT EXISTS (SELECT 1 FROM tasks WHERE issue_key = $1 AND kind = 'review' AND state NOT IN ` + ended + `)`,
		}[t.Kind]
		if t.Kind == task.KindReview {
			// The lock, one per pull request, makes check-then-insert
			// atomic across replicas; it is held until the commit, after
			// which a waiting check sees the row.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "pullwright/review/"+t.IssueKey()); err != nil {
				return fmt.Errorf("record delivery %s: lock %s: %w", d.ID, t.IssueKey(), err)
			}
		}
		if busy != "" {
			var active bool
			if err := tx.QueryRow(ctx, busy, t.IssueKey()).Scan(&active); err != nil {
				return fmt.Errorf("record delivery %s: %w", d.ID, err)
			}
			if active {
				return fmt.Errorf("record delivery %s: %s: %w", d.ID, t.IssueKey(), task.ErrActive)
			}
		}
		var (
			id  int64
			due time.Time
		)
		err = tx.QueryRow(ctx,
			`INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at, installation_id, admitted_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id, run_after`,
			t.Kind, t.State, t.IssueKey(), t.RunAfter, data, t.CreatedAt, now, t.Repo.InstallationID, t.AdmittedMS).Scan(&id, &due)
		if err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("record delivery %s: %s: %w", d.ID, t.IssueKey(), task.ErrActive)
			}
			return fmt.Errorf("record delivery %s: insert task: %w", d.ID, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET task_id = $1 WHERE id = $2`, id, d.ID); err != nil {
			return fmt.Errorf("record delivery %s: link task: %w", d.ID, err)
		}
		if err := enqueue(ctx, s.queue, tx, now, due, id, 0); err != nil {
			return fmt.Errorf("record delivery %s: %w", d.ID, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("record delivery %s: commit: %w", d.ID, err)
		}
		t.ID = id
		return nil
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("record delivery %s: commit: %w", d.ID, err)
	}
	return nil
}

// Claim implements task.Store. SKIP LOCKED lets workers of every replica
// claim at once, each taking a different row instead of queueing on the
// first; a row locked by another claim is, for the moment, not ready. A
// task waiting for approval is due at its deadline, or at once when it is
// answered or cancelled.
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration) (*task.Task, error) {
	return s.claim(ctx, 0, owner, lease)
}

// claimTask claims task id for a job of the queue. It returns
// task.ErrNoTask when the task is ended or not due, and a *leasedError
// when a live worker holds it.
func (s *Store) claimTask(ctx context.Context, id int64, owner string, lease time.Duration) (*task.Task, error) {
	return s.claim(ctx, id, owner, lease)
}

// claim leases task want, or the oldest ready task when want is 0.
func (s *Store) claim(ctx context.Context, want int64, owner string, lease time.Duration) (*task.Task, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim task: begin: %w", err)
	}
	defer tx.Rollback(ctx)
	now := s.now()
	var (
		id, crashes int64
		runAfter    time.Time
		data        []byte
		cancelledBy string
		answer      []byte
		leaseOwner  string
		leaseUntil  pgtype.Timestamptz
		state       task.State
	)
	const columns = `id, data, cancelled_by, answer, run_after, crashes, lease_owner, lease_until, state`
	var row pgx.Row
	if want == 0 {
		row = tx.QueryRow(ctx, `SELECT `+columns+` FROM tasks
		WHERE state NOT IN `+ended+` AND run_after <= $1 AND (lease_owner = '' OR lease_until < $1)
		ORDER BY run_after, id LIMIT 1 FOR UPDATE SKIP LOCKED`, now)
	} else {
		// Not SKIP LOCKED: a claim of this row in flight ends in
		// milliseconds, and then this one sees the lease it took.
		row = tx.QueryRow(ctx, `SELECT `+columns+` FROM tasks WHERE id = $1 FOR UPDATE`, want)
	}
	err = row.Scan(&id, &data, &cancelledBy, &answer, &runAfter, &crashes, &leaseOwner, &leaseUntil, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, task.ErrNoTask
	}
	if err != nil {
		return nil, fmt.Errorf("claim task: %w", err)
	}
	switch {
	case want == 0:
	case state.Terminal():
		return nil, fmt.Errorf("claim task %d: %w", want, task.ErrNoTask)
	case runAfter.After(now):
		// Due in a moment: a job River ran by the database's clock, which
		// is a little ahead of this replica's. Due later: a stale job,
		// whose task's later due time has a job of its own.
		if wait := runAfter.Sub(now); wait < earlyWindow {
			return nil, fmt.Errorf("claim task %d: %w", want, &earlyError{wait: wait})
		}
		return nil, fmt.Errorf("claim task %d: %w", want, task.ErrNoTask)
	case leaseOwner != "" && leaseUntil.InfinityModifier == pgtype.Finite && !leaseUntil.Time.Before(now):
		return nil, fmt.Errorf("claim task %d: %w", want, &leasedError{until: leaseUntil.Time})
	}
	t, derr := decodeTask(id, data, cancelledBy, answer)
	if derr != nil {
		// A row no worker can read would be first in line forever: take it
		// out of the queue and say why.
		if _, err := tx.Exec(ctx, `UPDATE tasks SET state = 'failed', lease_owner = '', updated_at = $1 WHERE id = $2`, now, id); err != nil {
			return nil, fmt.Errorf("claim task %d: fail unreadable task: %w", id, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("claim task %d: commit: %w", id, err)
		}
		return nil, fmt.Errorf("claim task %d: failed it: %w: %w", id, errUnreadable, derr)
	}
	t.RunAfter = runAfter.UTC()
	// A lease that ran out with an owner means that worker vanished mid-step.
	if leaseOwner != "" {
		crashes++
	}
	t.Crashes = int(crashes)
	if err := tx.QueryRow(ctx, `UPDATE tasks SET lease_owner = $1, lease_until = $2, crashes = $3, claims = claims + 1 WHERE id = $4 RETURNING claims`,
		owner, now.Add(lease), crashes, t.ID).Scan(&t.Claim); err != nil {
		return nil, fmt.Errorf("claim task %d: %w", t.ID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("claim task %d: commit: %w", t.ID, err)
	}
	return t, nil
}

// taskColumns are what scanTask reads.
const taskColumns = `id, data, cancelled_by, answer, run_after, crashes`

func scanTask(row pgx.Row) (*task.Task, error) {
	var (
		id          int64
		runAfter    time.Time
		crashes     int
		data        []byte
		cancelledBy string
		answer      []byte
	)
	if err := row.Scan(&id, &data, &cancelledBy, &answer, &runAfter, &crashes); err != nil {
		return nil, err
	}
	t, err := decodeTask(id, data, cancelledBy, answer)
	if err != nil {
		return nil, err
	}
	t.RunAfter = runAfter.UTC()
	t.Crashes = crashes
	return t, nil
}

func decodeTask(id int64, data []byte, cancelledBy string, answer []byte) (*task.Task, error) {
	t := new(task.Task)
	if err := json.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("decode task %d: %w", id, err)
	}
	t.ID = id
	t.CancelledBy = cancelledBy
	if r := t.CurrentRequest(); answer != nil && r != nil {
		a := new(task.Answer)
		if err := json.Unmarshal(answer, a); err != nil {
			return nil, fmt.Errorf("decode task %d: answer: %w", id, err)
		}
		r.Answer = a
	}
	return t, nil
}

// answerColumns are the request id and answer columns of t: the answer
// lives outside data so that whoever handles the "/approve" can set it with
// a compare-and-swap while no worker holds the task. No answer is NULL.
func answerColumns(t *task.Task) (requestID string, answer []byte, err error) {
	r := t.CurrentRequest()
	if r == nil {
		return "", nil, nil
	}
	if r.Answer == nil {
		return r.ID, nil, nil
	}
	b, err := json.Marshal(r.Answer)
	return r.ID, b, err
}

// PullHeadsAround implements task.Store. Both answers are read whole, however
// many deliveries the pull request had: no window can push a record out.
func (s *Store) PullHeadsAround(ctx context.Context, pullKey, sha string, at time.Time) (task.HeadsAround, error) {
	var out task.HeadsAround
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pull_heads WHERE pull_key = $1 AND sha = $2 AND at >= $3)`,
		pullKey, sha, at).Scan(&out.Since); err != nil {
		return task.HeadsAround{}, fmt.Errorf("heads of %s since %s: %w", pullKey, at, err)
	}
	rows, err := s.db.Query(ctx, `SELECT DISTINCT sha FROM pull_heads WHERE pull_key = $1
		AND at = (SELECT max(at) FROM pull_heads WHERE pull_key = $1 AND at < $2) ORDER BY sha`,
		pullKey, at)
	if err != nil {
		return task.HeadsAround{}, fmt.Errorf("head of %s before %s: %w", pullKey, at, err)
	}
	before, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return task.HeadsAround{}, fmt.Errorf("head of %s before %s: %w", pullKey, at, err)
	}
	if len(before) > 0 {
		out.Before = before
	}
	return out, nil
}

// HoldBranch implements task.Store. Two tasks may race for one branch: the
// unique index tasks_one_per_branch lets one write win, and the loser
// reads the winner. Few tries suffice: each failed one means another task
// took the branch, which then has to end before the next try can fail.
func (s *Store) HoldBranch(ctx context.Context, t *task.Task) (*task.Task, error) {
	key := t.BranchKey()
	for try := 0; ; try++ {
		holder, err := scanTask(s.db.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks
			WHERE branch_key = $1 AND branch_key <> '' AND id <> $2 AND state NOT IN `+ended, key, t.ID))
		switch {
		case err == nil:
			return holder, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, fmt.Errorf("hold branch %s for task %d: read holder: %w", key, t.ID, err)
		}
		_, err = s.db.Exec(ctx, `UPDATE tasks SET branch_key = $1 WHERE id = $2`, key, t.ID)
		switch {
		case err == nil:
			return nil, nil
		case !isUniqueViolation(err) || try == 2:
			return nil, fmt.Errorf("hold branch %s for task %d: %w", key, t.ID, err)
		}
	}
}

// Save implements task.Store.
func (s *Store) Save(ctx context.Context, t *task.Task, owner string) error {
	now := s.now()
	t.UpdatedAt = now
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("save task %d: encode: %w", t.ID, err)
	}
	requestID, answer, err := answerColumns(t)
	if err != nil {
		return fmt.Errorf("save task %d: encode answer: %w", t.ID, err)
	}
	// An answer given while the worker held the task (it was woken at its
	// deadline, say) is never erased by the worker's older copy: for the
	// same request, a stored answer wins over none, and makes the task due.
	// RETURNING hands back that answer and any cancel that arrived
	// meanwhile, so the worker sees them without another read.
	var (
		stored   []byte
		runAfter time.Time
	)
	err = s.db.QueryRow(ctx, `
UPDATE tasks SET
	state = $1,
	run_after = CASE WHEN $2::jsonb IS NULL AND request_id = $3 AND answer IS NOT NULL THEN least($4::timestamptz, $5::timestamptz) ELSE $4 END,
	answer = CASE WHEN $2::jsonb IS NULL AND request_id = $3 THEN answer ELSE $2::jsonb END,
	request_id = $3,
	pr_key = $6,
	data = $7,
	admitted_ms = $10,
	updated_at = $5
WHERE id = $8 AND lease_owner = $9 AND lease_until >= $5
RETURNING cancelled_by, answer, run_after`,
		t.State, answer, requestID, t.RunAfter, now, t.PRKey(), data, t.ID, owner, t.AdmittedMS).Scan(&t.CancelledBy, &stored, &runAfter)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("save task %d: %w", t.ID, task.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("save task %d: %w", t.ID, err)
	}
	if r := t.CurrentRequest(); stored != nil && r != nil {
		a := new(task.Answer)
		if err := json.Unmarshal(stored, a); err != nil {
			return fmt.Errorf("save task %d: answer: %w", t.ID, err)
		}
		r.Answer = a
	}
	t.RunAfter = runAfter.UTC()
	return nil
}

// Answer implements task.Store: one UPDATE whose WHERE is the
// compare-and-swap, so of two answers at once exactly one finds the row,
// and the job that takes the answer up, in the same transaction.
func (s *Store) Answer(ctx context.Context, id int64, requestID string, a task.Answer) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("answer request %s: %w", requestID, err)
	}
	err = s.dueNow(ctx, id, `UPDATE tasks SET answer = $1, run_after = $2 WHERE id = $3 AND request_id = $4 AND answer IS NULL AND state = 'awaiting_approval' AND cancelled_by = ''
		RETURNING run_after, claims`, b, s.now(), id, requestID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("answer request %s: %w", requestID, task.ErrAnswered)
	}
	if err != nil {
		return fmt.Errorf("answer request %s: %w", requestID, err)
	}
	return nil
}

// dueNow runs update, which makes task id due and returns its run_after
// and claims, and inserts the job that brings it, in one transaction. A
// row the update did not find is pgx.ErrNoRows.
func (s *Store) dueNow(ctx context.Context, id int64, update string, args ...any) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	var (
		due    time.Time
		claims int
	)
	if err := tx.QueryRow(ctx, update, args...).Scan(&due, &claims); err != nil {
		return err
	}
	if err := enqueue(ctx, s.queue, tx, s.now(), due, id, claims); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Renew implements task.Store.
func (s *Store) Renew(ctx context.Context, id int64, owner string, lease time.Duration) error {
	now := s.now()
	tag, err := s.db.Exec(ctx, `UPDATE tasks SET lease_until = $1 WHERE id = $2 AND lease_owner = $3 AND lease_until >= $4`,
		now.Add(lease), id, owner, now)
	if err != nil {
		return fmt.Errorf("renew lease on task %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("renew lease on task %d: %w", id, task.ErrLeaseLost)
	}
	return nil
}

// Release implements task.Store. A task given back before it ended gets
// the job that brings it when it is next due, in the same transaction:
// now, after a retry's back-off, or at an approval's deadline.
func (s *Store) Release(ctx context.Context, id int64, owner string) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("release task %d: begin: %w", id, err)
	}
	defer tx.Rollback(ctx)
	var (
		state  task.State
		due    time.Time
		claims int
	)
	err = tx.QueryRow(ctx, `UPDATE tasks SET lease_owner = '', lease_until = '-infinity' WHERE id = $1 AND lease_owner = $2
		RETURNING state, run_after, claims`, id, owner).Scan(&state, &due, &claims)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("release task %d: %w", id, task.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("release task %d: %w", id, err)
	}
	if !state.Terminal() {
		if err := enqueue(ctx, s.queue, tx, s.now(), due, id, claims); err != nil {
			return fmt.Errorf("release task %d: %w", id, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("release task %d: commit: %w", id, err)
	}
	return nil
}

// Get implements task.Store.
func (s *Store) Get(ctx context.Context, id int64) (*task.Task, error) {
	t, err := scanTask(s.db.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get task %d: %w", id, task.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get task %d: %w", id, err)
	}
	return t, nil
}

func (s *Store) oneFor(ctx context.Context, op, where, key string, kinds ...task.Kind) (*task.Task, error) {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	t, err := scanTask(s.db.QueryRow(ctx,
		`SELECT `+taskColumns+` FROM tasks WHERE (issue_key = $1 OR pr_key = $1) AND kind = ANY($2::text[]) `+where+` ORDER BY id DESC LIMIT 1`, key, names))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, task.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, err)
	}
	return t, nil
}

// List implements task.Lister. The repository is compared on the task's
// own data: there is no column for it, and a scan of the fix tasks is
// cheap beside a page's permission checks against GitHub.
func (s *Store) List(ctx context.Context, q task.ListQuery) ([]*task.Task, error) {
	tail, args := sqlstore.ListTail(q, `(data->'repo'->>'owner') || '/' || (data->'repo'->>'name')`,
		func(n int) string { return fmt.Sprintf("$%d", n) })
	rows, err := s.db.Query(ctx, `SELECT id, data - 'conversation' - 'files', cancelled_by, answer, run_after, crashes
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
		return s.oneFor(ctx, "active", `AND state NOT IN `+ended, issueKey, kinds...)
	}
	return s.oneFor(ctx, "latest", "", issueKey, kinds...)
}

// RequestCancel implements task.Store.
func (s *Store) RequestCancel(ctx context.Context, id int64, by string) error {
	if strings.TrimSpace(by) == "" {
		by = "unknown"
	}
	err := s.dueNow(ctx, id, `UPDATE tasks SET cancelled_by = $1, run_after = $2 WHERE id = $3 AND state NOT IN `+ended+` AND cancelled_by = ''
		RETURNING run_after, claims`, by, s.now(), id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("cancel task %d: %w", id, task.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("cancel task %d: %w", id, err)
	}
	return nil
}

// RequestShown implements task.Store: the time goes into the request in
// the task's data, where Save would put it.
func (s *Store) RequestShown(ctx context.Context, id int64, requestID string, at time.Time) error {
	tag, err := s.db.Exec(ctx, `UPDATE tasks SET data = jsonb_set(data, '{request,shown_at}', to_jsonb($1::text))
WHERE id = $2 AND request_id = $3 AND answer IS NULL AND state = 'awaiting_approval'
	AND jsonb_typeof(data->'request') = 'object' AND data->'request'->'shown_at' IS NULL`,
		at.UTC().Format(time.RFC3339Nano), id, requestID)
	if err != nil {
		return fmt.Errorf("date request %s: %w", requestID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("date request %s: %w", requestID, task.ErrAnswered)
	}
	return nil
}

// Admit implements task.Store. Only admitted tasks count
// (task.Task.AdmittedMS): a flood of refused requests must not use up an
// installation's rate. The counts read the columns installation_id and
// admitted_ms through the partial indexes of migration 2, redefined by
// migration 4, never a task's data: each reads the installation's
// admitted fixes and reviews, running or of the hour, not the backlog. The advisory lock, one per installation, is what
// makes count-then-mark atomic across replicas: a row lock cannot lock the
// rows a concurrent admission is about to add.
func (s *Store) Admit(ctx context.Context, t *task.Task, since, at time.Time, fits func(active, started int) bool) (active, started int, ok bool, err error) {
	inst := t.Repo.InstallationID
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: begin: %w", t.ID, err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, fmt.Sprintf("pullwright/admit/%d", inst)); err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: lock installation %d: %w", t.ID, inst, err)
	}
	// The conditions repeat the indexes' predicates word for word, which
	// is how the planner knows it may use them.
	err = tx.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM tasks WHERE installation_id = $2 AND id <> $3
			AND kind IN ('fix', 'review') AND admitted_ms > 0 AND state NOT IN `+ended+`),
		(SELECT count(*) FROM tasks WHERE installation_id = $2 AND admitted_ms >= $1 AND id <> $3
			AND kind IN ('fix', 'review') AND admitted_ms > 0)`,
		since.UnixMilli(), inst, t.ID).Scan(&active, &started)
	if err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: count tasks of installation %d: %w", t.ID, inst, err)
	}
	if !fits(active, started) {
		return active, started, false, nil
	}
	ms := at.UnixMilli()
	if _, err := tx.Exec(ctx, `UPDATE tasks SET data = jsonb_set(data, '{admitted_ms}', to_jsonb($1::bigint)), admitted_ms = $1, installation_id = $3
		WHERE id = $2`, ms, t.ID, inst); err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: %w", t.ID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: commit: %w", t.ID, err)
	}
	t.AdmittedMS = ms
	return active, started, true, nil
}

// Counts implements task.Store. The tasks_due index holds exactly the tasks
// that are not ended, so the count reads no ended row.
func (s *Store) Counts(ctx context.Context) (map[task.State]int, error) {
	rows, err := s.db.Query(ctx, `SELECT state, count(*) FROM tasks WHERE state NOT IN `+ended+` GROUP BY state`)
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

// NextDue implements task.Due: the earliest due time of a task that is not
// over and does not wait for an answer.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var at *time.Time
	if err := s.db.QueryRow(ctx, `SELECT min(run_after) FROM tasks
		WHERE state NOT IN `+ended+`
		AND NOT (state = 'awaiting_approval' AND answer IS NULL AND cancelled_by = '')`).Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("next due task: %w", err)
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return at.UTC(), true, nil
}
