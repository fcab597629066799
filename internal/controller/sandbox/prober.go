package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// defaultProbeConcurrency is how many readiness checks run at once when SandboxOptions.ProbeConcurrency is 0.
const defaultProbeConcurrency = 8

// errProbeCancelled is the result of a check that never ran or was cut short: its Sandbox was forgotten
// (deleted, rolled) or the agent stops.
var errProbeCancelled = errors.New("the readiness check was cancelled")

// prober runs readiness checks in the background (jobs), off the reconcile workers, so that a service whose
// check hangs up to its timeoutSeconds holds no worker and delays no other Sandbox's pass (docs/design/status.md
// "Poisoning and settling"). A container has at most one check outstanding or waiting to be taken. It also
// remembers, per container, the failed checks in a row and when the next check is due. That is the agent's
// only memory between passes, and losing it on a restart costs at most a few extra checks.
type prober struct {
	mu     sync.Mutex
	checks map[types.NamespacedName]map[string]*check // by Sandbox, by container name (which names its generation)
	jobs   jobs[probeKey, probeResult]                // the checks outstanding, and the results no pass has taken
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

// probeResult is a check's outcome: how it failed ("timed out after 1s"), "" when it passed, or err when no
// check happened (the container stopped or froze, Docker failed, the check was cancelled).
type probeResult struct {
	failure string
	err     error
}

// take returns the container's completed check, if there is one, and forgets it: each result is had once. It
// counts a check that happened (no err) into the failures in a row, which it returns, and makes the next check
// due a period from now.
func (p *prober) take(owner types.NamespacedName, container string, period time.Duration) (probeResult, int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.checks[owner][container]
	if c == nil {
		return probeResult{}, 0, false
	}
	res, ok := p.jobs.take(probeKey{owner, container})
	if !ok {
		return probeResult{}, 0, false
	}
	c.next = time.Now().Add(period)
	switch {
	case res.err != nil:
	case res.failure == "":
		c.failures, c.last = 0, ""
	default:
		c.failures, c.last = c.failures+1, res.failure
	}
	return res, c.failures, true
}

// request starts a check of the container in the background, with run, when one is due and none is
// outstanding or waiting to be taken; woken is called when it completes, unless the Sandbox was forgotten
// meanwhile. It returns how long until the next check is due when none was started for that reason (0
// otherwise: a check runs, whose completion wakes the Sandbox), and how the last taken check failed.
// limit is the most checks run at once (0: defaultProbeConcurrency); ctx, the agent's, cancels every check.
func (p *prober) request(ctx context.Context, owner types.NamespacedName, container string, limit int,
	run func(context.Context) probeResult, woken func()) (time.Duration, string) {
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
	switch wait := time.Until(c.next); {
	case p.jobs.pending(key):
		return 0, c.last
	case wait > 0:
		return wait, c.last
	}
	p.jobs.start(ctx, key, positiveOr(limit, defaultProbeConcurrency), run, probeResult{err: errProbeCancelled}, woken)
	return 0, c.last
}

// forget cancels a Sandbox's outstanding checks and drops what is known of them (its topology rolled, or it
// went).
func (p *prober) forget(owner types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for container := range p.checks[owner] {
		p.jobs.forget(probeKey{owner, container})
	}
	delete(p.checks, owner)
}

func positiveOr(n, fallback int) int {
	if n <= 0 {
		return fallback
	}
	return n
}
