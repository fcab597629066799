//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
)

// The unbound flood: Sandboxes as large as validation lets them be (command and args, env and commandEnv at
// their 128 KiB bounds, 200 KiB of annotations) that restore from a Checkpoint that does not exist, so that
// no agent ever binds them and every agent holds all of them in its cache of unbound Sandboxes.
const (
	// unboundFlood holds about 138 MiB whole, twice the bound below: enough that an agent caching their bulk
	// fails, and few enough that the controllers suite stays within CI's time (it took 500, 230 MiB, before).
	unboundFlood = 300
	// unboundHeapBound is what the flood may add to the heap of one agent: a quarter of the DaemonSet's 256Mi
	// limit (config/agent/daemonset.yaml).
	unboundHeapBound = 64 << 20
)

var _ = Describe("Unbound Sandboxes that never bind", func() {
	It("cost the agents none of their bulk, whether they come while an agent runs or before it starts", func() {
		ns := newNamespace()
		DeferCleanup(func() { // no spec timeout bounds it; never admitted, so nothing holds them
			Expect(k8s.DeleteAllOf(context.Background(), &dsv1alpha1.Sandbox{}, client.InNamespace(ns))).To(Succeed())
		})
		// Each unbound pass reads no API: a long retry keeps 300 of them from filling the workers.
		slow := func(o *agent.Options) { o.BindRetry = time.Hour }
		a := newAgent(slow)

		before := heapInUse()
		started := time.Now()
		createUnboundFlood(ns)
		GinkgoWriter.Printf("created %d Sandboxes of %d KiB each in %s\n", unboundFlood, unboundBytes()>>10, time.Since(started))

		By("waiting in the first agent's cache, each with the reason the agent wrote")
		Eventually(waitingForCheckpoint(ns), 10*time.Minute, 2*time.Second).Should(Equal(unboundFlood))
		running := heapInUse()

		By("being listed whole by an agent that starts after them, which keeps them trimmed")
		a.stop()
		idle := heapInUse()
		peak := sampleLiveHeap()
		b := newAgent(slow)
		// An agent's controllers start once its caches hold what they list: the first bind is proof that it
		// holds the whole flood.
		probe := sandbox(ns, "probe", "")
		create(probe)
		Eventually(func() string { return get(probe).Spec.NodeName }, 5*time.Minute).Should(Equal(b.node))
		highest := peak.stop()
		listed := heapInUse()
		GinkgoWriter.Printf("heap in use after GC: %d MiB before the flood, %d MiB with one agent holding it, %d MiB after that agent stopped, %d MiB with a new agent that listed it (live heap at most %d MiB while it did); %d MiB of Sandboxes\n",
			before>>20, running>>20, idle>>20, listed>>20, highest>>20, unboundFlood*unboundBytes()>>20)
		Expect(int64(running)-int64(before)).To(BeNumerically("<", unboundHeapBound), "an agent holding the flood from its watch")
		Expect(int64(listed)-int64(idle)).To(BeNumerically("<", unboundHeapBound), "an agent holding the flood from its first list")
		Expect(int64(highest)-int64(idle)).To(BeNumerically("<", 2*unboundHeapBound), "an agent listing the flood")
	})
})

// unboundSandbox is the i-th flood Sandbox in ns: at the bounds of validation, restoring from a Checkpoint
// that does not exist.
func unboundSandbox(ns string, i int) *dsv1alpha1.Sandbox {
	sbx := sandbox(ns, fmt.Sprintf("flood-%d", i), "")
	sbx.Annotations = map[string]string{"example.com/note": strings.Repeat("a", 200<<10)}
	sbx.Spec.RestoreFrom = "absent"
	sbx.Spec.Command = []string{"sh", "-c", strings.Repeat("c", 16000)}
	for range 7 {
		sbx.Spec.Args = append(sbx.Spec.Args, strings.Repeat("a", 16000))
	}
	for j := range 2 {
		sbx.Spec.Env = append(sbx.Spec.Env, dsv1alpha1.EnvVar{Name: fmt.Sprintf("V%d", j), Value: strings.Repeat("v", 32000)})
		sbx.Spec.CommandEnv = append(sbx.Spec.CommandEnv, dsv1alpha1.ExecutionEnvVar{Name: fmt.Sprintf("C%d", j), Value: strings.Repeat("e", 32000)})
	}
	return sbx
}

// unboundBytes is the size of one flood Sandbox's command, args, env, commandEnv and annotations.
func unboundBytes() int {
	sbx := unboundSandbox("ns", 0)
	n := 0
	for _, s := range append(sbx.Spec.Command, sbx.Spec.Args...) {
		n += len(s)
	}
	for _, e := range sbx.Spec.Env {
		n += len(e.Name) + len(e.Value)
	}
	for _, e := range sbx.Spec.CommandEnv {
		n += len(e.Name) + len(e.Value)
	}
	for k, v := range sbx.Annotations {
		n += len(k) + len(v)
	}
	return n
}

// createUnboundFlood creates the flood in ns, four at a time.
func createUnboundFlood(ns string) {
	GinkgoHelper()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			defer GinkgoRecover()
			for i := range work {
				Expect(k8s.Create(ctx(), unboundSandbox(ns, i))).To(Succeed())
			}
		})
	}
	for i := range unboundFlood {
		work <- i
	}
	close(work)
	wg.Wait()
}

// waitingForCheckpoint counts the flood Sandboxes in ns whose status says they wait for their Checkpoint,
// reading them a page at a time so that the test's own reads stay small.
func waitingForCheckpoint(ns string) func() int {
	return func() int {
		GinkgoHelper()
		n, next := 0, ""
		for {
			var list dsv1alpha1.SandboxList
			Expect(k8s.List(ctx(), &list, client.InNamespace(ns), client.Limit(50), client.Continue(next))).To(Succeed())
			for i := range list.Items {
				c := meta.FindStatusCondition(list.Items[i].Status.Conditions, dsv1alpha1.ConditionScheduled)
				if strings.HasPrefix(list.Items[i].Name, "flood-") && c != nil && c.Reason == dsv1alpha1.ReasonCheckpointNotFound {
					n++
				}
			}
			if next = list.Continue; next == "" {
				return n
			}
		}
	}
}

// liveHeapSampler records the highest live heap (the heap marked reachable at the end of each collection) of
// the test process, where the agents run, until stopped.
type liveHeapSampler struct {
	highest atomic.Uint64
	done    chan struct{}
	stopped sync.WaitGroup
}

func sampleLiveHeap() *liveHeapSampler {
	s := &liveHeapSampler{done: make(chan struct{})}
	s.stopped.Go(func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > s.highest.Load() {
				s.highest.Store(v)
			}
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	})
	return s
}

func (s *liveHeapSampler) stop() uint64 {
	close(s.done)
	s.stopped.Wait()
	return s.highest.Load()
}
