package processes

import (
	"slices"
	"sync"
)

// Output keeps the last bytes written to it in a ring, and counts all of them, so that a reader can ask for
// what came after a byte offset and learn what was dropped. A write copies its own bytes only, never what is
// kept. The ring grows as output comes, up to max and as far as the table's budget lends it room; once it
// wraps, its size stays. Writers never block: a background process's output is not held back for readers
// who may never come, and what the ring could not keep is counted (Dropped). Readers wait on the channel
// Since returns.
type Output struct {
	mu       sync.Mutex
	max      int
	budget   *budget // nil: no bound but max
	ring     []byte  // byte offset i is at ring[i % len(ring)]; it grows until it wraps
	wrapped  bool
	released bool  // the table forgot the process: nothing is kept any more
	total    int64 // every byte ever written
	changed  chan struct{}
	closed   bool
}

// NewOutput keeps the last maxBytes at most.
func NewOutput(maxBytes int) *Output {
	return &Output{max: maxBytes, changed: make(chan struct{})}
}

// Write keeps p's tail and wakes the readers.
func (o *Output) Write(p []byte) (int, error) {
	n := len(p)
	o.mu.Lock()
	defer o.mu.Unlock()
	start := o.total
	o.total += int64(n)
	if !o.wrapped && !o.released && o.total > int64(len(o.ring)) {
		o.grow()
	}
	if size := len(o.ring); size > 0 {
		if skip := len(p) - size; skip > 0 { // only the last size bytes can be kept
			start += int64(skip)
			p = p[skip:]
		}
		at := int(start % int64(size))
		if copied := copy(o.ring[at:], p); copied < len(p) {
			copy(o.ring, p[copied:])
		}
	}
	o.wake()
	return n, nil
}

// grow makes room for what has been written, up to max and what the budget lends; the ring wraps, and stays
// as large as it is, when that is not all of it.
func (o *Output) grow() {
	want := int(min(o.total, int64(o.max))) - len(o.ring)
	got := o.budget.take(want)
	if got > 0 {
		o.ring = slices.Grow(o.ring, got)[:len(o.ring)+got]
	}
	o.wrapped = o.total > int64(len(o.ring))
}

// release gives the ring's room back to the budget: the table forgot the process.
func (o *Output) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.budget.give(len(o.ring))
	o.ring, o.released = nil, true
}

// Close says no more will come.
func (o *Output) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		o.wake()
	}
}

func (o *Output) wake() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// Since returns the bytes kept from offset from on (from the oldest kept when from is older), the offset of
// the first of them, whether the output is over, and a channel closed at the next change.
func (o *Output) Since(from int64) (data []byte, start int64, over bool, changed <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	start = min(max(from, o.total-int64(len(o.ring))), o.total)
	data = make([]byte, o.total-start)
	if len(data) > 0 { // then the ring is not empty
		at := int(start % int64(len(o.ring)))
		if copied := copy(data, o.ring[at:]); copied < len(data) {
			copy(data[copied:], o.ring)
		}
	}
	return data, start, o.closed, o.changed
}

// Total is how many bytes were written.
func (o *Output) Total() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total
}

// Dropped is how many of them are no longer kept: the oldest.
func (o *Output) Dropped() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total - int64(len(o.ring))
}

// budget is the room all the outputs of a table may keep together.
type budget struct {
	mu   sync.Mutex
	left int
}

// take lends up to n bytes, as many as are left; a nil budget lends all.
func (b *budget) take(n int) int {
	if b == nil {
		return n
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	got := min(n, b.left)
	b.left -= got
	return got
}

func (b *budget) give(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left += n
}
