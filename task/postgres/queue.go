package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/pullwright/pullwright/task"
)

// The queue is River's: every transaction that makes a task due (a
// delivery recorded, an answer, a cancel, a worker giving a task back with
// its next due time) inserts, in that same transaction, a job scheduled at
// the time the task is due. A River worker that takes the job claims the
// task's lease and steps it as the SQLite store's polling workers do.
// Waiting for approval is a task with no job due but the one at its
// deadline: no attempt and no goroutine waits.
//
// The lease stays the fence: River may run a job twice (two jobs for one
// task), and the lease is what keeps two workers off one task. It also
// tells a worker that died: River rescues a stuck job by its age against
// its timeout, and these jobs have none (a task's steps may take long), so
// River never rescues them. A sweep every quarter lease inserts a job for
// each due task whose lease ran out (or that was recorded before the
// queue was River's).

// stepArgs is the job that steps a task. Due and Claims are the task's
// due time and claim count when the job was inserted: with the task id
// they make the job unique, so the sweep and a release that find the same
// task due at the same time insert one job, while a task given back by the
// claim a job began always gets a new one. Sweep is 0, or for the sweep's
// own inserts the lease period it ran in: a job River still counts as
// running for a replica that was killed before its claim committed would
// otherwise hold that key, and its task, for ever (River never rescues a
// job without a timeout); the next period's sweep gets past it.
type stepArgs struct {
	Task   int64  `json:"task"`
	Due    string `json:"due"`
	Claims int    `json:"claims"`
	Sweep  int64  `json:"sweep,omitempty"`
}

func (stepArgs) Kind() string { return "pullwright_step" }

// uniqueStates are River's required ones. Not completed: a stale job (its
// task's due time moved on) completes without work, and a later insert of
// the same key must not be refused for River's day of keeping completed
// jobs.
var uniqueStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}

// River works a job of a lower priority number first. A step's job has
// priority stepPriority; the sweep, and the jobs it inserts for tasks no
// job brought (a dead replica's), have sweepPriority, so that neither
// waits behind a backlog of new tasks.
const (
	sweepPriority = 1
	stepPriority  = 2
)

func (stepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Priority: stepPriority, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: uniqueStates}}
}

// sweepArgs is the periodic job that finds due tasks no job will bring.
type sweepArgs struct{}

func (sweepArgs) Kind() string { return "pullwright_sweep" }

// sweepOpts are the sweep's insert options when it runs every period:
// one a period however many replicas, leaders or restarts insert it, so
// sweeps cannot pile up; a sweep is one indexed query and at most
// sweepBatch inserts, far shorter than its period. Not one at a time
// instead: a sweep left running by a killed replica (River never rescues
// a job without a timeout) would hold the key for ever. River wants a
// period of a second at least; tests sweep faster.
func sweepOpts(period time.Duration) *river.InsertOpts {
	return &river.InsertOpts{Priority: sweepPriority, UniqueOpts: river.UniqueOpts{ByPeriod: max(period, time.Second)}}
}

// sweepBatch bounds the tasks one sweep inserts jobs for; the next sweep
// takes the rest.
const sweepBatch = 500

// enqueue inserts, in tx, the job that steps task id when it is due.
func enqueue(ctx context.Context, q *river.Client[pgx.Tx], tx pgx.Tx, now, due time.Time, id int64, claims int) error {
	return enqueueArgs(ctx, q, tx, now, due, stepArgs{Task: id, Due: due.UTC().Format(time.RFC3339Nano), Claims: claims})
}

func enqueueArgs(ctx context.Context, q *river.Client[pgx.Tx], tx pgx.Tx, now, due time.Time, args stepArgs) error {
	id := args.Task
	var opts river.InsertOpts
	if args.Sweep != 0 {
		opts.Priority = sweepPriority
	}
	if due.After(now) {
		// A job given any ScheduledAt waits for River's scheduler, which
		// looks every few seconds: one due now is inserted available.
		opts.ScheduledAt = due
	}
	res, err := q.InsertTx(ctx, tx, args, &opts)
	if err != nil {
		return fmt.Errorf("enqueue task %d: %w", id, err)
	}
	// The task keeps its latest job's id (a duplicate's is the job that
	// was there already), so that the sweep asks River's primary key
	// whether that job still waits instead of searching every job's args.
	if _, err := tx.Exec(ctx, `UPDATE tasks SET job_id = $1 WHERE id = $2`, res.Job.ID, id); err != nil {
		return fmt.Errorf("enqueue task %d: keep job %d: %w", id, res.Job.ID, err)
	}
	return nil
}

// migrateRiver brings River's tables up to date, under the lock our own
// migrations take, so that replicas starting at once migrate once.
func migrateRiver(ctx context.Context, db *pgxpool.Pool) error {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLock)); err != nil {
		return fmt.Errorf("migrate river: lock: %w", err)
	}
	defer func() {
		// On a cancelled ctx the unlock fails; closing the session frees it.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrateLock)); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	m, err := rivermigrate.New(riverpgxv5.New(db), nil)
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	return nil
}

// Serve implements task.Queue: it runs a River client with q.Workers
// workers until ctx ends.
func (s *Store) Serve(ctx context.Context, q task.QueueConfig) error {
	log := q.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &stepWorker{s: s, q: q})
	river.AddWorker(workers, &sweepWorker{s: s, q: q})
	poll := q.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	// The sweep is for workers that died: a quarter of a lease is soon
	// enough after one runs out, and polling faster only adds jobs.
	sweep := max(poll, q.Lease/4)
	fetchPoll := max(min(poll, 500*time.Millisecond), river.FetchPollIntervalMin)
	client, err := river.NewClient(riverpgxv5.New(s.db), &river.Config{
		ID:      q.Owner,
		Logger:  log.With("component", "river"),
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: max(q.Workers, 1)}},
		Workers: workers,
		// A step has its own timeout (task.Pool.StepTimeout) and a claim
		// its lease: River's timeout would cut a long task short.
		JobTimeout: -1,
		// Jobs arrive by LISTEN/NOTIFY; the poll is the fallback, and the
		// cooldown the least time between two fetches after notices,
		// which River wants no longer than the poll.
		FetchPollInterval: fetchPoll,
		FetchCooldown:     min(10*time.Millisecond, fetchPoll),
		PeriodicJobs: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(sweep),
			func() (river.JobArgs, *river.InsertOpts) { return sweepArgs{}, sweepOpts(sweep) },
			&river.PeriodicJobOpts{RunOnStart: true})},
	})
	if err != nil {
		return fmt.Errorf("start queue: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("start queue: %w", err)
	}
	<-ctx.Done()
	// The workers' contexts end with ours, so each gives its task back
	// (with a job due for it) and River records the jobs as done.
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := client.StopAndCancel(stop); err != nil {
		return fmt.Errorf("stop queue: %w", err)
	}
	return nil
}

type stepWorker struct {
	river.WorkerDefaults[stepArgs]
	s *Store
	q task.QueueConfig
}

// Work claims the job's task and works on it. A task not due (a later job
// brings it), ended, or unreadable (claimTask failed it) completes the
// job; a task leased by a live worker snoozes it, so that an answer given
// while a worker held the task is not lost if that worker gives the task
// back without seeing it.
func (w *stepWorker) Work(ctx context.Context, job *river.Job[stepArgs]) error {
	owner := fmt.Sprintf("%s-job%d", w.q.Owner, job.ID)
	t, err := w.s.claimTask(ctx, job.Args.Task, owner, w.q.Lease)
	var (
		leased *leasedError
		early  *earlyError
	)
	switch {
	case errors.As(err, &early):
		// River ran it by the database's clock, a moment before this
		// replica's says the task is due: wait for it rather than drop it.
		return river.JobSnooze(early.wait)
	case errors.As(err, &leased):
		// Not until the lease ends: the holder may give the task back much
		// sooner, and its release finds this job and adds none.
		return river.JobSnooze(min(max(leased.until.Sub(w.s.now()), 0), w.q.Poll) + 100*time.Millisecond)
	case errors.Is(err, task.ErrNoTask), errors.Is(err, errUnreadable):
		return nil
	case err != nil:
		return err
	}
	w.q.Work(ctx, owner, t)
	return nil
}

type sweepWorker struct {
	river.WorkerDefaults[sweepArgs]
	s *Store
	q task.QueueConfig
}

// Work inserts a job for each task due for a while with no live lease.
// Most have one already, and River's uniqueness makes the insert a no-op;
// those whose worker died, or that were recorded before the queue was
// River's, get theirs.
func (w *sweepWorker) Work(ctx context.Context, job *river.Job[sweepArgs]) error {
	// A task due only a moment ago has its job, most likely on its way.
	n, err := w.s.sweep(ctx, w.s.now().Add(-w.q.Poll), w.s.now().UnixNano()/int64(max(w.q.Lease, time.Second)))
	if err != nil {
		return err
	}
	if n > 0 {
		w.q.Logger.DebugContext(ctx, "swept due tasks", "tasks", n)
	}
	return nil
}

// sweepQuery finds at most $3 of the tasks due before $1 that no job
// will bring. A task
// whose lease ran out ($2 is now) lost its worker. A task with no lease is
// lost only if its latest job (tasks.job_id) no longer waits (available,
// scheduled, retryable, pending), or is gone, or it never had one (it was
// recorded before the queue was River's); otherwise a backlog of new
// tasks would each get a second job every period. A job "running" with no
// lease taken is one whose replica died before its claim committed: it
// brings nothing. An older job of the task may wait still; then the new
// one is a spare, which the lease fences like any other.
//
// Its cost is the due tasks, read from tasks_due, each with one look-up
// in river_job's primary key: a task waiting for an answer is due only at
// its deadline, so a backlog of parked tasks adds nothing
// (TestSweepPlanUsesIndexes).
const sweepQuery = `SELECT t.id, t.run_after, t.claims FROM tasks t
	LEFT JOIN river_job j ON j.id = t.job_id
	WHERE t.state NOT IN ` + ended + ` AND t.run_after <= $1
	AND (
		(t.lease_owner <> '' AND t.lease_until < $2)
		OR (t.lease_owner = '' AND (j.id IS NULL OR j.state NOT IN ('available', 'scheduled', 'retryable', 'pending')))
	)
	ORDER BY t.run_after, t.id LIMIT $3`

// sweep inserts a job for each task due before dueBefore whose lease is
// free or ran out, once per period, and says how many it found.
func (s *Store) sweep(ctx context.Context, dueBefore time.Time, period int64) (int, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("sweep due tasks: begin: %w", err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, sweepQuery, dueBefore, s.now(), sweepBatch)
	if err != nil {
		return 0, fmt.Errorf("sweep due tasks: %w", err)
	}
	type due struct {
		id     int64
		at     time.Time
		claims int
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
		var d due
		err := r.Scan(&d.id, &d.at, &d.claims)
		return d, err
	})
	if err != nil {
		return 0, fmt.Errorf("sweep due tasks: %w", err)
	}
	for _, d := range found {
		args := stepArgs{Task: d.id, Due: d.at.UTC().Format(time.RFC3339Nano), Claims: d.claims, Sweep: period}
		if err := enqueueArgs(ctx, s.queue, tx, s.now(), d.at, args); err != nil {
			return 0, fmt.Errorf("sweep due tasks: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("sweep due tasks: commit: %w", err)
	}
	return len(found), nil
}

// leasedError says a task is leased by a live worker until a time.
type leasedError struct{ until time.Time }

func (e *leasedError) Error() string {
	return fmt.Sprintf("leased until %s", e.until.Format(time.RFC3339))
}

// earlyError says a task is due in a moment, by this replica's clock.
type earlyError struct{ wait time.Duration }

func (e *earlyError) Error() string { return fmt.Sprintf("due in %s", e.wait) }

// errUnreadable means a claimed task could not be decoded and was failed.
var errUnreadable = errors.New("unreadable task")
