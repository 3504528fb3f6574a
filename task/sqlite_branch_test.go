package task

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
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
		state  State
		branch string
		repo   string
	}{
		{7, Working, "feature", `{"owner":"O","name":"r"}`},          // 1: holds feature
		{8, AwaitingApproval, "feature", `{"owner":"o","name":"r"}`}, // 2: the same branch: the older task holds it
		{9, Done, "old", `{"owner":"o","name":"r"}`},                 // 3: ended
		{10, Queued, "", `{"owner":"o","name":"r"}`},                 // 4: no branch yet
		{11, Working, "x", `null`},                                   // 5: no repository (never made so)
		{12, Working, "y", `{"owner":"o","name":"r"`},                // 6: unreadable (a row Claim fails on)
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
		s, err := OpenSQLite(ctx, path)
		if err != nil {
			t.Fatalf("open #%d: %v", try, err)
		}
		var version int
		if err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != len(sqliteMigrations) {
			t.Fatalf("open #%d: user_version = %d (%v), want %d", try, version, err, len(sqliteMigrations))
		}
		keys := map[int64]string{}
		q, err := s.db.QueryContext(ctx, `SELECT id, branch_key FROM tasks WHERE id <= 6`)
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
		if kept, err := s.Get(ctx, 2); err != nil || kept.Issue != 8 || kept.State != AwaitingApproval {
			t.Fatalf("open #%d: task 2 is %+v, %v", try, kept, err)
		}
		// A new task on the branch finds the task that holds it.
		tk := fixTask(20 + try)
		if err := s.Record(ctx, Delivery{ID: fmt.Sprint("d", try)}, tk); err != nil {
			t.Fatal(err)
		}
		tk.Branch = "feature"
		if holder, err := s.HoldBranch(ctx, tk); err != nil || holder == nil || holder.ID != 1 {
			t.Fatalf("open #%d: hold = %v, %v; want held by task 1", try, holder, err)
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

func TestPullHeadsAround(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	const key = "o/r#2"
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	at := func(m int) time.Time { return time.Date(2026, 11, 23, 12, m, 0, 0, time.UTC) }
	n := 0
	record := func(key, sha string, m int) {
		t.Helper()
		n++
		if err := s.Record(ctx, Delivery{ID: fmt.Sprint("d", n), Event: "pull_request", Head: &HeadPush{PullKey: key, SHA: sha, At: at(m)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Received out of GitHub's order, and one pull request apart.
	record(key, b, 5)
	record(key, a, 1)
	record(key, c, 5)
	record(key, a, 8)
	record("o/r#3", c, 2)
	tests := []struct {
		sha  string
		at   int
		want HeadsAround
	}{
		{a, 0, HeadsAround{Since: true}},                      // nothing before; a came at 1 and 8
		{a, 3, HeadsAround{Before: []string{a}, Since: true}}, // a again at 8
		{b, 3, HeadsAround{Before: []string{a}, Since: true}}, // b came at 5
		{b, 7, HeadsAround{Before: []string{b, c}}},           // two heads in one second
		{c, 5, HeadsAround{Before: []string{a}, Since: true}}, // the same second counts as since
		{b, 9, HeadsAround{Before: []string{a}}},              // the latest by GitHub's clock, not by receipt
	}
	for _, tc := range tests {
		got, err := s.PullHeadsAround(ctx, key, tc.sha, at(tc.at))
		if err != nil || !slices.Equal(got.Before, tc.want.Before) || got.Since != tc.want.Since {
			t.Errorf("PullHeadsAround(%s, %d) = %+v, %v; want %+v", tc.sha[:1], tc.at, got, err, tc.want)
		}
	}
	// A redelivery is a duplicate and adds nothing.
	if err := s.Record(ctx, Delivery{ID: "d1", Head: &HeadPush{PullKey: key, SHA: b, At: at(9)}}, nil); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("redelivery = %v", err)
	}
	if got, _ := s.PullHeadsAround(ctx, key, b, at(9)); got.Since {
		t.Fatal("a duplicate delivery was recorded")
	}
}
