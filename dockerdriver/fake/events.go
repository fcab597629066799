package fake

import (
	"context"
	"sync"
	"time"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// stream is one Events subscriber. Events queue without bound so that emitting never blocks the fake
// (a real daemon buffers too); a pump goroutine hands them to the subscriber's channel.
type stream struct {
	mu      sync.Mutex
	queue   []dd.Event
	wake    chan struct{}
	dropped bool
}

// Events streams this node's container events until ctx ends, like the real driver.
func (f *Driver) Events(ctx context.Context) <-chan dd.Event {
	s := &stream{wake: make(chan struct{}, 1)}
	f.mu.Lock()
	f.streams = append(f.streams, s)
	f.mu.Unlock()
	out := make(chan dd.Event)
	go func() {
		defer close(out)
		defer f.unsubscribe(s)
		for {
			ev, ok := s.next(ctx)
			if !ok {
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// DropEvents breaks every event stream: events are lost until ResumeEvents.
func (f *Driver) DropEvents() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.streams {
		s.mu.Lock()
		s.dropped = true
		s.mu.Unlock()
	}
}

// ResumeEvents reconnects the broken streams, each of which then delivers an EventResync, as the real
// driver does after resubscribing.
func (f *Driver) ResumeEvents() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.streams {
		s.mu.Lock()
		wasDropped := s.dropped
		s.dropped = false
		s.mu.Unlock()
		if wasDropped {
			s.push(dd.Event{Type: dd.EventResync, Time: time.Now()})
		}
	}
}

// emit sends an event about c to every live stream. Called with f.mu held.
func (f *Driver) emit(c *container, typ dd.EventType) {
	if !f.owns(c.info.Labels) {
		return
	}
	owner, role, service := dd.OwnerFromLabels(c.info.Labels)
	ev := dd.Event{
		Type: typ, Container: c.info.Name, ID: c.info.ID, Owner: owner, Role: role, Service: service,
		Time: time.Now(),
	}
	if typ == dd.EventDie {
		ev.ExitCode = c.info.ExitCode
	}
	for _, s := range f.streams {
		s.push(ev)
	}
}

func (f *Driver) unsubscribe(s *stream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.streams {
		if x == s {
			f.streams = append(f.streams[:i], f.streams[i+1:]...)
			return
		}
	}
}

func (s *stream) push(ev dd.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped {
		return
	}
	s.queue = append(s.queue, ev)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next waits for the next queued event; false when ctx ends.
func (s *stream) next(ctx context.Context) (dd.Event, bool) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return ev, true
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return dd.Event{}, false
		}
	}
}
