package task

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/golden"
	"github.com/pullwright/pullwright/policy"
)

func TestCanMove(t *testing.T) {
	tests := []struct {
		from, to State
		want     bool
	}{
		{Queued, Preparing, true},
		{Queued, Working, false},
		{Preparing, Working, true},
		{Preparing, Done, true},
		{Preparing, Publishing, false},
		{Working, Publishing, true},
		{Working, AwaitingApproval, true},
		{AwaitingApproval, Running, true},
		{AwaitingApproval, Working, true},
		{Running, Working, true},
		{Publishing, Done, true},
		{Working, Failed, true},
		{AwaitingApproval, Cancelled, true},
		{Done, Failed, false},
		{Failed, Queued, false},
		// The repository's required command is asked for from publishing.
		{Publishing, Working, true},
		{Running, Publishing, true},
		{AwaitingApproval, Publishing, true},
		{Publishing, Preparing, false},
		{Running, AwaitingApproval, false},
	}
	for _, tc := range tests {
		if got := CanMove(tc.from, tc.to); got != tc.want {
			t.Errorf("CanMove(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// An answer task stored before its fields moved into Answering answers the
// same request after an upgrade; one stored after round-trips as it is.
func TestTaskDecodesAnswersOfEitherForm(t *testing.T) {
	want := AnswerRef{RequestID: "12-2", SHA: "abc", Run: 77}
	tests := []struct {
		name, stored string
		want         AnswerRef
	}{
		{"before the move", `{"id":5,"kind":"approve","request_id":"12-2","answer_sha":"abc","answer_run":77}`, want},
		{"after the move", `{"id":5,"kind":"approve","answering":{"request_id":"12-2","sha":"abc","run":77}}`, want},
		{"both: the new form wins", `{"id":5,"kind":"approve","request_id":"1-1","answering":{"request_id":"12-2","sha":"abc","run":77}}`, want},
		{"a fix carries none", `{"id":5,"kind":"fix","state":"working"}`, AnswerRef{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Task
			if err := json.Unmarshal([]byte(tt.stored), &got); err != nil {
				t.Fatal(err)
			}
			if got.Answering != tt.want || got.ID != 5 {
				t.Fatalf("decoded %+v (id %d), want %+v", got.Answering, got.ID, tt.want)
			}
			again, err := json.Marshal(&got)
			if err != nil {
				t.Fatal(err)
			}
			var back Task
			if err := json.Unmarshal(again, &back); err != nil || back.Answering != tt.want {
				t.Fatalf("round trip %s: %+v, %v", again, back.Answering, err)
			}
			if tt.want == (AnswerRef{}) && strings.Contains(string(again), "answer") {
				t.Errorf("a task that answers nothing stores %s", again)
			}
			// A bot of the release before reads the old keys.
			var old struct {
				RequestID string `json:"request_id"`
				AnswerSHA string `json:"answer_sha"`
				AnswerRun int64  `json:"answer_run"`
			}
			if err := json.Unmarshal(again, &old); err != nil || old.RequestID != tt.want.RequestID || old.AnswerSHA != tt.want.SHA || old.AnswerRun != tt.want.Run {
				t.Errorf("the old keys of %s: %+v, %v", again, old, err)
			}
		})
	}
}

// storedTask is a fix with every field a store writes set, and those it
// keeps apart (json:"-") too, so that neither kind can slip.
func storedTask() *Task {
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	t := &Task{
		ID: 12, Kind: KindFix, State: AwaitingApproval, DeliveryID: "d-1",
		Repo:  pullwright.Repo{InstallationID: 3, Owner: "o", Name: "r", CloneURL: "https://example.test/o/r.git", DefaultBranch: "main"},
		Issue: 7, IsPR: true,
		Review:           &ReviewRef{CommentID: 41, InReplyTo: 40, Path: "a.go", Line: 3, Body: "this"},
		CommentID:        42,
		AskedAt:          at,
		Requester:        Person{Login: "alice", ID: 9},
		Instructions:     "fix it",
		Reply:            "a reply",
		StatusCommentID:  43,
		StatusCommentURL: "https://example.test/o/r/issues/7#issuecomment-43",
		Answering:        AnswerRef{RequestID: "11-1", SHA: "ans", Run: 5},
		Error:            "it broke",
		Settings:         &policy.Settings{MaxTurns: 30, Model: "m", Setup: []string{}, Instructions: []string{}},
		AdmittedMS:       1714979289000,
		Unheard:          2,
		CancelledBy:      "bob",
		Crashes:          1,
		Claim:            4,
		Attempts:         2,
		RunAfter:         at.Add(time.Minute),
		CreatedAt:        at.Add(-time.Hour),
		UpdatedAt:        at.Add(time.Second),
	}
	t.IssueTitle = "It is broken"
	t.agentWork = &Work{
		Branch:       "agent/7-it-is-broken",
		BaseSHA:      "base",
		HeadSHA:      "head",
		Workdir:      "/work/12",
		Conversation: []byte(`{"turns":3}`),
		Files:        []FileSnapshot{{Path: "a.go", Content: []byte("package a\n")}, {Path: "b.go", Deleted: true}},
		Plan:         []pullwright.PlanItem{{Title: "Fix it", Status: "done"}},
		Steps:        []string{"read a.go", "edited a.go"},
		Turns:        3, Tokens: 4567,
		Title: "Fix it", Summary: "It is fixed.",
		ChangedFiles: []pullwright.FileStat{{Path: "a.go", Added: 1, Deleted: 2}},
		PushedSHA:    "pushed",
		Rebased:      []string{"theirs"},
		CommitAt:     at.Add(2 * time.Minute),
		Final:        true, Draft: true,
		Request: &ExecRequest{
			ID: "12-2", Command: "go test ./...", Reason: "to test", AskedAt: at, SHA: "req",
			Deadline: at.Add(time.Hour), CommentID: 44, CommentURL: "https://example.test/c/44", PRCommentID: 45, CheckRunID: 46,
			PRUpdated: true, ShownAt: at, Asked: true, ParkedAt: at, StartedIn: 4, RunClosed: true, Auto: "go test",
			Answer:     &Answer{Verdict: Approved, By: "carol", At: at},
			RunCheckID: 47, Result: &pullwright.RunResult{ExitCode: 1, Output: "FAIL", Duration: time.Second},
			Setup:  &pullwright.SetupRecord{Steps: []string{"go mod download"}, Duration: time.Second, Reached: []string{"proxy.golang.org:443"}},
			Closed: true,
		},
		RequestSeq: 2,
		Answers:    []string{"comment 40"},
		PRNumber:   8, PRURL: "https://example.test/o/r/pull/8",
		Pull: &PullWork{
			Info: pullwright.Pull{Number: 7, Title: "A pull", HeadRef: "feature", HeadSHA: "h", BaseRef: "main"},
			Mode: PushToHead, Threads: []ThreadRef{{Root: 40, Author: "dave", Path: "a.go"}}, Replied: 1,
			Commits: []string{"c1"}, Stats: []pullwright.FileStat{{Path: "a.go", Added: 1}},
			Notes: map[int]string{1: "done"}, ReviewReplied: true, Gone: 1,
		},
		Stop:   "out of turns",
		Waited: 90 * time.Second,
		Guidance: &GuidanceUsed{SHA: "0123456789abcdef0123456789abcdef01234567", More: 1, Files: []GuidanceNote{
			{Path: "AGENTS.md"}, {Path: "pkg/AGENTS.md", Cut: true}, {Path: "CLAUDE.md", Skipped: "it is a symbolic link, which is not followed"},
		}},
	}
	return t
}

// A store keeps a task as the JSON object Marshal writes, and reads back
// tasks any earlier release wrote: the keys and values written must not
// change with how Task is laid out in Go. The golden file was written by
// the release in which every field sat directly in Task.
func TestStoredTaskKeepsItsForm(t *testing.T) {
	data, err := json.Marshal(storedTask())
	if err != nil {
		t.Fatal(err)
	}
	// Through a map, so that keys come sorted and the order of the
	// fields in Go does not count.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	sorted, err := json.MarshalIndent(fields, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/stored-task.golden", string(sorted)+"\n")

	stored, err := os.ReadFile(filepath.Join("testdata", "stored-task.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var got Task
	if err := json.Unmarshal(stored, &got); err != nil {
		t.Fatal(err)
	}
	want := storedTask()
	// The store keeps these apart from the task's data.
	want.CancelledBy, want.Crashes, want.Claim, want.agentWork.Request.Answer = "", 0, 0, nil
	if !reflect.DeepEqual(got.agentWork, want.agentWork) {
		t.Errorf("a fix's data reads back as\n%+v\nwant\n%+v", got.agentWork, want.agentWork)
	}
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("a stored task reads back as\n%+v\nwant\n%+v", got, *want)
	}
}

// Tasks stored before Work existed have a fix's data at the top of the
// object, beside the rest; it reads into Work, and a task of another kind
// reads with none. Work has no JSON methods of its own: embedded, they
// would take the place of Task's.
func TestStoredTaskReadsIntoWork(t *testing.T) {
	if _, ok := any(Work{}).(json.Marshaler); ok {
		t.Error("Work has a MarshalJSON, which Task would take for its own")
	}
	if _, ok := any(&Work{}).(json.Unmarshaler); ok {
		t.Error("Work has an UnmarshalJSON, which Task would take for its own")
	}
	// Task's JSON methods put Work's keys beside Task's: a key both had
	// would be dropped from both, without a word.
	keys := func(v any) map[string]bool {
		out := map[string]bool{}
		for _, f := range reflect.VisibleFields(reflect.TypeOf(v)) {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" && f.IsExported() {
				out[name] = true
			}
		}
		return out
	}
	work := keys(Work{})
	for name := range keys(Task{}) {
		if work[name] {
			t.Errorf("Task and Work both have the JSON key %q", name)
		}
	}
	for _, legacy := range []string{"request_id", "answer_sha", "answer_run"} {
		if work[legacy] {
			t.Errorf("Work has the JSON key %q, which Task writes for an answer", legacy)
		}
	}
	tests := []struct {
		name, stored string
		want         *Work
		wantIssue    int
	}{
		{
			name:      "a fix waiting for an answer",
			stored:    `{"id":5,"kind":"fix","state":"awaiting_approval","issue":3,"issue_title":"Broken","branch":"agent/3-broken","pushed_sha":"abc","turns":4,"request":{"id":"5-1","command":"make","sha":"abc","asked":true},"request_seq":1,"answers":["comment 9"],"waited":1000000000}`,
			want:      &Work{Branch: "agent/3-broken", PushedSHA: "abc", Turns: 4, Request: &ExecRequest{ID: "5-1", Command: "make", SHA: "abc", Asked: true}, RequestSeq: 1, Answers: []string{"comment 9"}, Waited: time.Second},
			wantIssue: 3,
		},
		{
			name:      "a fix on a pull request, done",
			stored:    `{"id":5,"kind":"fix","state":"done","issue":3,"is_pr":true,"pr_number":3,"pr_url":"https://example.test/pull/3","final":true,"changed_files":[{"path":"a.go","added":1,"deleted":0}],"pull":{"info":{"number":3,"head_ref":"x","head_sha":"h","base_ref":"main"},"mode":"push","commits":["c1"]}}`,
			want:      &Work{PRNumber: 3, PRURL: "https://example.test/pull/3", Final: true, ChangedFiles: []pullwright.FileStat{{Path: "a.go", Added: 1}}, Pull: &PullWork{Info: pullwright.Pull{Number: 3, HeadRef: "x", HeadSHA: "h", BaseRef: "main"}, Mode: PushToHead, Commits: []string{"c1"}}},
			wantIssue: 3,
		},
		{
			name:      "a reply has none",
			stored:    `{"id":6,"kind":"reply","state":"done","issue":3,"issue_title":"Broken","reply":"hi","changed_files":null}`,
			wantIssue: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Task
			if err := json.Unmarshal([]byte(tt.stored), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.agentWork, tt.want) || got.Issue != tt.wantIssue {
				t.Errorf("read %s as issue %d, %+v; want issue %d, %+v", tt.stored, got.Issue, got.agentWork, tt.wantIssue, tt.want)
			}
		})
	}
}

// job is t's Job, for a test with a fix or a review in hand.
func job(t *Task) Job {
	j, ok := t.Job()
	if !ok {
		panic(fmt.Sprintf("a task of kind %q has no work", t.Kind))
	}
	return j
}

// Only a fix and a review have work: Job gives it to them alone, and a
// task of another kind neither writes nor reads any, whatever its Go
// value holds.
func TestOnlyAFixOrAReviewHasWork(t *testing.T) {
	kinds := []Kind{KindFix, KindReview, KindReply, KindStatus, KindCancel, KindBusy, KindApprove, KindReject, KindTrigger}
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			tk := &Task{Kind: kind, agentWork: &Work{Branch: "agent/1-x", Request: &ExecRequest{ID: "1-1"}}}
			j, ok := tk.Job()
			if ok != (kind == KindFix || kind == KindReview) {
				t.Fatalf("Job ok = %v", ok)
			}
			data, err := json.Marshal(tk)
			if err != nil {
				t.Fatal(err)
			}
			var back Task
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if !ok {
				if strings.Contains(string(data), `,"branch":`) || strings.Contains(string(data), `"changed_files"`) || back.agentWork != nil || back.CurrentRequest() != nil {
					t.Errorf("a %s task stores work: %s", kind, data)
				}
				return
			}
			if j.Branch != "agent/1-x" || back.agentWork == nil || back.agentWork.Branch != "agent/1-x" || back.CurrentRequest().ID != "1-1" {
				t.Errorf("a %s task's work reads back as %+v from %s", kind, back.agentWork, data)
			}
		})
	}
	// A fix or a review made without work gets it on first use, and is
	// stored with the keys every release wrote.
	tk := &Task{Kind: KindReview}
	data, err := json.Marshal(tk)
	if err != nil || !strings.Contains(string(data), `"changed_files":null`) {
		t.Errorf("a review without work stored as %s, %v", data, err)
	}
	if j, ok := tk.Job(); !ok || j.Work == nil || tk.agentWork != j.Work {
		t.Errorf("Job of a review without work = %+v, %v", j, ok)
	}
}

// A clone's work is its own, however deep: a clone is the task as the
// store would give it back.
func TestCloneCopiesTheWork(t *testing.T) {
	tk := storedTask()
	c := tk.Clone()
	job(c).Branch, job(c).Turns, c.Issue = "other", 99, 1
	if job(tk).Branch != "agent/7-it-is-broken" || job(tk).Turns != 3 || tk.Issue != 7 {
		t.Errorf("a change to the clone reached the task: %+v", *tk.agentWork)
	}
	if r := (&Task{Kind: KindReply}).Clone(); r.agentWork != nil {
		t.Errorf("a reply's clone has work %+v", r.agentWork)
	}
}

// Outside task.go, the package reaches a task's work through Job alone,
// as other packages must: a step that reads t.agentWork could meet a
// kind that has none.
func TestOnlyTaskGoTouchesWork(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		if path == "task.go" || strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && s.Sel.Name == "agentWork" {
				t.Errorf("%s reads a task's work without Job", fset.Position(s.Pos()))
			}
			return true
		})
	}
}
