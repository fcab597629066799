package dataplane

import (
	"sync"
)

// tailOutput keeps the last max bytes written to it, and counts all of them, so that a reader can ask for
// what came after a byte offset and learn what was dropped. Writers never block; readers wait on Changed.
type tailOutput struct {
	mu      sync.Mutex
	max     int
	buf     []byte // the last bytes written, at most max
	total   int64  // every byte ever written
	changed chan struct{}
	closed  bool
}

func newTailOutput(maxBytes int) *tailOutput {
	return &tailOutput{max: maxBytes, changed: make(chan struct{})}
}

// Write keeps p's tail and wakes the readers.
func (t *tailOutput) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.wake()
	return len(p), nil
}

// Close says no more will come.
func (t *tailOutput) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		t.wake()
	}
}

func (t *tailOutput) wake() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Since returns the bytes kept from offset from on (from the oldest kept when from is older), the offset of
// the first of them, whether the output is over, and a channel closed at the next change.
func (t *tailOutput) Since(from int64) (data []byte, start int64, over bool, changed <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	oldest := t.total - int64(len(t.buf))
	start = max(from, oldest)
	start = min(start, t.total)
	return append([]byte(nil), t.buf[start-oldest:]...), start, t.closed, t.changed
}

// Total is how many bytes were written.
func (t *tailOutput) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
