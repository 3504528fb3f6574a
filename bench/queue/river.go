package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite"

	"github.com/pullwright/pullwright/bench/internal/benchpg"
)

// stepArgs is the job of an item, shaped like the Postgres store's
// (task/postgres/queue.go): the task it steps, unique by its arguments.
type stepArgs struct {
	Task int64 `json:"task"`
	Item int   `json:"item"`
}

func (stepArgs) Kind() string { return "pullwright_bench_step" }

func (stepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// rows are the writes of ours that go in River's transactions: Record's
// rows with the job, the task's new state with the job's completion.
type rows[TTx any] interface {
	begin(ctx context.Context) (TTx, error)
	commit(ctx context.Context, tx TTx) error
	rollback(ctx context.Context, tx TTx)
	// record inserts item i's delivery and task, linked, and returns the
	// task's id.
	record(ctx context.Context, tx TTx, i int) (int64, error)
	// done marks the task done, rewriting its data as Save does.
	done(ctx context.Context, tx TTx, id int64, data []byte) error
}

// riverEngine is River working items: an insert-only client inserts each
// item's job in the item's Record transaction, and a working client, with
// the workers, completes the job in the transaction that marks the task
// done. So does the Postgres store (an insert-only client in Open, the
// working one in Serve).
type riverEngine[TD riverdriver.Driver[TTx], TTx any] struct {
	ins, work  rows[TTx]
	workDriver TD
	inserter   *river.Client[TTx]
	client     *river.Client[TTx]
	close      func() error
	cfg        config
	// cooldown is the working client's FetchCooldown: the least time
	// between two fetches of jobs. Each fetch takes at most as many jobs
	// as there are idle workers, so River's default (100 ms) caps a
	// client at workers/100 ms, 40 jobs a second with 4, on any database.
	cooldown time.Duration
}

func newRiverEngine[TD riverdriver.Driver[TTx], TTx any](ins, work rows[TTx], insDriver, workDriver TD, closeDB func() error, cooldown time.Duration, cfg config) (*riverEngine[TD, TTx], error) {
	inserter, err := river.NewClient[TTx](insDriver, &river.Config{Logger: cfg.log})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("river insert client: %w", err), closeDB())
	}
	return &riverEngine[TD, TTx]{ins: ins, work: work, workDriver: workDriver, inserter: inserter, close: closeDB, cooldown: cooldown, cfg: cfg}, nil
}

func (e *riverEngine[TD, TTx]) start(ctx context.Context, tr *tracker) error {
	data, err := json.Marshal(taskData(0))
	if err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[stepArgs]) error {
		tr.take(job.Args.Item)
		tx, err := e.work.begin(ctx)
		if err != nil {
			return fmt.Errorf("work item %d: begin: %w", job.Args.Item, err)
		}
		defer e.work.rollback(ctx, tx)
		if err := e.work.done(ctx, tx, job.Args.Task, data); err != nil {
			return fmt.Errorf("work item %d: %w", job.Args.Item, err)
		}
		if _, err := river.JobCompleteTx[TD](ctx, tx, job); err != nil {
			return fmt.Errorf("work item %d: complete job: %w", job.Args.Item, err)
		}
		if err := e.work.commit(ctx, tx); err != nil {
			return fmt.Errorf("work item %d: commit: %w", job.Args.Item, err)
		}
		tr.finish(job.Args.Item)
		return nil
	}))
	e.client, err = river.NewClient[TTx](e.workDriver, &river.Config{
		Logger:  e.cfg.log,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: e.cfg.workers}},
		Workers: workers,
		// As the Postgres store's Serve: no River timeout, and the default
		// FetchPollInterval (1s).
		JobTimeout:    -1,
		FetchCooldown: e.cooldown,
	})
	if err != nil {
		return fmt.Errorf("river client: %w", err)
	}
	if err := e.client.Start(ctx); err != nil {
		return fmt.Errorf("start river: %w", err)
	}
	return nil
}

func (e *riverEngine[TD, TTx]) record(ctx context.Context, i int) error {
	tx, err := e.ins.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer e.ins.rollback(ctx, tx)
	id, err := e.ins.record(ctx, tx, i)
	if err != nil {
		return err
	}
	if _, err := e.inserter.InsertTx(ctx, tx, stepArgs{Task: id, Item: i}, nil); err != nil {
		return fmt.Errorf("insert job: %w", err)
	}
	return e.ins.commit(ctx, tx)
}

func (e *riverEngine[TD, TTx]) stop() error {
	var err error
	if e.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = e.client.Stop(ctx)
	}
	return errors.Join(err, e.close())
}

// taskData is the task row's data, as Record writes it.
func taskData(i int) any {
	d, t := item(i)
	t.Recorded(d.ID, time.Now())
	return t
}

// riverSQLiteSchema is the part of the store's schema that Record and
// Save write, beside River's tables in the same file.
const riverSQLiteSchema = `
CREATE TABLE IF NOT EXISTS deliveries (
	id          TEXT PRIMARY KEY,
	event       TEXT NOT NULL,
	action      TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	task_id     INTEGER
);
CREATE TABLE IF NOT EXISTS tasks (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	kind        TEXT NOT NULL,
	state       TEXT NOT NULL,
	issue_key   TEXT NOT NULL,
	run_after   INTEGER NOT NULL,
	data        TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS tasks_one_active_fix ON tasks(issue_key)
	WHERE kind = 'fix' AND state NOT IN ('done', 'failed', 'cancelled');
`

// openRiverSQLiteDB makes the file at path ready for River: our tables
// and River's migrations.
func openRiverSQLiteDB(ctx context.Context, path string) (*sql.DB, error) {
	db, err := openSQLite(path)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, riverSQLiteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("schema of %s: %w", path, err)
	}
	m, err := rivermigrate.New(riversqlite.New(db), nil)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate river in %s: %w", path, err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate river in %s: %w", path, err)
	}
	return db, nil
}

// openRiverSQLite is River on the SQLite file at path. Record's
// transaction must be River's insert transaction, so River inserts on the
// store's one write connection. River's working client shares it
// (own=false: River's own queries then wait for it in database/sql's pool,
// beside Record, outside the store's first-come-first-served turn), or has
// a connection of its own to the same file (own=true: a second writer,
// which waits in SQLite's busy handler).
func openRiverSQLite(ctx context.Context, path string, own bool, cooldown time.Duration, cfg config) (engine, error) {
	db, err := openRiverSQLiteDB(ctx, path)
	if err != nil {
		return nil, err
	}
	workDB, closeDB := db, db.Close
	if own {
		if workDB, err = openSQLite(path); err != nil {
			return nil, errors.Join(err, db.Close())
		}
		closeDB = func() error { return errors.Join(workDB.Close(), db.Close()) }
	}
	return newRiverEngine[*riversqlite.Driver, *sql.Tx](sqliteRows{db}, sqliteRows{workDB},
		riversqlite.New(db), riversqlite.New(workDB), closeDB, cooldown, cfg)
}

type sqliteRows struct{ db *sql.DB }

func (r sqliteRows) begin(ctx context.Context) (*sql.Tx, error) { return r.db.BeginTx(ctx, nil) }

func (r sqliteRows) commit(_ context.Context, tx *sql.Tx) error { return tx.Commit() }

func (r sqliteRows) rollback(_ context.Context, tx *sql.Tx) { tx.Rollback() }

func (r sqliteRows) record(ctx context.Context, tx *sql.Tx, i int) (int64, error) {
	d, t := item(i)
	now := time.Now()
	t.Recorded(d.ID, now)
	data, err := json.Marshal(t)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO deliveries (id, event, action, received_at) VALUES (?, ?, ?, ?)`,
		d.ID, d.Event, d.Action, now.UnixMilli()); err != nil {
		return 0, fmt.Errorf("insert delivery: %w", err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.Kind, t.State, t.IssueKey(), t.RunAfter.UnixMilli(), data, now.UnixMilli(), now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("insert task: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("task id: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET task_id = ? WHERE id = ?`, id, d.ID); err != nil {
		return 0, fmt.Errorf("link task: %w", err)
	}
	return id, nil
}

func (r sqliteRows) done(ctx context.Context, tx *sql.Tx, id int64, data []byte) error {
	_, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'done', data = ?, updated_at = ? WHERE id = ?`, data, time.Now().UnixMilli(), id)
	return err
}

const riverPostgresSchema = `
CREATE TABLE deliveries (
	id          TEXT PRIMARY KEY,
	event       TEXT NOT NULL,
	action      TEXT NOT NULL,
	received_at TIMESTAMPTZ NOT NULL,
	task_id     BIGINT
);
CREATE TABLE tasks (
	id          BIGSERIAL PRIMARY KEY,
	kind        TEXT NOT NULL,
	state       TEXT NOT NULL,
	issue_key   TEXT NOT NULL,
	run_after   TIMESTAMPTZ NOT NULL,
	data        JSONB NOT NULL,
	created_at  TIMESTAMPTZ NOT NULL,
	updated_at  TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX tasks_one_active_fix ON tasks(issue_key)
	WHERE kind = 'fix' AND state NOT IN ('done', 'failed', 'cancelled');
`

// openRiverPostgres is the same River cycle on a new Postgres database.
func openRiverPostgres(ctx context.Context, cooldown time.Duration, cfg config) (engine, error) {
	dbURL, drop, err := benchpg.CreateDatabase(ctx, cfg.postgres)
	if err != nil {
		return nil, err
	}
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("connect: %w", err), drop())
	}
	closeDB := func() error { db.Close(); return drop() }
	if _, err := db.Exec(ctx, riverPostgresSchema); err != nil {
		return nil, errors.Join(fmt.Errorf("schema: %w", err), closeDB())
	}
	m, err := rivermigrate.New(riverpgxv5.New(db), nil)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("migrate river: %w", err), closeDB())
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("migrate river: %w", err), closeDB())
	}
	return newRiverEngine[*riverpgxv5.Driver, pgx.Tx](pgRows{db}, pgRows{db}, riverpgxv5.New(db), riverpgxv5.New(db), closeDB, cooldown, cfg)
}

type pgRows struct{ db *pgxpool.Pool }

func (r pgRows) begin(ctx context.Context) (pgx.Tx, error) { return r.db.Begin(ctx) }

func (r pgRows) commit(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) }

func (r pgRows) rollback(ctx context.Context, tx pgx.Tx) { tx.Rollback(ctx) }

func (r pgRows) record(ctx context.Context, tx pgx.Tx, i int) (int64, error) {
	d, t := item(i)
	now := time.Now()
	t.Recorded(d.ID, now)
	data, err := json.Marshal(t)
	if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO deliveries (id, event, action, received_at) VALUES ($1, $2, $3, $4)`,
		d.ID, d.Event, d.Action, now); err != nil {
		return 0, fmt.Errorf("insert delivery: %w", err)
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		t.Kind, t.State, t.IssueKey(), t.RunAfter, data, now, now).Scan(&id); err != nil {
		return 0, fmt.Errorf("insert task: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE deliveries SET task_id = $1 WHERE id = $2`, id, d.ID); err != nil {
		return 0, fmt.Errorf("link task: %w", err)
	}
	return id, nil
}

func (r pgRows) done(ctx context.Context, tx pgx.Tx, id int64, data []byte) error {
	_, err := tx.Exec(ctx, `UPDATE tasks SET state = 'done', data = $1, updated_at = $2 WHERE id = $3`, data, time.Now(), id)
	return err
}
