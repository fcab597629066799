package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

const (
	idleSandboxes = 50
	// idleWindow is shorter than the five minutes to keep `make bench` well under a quarter of an
	// hour on two cores; it still spans two of the agent's one-minute sweeps.
	idleWindow = 2 * time.Minute
	// settle lets the last status writes and events of start-up pass before the window opens.
	settle = 15 * time.Second
)

const mib = 1 << 20

// BenchmarkIdle counts what 50 idle session Sandboxes cost per minute, in Docker calls (every call the
// agent's instrumented driver makes, by operation) and API server writes, and what each costs in memory:
// its holder container, its primary against a plain container of the same image, and the agent's share.
func BenchmarkIdle(b *testing.B) {
	e := dockerEnv(b)
	ctx := context.Background()
	ns, err := e.namespace(ctx, "idle")
	if err != nil {
		b.Fatal(err)
	}
	rss0, _, err := e.agent.memory()
	if err != nil {
		b.Fatal(err)
	}
	_, dWall, err := timeAll(idleSandboxes, func(i int) (time.Duration, error) {
		return e.applyAndWait(ctx, session(ns, fmt.Sprintf("idle-%d", i)))
	})
	if err != nil {
		b.Fatal(err)
	}
	_, bWall, err := timeAll(idleSandboxes, func(int) (time.Duration, error) {
		return timed(func() error { _, err := dockerRun(runArgs(e.node, "none", busybox)); return err })
	})
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(settle)

	before, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(idleWindow)
	after, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	rss, _, err := e.agent.memory()
	if err != nil {
		b.Fatal(err)
	}
	holders, primaries, plain, err := idleMemory(e.node, ns)
	if err != nil {
		b.Fatal(err)
	}
	cleanUp(b, e, ns)

	minutes := idleWindow.Minutes()
	perSandbox := func(v float64) *float64 { return num(v / idleSandboxes / minutes) }
	calls := diff(after.dockerCalls, before.dockerCalls)
	record(b, group{
		Key: "idle", Title: fmt.Sprintf("At rest, %d idle session Sandboxes, over %s", idleSandboxes, idleWindow),
		Baseline: fmt.Sprintf("%d plain containers (docker run -d): nothing watches them", idleSandboxes),
		Figures: []figure{
			{Name: fmt.Sprintf("%d at once, all Ready", idleSandboxes), Unit: "s", Dockside: seconds(dWall), Baseline: seconds(bWall)},
			{Name: "Docker calls per Sandbox per minute", Unit: "calls", Dockside: perSandbox(total(calls)), Baseline: num(0),
				Goal: "0 beyond a rare resync", Note: "by operation over the window: " + describe(calls)},
			{Name: "API writes (dockside.dev) per Sandbox per minute", Unit: "writes", Dockside: perSandbox(after.docksideWrites - before.docksideWrites), Baseline: num(0),
				Goal: "0 beyond a rare resync"},
			{Name: "API writes (all groups) per minute, whole agent", Unit: "writes", Dockside: num((after.allWrites - before.allWrites) / minutes), Baseline: num(0),
				Note: "its Lease renewals included"},
			{Name: "reconciles per Sandbox per minute", Unit: "reconciles", Dockside: perSandbox(after.reconciles - before.reconciles)},
			{Name: "holder container memory, mean", Unit: "MiB", Dockside: num(holders / mib)},
			{Name: "primary container memory, mean", Unit: "MiB", Dockside: num(primaries / mib), Baseline: num(plain / mib)},
			{Name: "agent memory per Sandbox (RSS growth / Sandboxes)", Unit: "KiB", Dockside: num((rss - rss0) / idleSandboxes / 1024),
				Note: fmt.Sprintf("agent RSS %.1f MiB with %d Sandboxes, %.1f MiB before", rss/mib, idleSandboxes, rss0/mib)},
		},
	})
}

// counts is what the agent and the API server had counted at one moment.
type counts struct {
	dockerCalls    map[string]float64
	docksideWrites float64
	docksideReads  float64
	allWrites      float64
	reconciles     float64
}

func (e *env) snapshot(ctx context.Context) (counts, error) {
	agent, err := e.agent.scrape(ctx)
	if err != nil {
		return counts{}, err
	}
	api, err := apiServerMetrics(ctx, e.cfg)
	if err != nil {
		return counts{}, err
	}
	return counts{
		dockerCalls:    dockerCalls(agent),
		docksideWrites: writes(api, dsv1alpha1.GroupVersion.Group),
		docksideReads:  reads(api, dsv1alpha1.GroupVersion.Group),
		allWrites:      writes(api, ""),
		reconciles:     agent.sum("controller_runtime_reconcile_total", func(l map[string]string) bool { return l["controller"] == "sandbox" }),
	}, nil
}

// idleMemory is the mean memory of the Sandboxes' holders and primaries in ns, and of the plain containers.
func idleMemory(node, ns string) (holders, primaries, plain float64, err error) {
	ids := map[string][]string{}
	for _, role := range []string{dsv1alpha1.RoleHolder, dsv1alpha1.RolePrimary} {
		out, err := docker("container", "ls", "-q", "--no-trunc", "--filter", "label="+dsv1alpha1.LabelNode+"="+node,
			"--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns, "--filter", "label="+dsv1alpha1.LabelRole+"="+role)
		if err != nil {
			return 0, 0, 0, err
		}
		ids[role] = strings.Fields(out)
	}
	out, err := docker("container", "ls", "-q", "--no-trunc", "--filter", "label="+dsv1alpha1.LabelNode+"="+plainNode(node))
	if err != nil {
		return 0, 0, 0, err
	}
	ids[roleBaseline] = strings.Fields(out)
	mem, err := containerMemory(slices.Concat(ids[dsv1alpha1.RoleHolder], ids[dsv1alpha1.RolePrimary], ids[roleBaseline]))
	if err != nil {
		return 0, 0, 0, err
	}
	mean := func(ids []string) float64 {
		var sum float64
		for _, id := range ids {
			sum += mem[id]
		}
		return sum / float64(max(len(ids), 1))
	}
	return mean(ids[dsv1alpha1.RoleHolder]), mean(ids[dsv1alpha1.RolePrimary]), mean(ids[roleBaseline]), nil
}

// diff is after minus before, by key, leaving out keys that did not change.
func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// describe lists counts by key, e.g. "ListContainers 2, ObserveContainer 100".
func describe(byKey map[string]float64) string {
	if len(byKey) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, byKey[k]))
	}
	return strings.Join(parts, ", ")
}
