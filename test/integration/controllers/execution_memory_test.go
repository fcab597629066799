//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
	execctl "github.com/dockside-dev/dockside/internal/controller/execution"
)

// The flood: Executions of about 1 MiB each (stdin at its 64 KiB limit, env values and command items filling
// the rest within their limits) for Sandboxes that exist nowhere, in namespaces where the agents have nothing.
// Each carries the test's finalizer, so that an Execution the agents expired stays (with a deletionTimestamp)
// until the test lets it go: all of them are in the agents' caches at once however slowly they are created.
// The 120 Executions hold about 120 MiB whole, near twice the bound on what the two agents may add together:
// enough that one agent caching their bulk fails, and few enough that the suite stays within CI's time (300
// of them took 520 s of it under load).
const (
	floodNamespaces = 3
	floodPerNS      = 40
	floodTotal      = floodNamespaces * floodPerNS
	floodTTL        = 10 // seconds
	holdFinalizer   = "test.dockside.dev/hold"
	heapGrowthBound = 64 << 20
)

var _ = Describe("Executions whose Sandbox exists nowhere", func() {
	It("cost the agents none of their bulk, fail with SandboxNotFound after the grace, and expire", func() {
		home := newNamespace()
		var flood []string
		for range floodNamespaces {
			ns := newNamespace()
			DeferCleanup(func() { // whatever is left; bounded by no spec timeout
				releaseFlood(ns)
				Expect(k8s.DeleteAllOf(context.Background(), &dsv1alpha1.Execution{}, client.InNamespace(ns))).To(Succeed())
			})
			flood = append(flood, ns)
		}
		// A Sandbox that exists, on a node without an agent: its Execution waits past the grace, untouched.
		create(sandbox(flood[0], "elsewhere", "node-without-agent"))
		patient := execution(flood[0], "patient", "elsewhere", "brief")
		create(patient)

		a, aCache := startCachedAgent()
		_, bCache := startCachedAgent()
		seenA, seenB := watchUntaken(aCache), watchUntaken(bCache)
		jobs := newJobLog()
		a.docker.SetExecHandler(jobs.handle)
		shell := sandbox(home, "shell", a.node)
		create(shell)
		Eventually(condition(shell, dsv1alpha1.ConditionReady), time.Minute).Should(Equal("True/Running"))

		before := heapInUse()
		started := time.Now()
		createFlood(flood)
		GinkgoWriter.Printf("created %d Executions of %d bytes each in %s\n", floodTotal, floodBytes(), time.Since(started))

		By("holding every one of them in both agents' caches at once, trimmed")
		Eventually(cachedFlood(aCache, flood), 5*time.Minute, time.Second).Should(Equal(floodTotal))
		Eventually(cachedFlood(bCache, flood), 5*time.Minute, time.Second).Should(Equal(floodTotal))
		busy := heapInUse() // while the agents still work through the flood: its watch events in flight

		By("still running this node's own work, with its stdin read from the API server")
		own := execution(home, "own", "shell", "echo")
		own.Spec.Stdin = "print(6*7)\n"
		create(own)
		Eventually(execState(own), 5*time.Minute).Should(Equal("Succeeded/Completed"))
		Expect(getExec(own).Status.Stdout).To(HavePrefix("stdin=print(6*7)\n"))

		By("failing each with SandboxNotFound once the grace has passed, both agents seeing the same status")
		for _, seen := range []*untakenLog{seenA, seenB} {
			Eventually(seen.failedCount, 20*time.Minute, time.Second).Should(Equal(floodTotal))
			Expect(seen.messages()).To(ConsistOf("Sandbox SANDBOX does not exist in namespace NS; the command did not run"))
		}

		By("deleting each ttlSecondsAfterFinished after it failed")
		for _, seen := range []*untakenLog{seenA, seenB} {
			Eventually(seen.expiredCount, 20*time.Minute, time.Second).Should(Equal(floodTotal))
			// deletionTimestamp has whole seconds.
			Expect(seen.shortestLife()).To(BeNumerically(">=", floodTTL*time.Second-time.Second))
		}
		// Expired, and held by the test's finalizer: every one is still in both caches while the agents are idle.
		Expect(cachedFlood(aCache, flood)()).To(Equal(floodTotal))
		Expect(cachedFlood(bCache, flood)()).To(Equal(floodTotal))
		after := heapInUse()
		GinkgoWriter.Printf("heap in use after GC: %d MiB before the flood, %d MiB while two agents worked through it, %d MiB with both caching all of it (%d MiB of Executions)\n",
			before>>20, busy>>20, after>>20, floodTotal*floodBytes()>>20)
		Expect(int64(after)-int64(before)).To(BeNumerically("<", heapGrowthBound),
			"two agents hold %d MiB of Executions without their bulk", floodTotal*floodBytes()>>20)

		for _, ns := range flood {
			releaseFlood(ns)
		}
		for _, seen := range []*untakenLog{seenA, seenB} {
			Eventually(seen.goneCount, 10*time.Minute, time.Second).Should(Equal(floodTotal))
		}
		Expect(execState(patient)()).To(Equal("/"), "its Sandbox exists, so it waits")
		Expect(getExec(patient).CreationTimestamp.Time).To(BeTemporally("<", time.Now().Add(-execctl.DefaultSandboxGrace)))
	})
})

// cachedFlood counts the flood Executions in an agent's cache, and fails on one cached with its bulk.
func cachedFlood(c cache.Cache, namespaces []string) func() int {
	return func() int {
		GinkgoHelper()
		n := 0
		for _, ns := range namespaces {
			var list dsv1alpha1.ExecutionList
			Expect(c.List(ctx(), &list, client.InNamespace(ns))).To(Succeed())
			for _, ex := range list.Items {
				Expect(ex.Spec.Stdin).To(BeEmpty())
				Expect(ex.Spec.Command).To(BeEmpty())
				Expect(ex.Spec.Env).To(BeEmpty())
				if strings.HasPrefix(ex.Name, "flood-") {
					n++
				}
			}
		}
		return n
	}
}

// startCachedAgent runs an agent on a fresh node as newAgent does, and hands back its manager's cache: the
// Executions that agent holds in memory.
func startCachedAgent() (*testAgent, cache.Cache) {
	GinkgoHelper()
	node := newNode()
	a := &testAgent{node: node, docker: newDocker(node)}
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := agent.New(ctx, cfg, agent.Options{
		Node: node, Driver: a.docker, Capacity: 8,
		SweepPeriod: time.Hour, BindRetry: 200 * time.Millisecond, SpecRetry: 300 * time.Millisecond,
		StopGrace: 0, DockerTimeout: 5 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, Workers: 2,
	})
	Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	a.stop = func() {
		cancel()
		Eventually(done).Should(BeClosed())
	}
	DeferCleanup(a.stop)
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	return a, mgr.GetCache()
}

// floodBytes is the size of one flood Execution's command, stdin and env.
func floodBytes() int {
	ex := floodExecution("ns", 0)
	n := len(ex.Spec.Stdin)
	for _, c := range ex.Spec.Command {
		n += len(c)
	}
	for _, e := range ex.Spec.Env {
		n += len(e.Name) + len(e.Value)
	}
	return n
}

// floodExecution is the i-th flood Execution in ns, for Sandbox absent-<i>, which exists nowhere.
func floodExecution(ns string, i int) *dsv1alpha1.Execution {
	ex := &dsv1alpha1.Execution{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("flood-%d", i), Finalizers: []string{holdFinalizer}},
		Spec: dsv1alpha1.ExecutionSpec{
			SandboxName: fmt.Sprintf("absent-%d", i), Stdin: strings.Repeat("s", 64<<10),
			Command:                 []string{"sh", "-c", strings.Repeat("c", 16<<10), strings.Repeat("d", 16<<10)},
			TTLSecondsAfterFinished: ptr.To[int32](floodTTL),
		},
	}
	for j := range 28 {
		ex.Spec.Env = append(ex.Spec.Env, dsv1alpha1.ExecutionEnvVar{Name: fmt.Sprintf("V%d", j), Value: strings.Repeat("v", 32<<10)})
	}
	return ex
}

// createFlood creates floodPerNS flood Executions in each namespace, four at a time.
func createFlood(namespaces []string) {
	GinkgoHelper()
	work := make(chan *dsv1alpha1.Execution)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			defer GinkgoRecover()
			for ex := range work {
				Expect(k8s.Create(ctx(), ex)).To(Succeed())
			}
		})
	}
	for _, ns := range namespaces {
		for i := range floodPerNS {
			work <- floodExecution(ns, i)
		}
	}
	close(work)
	wg.Wait()
}

// releaseFlood takes the test's finalizer off the flood Executions left in ns, so that those deleted go.
func releaseFlood(ns string) {
	GinkgoHelper()
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(dsv1alpha1.GroupVersion.WithKind("ExecutionList"))
	Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	release := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	for i := range list.Items {
		if m := &list.Items[i]; len(m.Finalizers) > 0 {
			m.SetGroupVersionKind(dsv1alpha1.GroupVersion.WithKind("Execution"))
			Expect(client.IgnoreNotFound(k8s.Patch(context.Background(), m, release))).To(Succeed())
		}
	}
}

// heapInUse is the test process's heap in use after a full collection; the agents run in this process.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// untakenLog records, from an agent's cache as its watch delivers them, the flood Executions that turned Failed
// with SandboxNotFound, those the agent then deleted (with how long after they failed) and those gone, so
// that no state is missed however briefly it lasts.
type untakenLog struct {
	mu      sync.Mutex
	failed  map[string]string        // namespace/name -> status.message
	expired map[string]time.Duration // namespace/name -> deletionTimestamp - finishTime
	gone    map[string]bool
}

func watchUntaken(c cache.Cache) *untakenLog {
	GinkgoHelper()
	l := &untakenLog{failed: map[string]string{}, expired: map[string]time.Duration{}, gone: map[string]bool{}}
	inf, err := c.GetInformer(ctx(), &dsv1alpha1.Execution{})
	Expect(err).NotTo(HaveOccurred())
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{ // Add replays what the cache holds
		AddFunc:    func(obj any) { l.note(obj, false) },
		UpdateFunc: func(_, obj any) { l.note(obj, false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			l.note(obj, true)
		},
	})
	Expect(err).NotTo(HaveOccurred())
	return l
}

func (l *untakenLog) note(obj any, gone bool) {
	ex, ok := obj.(*dsv1alpha1.Execution)
	if !ok || !strings.HasPrefix(ex.Name, "flood-") {
		return
	}
	key := ex.Namespace + "/" + ex.Name
	l.mu.Lock()
	defer l.mu.Unlock()
	if gone {
		l.gone[key] = true
	}
	st := ex.Status
	if st.Phase == dsv1alpha1.ExecutionFailed && st.Reason == dsv1alpha1.ReasonSandboxNotFound && st.NodeName == "" {
		l.failed[key] = strings.NewReplacer(ex.Spec.SandboxName, "SANDBOX", ex.Namespace, "NS").Replace(st.Message)
	}
	if ex.DeletionTimestamp != nil && st.FinishTime != nil {
		l.expired[key] = ex.DeletionTimestamp.Sub(st.FinishTime.Time)
	}
}

func (l *untakenLog) failedCount() int  { return lockedLen(&l.mu, l.failed) }
func (l *untakenLog) expiredCount() int { return lockedLen(&l.mu, l.expired) }
func (l *untakenLog) goneCount() int    { return lockedLen(&l.mu, l.gone) }

func lockedLen[V any](mu *sync.Mutex, m map[string]V) int {
	mu.Lock()
	defer mu.Unlock()
	return len(m)
}

// shortestLife is the least time between an Execution's failure and its deletion.
func (l *untakenLog) shortestLife() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	least := time.Duration(1<<63 - 1)
	for _, d := range l.expired {
		least = min(least, d)
	}
	return least
}

// messages are the distinct messages of the failed ones, with their Sandbox and namespace written SANDBOX and NS.
func (l *untakenLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := map[string]bool{}
	for _, m := range l.failed {
		set[m] = true
	}
	var out []string
	for m := range set {
		out = append(out, m)
	}
	return out
}
