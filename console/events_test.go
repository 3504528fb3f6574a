package console

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
)

// event is one Server-Sent Event.
type event struct {
	name string
	view taskView
}

// stream opens the task's live stream as the cookie's person and returns
// its events as they come.
func (f *fixture) stream(t *testing.T, id int64, ck *http.Cookie) (int, <-chan event) {
	t.Helper()
	srv := httptest.NewServer(f.c.Handler())
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/api/tasks/"+itoa(id)+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(ck)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	out := make(chan event, 16)
	if resp.StatusCode != http.StatusOK {
		close(out)
		return resp.StatusCode, out
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var e event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if e.name == "task" {
					_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e.view)
				}
			case line == "" && e.name != "":
				out <- e
				e = event{}
			}
		}
	}()
	return resp.StatusCode, out
}

func next(t *testing.T, events <-chan event) event {
	t.Helper()
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return event{}
}

func TestTaskStreamSendsChanges(t *testing.T) {
	f := newFixture(t)
	f.c.streamPoll = 10 * time.Millisecond
	alice := f.signIn(t, "alice")
	id := f.ids["hostile"]
	code, events := f.stream(t, id, alice)
	if code != http.StatusOK {
		t.Fatalf("stream = %d", code)
	}
	first := next(t, events)
	if first.name != "task" || first.view.ID != id || first.view.Pending == nil || first.view.Pending.ID != "4-2" {
		t.Fatalf("first event = %+v", first)
	}
	// A cancel changes the task without a worker's save: the stream sees it.
	if err := f.store.RequestCancel(t.Context(), id, "alice"); err != nil {
		t.Fatal(err)
	}
	if e := next(t, events); e.name != "task" || e.view.CancelledBy != "alice" {
		t.Fatalf("after the cancel: %+v", e)
	}
	// A worker ends it: the stream says so and closes.
	got, err := f.store.Claim(t.Context(), "w", time.Minute)
	for err == nil && got.ID != id {
		got, err = f.store.Claim(t.Context(), "w", time.Minute)
	}
	if err != nil {
		t.Fatal(err)
	}
	got.State = task.Cancelled
	if err := f.store.Save(t.Context(), got, "w"); err != nil {
		t.Fatal(err)
	}
	if e := next(t, events); e.name != "task" || e.view.State != task.Cancelled {
		t.Fatalf("after the end: %+v", e)
	}
	if e := next(t, events); e.name != "end" {
		t.Fatalf("after the last change: %+v", e)
	}
}

func TestTaskStreamFollowsReadPermission(t *testing.T) {
	f := newFixture(t)
	f.c.streamPoll = 10 * time.Millisecond
	mallory := f.signIn(t, "mallory")
	if code, _ := f.stream(t, f.ids["hostile"], mallory); code != http.StatusNotFound {
		t.Errorf("a non-member's stream = %d, want 404", code)
	}
	carol := f.signIn(t, "carol")
	if code, _ := f.stream(t, f.ids["readonly"], carol); code != http.StatusOK {
		t.Errorf("a reader's stream = %d, want 200", code)
	}
	// Access taken away: the stream ends once the cached answer expires.
	_, events := f.stream(t, f.ids["readonly"], carol)
	next(t, events)
	f.gh.SetPermission("o", "readonly", "carol", "none")
	f.clock.Add(2 * time.Minute)
	for {
		e := next(t, events)
		if e.name == "end" {
			return
		}
	}
}

// The task page loads the live script from the console itself, and names
// its stream; the script is served as JavaScript.
func TestTaskPageIsLive(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	id := itoa(f.ids["private"])
	body := f.serve(t, "GET", "/console/tasks/"+id, nil, []*http.Cookie{alice}, nil).Body.String()
	for _, want := range []string{`<script src="/console/static/live.js" defer></script>`, `data-events="/api/tasks/` + id + `/events"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the task page lacks %s", want)
		}
	}
	w := f.serve(t, "GET", "/console/static/live.js", nil, nil, nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), "javascript") || strings.Contains(w.Body.String(), "innerHTML") {
		t.Errorf("live.js = %d %q", w.Code, w.Header().Get("Content-Type"))
	}
}

// One person's streams are bounded: the next one is told to wait.
func TestTaskStreamsAreBounded(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	for i := range maxStreamsPerPerson {
		if code, events := f.stream(t, f.ids["hostile"], alice); code != http.StatusOK {
			t.Fatalf("stream %d = %d", i, code)
		} else {
			next(t, events)
		}
	}
	if code, _ := f.stream(t, f.ids["hostile"], alice); code != http.StatusTooManyRequests {
		t.Fatalf("one stream too many = %d, want 429", code)
	}
	// Another person is not held up by alice's.
	carol := f.signIn(t, "carol")
	if code, _ := f.stream(t, f.ids["readonly"], carol); code != http.StatusOK {
		t.Fatalf("carol's stream = %d", code)
	}
}
