package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/pgtest"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// scripted is a task.Stepper that ends each task in one step, or, with
// park, first parks a fix for an answer. It counts the steps each task
// took.
type scripted struct {
	park bool
	mu   sync.Mutex
	// steps counts, per task, the steps that were saved: a step a worker
	// took but lost the lease on would show as two.
	steps map[int64]int
}

func (s *scripted) Step(ctx context.Context, t *task.Task) error {
	s.mu.Lock()
	s.steps[t.ID]++
	s.mu.Unlock()
	// Long enough for the tasks of a test to spread over its replicas.
	time.Sleep(20 * time.Millisecond)
	switch {
	case t.State == task.Queued && s.park:
		t.State = task.AwaitingApproval
		tasktest.Job(t).Request = &task.ExecRequest{ID: fmt.Sprint(t.ID, "-1"), Command: "make test", Asked: true}
		t.RunAfter = time.Now().Add(time.Hour)
	default:
		t.State = task.Done
	}
	return nil
}

func (s *scripted) Finish(context.Context, *task.Task) error { return nil }

func fixTask(issue int) *task.Task {
	return &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: issue, Instructions: "fix it"}
}

func newScripted(park bool) *scripted {
	return &scripted{park: park, steps: map[int64]int{}}
}

// replica runs a pool over its own store on url, as one bot serve would,
// until the test ends.
func replica(t *testing.T, url string, steps task.Stepper) *Store {
	t.Helper()
	s := open(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	p := &task.Pool{Store: s, Steps: steps, Workers: 2, Lease: 2 * time.Second, Poll: 200 * time.Millisecond}
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pool: %v", err)
		}
	})
	return s
}

// waitState waits until task id is in state want.
func waitState(t *testing.T, s *Store, id int64, want task.State) *task.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.Get(context.Background(), id)
		if err == nil && got.State == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d: %+v (%v), want state %s", id, got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stuckRunning leaves task id's jobs as River holds those of a client
// killed mid-work: running, attempted by a replica that is gone.
func stuckRunning(t *testing.T, s *Store, id int64) {
	t.Helper()
	if _, err := s.db.Exec(context.Background(), `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(),
		attempted_by = '{dead-replica}' WHERE (args->>'task')::bigint = $1`, id); err != nil {
		t.Fatal(err)
	}
}

// jobs counts the step jobs of task id by River's state.
func jobs(t *testing.T, s *Store, id int64) map[string]int {
	t.Helper()
	rows, err := s.db.Query(context.Background(), `SELECT state::text, count(*) FROM river_job
		WHERE kind = 'pullwright_step' AND (args->>'task')::bigint = $1 GROUP BY state`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			st string
			n  int
		)
		if err := rows.Scan(&st, &n); err != nil {
			t.Fatal(err)
		}
		out[st] = n
	}
	return out
}

func TestReplicasWorkEachTaskOnce(t *testing.T) {
	url := pgtest.URL(t)
	steps := newScripted(false)
	var stores []*Store
	for range 3 {
		stores = append(stores, replica(t, url, steps))
	}
	var ids []int64
	for i := range 30 {
		tk := fixTask(i + 1)
		// Deliveries reach the replicas in turn, as behind a load balancer.
		if err := stores[i%3].Record(context.Background(), task.Delivery{ID: fmt.Sprint("d", i)}, tk); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	for _, id := range ids {
		waitState(t, stores[0], id, task.Done)
	}
	steps.mu.Lock()
	defer steps.mu.Unlock()
	for _, id := range ids {
		if steps.steps[id] != 1 {
			t.Errorf("task %d took %d steps, want 1", id, steps.steps[id])
		}
	}
}

func TestWaitingForApprovalHoldsOnlyTheDeadlinesJob(t *testing.T) {
	url := pgtest.URL(t)
	steps := newScripted(true)
	s := replica(t, url, steps)
	tk := fixTask(1)
	if err := s.Record(context.Background(), task.Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	parked := waitState(t, s, tk.ID, task.AwaitingApproval)
	// The worker gives the task back after its save: wait for the release.
	deadline := time.Now().Add(10 * time.Second)
	for {
		j := jobs(t, s, tk.ID)
		if j["scheduled"] == 1 && j["running"] == 0 && j["available"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs of a parked task = %v, want one scheduled and none running or available", j)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var at time.Time
	if err := s.db.QueryRow(context.Background(), `SELECT scheduled_at FROM river_job
		WHERE kind = 'pullwright_step' AND state = 'scheduled' AND (args->>'task')::bigint = $1`, tk.ID).Scan(&at); err != nil {
		t.Fatal(err)
	}
	if d := at.Sub(parked.RunAfter); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("the parked task's job is scheduled at %s, want its deadline %s", at, parked.RunAfter)
	}
	if err := s.Answer(context.Background(), tk.ID, tasktest.Job(parked).Request.ID, task.Answer{Verdict: task.Approved, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, tk.ID, task.Done)
	steps.mu.Lock()
	defer steps.mu.Unlock()
	if steps.steps[tk.ID] != 2 {
		t.Errorf("steps = %d, want 2 (park, then the answer)", steps.steps[tk.ID])
	}
}

// A replica killed while it held a task leaves River's job running and the
// lease set; the sweep finds the task once the lease runs out.
func TestATaskOfADeadReplicaIsTakenUp(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url)
	ctx := context.Background()
	tk := fixTask(1)
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	if _, err := s.claimTask(ctx, tk.ID, "dead-replica-job1", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	stuckRunning(t, s, tk.ID)
	replica(t, url, newScripted(false))
	got := waitState(t, s, tk.ID, task.Done)
	if got.Crashes != 1 {
		t.Errorf("crashes = %d, want 1 (the dead replica's lease ran out)", got.Crashes)
	}
}

// A database made by the release before the queue was River's has tasks
// and no River tables: opening it adds them, and its tasks are worked.
func TestUpgradeFromTheReleaseBeforeRiver(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	db, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	tk := fixTask(1)
	now := time.Now()
	tk.Recorded("d1", now)
	data, err := json.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	// The previous release's Record, as it wrote a task.
	var id int64
	if err := db.QueryRow(ctx, `INSERT INTO tasks (kind, state, issue_key, run_after, data, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id`, tk.Kind, tk.State, tk.IssueKey(), tk.RunAfter, data, now).Scan(&id); err != nil {
		t.Fatal(err)
	}
	var hasRiver bool
	if err := db.QueryRow(ctx, `SELECT to_regclass('river_job') IS NOT NULL`).Scan(&hasRiver); err != nil || hasRiver {
		t.Fatalf("the old schema has river_job = %v (%v)", hasRiver, err)
	}
	db.Close()

	s := replica(t, url, newScripted(false))
	waitState(t, s, id, task.Done)
}

// A pool polling faster than River's default fetch cooldown still starts:
// the bot's tests poll every 20 ms.
func TestQueueStartsWithAShortPoll(t *testing.T) {
	s := open(t, pgtest.URL(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	p := &task.Pool{Store: s, Steps: newScripted(false), Workers: 1, Lease: 3 * time.Second, Poll: 5 * time.Millisecond}
	go func() { done <- p.Run(ctx) }()
	tk := fixTask(1)
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, tk.ID, task.Done)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("pool: %v", err)
	}
}

// A replica killed after River marked a job running but before its claim
// committed leaves the task unleased and its job "running" for ever (River
// never rescues a job without a timeout): the sweep's job must not be
// taken for a duplicate of that one.
func TestATaskWhoseJobIsStuckRunningIsTakenUp(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url)
	ctx := context.Background()
	tk := fixTask(1)
	if err := s.Record(ctx, task.Delivery{ID: "d1"}, tk); err != nil {
		t.Fatal(err)
	}
	stuckRunning(t, s, tk.ID)
	replica(t, url, newScripted(false))
	if got := waitState(t, s, tk.ID, task.Done); got.Crashes != 0 {
		t.Errorf("crashes = %d, want 0 (no claim was lost)", got.Crashes)
	}
}

// A dead replica's task is not left behind a backlog of new tasks: the
// job the sweep inserts for it goes first.
func TestATaskOfADeadReplicaGoesBeforeTheBacklog(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url)
	ctx := context.Background()
	dead := fixTask(1)
	if err := s.Record(ctx, task.Delivery{ID: "dead"}, dead); err != nil {
		t.Fatal(err)
	}
	if _, err := s.claimTask(ctx, dead.ID, "dead-replica-job1", time.Second); err != nil {
		t.Fatal(err)
	}
	stuckRunning(t, s, dead.ID)
	// A backlog of 2 workers × 20 ms per step that lasts well past the
	// dead task's lease and the first sweeps.
	const backlog = 600
	for i := range backlog {
		if err := s.Record(ctx, task.Delivery{ID: fmt.Sprint("d", i)}, fixTask(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	replica(t, url, newScripted(false))
	waitState(t, s, dead.ID, task.Done)
	var left int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE state <> $1`, string(task.Done)).Scan(&left); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d backlog tasks left", left, backlog)
	// Behind the backlog it would be done last, with none left; ahead of
	// it, with most left (350–450 of 600 here).
	if left < backlog/4 {
		t.Errorf("the dead replica's task was done with %d of %d backlog tasks left, want it ahead of most", left, backlog)
	}
}

// The sweep inserts jobs only for tasks no job will bring: not for a
// backlog whose jobs wait their turn, but for a task with none.
func TestTheSweepLeavesABacklogAlone(t *testing.T) {
	s := open(t, pgtest.URL(t))
	ctx := context.Background()
	var ids []int64
	for i := range 20 {
		tk := fixTask(200 + i)
		if err := s.Record(ctx, task.Delivery{ID: fmt.Sprint("b", i)}, tk); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	later := time.Now().Add(time.Hour)
	if n, err := s.sweep(ctx, later, 1); err != nil || n != 0 {
		t.Fatalf("sweep over a backlog with its jobs = %d, %v; want 0", n, err)
	}
	// One task whose job is gone (recorded before River, or lost).
	if _, err := s.db.Exec(ctx, `DELETE FROM river_job WHERE (args->>'task')::bigint = $1`, ids[3]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.sweep(ctx, later, 1); err != nil || n != 1 {
		t.Fatalf("sweep with one task without a job = %d, %v; want 1", n, err)
	}
	if got := jobs(t, s, ids[3]); got["available"] != 1 {
		t.Errorf("the swept task's jobs = %v, want one available", got)
	}
}

// TestSweepPlanUsesIndexes shows the sweep's plan over a backlog the size
// issue 30 measured: 10,000 tasks parked for an answer, each with its job
// scheduled at its deadline, 10,000 finished jobs, and a few tasks due.
// With the tables analyzed, Postgres reads the due tasks from tasks_due
// and looks each one's job up by river_job's primary key; neither table is
// read whole, so a sweep costs the due tasks, not tasks × jobs.
func TestSweepPlanUsesIndexes(t *testing.T) {
	s := open(t, pgtest.URL(t))
	ctx := context.Background()
	now := time.Now()
	const parked, due, finished = 10000, 20, 10000
	for _, fill := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO tasks (kind, state, issue_key, run_after, request_id, data, created_at, updated_at)
SELECT 'fix', CASE WHEN i <= $1::int THEN 'awaiting_approval' ELSE 'queued' END, '1/o/r/' || i,
	CASE WHEN i <= $1 THEN $3::timestamptz + interval '1 day' ELSE $3::timestamptz - interval '1 minute' END,
	CASE WHEN i <= $1 THEN 'req-' || i ELSE '' END, '{}', $3, $3
FROM generate_series(1, $1::int + $2::int) AS i`, []any{parked, due, now}},
		{`INSERT INTO river_job (state, kind, args, scheduled_at, finalized_at)
SELECT 'completed', 'pullwright_step', jsonb_build_object('task', i, 'due', '', 'claims', 0), $2, $2
FROM generate_series(1, $1::int) AS i`, []any{finished, now}},
		{`WITH j AS (
	INSERT INTO river_job (state, kind, args, scheduled_at)
	SELECT CASE WHEN t.state = 'queued' THEN 'available' ELSE 'scheduled' END::river_job_state,
		'pullwright_step', jsonb_build_object('task', t.id, 'due', '', 'claims', 1), t.run_after
	FROM tasks t RETURNING id, (args->>'task')::bigint AS task
)
UPDATE tasks SET job_id = j.id FROM j WHERE tasks.id = j.task`, nil},
		{`ANALYZE tasks`, nil},
		{`ANALYZE river_job`, nil},
	} {
		if _, err := s.db.Exec(ctx, fill.sql, fill.args...); err != nil {
			t.Fatalf("%s: %v", fill.sql, err)
		}
	}
	dueBefore := now.Add(-time.Second)
	var plan []string
	rows, err := s.db.Query(ctx, `EXPLAIN `+sweepQuery, dueBefore, now, sweepBatch)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	for _, want := range []string{"Index Scan using tasks_due on tasks", "river_job_pkey on river_job"} {
		if !strings.Contains(text, want) {
			t.Errorf("the sweep's plan has no %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Seq Scan") {
		t.Errorf("the sweep's plan reads a table whole:\n%s", text)
	}
	// And it finds nothing to rescue: every due task's job waits.
	if n, err := s.sweep(ctx, dueBefore, 1); err != nil || n != 0 {
		t.Fatalf("sweep = %d, %v; want 0", n, err)
	}
}

// Sweeps cannot pile up: a second sweep inserted in the same period, by
// another replica or a restart, is River's duplicate of the first.
func TestTheSweepIsOneAPeriod(t *testing.T) {
	s := open(t, pgtest.URL(t))
	ctx := context.Background()
	// Mid-hour, so that the three fall in one period whenever this runs.
	at := time.Now().Truncate(time.Hour).Add(90 * time.Minute)
	for i, want := range []bool{false, true, true} {
		opts := sweepOpts(time.Hour)
		opts.ScheduledAt = at
		res, err := s.queue.Insert(ctx, sweepArgs{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.UniqueSkippedAsDuplicate != want {
			t.Errorf("insert %d: duplicate = %v, want %v", i+1, res.UniqueSkippedAsDuplicate, want)
		}
	}
	var n int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'pullwright_sweep'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("sweep jobs = %d (%v), want 1", n, err)
	}
}
