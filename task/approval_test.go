package task

import (
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
)

// An answer answers the waiting request only if GitHub dates it after the
// request was shown, and only once: what a maintainer approves is what they
// were shown, whenever their comment reaches the bot.
func TestRefusalJudgesOrderOnGitHubsClock(t *testing.T) {
	shown := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	waiting := func() *Task {
		return &Task{Kind: KindFix, ID: 12, agentWork: &Work{Request: &ExecRequest{ID: "12-1", Command: "make check", SHA: "abc", CheckRunID: 77, ShownAt: shown}}}
	}
	comment := func(id int64, at time.Time) *Task {
		return &Task{CommentID: id, AskedAt: at, Requester: Person{Login: "maintainer", ID: 1}}
	}
	for _, tc := range []struct {
		name   string
		answer *Task
		edit   func(target *Task)
		want   string // part of the refusal; "" when the answer counts
	}{
		{name: "written after the request was shown", answer: comment(5, shown.Add(time.Second))},
		{name: "written before", answer: comment(5, shown.Add(-time.Minute)), want: "written before request `12-1`"},
		{name: "written in the same second", answer: comment(5, shown), want: "written before request `12-1`"},
		{name: "naming the request, written before it was shown", answer: func() *Task {
			a := comment(5, shown.Add(-time.Second))
			a.Answering.RequestID = "12-1"
			return a
		}(), want: "written before request `12-1`"},
		{name: "comment without GitHub's time", answer: comment(5, time.Time{}), want: "is not known"},
		{name: "request without GitHub's time", answer: comment(5, shown.Add(time.Hour)),
			edit: func(target *Task) { target.agentWork.Request.ShownAt = time.Time{} }, want: "is not known"},
		{name: "comment that answered an earlier request", answer: comment(5, shown.Add(time.Hour)),
			edit: func(target *Task) { target.agentWork.Answers = []string{"comment 5"} }, want: "already used"},
		{name: "review comment with the id of a used issue comment", answer: func() *Task {
			a := comment(0, shown.Add(time.Second))
			a.Review = &ReviewRef{CommentID: 5}
			return a
		}(), edit: func(target *Task) { target.agentWork.Answers = []string{"comment 5"} }},
		{name: "button of the request's check run", answer: &Task{DeliveryID: "d1", Answering: AnswerRef{Run: 77, RequestID: "12-1", SHA: "abc"}}},
		{name: "button pressed again under a new delivery", answer: &Task{DeliveryID: "d1", Answering: AnswerRef{Run: 77, RequestID: "12-1", SHA: "abc"}},
			edit: func(target *Task) { target.agentWork.Answers = []string{"button d1"} }, want: "already used"},
		{name: "button of another check run", answer: &Task{DeliveryID: "d2", Answering: AnswerRef{Run: 76, RequestID: "12-1", SHA: "abc"}},
			want: "not on the approval check run"},
		{name: "a later request, answered without its id", answer: comment(6, shown.Add(time.Second)),
			edit: func(target *Task) { target.agentWork.Request.ID = "12-2" }, want: "approve request `12-2` (`make check`) with `/approve 12-2`"},
		{name: "a later request, answered by its id", answer: func() *Task {
			a := comment(6, shown.Add(time.Second))
			a.Answering.RequestID = "12-2"
			return a
		}(), edit: func(target *Task) { target.agentWork.Request.ID = "12-2" }},
		{name: "request already answered", answer: comment(6, shown.Add(time.Second)),
			edit: func(target *Task) { target.agentWork.Request.Answer = &Answer{Verdict: Approved, By: "other"} }, want: "already answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := waiting()
			if tc.edit != nil {
				tc.edit(target)
			}
			got := refusal(tc.answer, job(target), answerSource(tc.answer), "approve")
			switch {
			case tc.want == "" && got != "":
				t.Fatalf("refused: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("refusal = %q, want it to say %q", got, tc.want)
			}
		})
	}
}

// ShownAt keeps the newest of the comments that show a request: an answer
// must come after the request was shown everywhere it is shown.
func TestShownKeepsTheNewest(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.FixedZone("x", 3600))
	var r ExecRequest
	r.shown(at)
	r.shown(at.Add(-time.Minute))
	if !r.ShownAt.Equal(at) || r.ShownAt.Location() != time.UTC {
		t.Fatalf("ShownAt = %v, want %v in UTC", r.ShownAt, at)
	}
	r.shown(at.Add(time.Second))
	if !r.ShownAt.Equal(at.Add(time.Second)) {
		t.Fatalf("ShownAt = %v", r.ShownAt)
	}
}

// A request shown by editing an older comment (a retried step, or an
// Action re-run reusing its markers) is shown from the edit on: an answer
// written between the comment's first write and the edit was about what
// the comment showed then.
func TestShownAtOfAnEditedComment(t *testing.T) {
	created := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		p    pullwright.Posted
		want time.Time
	}{
		{"new comment", pullwright.Posted{CreatedAt: created, UpdatedAt: created}, created},
		{"edited comment", pullwright.Posted{CreatedAt: created, UpdatedAt: created.Add(time.Hour)}, created.Add(time.Hour)},
		{"no updated_at", pullwright.Posted{CreatedAt: created}, created},
	} {
		var r ExecRequest
		r.shown(tc.p.ShownAt())
		answer := &Task{CommentID: 5, AskedAt: created.Add(time.Minute)}
		target := &Task{Kind: KindFix, agentWork: &Work{Request: &r}}
		r.ID = "1-1"
		if !r.ShownAt.Equal(tc.want) {
			t.Errorf("%s: ShownAt = %v, want %v", tc.name, r.ShownAt, tc.want)
		}
		refused := refusal(answer, job(target), answerSource(answer), "approve") != ""
		if want := tc.want.After(answer.AskedAt); refused != want {
			t.Errorf("%s: an answer written between the first write and the edit refused = %v, want %v", tc.name, refused, want)
		}
	}
}

// The protocol of asking is one table, in the order of its phases: each
// phase once, each with its side effect written down, and the last one
// always due, so that ask always performs one.
func TestAskingIsOneTableInOrder(t *testing.T) {
	if len(asking) != int(askPark)+1 {
		t.Fatalf("asking has %d phases, want %d", len(asking), askPark+1)
	}
	for i, p := range asking {
		if p.phase != askPhase(i) {
			t.Errorf("phase %d of asking is %d", i, p.phase)
		}
		if p.effect == "" || p.due == nil || p.do == nil {
			t.Errorf("phase %d of asking lacks its effect, its condition or its step", i)
		}
	}
	if !asking[len(asking)-1].due(requests{}, Job{}) {
		t.Error("the last phase of asking is not always due")
	}
}
