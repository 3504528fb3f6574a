package syncbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once (run with -race), and a watcher that sees
// the whole text after each write.
func TestBuffer(t *testing.T) {
	var b Buffer
	var seen sync.Map
	b.Watch(func(all string) { seen.Store(len(all), true) })
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			fmt.Fprintf(&b, "line %d\n", i)
			_ = b.String()
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "\n"); got != 8 {
		t.Fatalf("%d lines written, want 8", got)
	}
	if _, ok := seen.Load(len(b.String())); !ok {
		t.Error("the watcher never saw the whole text")
	}
}
