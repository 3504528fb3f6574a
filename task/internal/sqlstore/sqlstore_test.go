package sqlstore

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/task"
)

func TestListTail(t *testing.T) {
	dollar := func(n int) string { return fmt.Sprintf("$%d", n) }
	tests := []struct {
		name     string
		q        task.ListQuery
		wantTail string
		wantArgs []any
	}{
		{"everything", task.ListQuery{}, "WHERE kind IN ('fix', 'review') ORDER BY id DESC LIMIT $1", []any{task.MaxList}},
		{"all filters, in order", task.ListQuery{Repo: "O/a", State: task.Done, Before: 9, Limit: 5},
			"WHERE kind IN ('fix', 'review') AND lower(REPO) = lower($1) AND state = $2 AND id < $3 ORDER BY id DESC LIMIT $4",
			[]any{"O/a", "done", int64(9), 5}},
		{"state alone", task.ListQuery{State: task.Queued}, "WHERE kind IN ('fix', 'review') AND state = $1 ORDER BY id DESC LIMIT $2", []any{"queued", task.MaxList}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tail, args := ListTail(tc.q, "REPO", dollar)
			if tail != tc.wantTail || !reflect.DeepEqual(args, tc.wantArgs) {
				t.Errorf("ListTail = %q, %#v; want %q, %#v", tail, args, tc.wantTail, tc.wantArgs)
			}
		})
	}
}

// sliceRows is Rows over a slice, failing at the end when err is set.
type sliceRows struct {
	vals []int
	i    int
	err  error
}

func (r *sliceRows) Next() bool { r.i++; return r.i <= len(r.vals) }
func (r *sliceRows) Err() error { return r.err }

func TestCollect(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		rows    *sliceRows
		failAt  int
		want    []int
		wantErr error
	}{
		{name: "none", rows: &sliceRows{}},
		{name: "all", rows: &sliceRows{vals: []int{1, 2, 3}}, want: []int{1, 2, 3}},
		{name: "scan fails", rows: &sliceRows{vals: []int{1, 2, 3}}, failAt: 2, wantErr: boom},
		{name: "rows fail", rows: &sliceRows{vals: []int{1}, err: boom}, wantErr: boom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rows
			got, err := Collect(r, func() (int, error) {
				if r.i == tc.failAt {
					return 0, boom
				}
				return r.vals[r.i-1], nil
			})
			if !errors.Is(err, tc.wantErr) || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Collect = %v, %v; want %v, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestCheckVersion(t *testing.T) {
	tests := []struct {
		version     int
		wantCurrent bool
		wantErr     string
	}{
		{0, false, ""},
		{2, false, ""},
		{3, true, ""},
		{4, false, "schema version 4, newer than this bot knows (3)"},
	}
	for _, tc := range tests {
		current, err := CheckVersion(tc.version, 3)
		if current != tc.wantCurrent || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("CheckVersion(%d, 3) = %v, %v; want %v, %q", tc.version, current, err, tc.wantCurrent, tc.wantErr)
		}
	}
}
