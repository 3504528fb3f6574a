package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/pullwright/pullwright/task"
)

// The live stream of a task (GET /api/tasks/{id}/events) is Server-Sent
// Events: an event "task" with the task's view (as GET /api/tasks/{id}
// answers) when the stream opens and whenever the task changes, a comment
// line now and then to keep proxies from closing an idle stream, and an
// event "end" when the task has ended or the stream's time is up (the
// browser's EventSource then opens a new one, checked anew).
//
// The stream reads the store, not the worker: whichever replica works on
// the task, every replica's streams see its saves. Permission is checked
// when the stream opens and again each time the permission cache's answer
// expires, so a person whose access is taken away stops seeing the task
// within a minute, as on the pages.

const (
	// streamPoll is how often a stream reads its task.
	streamPoll = time.Second
	// streamKeepAlive is how often an idle stream sends a comment.
	streamKeepAlive = 15 * time.Second
	// maxStream bounds one stream; EventSource reconnects after it.
	maxStream = 30 * time.Minute
	// streamWrite bounds one write to a slow reader.
	streamWrite = 10 * time.Second
	// Each open stream reads its task every streamPoll: a person may have
	// a few tabs open, and the replica serves a bounded number in all.
	maxStreamsPerPerson = 8
	maxStreams          = 256
)

// streamCount counts the open streams of a replica, or other long
// requests: at most limit in all and perPerson of one person (0:
// maxStreams and maxStreamsPerPerson).
type streamCount struct {
	limit, perPerson int

	mu     sync.Mutex
	total  int
	byUser map[int64]int
}

// open takes a place for a stream of user id, if there is one.
func (s *streamCount) open(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byUser == nil {
		s.byUser = map[int64]int{}
	}
	if s.total >= cmp.Or(s.limit, maxStreams) || s.byUser[id] >= cmp.Or(s.perPerson, maxStreamsPerPerson) {
		return false
	}
	s.total++
	s.byUser[id]++
	return true
}

func (s *streamCount) close(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.byUser[id]--; s.byUser[id] <= 0 {
		delete(s.byUser, id)
	}
}

func (c *Console) apiEvents(w http.ResponseWriter, r *http.Request, who *caller) {
	ctx := r.Context()
	t, err := c.one(ctx, who, r.PathValue("id"))
	if err != nil {
		c.apiFailed(w, r, err)
		return
	}
	if !c.streams.open(who.ID) {
		w.Header().Set("Retry-After", "30")
		apiError(w, http.StatusTooManyRequests, "too many live streams open; close some pages")
		return
	}
	defer c.streams.close(who.ID)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	// Buffering proxies (nginx) would hold the events back.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	write := func(event string, b []byte) error {
		// A server that bounds every write (the bot's WriteTimeout) would
		// cut a long stream: each write gets its own deadline instead.
		_ = rc.SetWriteDeadline(time.Now().Add(streamWrite))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return write(event, b)
	}
	// What was sent last: a task changes for the stream when its view
	// does, which an answer or a cancel does without a save.
	// Read before the first event: the permission was asked just before,
	// and a clock read after the event could be read after the answer's
	// expiry, putting the next check off by a whole TTL.
	lastCheck := c.now()
	last, err := json.Marshal(c.view(t, true))
	if err != nil || write("task", last) != nil {
		return
	}
	poll := time.NewTicker(c.streamPoll)
	defer poll.Stop()
	end := time.NewTimer(maxStream)
	defer end.Stop()
	lastSent := time.Now()
	for !t.State.Terminal() {
		select {
		case <-ctx.Done():
			return
		case <-end.C:
			_ = send("end", map[string]string{"reason": "time"})
			return
		case <-poll.C:
		}
		if c.now().Sub(lastCheck) >= c.cfg.PermissionTTL {
			// The cached answer has expired: ask again.
			if ok, err := c.canRead(ctx, who, t.Repo); err != nil || !ok {
				_ = send("end", map[string]string{"reason": "permission"})
				return
			}
			lastCheck = c.now()
		}
		got, err := c.read(ctx, t.ID)
		if err != nil {
			c.log.WarnContext(ctx, "console: stream: read task", "task_id", t.ID, "err", err)
			continue
		}
		t = got
		b, err := json.Marshal(c.view(t, true))
		if err != nil {
			return
		}
		if bytes.Equal(b, last) {
			if time.Since(lastSent) >= streamKeepAlive {
				_ = rc.SetWriteDeadline(time.Now().Add(streamWrite))
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
					return
				}
				lastSent = time.Now()
			}
			continue
		}
		last = b
		if write("task", b) != nil {
			return
		}
		lastSent = time.Now()
	}
	_ = send("end", map[string]string{"reason": string(t.State)})
}

// read reads a task under a short deadline of its own.
func (c *Console) read(ctx context.Context, id int64) (*task.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, c.budget)
	defer cancel()
	return c.cfg.Store.Get(ctx, id)
}
