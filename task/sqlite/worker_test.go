package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
)

// forward moves a fix task one state on per step, to done.
type forward struct{}

func (forward) Step(_ context.Context, t *task.Task) error {
	next := map[task.State]task.State{task.Queued: task.Preparing, task.Preparing: task.Working, task.Working: task.Publishing, task.Publishing: task.Done}[t.State]
	return t.Move(next)
}

func (forward) Finish(context.Context, *task.Task) error { return nil }

// A row no worker can read is a database's failure, so only a database
// can make one: Claim fails it, and the queue goes on.
func TestUnreadableTaskDoesNotBlockTheQueue(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	bad, good := fixTask(1), fixTask(2)
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, bad); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, task.Delivery{ID: "d2"}, good); err != nil {
		t.Fatal(err)
	}
	if _, err := s.write.db.Exec(`UPDATE tasks SET data = '{not json' WHERE id = ?`, bad.ID); err != nil {
		t.Fatal(err)
	}
	p := &task.Pool{Store: s, Steps: forward{}, Workers: 1, Poll: 5 * time.Millisecond}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		tk, err := s.Get(ctx, good.ID)
		if err == nil && tk.State == task.Done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d never got done; last %+v (%v)", good.ID, tk, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var state string
	if err := s.read.QueryRow(`SELECT state FROM tasks WHERE id = ?`, bad.ID).Scan(&state); err != nil || state != "failed" {
		t.Fatalf("unreadable task state = %q, %v", state, err)
	}
}
