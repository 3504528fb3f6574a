package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/pullwright/pullwright/bench/internal/stats"
)

// featureArgs is a job of the feature checks, named by what it checks.
type featureArgs struct {
	Name string `json:"name"`
}

func (featureArgs) Kind() string { return "pullwright_bench_feature" }

type worked struct {
	name    string
	attempt int
	at      time.Time
}

// checkFeatures tries, on River's SQLite driver and on one connection to
// a fresh file, what the Postgres queue asks of River: a job inserted in
// our own transaction, unique jobs, scheduled jobs (approval deadlines),
// snoozes (a task leased by a live worker), leader election with a
// periodic job (the sweep), and completing a job in our transaction. It
// returns one line per check.
func checkFeatures(ctx context.Context, path string, cfg config) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	db, err := openRiverSQLiteDB(ctx, path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows := sqliteRows{db}
	var out []string
	count := func(q string) (n int) {
		if err == nil {
			err = db.QueryRowContext(ctx, q).Scan(&n)
		}
		return n
	}

	inserter, err := river.NewClient(riversqlite.New(db), &river.Config{Logger: cfg.log})
	if err != nil {
		return nil, err
	}
	// A job in our transaction: gone with a rollback, there with a commit.
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		id, err := rows.record(ctx, tx, 0)
		if err == nil {
			_, err = inserter.InsertTx(ctx, tx, stepArgs{Task: id}, nil)
		}
		if err == nil && commit {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
		if err != nil {
			return nil, fmt.Errorf("insert in our transaction: %w", err)
		}
		d, j := count(`SELECT count(*) FROM deliveries`), count(`SELECT count(*) FROM river_job`)
		if err != nil {
			return nil, err
		}
		what := "rolled back"
		if commit {
			what = "committed"
		}
		out = append(out, fmt.Sprintf("insert in our transaction, %s: %d delivery rows, %d jobs (%s)", what, d, j, ok((d == 0 && j == 0) != commit)))
	}
	// Unique by arguments: the second insert of the same job is skipped.
	res, err := inserter.Insert(ctx, stepArgs{Task: 1}, nil)
	if err != nil {
		return nil, fmt.Errorf("unique insert: %w", err)
	}
	out = append(out, fmt.Sprintf("unique by arguments: a second insert of the same job skipped as a duplicate: %v (%s)", res.UniqueSkippedAsDuplicate, ok(res.UniqueSkippedAsDuplicate)))

	got := make(chan worked, 16)
	workers := river.NewWorkers()
	var once atomic.Bool // the snooze job snoozes on its first try only
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[featureArgs]) error {
		got <- worked{job.Args.Name, job.Attempt, time.Now()}
		if job.Args.Name == "snooze" && once.CompareAndSwap(false, true) {
			return river.JobSnooze(time.Second)
		}
		return nil
	}))
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[stepArgs]) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := river.JobCompleteTx[*riversqlite.Driver](ctx, tx, job); err != nil {
			return err
		}
		got <- worked{"complete-tx", job.Attempt, time.Now()}
		return tx.Commit()
	}))
	const id = "features"
	client, err := river.NewClient(riversqlite.New(db), &river.Config{
		ID:         id,
		Logger:     cfg.log,
		Queues:     map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:    workers,
		JobTimeout: -1,
		PeriodicJobs: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return featureArgs{Name: "periodic"}, nil },
			&river.PeriodicJobOpts{RunOnStart: true})},
	})
	if err != nil {
		return nil, err
	}
	started := time.Now()
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		client.Stop(c)
	}()
	due := time.Now().Add(4 * time.Second)
	if _, err := client.Insert(ctx, featureArgs{Name: "scheduled"}, &river.InsertOpts{ScheduledAt: due}); err != nil {
		return nil, fmt.Errorf("scheduled insert: %w", err)
	}
	snoozeAt := time.Now()
	if _, err := client.Insert(ctx, featureArgs{Name: "snooze"}, nil); err != nil {
		return nil, fmt.Errorf("snooze insert: %w", err)
	}
	seen := map[string][]time.Time{}
	for len(seen["periodic"]) == 0 || len(seen["scheduled"]) == 0 || len(seen["snooze"]) < 2 || len(seen["complete-tx"]) == 0 {
		select {
		case w := <-got:
			seen[w.name] = append(seen[w.name], w.at)
		case <-ctx.Done():
			return out, fmt.Errorf("waiting for the feature jobs (seen %v): %w", keys(seen), context.Cause(ctx))
		}
	}
	var leader string
	if err := db.QueryRowContext(ctx, `SELECT leader_id FROM river_leader`).Scan(&leader); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return out, fmt.Errorf("read leader: %w", err)
	}
	out = append(out,
		fmt.Sprintf("job completed in our transaction (river.JobCompleteTx): works, the job committed with it (%s)", ok(true)),
		fmt.Sprintf("leader election and a periodic job (RunOnStart): leader %q, first run %s after Start (%s)", leader, stats.Dur(seen["periodic"][0].Sub(started).Seconds()), ok(leader == id)),
		fmt.Sprintf("scheduled job (an approval deadline) 4s ahead: worked %s after it was due", stats.Dur(seen["scheduled"][0].Sub(due).Seconds())),
		fmt.Sprintf("snooze of 1s (a task leased by a live worker): worked again %s after the first try began", stats.Dur(seen["snooze"][1].Sub(seen["snooze"][0]).Seconds())),
		fmt.Sprintf("a job inserted now, the first try began %s after the insert", stats.Dur(seen["snooze"][0].Sub(snoozeAt).Seconds())),
	)
	return out, nil
}

func keys(m map[string][]time.Time) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func ok(b bool) string {
	if b {
		return "ok"
	}
	return "NOT ok"
}
