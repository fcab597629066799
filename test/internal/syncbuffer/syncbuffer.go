// Package syncbuffer is the output of a streamed exec that a spec reads while the stream still writes to it.
package syncbuffer

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer whose Write and String may be called from different goroutines.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p) //nolint:wrapcheck // an io.Writer over bytes.Buffer, whose Write never fails
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
