package handoff

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Thawer thaws a frozen container and leaves a running one alone; the Docker driver is one.
type Thawer interface {
	UnpauseContainer(ctx context.Context, name string) error
}

// Idle is what the agent knows of each session's use, for idle pause (spec.idlePauseSeconds,
// docs/design/idle-pause.md) and lazy start (spec.start: Lazy, docs/design/lazy-start.md): when a command or
// call last ended, how many are going on, which containers it froze for idleness, and whether a command asked
// for the start of a lazy Sandbox. Everything that runs a command in a Sandbox of this node (the Execution
// reconciler, the data plane's exec, files, processes and port-forward) goes through Use; the Sandbox
// reconciler freezes an idle one through PauseIfIdle. Both hold the Sandbox's own lock, so a freeze never
// lands under a command that is starting, and a command never starts in a container being frozen.
//
// What it knows lives in memory: a restarted agent knows of no idle pause, thaws what it finds frozen against
// spec.lifecycle: Running (the Sandbox reconciler does), and counts idleness again from its first pass. A
// nil *Idle pauses nothing and resumes nothing.
type Idle struct {
	Thaw Thawer
	// Wake is told of a Sandbox a call thawed, or whose lazy start a command asked for, so that the Sandbox
	// reconciler makes a pass over it (which says Running again, or builds the topology); it must not block.
	Wake func(sandbox types.NamespacedName)
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu       sync.Mutex
	sessions map[types.UID]*session
}

// session is one Sandbox's use. mu is held while it is frozen or thawed, and while its counts change.
type session struct {
	mu     sync.Mutex
	last   time.Time // when the last command or call ended, or when the agent first saw the Sandbox
	busy   int       // commands and calls going on
	frozen []string  // the containers frozen for idleness, in the order they were frozen; nil when none
	start  bool      // a command asked for the start of a lazy Sandbox
}

func (i *Idle) now() time.Time {
	if i.Now != nil {
		return i.Now()
	}
	return time.Now()
}

func (i *Idle) session(uid types.UID) *session {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.sessions == nil {
		i.sessions = map[types.UID]*session{}
	}
	s, ok := i.sessions[uid]
	if !ok {
		s = &session{last: i.now()}
		i.sessions[uid] = s
	}
	return s
}

// Use marks a command or call in the Sandbox as going on, and first thaws the Sandbox when it is frozen for
// idleness; resumed says it was. done ends the use (call it once, when the command or call has ended). On an
// error nothing is marked and the Sandbox may still be frozen.
func (i *Idle) Use(ctx context.Context, sandbox types.NamespacedName, uid types.UID) (done func(), resumed bool, err error) {
	if i == nil {
		return func() {}, false, nil
	}
	s := i.session(uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen != nil {
		// Thawed in the reverse order of the freeze: services first, the primary last, so the untrusted code
		// never runs while a service it talks to is frozen.
		for _, name := range slices.Backward(s.frozen) {
			// One gone since (a roll replaced it, a restart removed it) has nothing left to thaw.
			if err := i.Thaw.UnpauseContainer(ctx, name); err != nil && !dd.IsNotFound(err) {
				return nil, false, fmt.Errorf("resuming Sandbox %s from its idle pause: %w", sandbox.Name, err)
			}
		}
		s.frozen, resumed = nil, true
		if i.Wake != nil {
			i.Wake(sandbox)
		}
	}
	s.busy++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.busy--
			s.last = i.now()
		})
	}, resumed, nil
}

// PauseIfIdle freezes the Sandbox through freeze when nothing used it for after and nothing is going on in
// it; freeze returns the containers it froze, in order (on an error it has thawed what it froze). It says
// whether the Sandbox is frozen for idleness now (by this call or an earlier one) and, when it is not, how
// long until it may be.
func (i *Idle) PauseIfIdle(uid types.UID, after time.Duration, freeze func() ([]string, error)) (paused bool, wait time.Duration, err error) {
	if i == nil {
		return false, 0, nil
	}
	s := i.session(uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.frozen != nil:
		return true, 0, nil
	case s.busy > 0:
		return false, after, nil // the use's end counts again from then; its pass comes later anyway
	}
	if wait = s.last.Add(after).Sub(i.now()); wait > 0 {
		return false, wait, nil
	}
	frozen, err := freeze()
	if err != nil {
		return false, 0, err
	}
	s.frozen = frozen
	if s.frozen == nil {
		s.frozen = []string{}
	}
	return true, 0, nil
}

// Paused tells whether the agent froze the Sandbox for idleness and no call has thawed it since.
func (i *Idle) Paused(uid types.UID) bool {
	return i.known(uid, func(s *session) bool { return s.frozen != nil })
}

// known reads what is known of a Sandbox's session through read, under its lock; false when nothing is.
func (i *Idle) known(uid types.UID, read func(*session) bool) bool {
	if i == nil {
		return false
	}
	i.mu.Lock()
	s, ok := i.sessions[uid]
	i.mu.Unlock()
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return read(s)
}

// Start asks for the start of a lazy Sandbox (spec.start: Lazy) that has not started: a command or call came
// for it. The caller then waits for the Sandbox to be Running, as for any start, and goes through Use.
func (i *Idle) Start(sandbox types.NamespacedName, uid types.UID) {
	if i == nil {
		return
	}
	s := i.session(uid)
	s.mu.Lock()
	asked := s.start
	s.start = true
	s.mu.Unlock()
	if !asked && i.Wake != nil {
		i.Wake(sandbox)
	}
}

// StartAsked tells whether a command or call asked for the start of the lazy Sandbox. A nil *Idle never says
// so: its lazy Sandboxes wait.
func (i *Idle) StartAsked(uid types.UID) bool {
	return i.known(uid, func(s *session) bool { return s.start })
}

// Forget drops what is known of a Sandbox that is gone, or no longer pauses when idle.
func (i *Idle) Forget(uid types.UID) {
	if i == nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.sessions, uid)
}
