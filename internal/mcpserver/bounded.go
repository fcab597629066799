package mcpserver

import (
	"fmt"
	"sync"
)

// bounded keeps the first and the last bytes of a stream, max in all, and counts what falls between: a
// command's output can be far larger than what a model should read, and its start and its end (the error at
// the bottom) are what say most.
type bounded struct {
	mu    sync.Mutex
	max   int
	head  []byte
	tail  []byte // the last bytes after the head; trimmed to tailMax once it grows past twice that
	total int64
}

func newBounded(maxBytes int) *bounded { return &bounded{max: maxBytes} }

func (b *bounded) tailMax() int { return b.max - b.max/2 }

func (b *bounded) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.max/2 - len(b.head); room > 0 {
		take := min(room, len(p))
		b.head = append(b.head, p[:take]...)
		p = p[take:]
	}
	b.tail = append(b.tail, p...)
	if keep := b.tailMax(); len(b.tail) > 2*keep {
		b.tail = append(b.tail[:0:0], b.tail[len(b.tail)-keep:]...)
	}
	return n, nil
}

// String is the head, a marker saying how many bytes were left out (when any were), and the tail.
func (b *bounded) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.tail
	if keep := b.tailMax(); len(tail) > keep {
		tail = tail[len(tail)-keep:]
	}
	dropped := b.total - int64(len(b.head)) - int64(len(tail))
	if dropped == 0 {
		return string(b.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes left out: the output was %d bytes, more than the %d this server returns ...]\n%s",
		b.head, dropped, b.total, b.max, tail)
}
