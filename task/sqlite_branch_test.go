package task

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHoldBranch(t *testing.T) {
	ctx := context.Background()
	s, c := openTestStore(t)
	record := func(id string, issue int, branch string) *Task {
		t.Helper()
		tk := fixTask(issue)
		if err := s.Record(ctx, Delivery{ID: id}, tk); err != nil {
			t.Fatal(err)
		}
		tk.Branch = branch
		return tk
	}
	first := record("d1", 1, "feature")
	second := record("d2", 2, "feature")
	other := record("d3", 3, "feature")
	other.Repo.Name = "elsewhere"
	upper := record("d4", 4, "feature")
	upper.Repo.Owner = "O" // the same repository as first's, spelt otherwise

	steps := []struct {
		name       string
		t          *Task
		wantHolder int64
	}{
		{"free branch", first, 0},
		{"the holder again", first, 0},
		{"held by another task", second, first.ID},
		{"same name in another repository", other, 0},
		{"the owner's name in another case", upper, first.ID},
	}
	for _, st := range steps {
		holder, err := s.HoldBranch(ctx, st.t)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := int64(0); holder != nil {
			got = holder.ID
			if got != st.wantHolder {
				t.Fatalf("%s: held by %d, want %d", st.name, got, st.wantHolder)
			}
		} else if st.wantHolder != 0 {
			t.Fatalf("%s: held, want held by %d", st.name, st.wantHolder)
		}
	}

	// The branch is free again once its task ends.
	got, err := s.Claim(ctx, "w", time.Minute)
	if err != nil || got.ID != first.ID {
		t.Fatalf("claim = %v, %v", got, err)
	}
	got.State = Failed
	if err := s.Save(ctx, got, "w"); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Second)
	if holder, err := s.HoldBranch(ctx, second); err != nil || holder != nil {
		t.Fatalf("after the holder ended: %v, %v", holder, err)
	}
	// Save leaves the hold alone.
	if holder, err := s.HoldBranch(ctx, upper); err != nil || holder == nil || holder.ID != second.ID {
		t.Fatalf("hold of a held branch after saves = %v, %v; want task %d", holder, err, second.ID)
	}
}

func TestOpenSQLiteMigratesAnOlderFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	// A file as the bot made it before schema versions: the base schema,
	// user_version 0, and an active task.
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, sqliteSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at)
		VALUES ('fix', 'working', '1/o/r/7', 0, '{"kind":"fix","state":"working","issue":7,"branch":"feature"}', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	old.Close()

	for try := 1; try <= 2; try++ {
		s, err := OpenSQLite(ctx, path)
		if err != nil {
			t.Fatalf("open #%d: %v", try, err)
		}
		var version int
		if err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != len(sqliteMigrations) {
			t.Fatalf("open #%d: user_version = %d (%v), want %d", try, version, err, len(sqliteMigrations))
		}
		kept, err := s.Get(ctx, 1)
		if err != nil || kept.Issue != 7 || kept.State != Working {
			t.Fatalf("open #%d: the old task is %+v, %v", try, kept, err)
		}
		// The old task holds nothing: it started before holds existed.
		// The first new one holds the branch; the second finds it held.
		tk := fixTask(7 + try)
		if err := s.Record(ctx, Delivery{ID: fmt.Sprint("d", try)}, tk); err != nil {
			t.Fatal(err)
		}
		tk.Branch = "feature"
		holder, err := s.HoldBranch(ctx, tk)
		if err != nil || (try == 1) != (holder == nil) {
			t.Fatalf("open #%d: hold = %v, %v", try, holder, err)
		}
		s.Close()
	}
}

func TestOpenSQLiteRefusesANewerFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = OpenSQLite(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "schema version 99, newer than this bot knows") {
		t.Fatalf("open = %v, want a refusal naming the version", err)
	}
}
