package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

// coldStarts is how many Sandboxes each cold-start series starts, one at a time and then all at once.
const coldStarts = 20

// BenchmarkColdStart times a session Sandbox without services from apply to Ready against Docker's own API
// making the same objects on the same path (replay: the primary's two volumes, its create with the
// configuration the agent sent, its start), one at a time in turns and then all at once.
func BenchmarkColdStart(b *testing.B) {
	e := dockerEnv(b)
	ctx := context.Background()
	ns, err := e.namespace(ctx, "cold")
	if err != nil {
		b.Fatal(err)
	}
	cli, err := dockerAPI()
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()

	// One at a time, Dockside and Docker in turns, so that any change in the machine's load hits both. Each
	// Sandbox's holder, started by the pass after its Ready, runs before the baseline's turn, so that the
	// baseline never shares Docker with it.
	var dockside, baseline []time.Duration
	var api *replay
	before, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for i := range coldStarts {
		name := fmt.Sprintf("seq-%d", i)
		d, err := e.applyAndWait(ctx, session(ns, name))
		if err != nil {
			b.Fatal(err)
		}
		if err := e.waitHolder(ctx, cli, ns, name); err != nil {
			b.Fatal(err)
		}
		if api == nil {
			if api, err = newReplay(ctx, cli, e.node, ns, name, dsv1alpha1.RolePrimary); err != nil {
				b.Fatal(err)
			}
		}
		p, err := timed(func() error { return api.run(ctx, i) })
		if err != nil {
			b.Fatal(err)
		}
		dockside, baseline = append(dockside, d), append(baseline, p)
	}
	time.Sleep(5 * time.Second) // let trailing passes (the holder's start event) finish before they are counted
	after, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cleanUp(b, e, ns)
	record(b, group{
		Key: "cold-seq", Title: fmt.Sprintf("Cold start, session Sandbox, %d one at a time", coldStarts),
		Baseline: apiBaseline,
		Figures: append(startupFigures(dockside, baseline, "≤ 1.1x Docker's API"),
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
	baseline, bWall, err := timeAll(coldStarts, func(i int) (time.Duration, error) {
		return timed(func() error { return api.run(ctx, coldStarts+i) })
	})
	if err != nil {
		b.Fatal(err)
	}
	cleanUp(b, e, ns)
	record(b, group{
		Key: "cold-par", Title: fmt.Sprintf("Cold start, session Sandbox, %d at once", coldStarts), Baseline: "the same, all at once",
		Figures: append(startupFigures(dockside, baseline, ""),
			figure{Name: "all Ready", Unit: "s", Dockside: seconds(dWall), Baseline: seconds(bWall), Goal: "≤ 1.3x Docker's API"}),
	})
	record(b, group{Key: "cold-par-path", Title: fmt.Sprintf("Where %d cold starts at once spent their time, from just before the first apply to just after the last Ready", coldStarts),
		Figures: coldFigures(from, to, coldStarts, dWall)})
}

// apiBaseline says what the cold starts are measured against.
const apiBaseline = "Docker's API over one connection, as the agent talks to it, making what a session has at Ready: " +
	"its workspace and run volumes (same driver and options) and its primary (the configuration the agent sent, read back), started"

// waitHolder waits until the holder of the Sandbox ns/name runs.
func (e *env) waitHolder(ctx context.Context, cli *client.Client, ns, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return waitRunningByLabels(ctx, cli, e.node, ns, name, dsv1alpha1.RoleHolder)
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

// benchNamespace is the shared Docker environment and a namespace of its own for one benchmark, named from
// prefix; what the benchmark made in it is deleted when the benchmark ends.
func benchNamespace(b *testing.B, prefix string) (*env, string) {
	b.Helper()
	e := dockerEnv(b)
	ns, err := e.namespace(context.Background(), prefix)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cleanUp(b, e, ns) })
	return e, ns
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
