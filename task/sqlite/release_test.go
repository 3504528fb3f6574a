package sqlite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
)

// TestOpenReadsTheReleaseBeforeJob opens a file the release before
// Task.Job (cc0763d) wrote, a task of every kind, a fix parked on an
// answered request and a review at work, and reads each task back as
// that release wrote it: the same keys and values, a fix's and a review's
// work through Job, no work on another kind. The file was made by that
// release's code (testdata/gendb.go.txt, run from its tree).
func TestOpenReadsTheReleaseBeforeJob(t *testing.T) {
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("testdata", "release-cc0763d.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	rows, err := s.read.QueryContext(ctx, `SELECT id, kind, data FROM tasks ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int64]string{}
	kinds := map[task.Kind]int64{}
	for rows.Next() {
		var (
			id         int64
			kind, data string
		)
		if err := rows.Scan(&id, &kind, &data); err != nil {
			t.Fatal(err)
		}
		stored[id], kinds[task.Kind(kind)] = data, id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 9 {
		t.Fatalf("the file holds tasks of %d kinds, want all 9: %v", len(kinds), kinds)
	}
	got := map[task.Kind]*task.Task{}
	for kind, id := range kinds {
		tk, err := s.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get %s task %d: %v", kind, id, err)
		}
		got[kind] = tk
		if _, ok := tk.Job(); ok != kind.Works() {
			t.Errorf("%s task: Job ok = %v", kind, ok)
		}
		again, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		var was, is map[string]any
		if err := json.Unmarshal([]byte(stored[id]), &was); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(again, &is); err != nil {
			t.Fatal(err)
		}
		// That release wrote a fix's one key without omitempty on every
		// kind, empty; only a kind that works writes it now. The id and
		// the due time are the store's columns, which it sets on a read
		// (an answer made the fix due).
		if v, ok := was["changed_files"]; ok && v == nil && !kind.Works() {
			delete(was, "changed_files")
		}
		for _, column := range []string{"id", "run_after"} {
			delete(was, column)
			delete(is, column)
		}
		if !reflect.DeepEqual(was, is) {
			t.Errorf("%s task %d is written back otherwise:\nwas %s\nis  %s", kind, id, stored[id], again)
		}
	}

	fix, _ := got[task.KindFix].Job()
	if fix.Branch != "agent/1-it-is-broken" || len(fix.Files) != 2 || string(fix.Conversation) != `{"turns":3}` || len(fix.Runs) != 1 ||
		fix.Request == nil || fix.Request.ID != "1-1" || fix.Request.Answer == nil || fix.Request.Answer.By != "carol" || fix.Spend.Models[0].Model != "m" {
		t.Errorf("the fix's work reads as %+v (request %+v)", *fix.Work, fix.Request)
	}
	review, _ := got[task.KindReview].Job()
	if review.Reviewing == nil || review.Reviewing.Head != "head2" || string(review.Conversation) != `{"review":true}` || review.Pull == nil || review.Pull.Info.Number != 2 {
		t.Errorf("the review reads as %+v, work %+v", review.Reviewing, *review.Work)
	}
	if a := got[task.KindApprove].Answering; a.RequestID != "1-1" || a.Digest != "0123456789ab" {
		t.Errorf("the approval answers %+v", a)
	}
	if a := got[task.KindReject].Answering; a.RequestID != "1-1" || a.SHA != "c0ffee" || a.Run != 46 {
		t.Errorf("the rejection answers %+v", a)
	}
	if busy := got[task.KindBusy]; busy.Refused != task.KindReview {
		t.Errorf("the busy answer refused %q", busy.Refused)
	}
	if tr := got[task.KindTrigger].Trigger; tr == nil || tr.Label != "pullwright" {
		t.Errorf("the trigger weighs %+v", tr)
	}
	if got[task.KindReply].Reply == "" || got[task.KindReply].CurrentRequest() != nil {
		t.Errorf("the reply reads as %+v", got[task.KindReply])
	}

	// This release works on from there: the review is due, and a save
	// keeps its work.
	claimed, err := s.Claim(ctx, "now", time.Minute)
	if err != nil || claimed.ID != kinds[task.KindReview] {
		t.Fatalf("Claim = %v, %v; want the review", claimed, err)
	}
	j, _ := claimed.Job()
	j.Turns++
	if err := s.Save(ctx, claimed, "now"); err != nil {
		t.Fatal(err)
	}
	back, err := s.Get(ctx, claimed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bj, ok := back.Job(); !ok || bj.Turns != 2 || string(bj.Conversation) != `{"review":true}` || back.Reviewing == nil {
		t.Errorf("the saved review reads back as %+v", back)
	}
}
