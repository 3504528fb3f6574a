package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/pgtest"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/storetest"
	"github.com/pullwright/pullwright/task/tasktest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) task.Store {
		s := open(t, pgtest.URL(t))
		s.now = now
		return s
	})
}

func open(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenMigratesOnceAndRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)

	// Replicas starting at once: each migration runs once, and all open.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(ctx, url)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent opens: %v", err)
	}

	s := open(t, url)
	var version int
	if err := s.db.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("schema version %d (%v), want %d", version, err, len(migrations))
	}
	tk := &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: 1}
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(ctx, `UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	_, err := Open(ctx, url)
	if err == nil || !strings.Contains(err.Error(), "schema version 99, newer than this bot knows") {
		t.Fatalf("open = %v, want a refusal naming the version", err)
	}
}

func TestOpenFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name, url, want string
	}{
		// The message names what is wrong, never the password.
		{"unparsable", "postgres://u:secret@[::1/db", "does not parse"},
		{"nobody listening", "postgres://u:secret@127.0.0.1:1/db?connect_timeout=5", "127.0.0.1:1/db"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(ctx, tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("Open = %v, want an error naming %q and not the password", err, tc.want)
			}
		})
	}
}

// Tasks racing for one branch: without SQLite's single writer, the unique
// index decides, and every loser is told the one winner.
func TestHoldBranchRace(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.URL(t))
	tasks := make([]*task.Task, 8)
	for i := range tasks {
		tasks[i] = &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: i + 1}
		if err := s.Record(ctx, task.Delivery{ID: fmt.Sprint("d", i)}, tasks[i]); err != nil {
			t.Fatal(err)
		}
		tasktest.Job(tasks[i]).Branch = "feature"
	}
	holders := make([]*task.Task, len(tasks))
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	for i, tk := range tasks {
		wg.Go(func() { holders[i], errs[i] = s.HoldBranch(ctx, tk) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var winner int64
	for i, h := range holders {
		if h == nil {
			if winner != 0 {
				t.Fatalf("tasks %d and %d both hold the branch", winner, tasks[i].ID)
			}
			winner = tasks[i].ID
		}
	}
	if winner == 0 {
		t.Fatal("no task holds the branch")
	}
	for i, h := range holders {
		if h != nil && h.ID != winner {
			t.Errorf("task %d was told %d holds the branch, want %d", tasks[i].ID, h.ID, winner)
		}
	}
}

// TestOpenMigratesAdmissionColumns upgrades a database of schema version 1,
// whose tasks hold when they were admitted in data only: Admit counts them
// afterwards as it did before.
func TestOpenMigratesAdmissionColumns(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	old, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, migrations[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, `CREATE TABLE schema_version (one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL);
		INSERT INTO schema_version (version) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tk := range storetest.AdmittedBefore(now) {
		data, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.Exec(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $4, $4)`,
			tk.Kind, tk.State, tk.IssueKey(), now, data); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	storetest.WantAdmittedBefore(t, open(t, url), now)
}

// TestOpenMigratesReviewAdmissions upgrades a database of schema version
// 3, whose admission indexes hold fixes only, with reviews admitted
// before the admission columns existed (in data only): Admit counts them.
func TestOpenMigratesReviewAdmissions(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	old, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, ddl := range migrations[:3] {
		if _, err := old.Exec(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.Exec(ctx, `CREATE TABLE schema_version (one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL);
		INSERT INTO schema_version (version) VALUES (3)`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tk := range storetest.ReviewsAdmittedBefore(now) {
		data, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		// Fixes have the columns since migration 2; these reviews do not.
		var inst, ms int64
		if tk.Kind == task.KindFix {
			inst, ms = tk.Repo.InstallationID, tk.AdmittedMS
		}
		if _, err := old.Exec(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at, installation_id, admitted_ms) VALUES ($1, $2, $3, $4, $5, $4, $4, $6, $7)`,
			tk.Kind, tk.State, tk.IssueKey(), now, data, inst, ms); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	storetest.WantReviewsAdmittedBefore(t, open(t, url), now)
}
