package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

// coldStarts is how many Sandboxes each cold-start series starts, one at a time and then all at once.
const coldStarts = 20

// BenchmarkColdStart times a session Sandbox without services from apply to Ready against `docker run -d`
// of the same image with the same limits and hardening plus the wait until Docker reports it running.
func BenchmarkColdStart(b *testing.B) {
	e := dockerEnv(b)
	ctx := context.Background()
	ns, err := e.namespace(ctx, "cold")
	if err != nil {
		b.Fatal(err)
	}
	plain := runArgs(e.node, "none", busybox)

	// One at a time, Dockside and Docker in turns, so that any change in the machine's load hits both. The
	// second baseline builds by hand what a Sandbox is made of on its way to Ready (workspace volume, primary;
	// the holder after, untimed), which tells the cost of the design apart from the cost of the agent.
	var dockside, baseline, byHand []time.Duration
	before, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for i := range coldStarts {
		d, err := e.applyAndWait(ctx, session(ns, fmt.Sprintf("seq-%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		p, err := timed(func() error { _, err := dockerRun(plain); return err })
		if err != nil {
			b.Fatal(err)
		}
		volume := fmt.Sprintf("%s-ws-%d", plainNode(e.node), i)
		h, err := timed(func() error { return sessionByHand(e.node, volume) })
		if err != nil {
			b.Fatal(err)
		}
		if err := holdByHand(e.node, volume); err != nil {
			b.Fatal(err)
		}
		dockside, baseline, byHand = append(dockside, d), append(baseline, p), append(byHand, h)
	}
	time.Sleep(5 * time.Second) // let trailing passes (the holder's start after Ready) finish before they are counted
	after, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cleanUp(b, e, ns)
	record(b, group{
		Key: "cold-seq", Title: fmt.Sprintf("Cold start, session Sandbox, %d one at a time", coldStarts),
		Baseline: "docker run -d, same image and limits, + wait for running",
		Figures: append(startupFigures(dockside, baseline, "≤ 1.25x plain Docker"),
			figure{Name: "p50 against the same steps by hand (tmpfs volume, primary; the holder after)", Unit: "s",
				Dockside: seconds(percentile(dockside, 50)), Baseline: seconds(percentile(byHand, 50))},
			figure{Name: "API writes (dockside.dev) per cold start, its create included", Unit: "writes",
				Dockside: num((after.docksideWrites - before.docksideWrites) / coldStarts), Baseline: num(0)}),
	})

	// All at once: each Sandbox timed from its own apply, and the whole batch, with where its time went.
	from, err := e.coldMark(ctx)
	if err != nil {
		b.Fatal(err)
	}
	dockside, dWall, err := timeAll(coldStarts, func(i int) (time.Duration, error) {
		return e.applyAndWait(ctx, session(ns, fmt.Sprintf("par-%d", i)))
	})
	if err != nil {
		b.Fatal(err)
	}
	to, err := e.coldMark(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cleanUp(b, e, ns)
	baseline, bWall, err := timeAll(coldStarts, func(int) (time.Duration, error) {
		return timed(func() error { _, err := dockerRun(plain); return err })
	})
	if err != nil {
		b.Fatal(err)
	}
	cleanUp(b, e, ns)
	record(b, group{
		Key: "cold-par", Title: fmt.Sprintf("Cold start, session Sandbox, %d at once", coldStarts), Baseline: "the same docker run -d, all at once",
		Figures: append(startupFigures(dockside, baseline, "≤ 1.5x plain Docker"),
			figure{Name: "all Ready", Unit: "s", Dockside: seconds(dWall), Baseline: seconds(bWall)}),
	})
	record(b, group{Key: "cold-par-path", Title: fmt.Sprintf("Where %d cold starts at once spent their time, from just before the first apply to just after the last Ready", coldStarts),
		Figures: coldFigures(from, to, coldStarts, dWall)})
}

// sessionByHand is what a session Sandbox is made of on its way to Ready, by hand: its workspace (a tmpfs
// volume named volume) and the primary mounting it. Its holder comes after (holdByHand), as the agent's does.
func sessionByHand(node, volume string) error {
	if err := tmpfsVolume(node, volume); err != nil {
		return err
	}
	_, err := dockerRun(runArgs(node, "none", append(workspaceMount(volume), busybox)...))
	return err
}

// holdByHand starts the holder that keeps the workspace volume when no primary runs.
func holdByHand(node, volume string) error {
	holderArgs := append(hardened(node, "none", "8m", "1", "16"), workspaceMount(volume)...)
	_, err := dockerRun(append(holderArgs, holder))
	return err
}

// startupFigures are p50 and p95 of two series of start-up times; goal applies to p50.
func startupFigures(dockside, baseline []time.Duration, goal string) []figure {
	return []figure{
		{Name: "p50", Unit: "s", Dockside: seconds(percentile(dockside, 50)), Baseline: seconds(percentile(baseline, 50)), Goal: goal},
		{Name: "p95", Unit: "s", Dockside: seconds(percentile(dockside, 95)), Baseline: seconds(percentile(baseline, 95))},
	}
}

// timed is how long f took.
func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// timeAll runs f(0) … f(n-1) all at once and returns what each reported and how long the whole took.
func timeAll(n int, f func(i int) (time.Duration, error)) ([]time.Duration, time.Duration, error) {
	times := make([]time.Duration, n)
	errs := make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { times[i], errs[i] = f(i) })
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	return times, wall, nil
}

// cleanUp deletes what a benchmark made in ns, through the agent, and the baselines' containers. It
// reports a failure without stopping the benchmark, so that it may be deferred.
func cleanUp(b *testing.B, e *env, ns string) {
	b.Helper()
	if err := e.deleteAll(context.Background(), ns, 5*time.Minute); err != nil {
		b.Error(err)
	}
	if err := dockercli.RemoveLabelled(plainNode(e.node)); err != nil {
		b.Error(err)
	}
}
