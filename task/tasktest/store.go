package tasktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pullwright/pullwright/task"
)

// Store is an in-memory task.Store (and task.Due) that keeps what the
// SQLite store keeps, column by column, and passes the same storetest
// suite: task's tests get a store's real semantics (leases, the answer's
// compare-and-swap, one active fix per issue) without a database. A task
// is kept as its JSON, as a database keeps it, so a caller's copy never
// aliases the stored one.
type Store struct {
	now func() time.Time

	mu         sync.Mutex
	closed     bool
	lastID     int64
	deliveries map[string]bool
	heads      []storeHead
	rows       map[int64]*storeRow
}

var (
	_ task.Store  = (*Store)(nil)
	_ task.Due    = (*Store)(nil)
	_ task.Lister = (*Store)(nil)
)

// errStoreClosed is what a closed Store answers, as a closed database would.
var errStoreClosed = errors.New("store is closed")

// lock takes the store's lock, or, when the store is closed, says so and
// leaves it free.
func (s *Store) lock() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errStoreClosed
	}
	return nil
}

// storeHead is a recorded head of a pull request (task.HeadPush).
type storeHead struct {
	pullKey, sha string
	atMS         int64
}

// storeRow holds what the SQLite store's tasks table does. Times are Unix
// milliseconds, as there, so that times read back are the same.
type storeRow struct {
	kind        task.Kind
	state       task.State
	issueKey    string
	runAfterMS  int64
	leaseOwner  string
	leaseUntil  int64
	cancelledBy string
	crashes     int
	claims      int
	// requestID and answer are kept apart from data, so that Answer
	// swaps them while a worker holds the task.
	requestID string
	answer    *task.Answer
	prKey     string
	branchKey string
	data      []byte
}

func (r *storeRow) active() bool { return !r.state.Terminal() }

// NewStore makes an empty store that reads the time from now (time.Now
// when nil).
func NewStore(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{now: now, deliveries: map[string]bool{}, rows: map[int64]*storeRow{}}
}

// decode reads the stored task of id, with what is kept beside it.
func (s *Store) decode(id int64) (*task.Task, error) {
	r := s.rows[id]
	t := new(task.Task)
	if err := json.Unmarshal(r.data, t); err != nil {
		return nil, fmt.Errorf("decode task %d: %w", id, err)
	}
	t.ID = id
	t.CancelledBy = r.cancelledBy
	t.RunAfter = time.UnixMilli(r.runAfterMS).UTC()
	t.Crashes = r.crashes
	if req := t.CurrentRequest(); req != nil && r.answer != nil {
		a := *r.answer
		req.Answer = &a
	}
	return t, nil
}

// Record implements task.Store.
func (s *Store) Record(ctx context.Context, d task.Delivery, t *task.Task) error {
	if err := s.lock(); err != nil {
		return fmt.Errorf("record delivery %s: %w", d.ID, err)
	}
	defer s.mu.Unlock()
	if s.deliveries[d.ID] {
		return fmt.Errorf("record delivery %s: %w", d.ID, task.ErrDuplicate)
	}
	if t == nil {
		s.recordDelivery(d)
		return nil
	}
	now := s.now()
	t.Recorded(d.ID, now)
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("record delivery %s: encode task: %w", d.ID, err)
	}
	key := t.IssueKey()
	if t.Kind == task.KindFix {
		// One active fix per issue, and a fix asked on the pull request an
		// active task opened is a fix on that task's conversation too.
		for _, r := range s.rows {
			if r.kind == task.KindFix && r.active() && (r.issueKey == key || r.prKey == key) {
				return fmt.Errorf("record delivery %s: %s: %w", d.ID, key, task.ErrActive)
			}
		}
	}
	if t.Kind == task.KindReview {
		// One active review per pull request.
		for _, r := range s.rows {
			if r.kind == task.KindReview && r.active() && r.issueKey == key {
				return fmt.Errorf("record delivery %s: %s: %w", d.ID, key, task.ErrActive)
			}
		}
	}
	s.recordDelivery(d)
	s.lastID++
	s.rows[s.lastID] = &storeRow{
		kind: t.Kind, state: t.State, issueKey: key, runAfterMS: t.RunAfter.UnixMilli(), data: data,
	}
	t.ID = s.lastID
	return nil
}

func (s *Store) recordDelivery(d task.Delivery) {
	s.deliveries[d.ID] = true
	if h := d.Head; h != nil {
		s.heads = append(s.heads, storeHead{pullKey: h.PullKey, sha: h.SHA, atMS: h.At.UnixMilli()})
	}
}

// Claim implements task.Store: the oldest due task, by run-after time and
// then by id.
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration) (*task.Task, error) {
	if err := s.lock(); err != nil {
		return nil, fmt.Errorf("claim task: %w", err)
	}
	defer s.mu.Unlock()
	now := s.now().UnixMilli()
	var (
		id   int64
		best *storeRow
	)
	for rid, r := range s.rows {
		if !r.active() || r.runAfterMS > now || (r.leaseOwner != "" && r.leaseUntil >= now) {
			continue
		}
		if best == nil || r.runAfterMS < best.runAfterMS || (r.runAfterMS == best.runAfterMS && rid < id) {
			id, best = rid, r
		}
	}
	if best == nil {
		return nil, task.ErrNoTask
	}
	// A lease that ran out with an owner means that worker vanished mid-step.
	if best.leaseOwner != "" {
		best.crashes++
	}
	best.leaseOwner, best.leaseUntil = owner, now+lease.Milliseconds()
	best.claims++
	t, err := s.decode(id)
	if err != nil {
		return nil, fmt.Errorf("claim task %d: %w", id, err)
	}
	t.Claim = best.claims
	return t, nil
}

// Save implements task.Store.
func (s *Store) Save(ctx context.Context, t *task.Task, owner string) error {
	if err := s.lock(); err != nil {
		return fmt.Errorf("save task %d: %w", t.ID, err)
	}
	defer s.mu.Unlock()
	now := s.now()
	t.UpdatedAt = now
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("save task %d: encode: %w", t.ID, err)
	}
	r := s.rows[t.ID]
	if r == nil || r.leaseOwner != owner || r.leaseUntil < now.UnixMilli() {
		return fmt.Errorf("save task %d: %w", t.ID, task.ErrLeaseLost)
	}
	var (
		requestID string
		answer    *task.Answer
	)
	if req := t.CurrentRequest(); req != nil {
		requestID = req.ID
		if req.Answer != nil {
			a := *req.Answer
			answer = &a
		}
	}
	// An answer given while the worker held the task is never erased by
	// the worker's older copy: for the same request, a stored answer wins
	// over none, and makes the task due.
	runAfter := t.RunAfter.UnixMilli()
	if answer == nil && r.requestID == requestID {
		if r.answer != nil {
			runAfter = min(runAfter, now.UnixMilli())
		}
		answer = r.answer
	}
	r.state, r.runAfterMS, r.answer, r.requestID = t.State, runAfter, answer, requestID
	r.prKey, r.data = t.PRKey(), data
	t.CancelledBy = r.cancelledBy
	if req := t.CurrentRequest(); req != nil && answer != nil {
		a := *answer
		req.Answer = &a
	}
	t.RunAfter = time.UnixMilli(runAfter).UTC()
	return nil
}

// Renew implements task.Store.
func (s *Store) Renew(ctx context.Context, id int64, owner string, lease time.Duration) error {
	if err := s.lock(); err != nil {
		return fmt.Errorf("renew lease on task %d: %w", id, err)
	}
	defer s.mu.Unlock()
	now := s.now()
	r := s.rows[id]
	if r == nil || r.leaseOwner != owner || r.leaseUntil < now.UnixMilli() {
		return fmt.Errorf("renew lease on task %d: %w", id, task.ErrLeaseLost)
	}
	r.leaseUntil = now.Add(lease).UnixMilli()
	return nil
}

// Release implements task.Store.
func (s *Store) Release(ctx context.Context, id int64, owner string) error {
	if err := s.lock(); err != nil {
		return fmt.Errorf("release task %d: %w", id, err)
	}
	defer s.mu.Unlock()
	r := s.rows[id]
	if r == nil || r.leaseOwner != owner {
		return fmt.Errorf("release task %d: %w", id, task.ErrLeaseLost)
	}
	r.leaseOwner, r.leaseUntil = "", 0
	return nil
}

// Get implements task.Store.
func (s *Store) Get(ctx context.Context, id int64) (*task.Task, error) {
	if err := s.lock(); err != nil {
		return nil, fmt.Errorf("get task %d: %w", id, err)
	}
	defer s.mu.Unlock()
	if s.rows[id] == nil {
		return nil, fmt.Errorf("get task %d: %w", id, task.ErrNotFound)
	}
	t, err := s.decode(id)
	if err != nil {
		return nil, fmt.Errorf("get task %d: %w", id, err)
	}
	return t, nil
}

// oneFor returns the newest task of key (its issue or the pull request
// it opened) whose kind is one of kinds, of those active when activeOnly.
func (s *Store) oneFor(op, key string, activeOnly bool, kinds ...task.Kind) (*task.Task, error) {
	if err := s.lock(); err != nil {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, err)
	}
	defer s.mu.Unlock()
	var id int64
	for rid, r := range s.rows {
		if slices.Contains(kinds, r.kind) && (r.issueKey == key || r.prKey == key) && (!activeOnly || r.active()) && rid > id {
			id = rid
		}
	}
	if id == 0 {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, task.ErrNotFound)
	}
	t, err := s.decode(id)
	if err != nil {
		return nil, fmt.Errorf("%s task of %s: %w", op, key, err)
	}
	return t, nil
}

// List implements task.Lister, as the SQLite store does: the tasks
// without their Conversation and Files.
func (s *Store) List(ctx context.Context, q task.ListQuery) ([]*task.Task, error) {
	if err := s.lock(); err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer s.mu.Unlock()
	var ids []int64
	for id, r := range s.rows {
		if (r.kind == task.KindFix || r.kind == task.KindReview) && (q.State == "" || r.state == q.State) && (q.Before <= 0 || id < q.Before) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	var out []*task.Task
	for _, id := range ids {
		if len(out) == q.PageSize() {
			break
		}
		t, err := s.decode(id)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		if q.Repo != "" && !strings.EqualFold(t.Repo.FullName(), q.Repo) {
			continue
		}
		if j, ok := t.Job(); ok {
			j.Conversation, j.Files = nil, nil
		}
		out = append(out, t)
	}
	return out, nil
}

// Active implements task.Store.
func (s *Store) Active(ctx context.Context, issueKey string) (*task.Task, error) {
	return s.oneFor("active", issueKey, true, task.KindFix)
}

// Latest implements task.Store.
func (s *Store) Latest(ctx context.Context, issueKey string) (*task.Task, error) {
	return s.oneFor("latest", issueKey, false, task.KindFix)
}

// Newest implements task.Store.
func (s *Store) Newest(ctx context.Context, issueKey string, active bool, kinds ...task.Kind) (*task.Task, error) {
	op := "latest"
	if active {
		op = "active"
	}
	return s.oneFor(op, issueKey, active, kinds...)
}

// PullHeadsAround implements task.Store.
func (s *Store) PullHeadsAround(ctx context.Context, pullKey, sha string, at time.Time) (task.HeadsAround, error) {
	if err := s.lock(); err != nil {
		return task.HeadsAround{}, fmt.Errorf("heads of %s around %s: %w", pullKey, at, err)
	}
	defer s.mu.Unlock()
	var (
		out    task.HeadsAround
		atMS   = at.UnixMilli()
		before int64
		found  bool
	)
	for _, h := range s.heads {
		if h.pullKey != pullKey {
			continue
		}
		if h.sha == sha && h.atMS >= atMS {
			out.Since = true
		}
		if h.atMS < atMS && (!found || h.atMS > before) {
			before, found = h.atMS, true
		}
	}
	for _, h := range s.heads {
		if found && h.pullKey == pullKey && h.atMS == before && !slices.Contains(out.Before, h.sha) {
			out.Before = append(out.Before, h.sha)
		}
	}
	slices.Sort(out.Before)
	return out, nil
}

// HoldBranch implements task.Store.
func (s *Store) HoldBranch(ctx context.Context, t *task.Task) (*task.Task, error) {
	key := t.BranchKey()
	if err := s.lock(); err != nil {
		return nil, fmt.Errorf("hold branch %s for task %d: %w", key, t.ID, err)
	}
	defer s.mu.Unlock()
	if key != "" {
		for id, r := range s.rows {
			if r.branchKey == key && id != t.ID && r.active() {
				holder, err := s.decode(id)
				if err != nil {
					return nil, fmt.Errorf("hold branch %s for task %d: read holder: %w", key, t.ID, err)
				}
				return holder, nil
			}
		}
	}
	if r := s.rows[t.ID]; r != nil {
		r.branchKey = key
	}
	return nil, nil
}

// Answer implements task.Store.
func (s *Store) Answer(ctx context.Context, id int64, requestID string, a task.Answer) error {
	if err := s.lock(); err != nil {
		return fmt.Errorf("answer request %s: %w", requestID, err)
	}
	defer s.mu.Unlock()
	r := s.rows[id]
	if r == nil || r.requestID != requestID || r.answer != nil || r.state != task.AwaitingApproval || r.cancelledBy != "" {
		return fmt.Errorf("answer request %s: %w", requestID, task.ErrAnswered)
	}
	r.answer = &a
	r.runAfterMS = s.now().UnixMilli()
	return nil
}

// RequestShown implements task.Store.
func (s *Store) RequestShown(ctx context.Context, id int64, requestID string, at time.Time) error {
	if err := s.lock(); err != nil {
		return fmt.Errorf("date request %s: %w", requestID, err)
	}
	defer s.mu.Unlock()
	r := s.rows[id]
	if r == nil || r.requestID != requestID || r.answer != nil || r.state != task.AwaitingApproval {
		return fmt.Errorf("date request %s: %w", requestID, task.ErrAnswered)
	}
	t, err := s.decode(id)
	if err != nil {
		return fmt.Errorf("date request %s: %w", requestID, err)
	}
	req := t.CurrentRequest()
	if req == nil || !req.ShownAt.IsZero() {
		return fmt.Errorf("date request %s: %w", requestID, task.ErrAnswered)
	}
	req.ShownAt = at.UTC()
	return s.rewrite(r, t)
}

// rewrite stores t as r's data (the answer, kept beside it, is not in
// its JSON).
func (s *Store) rewrite(r *storeRow, t *task.Task) error {
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode task %d: %w", t.ID, err)
	}
	r.data = data
	return nil
}

// Rewrite changes task id's stored data with edit, under no lease and
// beside every rule, as an older release's row differs from what this one
// writes: for tests of what an upgrade finds.
func (s *Store) Rewrite(id int64, edit func(*task.Task)) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r := s.rows[id]
	if r == nil {
		return fmt.Errorf("rewrite task %d: %w", id, task.ErrNotFound)
	}
	t, err := s.decode(id)
	if err != nil {
		return err
	}
	edit(t)
	return s.rewrite(r, t)
}

// RequestCancel implements task.Store.
func (s *Store) RequestCancel(ctx context.Context, id int64, by string) error {
	if err := s.lock(); err != nil {
		return fmt.Errorf("cancel task %d: %w", id, err)
	}
	defer s.mu.Unlock()
	if strings.TrimSpace(by) == "" {
		by = "unknown"
	}
	r := s.rows[id]
	if r == nil || !r.active() || r.cancelledBy != "" {
		return fmt.Errorf("cancel task %d: %w", id, task.ErrNotFound)
	}
	r.cancelledBy = by
	r.runAfterMS = s.now().UnixMilli()
	return nil
}

// Admit implements task.Store: the count and the mark under one lock.
func (s *Store) Admit(ctx context.Context, t *task.Task, since, at time.Time, fits func(active, started int) bool) (active, started int, ok bool, err error) {
	if err := s.lock(); err != nil {
		return 0, 0, false, fmt.Errorf("admit task %d: %w", t.ID, err)
	}
	defer s.mu.Unlock()
	prefix := fmt.Sprintf("%d/", t.Repo.InstallationID)
	for id, r := range s.rows {
		if (r.kind != task.KindFix && r.kind != task.KindReview) || !strings.HasPrefix(r.issueKey, prefix) || id == t.ID {
			continue
		}
		ms, err := admittedMS(r.data)
		if err != nil {
			return 0, 0, false, fmt.Errorf("admit task %d: task %d: %w", t.ID, id, err)
		}
		if ms <= 0 {
			continue
		}
		if r.active() {
			active++
		}
		if ms >= since.UnixMilli() {
			started++
		}
	}
	if !fits(active, started) {
		return active, started, false, nil
	}
	if r := s.rows[t.ID]; r != nil {
		var data map[string]any
		if err := json.Unmarshal(r.data, &data); err != nil {
			return 0, 0, false, fmt.Errorf("admit task %d: %w", t.ID, err)
		}
		data["admitted_ms"] = at.UnixMilli()
		b, err := json.Marshal(data)
		if err != nil {
			return 0, 0, false, fmt.Errorf("admit task %d: %w", t.ID, err)
		}
		r.data = b
	}
	t.AdmittedMS = at.UnixMilli()
	return active, started, true, nil
}

func admittedMS(data []byte) (int64, error) {
	var admitted struct {
		MS int64 `json:"admitted_ms"`
	}
	err := json.Unmarshal(data, &admitted)
	return admitted.MS, err
}

// Counts implements task.Store.
func (s *Store) Counts(ctx context.Context) (map[task.State]int, error) {
	if err := s.lock(); err != nil {
		return nil, fmt.Errorf("count tasks by state: %w", err)
	}
	defer s.mu.Unlock()
	out := map[task.State]int{}
	for _, r := range s.rows {
		if r.active() {
			out[r.state]++
		}
	}
	return out, nil
}

// NextDue implements task.Due: the earliest due time of a task that is not
// over and does not wait for an answer.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	if err := s.lock(); err != nil {
		return time.Time{}, false, fmt.Errorf("next due task: %w", err)
	}
	defer s.mu.Unlock()
	var (
		at    int64
		found bool
	)
	for _, r := range s.rows {
		if !r.active() || (r.state == task.AwaitingApproval && r.answer == nil && r.cancelledBy == "") {
			continue
		}
		if !found || r.runAfterMS < at {
			at, found = r.runAfterMS, true
		}
	}
	if !found {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(at), true, nil
}

// Close implements task.Store; the store answers nothing after it.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
