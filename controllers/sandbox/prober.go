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

// prober runs readiness checks in the background, off the reconcile workers, so that a service whose check
// hangs up to its timeoutSeconds holds no worker and delays no other Sandbox's pass (docs/architecture.md
// "Poisoning and settling"). A container has at most one check outstanding, and at most slots' capacity run at
// once on the node; the rest wait for a slot. A completed check is kept until a pass takes it, once, and its
// Sandbox is woken for that pass. It also remembers, per container, the failed checks in a row and when the
// next check is due. That is the agent's only memory between passes, and losing it on a restart costs at most
// a few extra checks.
type prober struct {
	mu     sync.Mutex
	checks map[types.NamespacedName]map[string]*check // by Sandbox, by container name (which names its generation)
	slots  chan struct{}                              // one token per running check; made at first use
}

// check is what the prober knows of one container's checks.
type check struct {
	failures int                // failed checks in a row
	next     time.Time          // when the next check is due
	last     string             // how the last taken check failed; "" when it passed or none was taken
	cancel   context.CancelFunc // set while a check is outstanding
	result   *probeResult       // a completed check no pass has taken yet
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
	if c == nil || c.result == nil {
		return probeResult{}, 0, false
	}
	res := *c.result
	c.result, c.next = nil, time.Now().Add(period)
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
	switch wait := time.Until(c.next); {
	case c.cancel != nil || c.result != nil:
		return 0, c.last
	case wait > 0:
		return wait, c.last
	}
	if p.slots == nil {
		p.slots = make(chan struct{}, positiveOr(limit, defaultProbeConcurrency))
	}
	ctx, c.cancel = context.WithCancel(ctx)
	go p.run(ctx, owner, container, c, run, woken)
	return 0, c.last
}

// run waits for a slot, runs the check in it, and stores the result where a pass takes it.
func (p *prober) run(ctx context.Context, owner types.NamespacedName, container string, c *check,
	run func(context.Context) probeResult, woken func()) {
	res := probeResult{err: errProbeCancelled}
	select {
	case p.slots <- struct{}{}:
		res = run(ctx)
		<-p.slots
	case <-ctx.Done():
	}
	if p.complete(owner, container, c, res) {
		woken()
	}
}

// complete stores a check's result; false when its container was forgotten meanwhile, and it is dropped.
func (p *prober) complete(owner types.NamespacedName, container string, c *check, res probeResult) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.cancel()
	c.cancel = nil
	if p.checks[owner][container] != c {
		return false
	}
	c.result = &res
	return true
}

// forget cancels a Sandbox's outstanding checks and drops what is known of them (its topology rolled, or it
// went).
func (p *prober) forget(owner types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.checks[owner] {
		if c.cancel != nil {
			c.cancel()
		}
	}
	delete(p.checks, owner)
}

func positiveOr(n, fallback int) int {
	if n <= 0 {
		return fallback
	}
	return n
}
