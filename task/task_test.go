package task

import "testing"

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
