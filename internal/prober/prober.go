// Package prober runs readiness checks in the background (Prober), on internal/jobs, and remembers per
// container the failed checks in a row and when the next one is due.
package prober

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dockside-dev/dockside/internal/jobs"
)

// DefaultConcurrency is how many readiness checks run at once when Request is given no limit.
const DefaultConcurrency = 8

// ErrCancelled is the result of a check that never ran or was cut short: its Sandbox was forgotten
// (deleted, rolled) or the agent stops.
var ErrCancelled = errors.New("the readiness check was cancelled")

// Prober runs readiness checks in the background (jobs), off the reconcile workers, so that a service whose
// check hangs up to its timeoutSeconds holds no worker and delays no other Sandbox's pass (docs/design/status.md
// "Poisoning and settling"). A container has at most one check outstanding or waiting to be taken. It also
// remembers, per container, the failed checks in a row and when the next check is due. That is the agent's
// only memory between passes, and losing it on a restart costs at most a few extra checks.
type Prober struct {
	// Clock tells the time checks fall due by; nil is time.Now. Tests move it on instead of waiting a period.
	Clock func() time.Time

	mu     sync.Mutex
	checks map[types.NamespacedName]map[string]*check // by Sandbox, by container name (which names its generation)
	jobs   jobs.Jobs[probeKey, Result]                // the checks outstanding, and the results no pass has taken
}

// probeKey names one container's checks.
type probeKey struct {
	owner     types.NamespacedName
	container string
}

// check is what the prober remembers of one container's checks.
type check struct {
	failures int       // failed checks in a row
	next     time.Time // when the next check is due
	last     string    // how the last taken check failed; "" when it passed or none was taken
}

// Result is a check's outcome: how it failed ("timed out after 1s"), "" when it passed, or err when no
// check happened (the container stopped or froze, Docker failed, the check was cancelled).
type Result struct {
	Failure string
	Err     error
}

// Take returns the container's completed check, if there is one, and forgets it: each result is had once. It
// counts a check that happened (no err) into the failures in a row, which it returns, and makes the next check
// due a period from now.
func (p *Prober) Take(owner types.NamespacedName, container string, period time.Duration) (Result, int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.checks[owner][container]
	if c == nil {
		return Result{}, 0, false
	}
	res, ok := p.jobs.Take(probeKey{owner, container})
	if !ok {
		return Result{}, 0, false
	}
	c.next = p.now().Add(period)
	switch {
	case res.Err != nil:
	case res.Failure == "":
		c.failures, c.last = 0, ""
	default:
		c.failures, c.last = c.failures+1, res.Failure
	}
	return res, c.failures, true
}

// Request starts a check of the container in the background, with run, when one is due and none is
// outstanding or waiting to be taken; woken is called when it completes, unless the Sandbox was forgotten
// meanwhile. It returns how long until the next check is due when none was started for that reason (0
// otherwise: a check runs, whose completion wakes the Sandbox), and how the last taken check failed.
// limit is the most checks run at once (0: DefaultConcurrency); ctx, the agent's, cancels every check.
func (p *Prober) Request(ctx context.Context, owner types.NamespacedName, container string, limit int,
	run func(context.Context) Result, woken func()) (time.Duration, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.checks == nil {
		p.checks = map[types.NamespacedName]map[string]*check{}
	}
	if p.checks[owner] == nil {
		p.checks[owner] = map[string]*check{}
	}
	c := p.checks[owner][container]
	if c == nil {
		c = &check{}
		p.checks[owner][container] = c
	}
	key := probeKey{owner, container}
	switch wait := c.next.Sub(p.now()); {
	case p.jobs.Pending(key):
		return 0, c.last
	case wait > 0:
		return wait, c.last
	}
	p.jobs.Start(ctx, key, positiveOr(limit, DefaultConcurrency), run, Result{Err: ErrCancelled}, woken)
	return 0, c.last
}

// Forget cancels a Sandbox's outstanding checks and drops what is known of them (its topology rolled, or it
// went).
func (p *Prober) Forget(owner types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for container := range p.checks[owner] {
		p.jobs.Forget(probeKey{owner, container})
	}
	delete(p.checks, owner)
}

func positiveOr(n, fallback int) int {
	if n <= 0 {
		return fallback
	}
	return n
}

// Outstanding counts the checks running or waiting for a slot.
func (p *Prober) Outstanding() int { return p.jobs.Outstanding() }

func (p *Prober) now() time.Time {
	if p.Clock == nil {
		return time.Now()
	}
	return p.Clock()
}
