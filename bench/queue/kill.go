package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/pullwright/pullwright/bench/internal/stats"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/sqlite"
)

// The kill -9 experiments: this program runs again as a child process on
// a SQLite file, is killed with SIGKILL at a known point, and the parent
// then looks at the file and starts a new worker on it, as a restarted bot
// would. They run at once, each on its own file.
//
//   - River, mid-job: a job whose worker was running when the process
//     died, watched for -observe under a new client with River's defaults,
//     and with no job timeout (JobTimeout -1, as task/postgres runs River,
//     since a step has its own timeout and a task may take many minutes).
//   - River, mid-job, JobTimeout -rescue-after/2 and RescueStuckJobsAfter
//     -rescue-after: how long until River's rescuer gives the job to a new
//     worker.
//   - The SQLite store, mid-step, lease = -lease: how long until a new
//     pool claims the task (the lease runs out, the next poll takes it).
//   - Both, mid-ingest: a child records as fast as it can and prints each
//     item after its commit; every printed item must be in the file after
//     the kill, and the file must pass its integrity check.

type killConfig struct {
	rescueAfter, lease, observe time.Duration
	dir                         string
	log                         *slog.Logger
}

// blockArgs is the job whose worker blocks until the process dies.
type blockArgs struct{}

func (blockArgs) Kind() string { return "pullwright_bench_block" }

func runKill(kc killConfig) error {
	ctx := context.Background()
	if kc.rescueAfter <= 0 || kc.lease < 3*time.Second || kc.observe <= 0 {
		return errors.New("want -rescue-after > 0, -lease ≥ 3s (as BOT_LEASE) and -observe > 0")
	}
	type experiment struct {
		name string
		run  func(ctx context.Context, path string) ([]string, error)
	}
	exps := []experiment{
		{"River on SQLite, killed mid-job, River's defaults (JobTimeout 1m, RescueStuckJobsAfter 1h)", func(ctx context.Context, path string) ([]string, error) {
			return riverStuck(ctx, path, 0, 0, kc.observe, kc.log)
		}},
		{"River on SQLite, killed mid-job, JobTimeout -1 (no timeout, as task/postgres runs River)", func(ctx context.Context, path string) ([]string, error) {
			return riverStuck(ctx, path, -1, 0, kc.observe, kc.log)
		}},
		{fmt.Sprintf("River on SQLite, killed mid-job, JobTimeout %s, RescueStuckJobsAfter %s", kc.rescueAfter/2, kc.rescueAfter), func(ctx context.Context, path string) ([]string, error) {
			// The rescuer runs when a client becomes leader and every 30 s
			// after; the rescued job then waits out its retry backoff (about
			// 1 s) and the scheduler (every 5 s).
			return riverStuck(ctx, path, kc.rescueAfter/2, kc.rescueAfter, kc.rescueAfter+90*time.Second, kc.log)
		}},
		{fmt.Sprintf("SQLite store, killed mid-step, lease %s", kc.lease), func(ctx context.Context, path string) ([]string, error) {
			return storeStuck(ctx, path, kc.lease, kc.log)
		}},
		{"River on SQLite, killed mid-ingest", func(ctx context.Context, path string) ([]string, error) {
			return killIngest(ctx, path, true)
		}},
		{"SQLite store, killed mid-ingest", func(ctx context.Context, path string) ([]string, error) {
			return killIngest(ctx, path, false)
		}},
	}
	out := make([][]string, len(exps))
	errs := make([]error, len(exps))
	var wg sync.WaitGroup
	for i, e := range exps {
		wg.Go(func() {
			fmt.Fprintf(os.Stderr, "%s…\n", e.name)
			c, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			out[i], errs[i] = e.run(c, filepath.Join(kc.dir, fmt.Sprintf("kill-%d.db", i)))
		})
	}
	wg.Wait()
	for i, e := range exps {
		fmt.Println(e.name)
		for _, l := range out[i] {
			fmt.Println("  " + l)
		}
		if errs[i] != nil {
			fmt.Println("  error:", errs[i])
		}
	}
	return errors.Join(errs...)
}

// child is this program run as a child on a file.
type child struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
}

func startChild(mode, path string, lease time.Duration) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-child", mode, "-db", path, "-lease", lease.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start child %s: %w", mode, err)
	}
	return &child{cmd: cmd, lines: bufio.NewScanner(out)}, nil
}

// waitLine reads the child's output until a line starts with prefix.
func (c *child) waitLine(prefix string) error {
	for c.lines.Scan() {
		if strings.HasPrefix(c.lines.Text(), prefix) {
			return nil
		}
	}
	return fmt.Errorf("child ended before saying %q: %w", prefix, errors.Join(c.lines.Err(), io.ErrUnexpectedEOF))
}

// kill sends SIGKILL to the child and reaps it.
func (c *child) kill() error {
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill child: %w", err)
	}
	c.cmd.Wait() // killed: its exit status says so
	return nil
}

// killWorking starts a child in mode (river-block or store-block) on the
// file at path, waits until its worker is in the job or step, and kills it
// a second later: in that second a River child's leader refreshes its
// lease once, as a bot that ran a while would have. It returns when the
// child died. Both experiments kill the same way, so their times after
// the kill compare.
func killWorking(mode, path string, lease time.Duration) (killed time.Time, err error) {
	c, err := startChild(mode, path, lease)
	if err != nil {
		return time.Time{}, err
	}
	if err := c.waitLine("working"); err != nil {
		c.kill()
		return time.Time{}, err
	}
	time.Sleep(time.Second)
	if err := c.kill(); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// riverStuck kills a River client while its worker runs a job, then
// starts a new client on the file (JobTimeout jobTimeout and
// RescueStuckJobsAfter rescueAfter, 0 for River's defaults) and watches
// until the job is worked again or watch ends.
//
// River's rescuer leaves alone a running job younger than its timeout, and
// every job when the timeout is negative (none): a worker may be still on
// it. So a job is given to another worker only after both its timeout and
// RescueStuckJobsAfter, which must be at least the timeout.
func riverStuck(ctx context.Context, path string, jobTimeout, rescueAfter, watch time.Duration, log *slog.Logger) ([]string, error) {
	db, err := openRiverSQLiteDB(ctx, path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	inserter, err := river.NewClient(riversqlite.New(db), &river.Config{Logger: log})
	if err != nil {
		return nil, err
	}
	res, err := inserter.Insert(ctx, blockArgs{}, nil)
	if err != nil {
		return nil, fmt.Errorf("insert job: %w", err)
	}
	jobID := res.Job.ID
	killed, err := killWorking("river-block", path, 0)
	if err != nil {
		return nil, err
	}
	state := func() (st string, attempt int, err error) {
		err = db.QueryRowContext(ctx, `SELECT state, attempt FROM river_job WHERE id = ?`, jobID).Scan(&st, &attempt)
		return st, attempt, err
	}
	st, attempt, err := state()
	if err != nil {
		return nil, fmt.Errorf("read job: %w", err)
	}
	out := []string{fmt.Sprintf("after the kill: job %d is %q, attempt %d", jobID, st, attempt)}

	again := make(chan time.Time, 1)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[blockArgs]) error {
		select {
		case again <- time.Now():
		default:
		}
		return nil
	}))
	const id = "restarted"
	client, err := river.NewClient(riversqlite.New(db), &river.Config{
		ID:                   id,
		Logger:               log,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:              workers,
		JobTimeout:           jobTimeout,
		RescueStuckJobsAfter: rescueAfter,
	})
	if err != nil {
		return out, err
	}
	started := time.Now()
	if err := client.Start(ctx); err != nil {
		return out, err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		client.Stop(c)
	}()
	out = append(out, fmt.Sprintf("new client started %s after the kill", stats.Dur(started.Sub(killed).Seconds())))
	since := func(t time.Time) string { return stats.Dur(t.Sub(killed).Seconds()) }
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(watch)
	var leaderAt, rescuedAt time.Time
	for {
		select {
		case at := <-again:
			st, attempt, _ := state()
			out = append(out, fmt.Sprintf("worked again %s after the kill (attempt %d, now %q)", since(at), attempt, st))
			return out, nil
		case <-deadline:
			st, attempt, err := state()
			out = append(out, fmt.Sprintf("not worked again within %s of the kill: the job is %q, attempt %d", since(time.Now()), st, attempt))
			return out, err
		case <-ctx.Done():
			return out, context.Cause(ctx)
		case <-tick.C:
		}
		if leaderAt.IsZero() {
			var leader string
			if err := db.QueryRowContext(ctx, `SELECT leader_id FROM river_leader`).Scan(&leader); err == nil && leader == id {
				leaderAt = time.Now()
				out = append(out, fmt.Sprintf("new client became leader %s after the kill (the killed one's leadership ran out; its rescuer runs now and every 30s)", since(leaderAt)))
			}
		}
		if rescuedAt.IsZero() {
			if st, attempt, err := state(); err == nil && st != "running" {
				rescuedAt = time.Now()
				out = append(out, fmt.Sprintf("rescued %s after the kill: %q, attempt %d", since(rescuedAt), st, attempt))
			}
		}
	}
}

// storeStuck kills a pool while its worker is in a step, then starts a
// new pool on the file and measures when the task is claimed again.
func storeStuck(ctx context.Context, path string, lease time.Duration, log *slog.Logger) ([]string, error) {
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	d, t := item(0)
	err = s.Record(ctx, d, t)
	s.Close()
	if err != nil {
		return nil, err
	}
	killed, err := killWorking("store-block", path, lease)
	if err != nil {
		return nil, err
	}
	since := func(t time.Time) string { return stats.Dur(t.Sub(killed).Seconds()) }
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	var (
		owner string
		until int64
	)
	if err := raw.QueryRowContext(ctx, `SELECT lease_owner, lease_until FROM tasks WHERE id = ?`, t.ID).Scan(&owner, &until); err != nil {
		return nil, fmt.Errorf("read lease: %w", err)
	}
	out := []string{fmt.Sprintf("after the kill: the task is leased by %q until %s after the kill", owner, since(time.UnixMilli(until)))}

	s, err = sqlite.Open(ctx, path)
	if err != nil {
		return out, err
	}
	defer s.Close()
	again := make(chan *task.Task, 1)
	pool := &task.Pool{Store: s, Steps: stepFunc(func(ctx context.Context, t *task.Task) error {
		select {
		case again <- t:
		default:
		}
		t.State = task.Done
		return nil
	}), Logger: log, Workers: 4, Lease: lease}
	pctx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- pool.Run(pctx) }()
	defer func() { cancel(); <-ran }()
	select {
	case got := <-again:
		out = append(out, fmt.Sprintf("claimed again %s after the kill (the lease ran out, then the next poll, every 2s, took it; crashes counted: %d)", since(time.Now()), got.Crashes))
		return out, nil
	case <-time.After(lease + time.Minute):
		return append(out, "not claimed again"), errors.New("the task was not claimed again")
	case <-ctx.Done():
		return out, context.Cause(ctx)
	}
}

// killIngest kills a child that records items as fast as it can, and
// checks that every item it had seen committed is in the file.
func killIngest(ctx context.Context, path string, onRiver bool) ([]string, error) {
	mode := "store-insert"
	if onRiver {
		mode = "river-insert"
		db, err := openRiverSQLiteDB(ctx, path)
		if err != nil {
			return nil, err
		}
		db.Close()
	} else {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		s.Close()
	}
	c, err := startChild(mode, path, 0)
	if err != nil {
		return nil, err
	}
	committed := map[string]bool{}
	stop := time.After(2 * time.Second)
	for reading := true; reading; {
		select {
		case <-stop:
			reading = false
			continue
		default:
		}
		if !c.lines.Scan() {
			c.kill()
			return nil, fmt.Errorf("child ended on its own: %w", c.lines.Err())
		}
		if id, ok := strings.CutPrefix(c.lines.Text(), "committed "); ok {
			committed[id] = true
		}
	}
	if err := c.kill(); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil {
		return nil, fmt.Errorf("integrity check: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT id FROM deliveries`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	there := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		there[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	lost := 0
	for id := range committed {
		if !there[id] {
			lost++
		}
	}
	line := fmt.Sprintf("%d items seen committed before the kill, %d of them lost; %d in the file; integrity_check %q", len(committed), lost, len(there), check)
	if onRiver {
		var jobs int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs); err != nil {
			return nil, err
		}
		line += fmt.Sprintf("; %d jobs", jobs)
	}
	out := []string{line}
	if lost > 0 || check != "ok" {
		return out, errors.New("committed items lost or the file damaged")
	}
	return out, nil
}

type stepFunc func(ctx context.Context, t *task.Task) error

func (f stepFunc) Step(ctx context.Context, t *task.Task) error { return f(ctx, t) }
func (f stepFunc) Finish(context.Context, *task.Task) error     { return nil }

// runChild is the child's side of the experiments: it works or records
// until it is killed.
func runChild(mode, path string, lease time.Duration) error {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	switch mode {
	case "river-block":
		db, err := openSQLite(path)
		if err != nil {
			return err
		}
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[blockArgs]) error {
			fmt.Printf("working %d\n", job.ID)
			<-ctx.Done()
			return ctx.Err()
		}))
		client, err := river.NewClient(riversqlite.New(db), &river.Config{
			ID: "killed", Logger: log, Workers: workers, JobTimeout: -1,
			Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		})
		if err != nil {
			return err
		}
		if err := client.Start(ctx); err != nil {
			return err
		}
		select {}
	case "store-block":
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return err
		}
		pool := &task.Pool{Store: s, Logger: log, Workers: 1, Lease: lease, Steps: stepFunc(func(ctx context.Context, t *task.Task) error {
			fmt.Printf("working %d\n", t.ID)
			<-ctx.Done()
			return ctx.Err()
		})}
		return pool.Run(ctx)
	case "river-insert":
		db, err := openSQLite(path)
		if err != nil {
			return err
		}
		inserter, err := river.NewClient(riversqlite.New(db), &river.Config{Logger: log})
		if err != nil {
			return err
		}
		rows := sqliteRows{db}
		for i := 0; ; i++ {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			id, err := rows.record(ctx, tx, i)
			if err == nil {
				_, err = inserter.InsertTx(ctx, tx, stepArgs{Task: id, Item: i}, nil)
			}
			if err == nil {
				err = tx.Commit()
			}
			if err != nil {
				tx.Rollback()
				return fmt.Errorf("record item %d: %w", i, err)
			}
			d, _ := item(i)
			fmt.Println("committed " + d.ID)
		}
	case "store-insert":
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return err
		}
		for i := 0; ; i++ {
			d, t := item(i)
			if err := s.Record(ctx, d, t); err != nil {
				return fmt.Errorf("record item %d: %w", i, err)
			}
			fmt.Println("committed " + d.ID)
		}
	}
	return fmt.Errorf("unknown child mode %q", mode)
}
