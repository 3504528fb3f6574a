package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/storetest"
	"github.com/pullwright/pullwright/task/tasktest"
)

func TestOpenMigratesAnOlderFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	// A file as the bot made it before schema versions: the base schema,
	// user_version 0, and tasks of every sort.
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, sqliteSchema); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		issue  int
		state  task.State
		branch string
		repo   string
	}{
		{7, task.Working, "feature", `{"owner":"O","name":"r"}`},          // 1: holds feature
		{8, task.AwaitingApproval, "feature", `{"owner":"o","name":"r"}`}, // 2: the same branch: the older task holds it
		{9, task.Done, "old", `{"owner":"o","name":"r"}`},                 // 3: ended
		{10, task.Queued, "", `{"owner":"o","name":"r"}`},                 // 4: no branch yet
		{11, task.Working, "x", `null`},                                   // 5: no repository (never made so)
		{12, task.Working, "y", `{"owner":"o","name":"r"`},                // 6: unreadable (a row Claim fails on)
	}
	for _, r := range rows {
		data := fmt.Sprintf(`{"kind":"fix","state":%q,"issue":%d,"branch":%q,"repo":%s}`, r.state, r.issue, r.branch, r.repo)
		if _, err := old.ExecContext(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at)
			VALUES ('fix', ?, ?, 0, ?, 0, 0)`, r.state, fmt.Sprint("1/o/r/", r.issue), data); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	for try := 1; try <= 2; try++ {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("open #%d: %v", try, err)
		}
		var version int
		if err := s.read.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != len(sqliteMigrations) {
			t.Fatalf("open #%d: user_version = %d (%v), want %d", try, version, err, len(sqliteMigrations))
		}
		keys := map[int64]string{}
		q, err := s.read.QueryContext(ctx, `SELECT id, branch_key FROM tasks WHERE id <= 6`)
		if err != nil {
			t.Fatal(err)
		}
		for q.Next() {
			var (
				id  int64
				key string
			)
			if err := q.Scan(&id, &key); err != nil {
				t.Fatal(err)
			}
			keys[id] = key
		}
		q.Close()
		if want := map[int64]string{1: "o/r:feature", 2: "", 3: "", 4: "", 5: "", 6: ""}; !maps.Equal(keys, want) {
			t.Fatalf("open #%d: branch keys %v, want %v", try, keys, want)
		}
		if kept, err := s.Get(ctx, 2); err != nil || kept.Issue != 8 || kept.State != task.AwaitingApproval {
			t.Fatalf("open #%d: task 2 is %+v, %v", try, kept, err)
		}
		// A new task on the branch finds the task that holds it.
		tk := fixTask(20 + try)
		if err := s.Record(ctx, task.Delivery{ID: fmt.Sprint("d", try)}, tk); err != nil {
			t.Fatal(err)
		}
		tasktest.Job(tk).Branch = "feature"
		if holder, err := s.HoldBranch(ctx, tk); err != nil || holder == nil || holder.ID != 1 {
			t.Fatalf("open #%d: hold = %v, %v; want held by task 1", try, holder, err)
		}
		s.Close()
	}
}

func TestOpenRefusesANewerFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.write.db.ExecContext(ctx, `PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "schema version 99, newer than this bot knows") {
		t.Fatalf("open = %v, want a refusal naming the version", err)
	}
}

// TestOpenMigratesAdmissionColumns upgrades a file of schema version 2,
// whose tasks hold when they were admitted in data only: Admit counts them
// afterwards as it did before.
func TestOpenMigratesAdmissionColumns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ddl := range append([]string{sqliteSchema}, sqliteMigrations[:2]...) {
		if _, err := old.ExecContext(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.ExecContext(ctx, `PRAGMA user_version = 2`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tk := range storetest.AdmittedBefore(now) {
		data, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.ExecContext(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at) VALUES (?, ?, ?, 0, ?, 0, 0)`,
			tk.Kind, tk.State, tk.IssueKey(), data); err != nil {
			t.Fatal(err)
		}
	}
	// A row whose data does not parse, as Claim would fail it.
	if _, err := old.ExecContext(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at) VALUES ('fix', 'working', '1/o/r/99', 0, '{"admitted_ms":', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	old.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.WantAdmittedBefore(t, s, now)
}

// TestOpenMigratesReviewAdmissions upgrades a file of schema version 3,
// whose admission indexes hold fixes only, with reviews admitted before
// the admission columns existed (in data only): Admit counts them.
func TestOpenMigratesReviewAdmissions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ddl := range append([]string{sqliteSchema}, sqliteMigrations[:3]...) {
		if _, err := old.ExecContext(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.ExecContext(ctx, `PRAGMA user_version = 3`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tk := range storetest.ReviewsAdmittedBefore(now) {
		data, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		// Fixes have the columns since migration 3; these reviews do not.
		var inst, ms int64
		if tk.Kind == task.KindFix {
			inst, ms = tk.Repo.InstallationID, tk.AdmittedMS
		}
		if _, err := old.ExecContext(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at, installation_id, admitted_ms) VALUES (?, ?, ?, 0, ?, 0, 0, ?, ?)`,
			tk.Kind, tk.State, tk.IssueKey(), data, inst, ms); err != nil {
			t.Fatal(err)
		}
	}
	// A review whose data does not parse, as Claim would fail it.
	if _, err := old.ExecContext(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at) VALUES ('review', 'working', '1/o/r/99', 0, '{"admitted_ms":', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	old.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.WantReviewsAdmittedBefore(t, s, now)
}
