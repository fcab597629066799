package egress

import (
	"context"
	"net"
	"net/netip"
	"sync"
)

// session is the proxy's state from its first Open or Serve until Stop: its listeners, every connection it
// holds (clients' and upstream), its limits, and a context that Stop cancels so that no lookup, resolution or
// dial outlives it. A later Open starts a new session.
type session struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // goroutines of Open's listeners and of every accepted connection

	mu        sync.Mutex
	stopped   bool
	listeners map[net.Listener]struct{}
	gateways  map[netip.Addr]net.Listener // Open's listeners, by gateway
	conns     map[net.Conn]struct{}
	limits    limits
	sources   sourceCache
}

func newSession(maxConns, maxPerSource int) *session {
	ctx, cancel := context.WithCancel(context.Background())
	return &session{
		ctx: ctx, cancel: cancel,
		listeners: map[net.Listener]struct{}{},
		gateways:  map[netip.Addr]net.Listener{},
		conns:     map[net.Conn]struct{}{},
		limits:    newLimits(maxConns, maxPerSource),
	}
}

// addListener registers l so that Stop closes it; false (and l closed) when the session is over.
func (s *session) addListener(l net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		_ = l.Close()
		return false
	}
	s.listeners[l] = struct{}{}
	return true
}

// removeListener forgets l once it no longer serves, and its gateway with it, so that a later Open listens
// again.
func (s *session) removeListener(l net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.listeners, l)
	for g, gl := range s.gateways {
		if gl == l {
			delete(s.gateways, g)
		}
	}
}

// track registers a connection so that Stop closes it; false (and c closed) when the session is over.
func (s *session) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		_ = c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

// untrack closes c and forgets it.
func (s *session) untrack(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// answerOverLimit reports whether a connection over a limit (over != "") may be answered rather than closed
// at once, and counts it when so; true when over is "". s.mu must be held.
func (s *session) answerOverLimit(over string) bool {
	if over == "" {
		return true
	}
	if s.limits.overLimit >= maxOverLimit {
		countRefused(&Refusal{Reason: ReasonBusy})
		return false
	}
	s.limits.overLimit++
	return true
}

// overLimitAnswered ends what answerOverLimit counted.
func (s *session) overLimitAnswered() {
	s.mu.Lock()
	s.limits.overLimit--
	s.mu.Unlock()
}

// isStopped reports whether Stop has begun.
func (s *session) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// stop closes every listener and connection, cancels every lookup and dial under way, and waits for the
// session's goroutines to end.
func (s *session) stop() {
	s.mu.Lock()
	s.stopped = true
	listeners, conns := s.listeners, s.conns
	s.listeners, s.conns, s.gateways = map[net.Listener]struct{}{}, map[net.Conn]struct{}{}, map[netip.Addr]net.Listener{}
	s.mu.Unlock()
	s.cancel()
	for l := range listeners {
		_ = l.Close()
	}
	for c := range conns {
		_ = c.Close()
	}
	s.wg.Wait()
}
