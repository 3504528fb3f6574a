package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// writer is the store's one write connection, which this process's writes
// take in turn, first come first served.
//
// SQLite lets one writer in at a time. When each write had a connection of
// its own, the others waited in SQLite's busy handler, which sleeps in
// growing steps (up to 100 ms) and wakes them in no order: with eight
// concurrent deliveries ingest did 3.6 times less than with one, and one in
// a hundred waited over half a second (docs/benchmarks.md). Queued here
// instead, a write waits for exactly the writes ahead of it, and its context
// can end the wait. The database/sql pool of one connection would also
// serialise them, but it hands a freed connection to a random waiter, so
// the order, and the tail, would be left to chance again.
//
// busy_timeout still covers writers of other processes on the same file.
type writer struct {
	db *sql.DB // at most one open connection
	// turn holds a token while a write runs; a channel rather than a mutex
	// because waiters on a channel are served in order and a wait can be
	// abandoned with its context.
	turn chan struct{}
}

func newWriter(db *sql.DB) *writer { return &writer{db: db, turn: make(chan struct{}, 1)} }

// wait takes the turn; the caller must call the release it returns once.
func (w *writer) wait(ctx context.Context) (release func(), err error) {
	select {
	case w.turn <- struct{}{}:
		return func() { <-w.turn }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait to write: %w", context.Cause(ctx))
	}
}

// writeTx is a write transaction that holds the turn until it commits or
// rolls back.
type writeTx struct {
	*sql.Tx
	release func()
}

// begin waits for the turn and begins a transaction (BEGIN IMMEDIATE, by
// the connection's _txlock).
func (w *writer) begin(ctx context.Context) (*writeTx, error) {
	release, err := w.wait(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		release()
		return nil, err
	}
	return &writeTx{Tx: tx, release: sync.OnceFunc(release)}, nil
}

// Commit commits and gives up the turn. The commit is done when it returns:
// the turn is never handed on before the write it covers is in the file.
func (t *writeTx) Commit() error {
	defer t.release()
	return t.Tx.Commit()
}

// Rollback rolls back, if the transaction is still open, and gives up the
// turn; after Commit it only returns sql.ErrTxDone, as sql.Tx does.
func (t *writeTx) Rollback() error {
	defer t.release()
	return t.Tx.Rollback()
}

// exec runs one write statement in its turn.
func (w *writer) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	release, err := w.wait(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return w.db.ExecContext(ctx, query, args...)
}

// queryRow runs one write statement with RETURNING in its turn and scans
// its row into dest (sql.ErrNoRows when it wrote none).
func (w *writer) queryRow(ctx context.Context, dest []any, query string, args ...any) error {
	release, err := w.wait(ctx)
	if err != nil {
		return err
	}
	defer release()
	return w.db.QueryRowContext(ctx, query, args...).Scan(dest...)
}
