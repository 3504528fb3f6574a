package task

import (
	"context"
	"log/slog"
	"time"
)

// Queue is a job engine a Store brings with it. When the Pool's store is
// one, the engine hands the workers their tasks (River on Postgres: a job
// per due time, inserted in the transaction that made the task due)
// instead of the workers polling Claim. Leases, saves and releases go
// through the Store as before: the lease is what keeps two workers of two
// replicas off one task, whatever the engine does.
type Queue interface {
	// Serve runs the engine's workers until ctx ends, calling q.Work with
	// each task one of them claimed, and returns once they have stopped.
	Serve(ctx context.Context, q QueueConfig) error
}

// QueueConfig is what a Queue is given to serve a Pool.
type QueueConfig struct {
	// Workers is how many tasks are worked on at once.
	Workers int
	// Lease is how long a claim lasts without renewal.
	Lease time.Duration
	// Poll is how often the engine looks for tasks that no job will bring
	// (a worker that died holding one, a task recorded before the engine).
	Poll time.Duration
	// Owner prefixes the lease owners of this process's workers.
	Owner  string
	Logger *slog.Logger
	// Work steps a claimed task until it waits, ends or its claim is
	// over, and releases it.
	Work func(ctx context.Context, owner string, t *Task)
}
