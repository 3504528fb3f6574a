package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/bench/internal/benchpg"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/postgres"
	"github.com/pullwright/pullwright/task/sqlite"
)

// issueBase numbers the issues of the items: item i is a fix asked on
// issue issueBase+i, so every item is a fix of its own.
const issueBase = 1000

// item is what a delivery of an "/agent fix" comment records: the
// delivery and its fix task, as the webhook handler builds them.
func item(i int) (task.Delivery, *task.Task) {
	d := task.Delivery{ID: fmt.Sprintf("bench-%07d", i), Event: "issue_comment", Action: "created"}
	t := &task.Task{
		Kind:         task.KindFix,
		Repo:         pullwright.Repo{InstallationID: 1, Owner: "Codertocat", Name: "Hello-World", CloneURL: "https://github.com/Codertocat/Hello-World.git", DefaultBranch: "main"},
		Issue:        issueBase + i,
		IssueTitle:   "Spelling error in the README file",
		CommentID:    int64(5_000_000 + i),
		Requester:    task.Person{Login: "Codertocat", ID: 21031067},
		Instructions: "fix the spelling of 'commit' in the README",
	}
	return d, t
}

// storeEngine is one of our stores worked by task.Pool, as bot serve runs
// it: on SQLite the pool's workers poll Claim and are woken by Notify after
// each Record (app's notifying recorder); on Postgres the store is a
// task.Queue and River hands the workers their tasks.
type storeEngine struct {
	store  task.Store
	close  func() error
	pool   *task.Pool
	cancel context.CancelFunc
	ran    chan error
	cfg    config
}

func openSQLiteStore(ctx context.Context, path string, cfg config) (engine, error) {
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	return &storeEngine{store: s, close: s.Close, cfg: cfg}, nil
}

func openPostgresStore(ctx context.Context, cfg config) (engine, error) {
	dbURL, drop, err := benchpg.CreateDatabase(ctx, cfg.postgres)
	if err != nil {
		return nil, err
	}
	s, err := postgres.Open(ctx, dbURL)
	if err != nil {
		return nil, errors.Join(err, drop())
	}
	return &storeEngine{store: s, close: func() error { return errors.Join(s.Close(), drop()) }, cfg: cfg}, nil
}

func (e *storeEngine) start(ctx context.Context, tr *tracker) error {
	h := &hooked{Store: e.store, tr: tr}
	var st task.Store = h
	if q, ok := e.store.(task.Queue); ok {
		st = &hookedQueue{hooked: h, q: q}
	}
	e.pool = &task.Pool{
		Store:   st,
		Steps:   doneStepper{},
		Logger:  e.cfg.log,
		Workers: e.cfg.workers,
		// BOT_LEASE's default; the heartbeat renews it every third.
		Lease: time.Minute,
	}
	ctx, e.cancel = context.WithCancel(ctx)
	e.ran = make(chan error, 1)
	go func() { e.ran <- e.pool.Run(ctx) }()
	return nil
}

func (e *storeEngine) record(ctx context.Context, i int) error {
	d, t := item(i)
	if err := e.store.Record(ctx, d, t); err != nil {
		return err
	}
	e.pool.Notify()
	return nil
}

func (e *storeEngine) stop() error {
	var err error
	if e.cancel != nil {
		e.cancel()
		err = <-e.ran
	}
	return errors.Join(err, e.close())
}

// doneStepper ends every task in one step: what is measured is the queue,
// not the work.
type doneStepper struct{}

func (doneStepper) Step(ctx context.Context, t *task.Task) error {
	t.State = task.Done
	return nil
}

func (doneStepper) Finish(context.Context, *task.Task) error { return nil }

// hooked tells the tracker when the pool's workers claim and release a
// task; the rest is the store's.
type hooked struct {
	task.Store
	tr    *tracker
	items sync.Map // task id → item
}

func (h *hooked) took(t *task.Task) {
	h.items.Store(t.ID, t.Issue-issueBase)
	h.tr.take(t.Issue - issueBase)
}

func (h *hooked) Claim(ctx context.Context, owner string, lease time.Duration) (*task.Task, error) {
	t, err := h.Store.Claim(ctx, owner, lease)
	if err == nil {
		h.took(t)
	}
	return t, err
}

func (h *hooked) Release(ctx context.Context, id int64, owner string) error {
	err := h.Store.Release(ctx, id, owner)
	if v, ok := h.items.Load(id); ok && err == nil {
		h.tr.finish(v.(int))
	}
	return err
}

// hookedQueue is hooked over a store that brings its own queue: the
// queue's workers claim inside it, so the take is seen where they hand
// the task to the pool.
type hookedQueue struct {
	*hooked
	q task.Queue
}

func (h *hookedQueue) Serve(ctx context.Context, qc task.QueueConfig) error {
	work := qc.Work
	qc.Work = func(ctx context.Context, owner string, t *task.Task) {
		h.took(t)
		work(ctx, owner, t)
	}
	return h.q.Serve(ctx, qc)
}

// sqliteDSN is how the SQLite store opens its write connection
// (task/sqlite.Open), so River on SQLite is measured on the same settings.
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// openSQLite opens one connection to the file at path, as the store's
// writer and River's driver doc both want.
func openSQLite(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}
