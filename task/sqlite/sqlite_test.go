package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/testclock"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) task.Store {
		s := open(t)
		s.now = now
		return s
	})
}

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openTestStore(t *testing.T) (*Store, *testclock.Clock) {
	t.Helper()
	s := open(t)
	c := testclock.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	s.now = c.Now
	return s, c
}

func fixTask(issue int) *task.Task {
	return &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: issue, Instructions: "fix it"}
}
