package console

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

func TestDurationIsRoundedForPeople(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{400 * time.Microsecond, "under 1ms"},
		{52336841 * time.Nanosecond, "52ms"},
		{999 * time.Millisecond, "999ms"},
		{999700 * time.Microsecond, "1s"},
		{time.Second, "1s"},
		{3236 * time.Millisecond, "3.2s"},
		{59960 * time.Millisecond, "1m"},
		{4*time.Minute + 10*time.Second + 300*time.Millisecond, "4m 10s"},
		{4 * time.Minute, "4m"},
		{59*time.Minute + 59*time.Second + 700*time.Millisecond, "1h"},
		{time.Hour + 5*time.Minute + 20*time.Second, "1h 5m"},
		{26 * time.Hour, "26h"},
	}
	for _, tt := range tests {
		if got := duration(tt.d); got != tt.want {
			t.Errorf("duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestStatesAreWords(t *testing.T) {
	for _, s := range states {
		w := stateWords(s)
		if w == "" || strings.Contains(w, "_") {
			t.Errorf("state %s reads %q", s, w)
		}
	}
	if got := stateWords(task.AwaitingApproval); got != "waiting for approval" {
		t.Errorf("awaiting_approval reads %q", got)
	}
}

// The pages show states as words and durations rounded; the classes and
// the filter's values keep the states' names.
func TestPagesReadAsWords(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	list := f.serve(t, "GET", "/console/", nil, []*http.Cookie{alice}, nil).Body.String()
	for _, want := range []string{
		`<td class="state state-awaiting_approval">waiting for approval</td>`,
		`<option value="awaiting_approval">waiting for approval</option>`,
	} {
		if !strings.Contains(list, want) {
			t.Errorf("the list has no %s", want)
		}
	}
	if strings.Contains(list, ">awaiting_approval<") {
		t.Error("the list shows a state's name")
	}

	tk := &task.Task{Kind: task.KindFix, State: task.Working, Issue: 77}
	tasktest.Job(tk).Runs = []task.RunRecord{{RequestID: "9-1", Command: "go test ./...", Verdict: task.Approved, By: "alice", Outcome: "passed", Duration: 3236841 * time.Microsecond}}
	f.add(t, tk)
	page := f.serve(t, "GET", "/console/tasks/"+itoa(tk.ID), nil, []*http.Cookie{alice}, nil).Body.String()
	if !strings.Contains(page, "after 3.2s.") || strings.Contains(page, "3.236841s") {
		t.Errorf("the run's duration is not rounded:\n%s", page)
	}
	if !strings.Contains(page, `<span class="state state-working">working</span>`) {
		t.Error("the task's state is not shown as a word")
	}
}

// "Your approval was sent" tells of an answer on its way: once the
// request is answered, or the task has ended, the page that answer led
// to no longer says it.
func TestTheSentNoticeGoesOnceTheTaskMovesOn(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	hostile := f.ids["hostile"]
	sentPage := func(verb string, id int64) string {
		t.Helper()
		w := f.serve(t, "GET", "/console/tasks/"+itoa(id)+"?sent="+verb, nil, []*http.Cookie{alice}, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET = %d", w.Code)
		}
		return w.Body.String()
	}
	if p := sentPage("approve", hostile); !strings.Contains(p, `id="sent"`) || !strings.Contains(p, "Your approval was sent") {
		t.Fatal("no notice while the request waits")
	}
	if p := sentPage("cancel", hostile); !strings.Contains(p, "Your cancel was sent") {
		t.Fatal("no cancel notice while the task is active")
	}
	// The notice is inside the section a live update swaps.
	p := sentPage("approve", hostile)
	if strings.Index(p, `id="sent"`) < strings.Index(p, `<div id="task"`) {
		t.Error("the notice is outside the task's section, which live updates replace")
	}

	// Answered: the worker took the approval and runs the command.
	answered := &task.Task{Kind: task.KindFix, State: task.Running, Issue: 79}
	tasktest.Job(answered).Request = &task.ExecRequest{ID: "9-1", Command: "make test", SHA: strings.Repeat("b", 40), Asked: true,
		Answer: &task.Answer{Verdict: task.Approved, By: "alice"}}
	f.add(t, answered)
	if p := sentPage("approve", answered.ID); strings.Contains(p, `id="sent"`) {
		t.Error("the approval notice outlived the answer")
	}
	if p := sentPage("cancel", answered.ID); !strings.Contains(p, `id="sent"`) {
		t.Error("no cancel notice on a task still running")
	}
	ended := f.add(t, &task.Task{Kind: task.KindFix, State: task.Done, Issue: 78})
	if p := sentPage("cancel", ended.ID); strings.Contains(p, `id="sent"`) {
		t.Error("the cancel notice shows on an ended task")
	}
}

// add records tk, a fix task of o/private, as it stands.
func (f *fixture) add(t *testing.T, tk *task.Task) *task.Task {
	t.Helper()
	tk.Kind, tk.Repo, tk.Requester = task.KindFix, pullwright.Repo{InstallationID: 1, Owner: "o", Name: "private"}, task.Person{Login: "dave"}
	if err := f.store.Record(context.Background(), task.Delivery{ID: "add-" + itoa(int64(tk.Issue))}, tk); err != nil {
		t.Fatal(err)
	}
	return tk
}
