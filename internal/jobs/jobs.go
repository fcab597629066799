// Package jobs is generic machinery: slow work run off the reconcile workers (Jobs), which the Sandbox
// reconciler's restores and internal/prober's readiness checks run on.
package jobs

import (
	"context"
	"sync"
)

// Jobs runs slow Docker work in the background, off the reconcile workers (readiness checks, restores), so
// that one Sandbox's slow calls hold no worker and delay no other Sandbox's pass (docs/design/status.md
// "Poisoning and settling"). A key has at most one job running or waiting to be taken, and at most a limit of
// jobs run at once; the rest wait for a slot. A completed job's result is kept until a pass takes it, once,
// and its Sandbox is woken for that pass. What jobs hold is in memory only: a restarted agent runs the work
// again when a pass asks for it.
type Jobs[K comparable, R any] struct {
	mu    sync.Mutex
	byKey map[K]*job[R]
	slots chan struct{} // one token per running job; made at first use
}

// job is one piece of work: outstanding (cancel set) or completed and not taken yet (result set).
type job[R any] struct {
	cancel context.CancelFunc
	result *R
}

// Pending tells whether key has a job outstanding or a result no pass has taken.
func (j *Jobs[K, R]) Pending(key K) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.byKey[key] != nil
}

// Start runs work for key in the background unless key has a job pending; it says whether it started one.
// ctx (the agent's) cancels every job, and work is handed it; limit is the most jobs run at once (taken at
// the first start). cancelled is the result of a job that ended before it had a slot. woken is called when
// the job completes, unless key was forgotten meanwhile.
func (j *Jobs[K, R]) Start(ctx context.Context, key K, limit int, work func(context.Context) R, cancelled R, woken func()) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.byKey[key] != nil {
		return false
	}
	if j.byKey == nil {
		j.byKey = map[K]*job[R]{}
	}
	if j.slots == nil {
		j.slots = make(chan struct{}, limit)
	}
	jb := &job[R]{}
	ctx, jb.cancel = context.WithCancel(ctx)
	j.byKey[key] = jb
	go j.run(ctx, key, jb, work, cancelled, woken)
	return true
}

// run waits for a slot, does the work in it, and stores the result where a pass takes it.
func (j *Jobs[K, R]) run(ctx context.Context, key K, jb *job[R], work func(context.Context) R, cancelled R, woken func()) {
	res := cancelled
	select {
	case j.slots <- struct{}{}:
		res = work(ctx)
		<-j.slots
	case <-ctx.Done():
	}
	if j.complete(key, jb, res) {
		woken()
	}
}

// complete stores a job's result; false when its key was forgotten meanwhile, and it is dropped.
func (j *Jobs[K, R]) complete(key K, jb *job[R], res R) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	jb.cancel()
	jb.cancel = nil
	if j.byKey[key] != jb {
		return false
	}
	jb.result = &res
	return true
}

// Take returns key's result when its job has completed, and forgets the job: each result is had once.
func (j *Jobs[K, R]) Take(key K) (R, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	jb := j.byKey[key]
	if jb == nil || jb.result == nil {
		var zero R
		return zero, false
	}
	delete(j.byKey, key)
	return *jb.result, true
}

// Forget cancels key's outstanding job and drops it, or its result, without a wake.
func (j *Jobs[K, R]) Forget(key K) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if jb := j.byKey[key]; jb != nil && jb.cancel != nil {
		jb.cancel()
	}
	delete(j.byKey, key)
}

// Outstanding counts the jobs running or waiting for a slot: those that have stored no result yet.
func (j *Jobs[K, R]) Outstanding() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, jb := range j.byKey {
		if jb.cancel != nil {
			n++
		}
	}
	return n
}
