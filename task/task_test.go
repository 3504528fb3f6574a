package task

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCanMove(t *testing.T) {
	tests := []struct {
		from, to State
		want     bool
	}{
		{Queued, Preparing, true},
		{Queued, Working, false},
		{Preparing, Working, true},
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
		{Publishing, Working, false},
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
