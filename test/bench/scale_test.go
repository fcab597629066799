package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	scaleSandboxes = 1000
	// scaleLimit bounds the wait for all of them to be Ready, so that `make bench` stays bounded whatever
	// the agent does; the figures then say how many made it.
	scaleLimit = 3 * time.Minute
	// scaleCreators is how many clients create the Sandboxes at once, as a burst of GitOps or API traffic.
	scaleCreators = 32
)

// BenchmarkScaleFake creates 1,000 session Sandboxes at once for one agent on the fake driver, which costs
// nothing in Docker, so what is left is the agent and the API server: time until all are Ready, the agent's
// memory (its process is a child of the benchmark: peak RSS, and peak Go heap sampled from its metrics),
// reconciles and API writes per Sandbox. It runs on a control plane of its own.
func BenchmarkScaleFake(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(runDir, "scale")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	e, err := startEnv(ctx, dir, runNode+"-fake", scaleSandboxes, fakeAgent)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.stop(); err != nil {
			b.Error(err)
		}
	}()
	ns, err := e.namespace(ctx, "scale")
	if err != nil {
		b.Fatal(err)
	}
	before, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	agentMetrics, err := e.agent.scrape(ctx)
	if err != nil {
		b.Fatal(err)
	}
	heap0 := agentMetrics.sum("go_memstats_heap_inuse_bytes", nil)
	rss0, _, err := e.agent.memory()
	if err != nil {
		b.Fatal(err)
	}
	sampling, stopSampling := context.WithCancel(ctx)
	heapPeak := e.agent.sampleHeapPeak(sampling, 250*time.Millisecond)

	start := time.Now()
	applied, err := e.createAll(ctx, scaleSandboxes, func(i int) client.Object { return session(ns, scaleName(i)) })
	if err != nil {
		b.Fatal(err)
	}
	createdIn := time.Since(start)
	waiting, cancel := context.WithDeadline(ctx, start.Add(scaleLimit))
	defer cancel()
	for i := range applied {
		_, err := e.sandboxes.waitReady(waiting, types.NamespacedName{Namespace: ns, Name: scaleName(i)})
		if errors.Is(err, context.DeadlineExceeded) {
			break
		} else if err != nil {
			b.Fatal(err, "\n", e.agent.LogTail())
		}
	}
	var latencies []time.Duration
	var last time.Time
	for i, at := range applied {
		if ready, ok := e.sandboxes.readyAt(types.NamespacedName{Namespace: ns, Name: scaleName(i)}); ok {
			latencies = append(latencies, ready.Sub(at))
			if ready.After(last) {
				last = ready
			}
		}
	}
	allReady := figure{Name: "all Ready", Unit: "s", Dockside: seconds(last.Sub(start))}
	var partial string // said of the per-Sandbox figures when not all made it
	if len(latencies) < scaleSandboxes {
		partial = fmt.Sprintf("%d of %d Ready when the wait ended", len(latencies), scaleSandboxes)
		allReady = notMeasured(allReady.Name, allReady.Unit, fmt.Sprintf("%d of %d Ready after %s", len(latencies), scaleSandboxes, scaleLimit))
	}
	stopSampling()
	peakHeap := <-heapPeak
	_, peakRSS, err := e.agent.memory()
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(5 * time.Second) // let trailing passes finish before they are counted
	after, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	deleted, err := timed(func() error { return e.deleteAll(ctx, ns, 10*time.Minute) })
	if err != nil {
		b.Fatal(err)
	}

	per := func(v float64) *float64 { return num(v / scaleSandboxes) }
	record(b, group{
		Key: "scale", Title: fmt.Sprintf("Scale on the fake driver, %d session Sandboxes created at once by %d clients", scaleSandboxes, scaleCreators),
		Baseline: "the same agent before the Sandboxes (memory); plain Docker has no agent",
		Figures: []figure{
			{Name: "all created (API server accepted)", Unit: "s", Dockside: seconds(createdIn)},
			allReady,
			{Name: "apply → Ready p50 (of those Ready)", Unit: "s", Dockside: seconds(percentile(latencies, 50))},
			{Name: "apply → Ready p95 (of those Ready)", Unit: "s", Dockside: seconds(percentile(latencies, 95))},
			{Name: "agent peak RSS (VmHWM)", Unit: "MiB", Dockside: num(peakRSS / mib), Baseline: num(rss0 / mib), Goal: "< 100 MiB"},
			{Name: "agent peak Go heap in use (sampled every 250ms)", Unit: "MiB", Dockside: num(peakHeap / mib), Baseline: num(heap0 / mib)},
			{Name: "agent memory per Sandbox (peak RSS growth / Sandboxes)", Unit: "KiB", Dockside: num((peakRSS - rss0) / scaleSandboxes / 1024)},
			{Name: "reconciles per Sandbox", Unit: "reconciles", Dockside: per(after.reconciles - before.reconciles), Goal: "a few", Note: partial},
			{Name: "API writes (dockside.dev) per Sandbox, its create included", Unit: "writes", Dockside: per(after.docksideWrites - before.docksideWrites), Note: partial},
			{Name: "driver calls per Sandbox", Unit: "calls", Dockside: per(total(diff(after.dockerCalls, before.dockerCalls))), Note: partial},
			{Name: "all deleted (finalizers released)", Unit: "s", Dockside: seconds(deleted)},
		},
	})
}

func scaleName(i int) string { return fmt.Sprintf("s-%04d", i) }

// createAll creates object(0) … object(n-1) from scaleCreators clients at once and returns when each was
// sent.
func (e *env) createAll(ctx context.Context, n int, object func(i int) client.Object) ([]time.Time, error) {
	sent := make([]time.Time, n)
	next := make(chan int)
	errs := make(chan error, scaleCreators)
	var wg sync.WaitGroup
	for range scaleCreators {
		wg.Go(func() {
			for i := range next {
				sent[i] = time.Now()
				if err := e.k8s.Create(ctx, object(i)); err != nil {
					select {
					case errs <- err:
					default: // one error is enough to report
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return sent, <-errs
}

// sampleHeapPeak scrapes the agent's Go heap in use every period until ctx ends, then sends the highest.
func (a *agentProcess) sampleHeapPeak(ctx context.Context, period time.Duration) <-chan float64 {
	peak := make(chan float64, 1)
	go func() {
		var high float64
		for {
			if m, err := a.scrape(ctx); err == nil {
				high = max(high, m.sum("go_memstats_heap_inuse_bytes", nil))
			}
			select {
			case <-ctx.Done():
				peak <- high
				return
			case <-time.After(period):
			}
		}
	}()
	return peak
}
