package mcpserver

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// progressInterval is the shortest time between two progress notifications of one call: output can come
	// in thousands of small writes, and a host needs only to see that it moves and what it says lately.
	progressInterval = 100 * time.Millisecond
	// progressMessageBytes bounds the output a notification carries: the latest bytes since the last one.
	progressMessageBytes = 2048
)

// progress sends MCP progress notifications for a tool call that asked for them (a progress token), each
// with the bytes of output so far and the latest of that output as its message. It sends from a goroutine
// of its own, so that a slow host never holds the command's stream.
type progress struct {
	mu      sync.Mutex
	total   int64
	pending []byte
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

// startProgress starts sending for req, or returns nil when the host asked for no progress.
func startProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	if req == nil || req.Session == nil || req.Params.GetProgressToken() == nil {
		return nil
	}
	p := &progress{wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go p.send(ctx, req.Session, req.Params.GetProgressToken())
	return p
}

// Write notes output; it never blocks on the host.
func (p *progress) Write(b []byte) (int, error) {
	if p == nil {
		return len(b), nil
	}
	p.mu.Lock()
	p.total += int64(len(b))
	p.pending = append(p.pending, b...)
	if over := len(p.pending) - progressMessageBytes; over > 0 {
		p.pending = append(p.pending[:0:0], p.pending[over:]...)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return len(b), nil
}

// stop ends the notifications and waits until the last has gone out, so that none follows the tool's result.
func (p *progress) stop() {
	if p == nil {
		return
	}
	close(p.done)
	<-p.stopped
}

func (p *progress) send(ctx context.Context, session *mcp.ServerSession, token any) {
	defer close(p.stopped)
	for {
		select {
		case <-p.done:
			return
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		msg, total := validUTF8Suffix(p.pending), p.total
		p.pending = nil
		p.mu.Unlock()
		// A notification that cannot be sent (the host went away) ends nothing: the result still is.
		_ = session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(total), Message: msg})
		select {
		case <-p.done:
			return
		case <-ctx.Done():
			return
		case <-time.After(progressInterval):
		}
	}
}

// validUTF8Suffix drops the bytes of a character cut at the start of b (it was trimmed from the front).
func validUTF8Suffix(b []byte) string {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return string(b[i:])
		}
	}
	return string(b)
}
