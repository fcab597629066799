package egress

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// Defaults of Proxy.IdleTimeout and Proxy.MaxDuration: long enough for a slow download or a quiet
// interactive session, short enough that a Sandbox cannot keep its share of the proxy by doing nothing.
const (
	DefaultIdleTimeout = 5 * time.Minute
	DefaultMaxDuration = time.Hour
)

// clock is one tunnel's or forwarded request's time: it ends when nothing moved through any of its
// connections for idle, or at end, whichever comes first.
type clock struct {
	idle time.Duration
	end  time.Time
	last atomic.Int64 // UnixNano of the last bytes moved, either way
}

func (p *Proxy) newClock() *clock {
	idle, total := p.IdleTimeout, p.MaxDuration
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	if total <= 0 {
		total = DefaultMaxDuration
	}
	now := time.Now()
	k := &clock{idle: idle, end: now.Add(total)}
	k.last.Store(now.UnixNano())
	return k
}

func (k *clock) moved() { k.last.Store(time.Now().UnixNano()) }

// deadline is when the clock runs out if nothing moves before.
func (k *clock) deadline() time.Time {
	idleEnd := time.Unix(0, k.last.Load()).Add(k.idle)
	if idleEnd.Before(k.end) {
		return idleEnd
	}
	return k.end
}

// errExpired is what a timed connection returns once its clock ran out.
var errExpired = errors.New("the egress proxy's idle or total timeout passed")

// timed is a connection read and written on a clock: each call may wait until the clock's deadline, and
// a call that times out while bytes moved elsewhere (the other direction of a tunnel) waits again. Until
// its clock is set it reads as the bare connection does (the request header has a deadline of its own). It
// implements net.Conn only, so that copies go through a buffer of the proxy's and every byte is seen.
type timed struct {
	net.Conn
	k *clock
}

func (t *timed) Read(b []byte) (int, error) {
	if t.k == nil {
		return t.Conn.Read(b) //nolint:wrapcheck // io.EOF must stay io.EOF for io.Copy
	}
	for {
		_ = t.SetReadDeadline(t.k.deadline())
		n, err := t.Conn.Read(b)
		if n > 0 {
			t.k.moved()
		}
		if n > 0 || !isTimeout(err) {
			return n, err //nolint:wrapcheck // io.EOF must stay io.EOF for io.Copy
		}
		if !time.Now().Before(t.k.deadline()) {
			return 0, errExpired
		}
	}
}

func (t *timed) Write(b []byte) (int, error) {
	var done int
	for {
		_ = t.SetWriteDeadline(t.k.deadline())
		n, err := t.Conn.Write(b[done:])
		done += n
		if n > 0 {
			t.k.moved()
		}
		if err == nil || !isTimeout(err) {
			return done, err //nolint:wrapcheck // a connection's own error, as net.Conn's callers expect
		}
		if !time.Now().Before(t.k.deadline()) {
			return done, errExpired
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}
