package prober

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// TestProberBoundsChecks: no more than the limit of checks run at once, one per container at most; the rest
// wait for a slot, and each completion wakes its Sandbox.
func TestProberBoundsChecks(t *testing.T) {
	g := NewWithT(t)
	var p Prober
	var running, most atomic.Int32
	release := make(chan struct{})
	run := func(context.Context) Result {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		running.Add(-1)
		return Result{Failure: "exited with code 1"}
	}
	var wakes sync.WaitGroup
	owners := []types.NamespacedName{{Namespace: "a", Name: "1"}, {Namespace: "a", Name: "2"}, {Namespace: "b", Name: "1"}, {Namespace: "b", Name: "2"}, {Namespace: "c", Name: "1"}}
	for _, o := range owners {
		wakes.Add(1)
		for range 2 { // a second request for the same container while its check is outstanding starts none
			p.Request(t.Context(), o, "svc", 2, run, wakes.Done)
		}
	}
	g.Eventually(running.Load).Should(Equal(int32(2)))
	g.Consistently(running.Load, 200*time.Millisecond).Should(Equal(int32(2)))
	close(release)
	wakes.Wait()
	g.Expect(most.Load()).To(Equal(int32(2)))
	for _, o := range owners {
		res, failures, ok := p.Take(o, "svc", time.Minute)
		g.Expect(ok).To(BeTrue())
		g.Expect(res.Failure).To(Equal("exited with code 1"))
		g.Expect(failures).To(Equal(1))
		_, _, ok = p.Take(o, "svc", time.Minute)
		g.Expect(ok).To(BeFalse(), "a result is taken once")
	}
}

// TestProberForgetDropsOutstandingChecks: forgetting a Sandbox (deleted, rolled) cancels its running check,
// whose result is dropped without a wake, so that no later pass reads it.
func TestProberForgetDropsOutstandingChecks(t *testing.T) {
	g := NewWithT(t)
	var p Prober
	owner := types.NamespacedName{Namespace: "a", Name: "1"}
	started, ended := make(chan struct{}), make(chan struct{})
	var woken atomic.Bool
	run := func(ctx context.Context) Result {
		close(started)
		<-ctx.Done()
		defer close(ended)
		return Result{Failure: "timed out after 30s"}
	}
	p.Request(t.Context(), owner, "svc", 1, run, func() { woken.Store(true) })
	<-started
	p.Forget(owner)
	<-ended
	g.Consistently(woken.Load, 100*time.Millisecond).Should(BeFalse())
	_, _, ok := p.Take(owner, "svc", time.Minute)
	g.Expect(ok).To(BeFalse())
}
