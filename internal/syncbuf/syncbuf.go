// Package syncbuf is a buffer that many goroutines write and a test reads
// at once: where tests collect a bot's logs and a run's output.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers. Its
// zero value is ready to use.
type Buffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	watch func(all string)
}

// Write appends p, then hands the watcher (Watch), if any, everything
// written so far, outside the lock.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(p)
	watch := s.watch
	var all string
	if watch != nil {
		all = s.b.String()
	}
	s.mu.Unlock()
	if watch != nil {
		watch(all)
	}
	return n, err
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Watch calls f with everything written so far after each later write:
// how a test answers a prompt once it appears.
func (s *Buffer) Watch(f func(all string)) {
	s.mu.Lock()
	s.watch = f
	s.mu.Unlock()
}
