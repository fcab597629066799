package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

// The density benchmark's population, that of the end-to-end density spec at full size: session Sandboxes
// without services (half network None, half Isolated) and Sandboxes with the one service web (half each
// again). The 40 topologies with a service need 40 bridges, more than Docker's default pools hold (about
// 30), so they only fit on subnets from the agent's own pool. The end-to-end spec checks isolation and
// subnets on a smaller population; this one is for the figures.
const (
	densitySoloPerMode = 100
	densityPairPerMode = 20
	// densityLimit bounds the wait for all of them to be Ready; one that is not by then fails the benchmark.
	densityLimit = 15 * time.Minute
	// densityPool is the agent's topology pool, apart from the shared agent's (the default one), as the
	// agent's --topology-pool help asks of agents on one Docker daemon.
	densityPool = "10.121.0.0/16"
)

// densityNode names the density benchmark's agent, which runs on a control plane of its own.
func densityNode() string { return runNode + "-density" }

// densityAgent is the real agent binary with the density benchmark's own topology pool.
func densityAgent(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd {
	cmd := realAgent(node, kubeconfig, metricsAddr, capacity)
	cmd.Args = append(cmd.Args, "--topology-pool="+densityPool)
	return cmd
}

// BenchmarkDensity brings 200 Sandboxes without services and 40 with one up at once on this host, created
// by scaleCreators clients as a GitOps burst would, and reports the time until all are Ready and what
// each costs the host once they idle: Docker's daemons, the containerd shims, the agent, and the
// Sandboxes' own containers. Then it deletes them all, timed, and starts the same containers with the
// Docker CLI as the baseline (densityByHand).
func BenchmarkDensity(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(runDir, "density")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	sandboxes := densitySandboxes()
	e, err := startEnv(ctx, dir, densityNode(), len(sandboxes), densityAgent)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.stopClean(); err != nil {
			b.Error(err)
		}
	}()
	ns, err := e.namespace(ctx, "density")
	if err != nil {
		b.Fatal(err)
	}
	before, err := e.hostUse(ns)
	if err != nil {
		b.Fatal(err)
	}
	if err := e.k8s.Create(ctx, densityService(ns)); err != nil {
		b.Fatal(err)
	}

	start := time.Now()
	applied, err := e.createAll(ctx, len(sandboxes), func(i int) client.Object {
		sbx := sandboxes[i].DeepCopy()
		sbx.Namespace = ns
		return sbx
	})
	if err != nil {
		b.Fatal(err)
	}
	createdIn := time.Since(start)
	waiting, cancel := context.WithDeadline(ctx, start.Add(densityLimit))
	defer cancel()
	latencies := make([]time.Duration, len(sandboxes))
	var last time.Time
	for i, sbx := range sandboxes {
		at, err := e.sandboxes.waitReady(waiting, client.ObjectKey{Namespace: ns, Name: sbx.Name})
		if err != nil {
			b.Fatal(err, "\n", e.agent.LogTail())
		}
		latencies[i] = at.Sub(applied[i])
		if at.After(last) {
			last = at
		}
	}
	time.Sleep(settle) // the last status writes and events of start-up pass; then the Sandboxes idle
	after, err := e.hostUse(ns)
	if err != nil {
		b.Fatal(err)
	}
	deleted, err := timed(func() error { return e.deleteAll(ctx, ns, 10*time.Minute) })
	if err != nil {
		b.Fatal(err)
	}

	// The baseline after the Dockside round, so that the memory figures above see none of it: the same
	// containers by hand, then removed by label (containers, then networks and volumes), timed as well.
	defer func() {
		if err := dockercli.RemoveLabelled(plainNode(e.node)); err != nil {
			b.Error(err)
		}
	}()
	byHand, err := densityByHand(e.node, sandboxes)
	if err != nil {
		b.Fatal(err)
	}
	removed, err := timed(func() error { return dockercli.RemoveLabelled(plainNode(e.node)) })
	if err != nil {
		b.Fatal(err)
	}

	record(b, group{
		Key: "density",
		Title: fmt.Sprintf("Density, %d Sandboxes without services and %d with one (half network None, half Isolated) created at once by %d clients",
			2*densitySoloPerMode, 2*densityPairPerMode, scaleCreators),
		Baseline: fmt.Sprintf("the Docker CLI from %d workers, after the Dockside round, starting what the agent builds (a tmpfs volume, a holder and the primary each; "+
			"for those with a service an internal bridge of their own and the service, ready, first; the Isolated without one on a shared internal bridge, traffic between containers off), "+
			"to the last container running; each memory figure is the host's growth over what it spent before the Sandboxes", scaleCreators),
		Figures: append([]figure{
			{Name: "all created (API server accepted)", Unit: "s", Dockside: seconds(createdIn)},
			{Name: "all Ready", Unit: "s", Dockside: seconds(last.Sub(start)), Baseline: seconds(byHand), Goal: "≤ 1.5x the Docker CLI"},
			{Name: "apply → Ready p50", Unit: "s", Dockside: seconds(percentile(latencies, 50))},
			{Name: "apply → Ready p95", Unit: "s", Dockside: seconds(percentile(latencies, 95))},
		}, append(perSandboxMemory(before, after, len(sandboxes)),
			figure{Name: "all deleted (finalizers released)", Unit: "s", Dockside: seconds(deleted), Baseline: seconds(removed),
				Note: "baseline: docker rm -f of all the containers, then the networks and volumes"})...),
	})
}

// densitySandboxes are the benchmark's Sandboxes, without a namespace.
func densitySandboxes() []*dsv1alpha1.Sandbox {
	var out []*dsv1alpha1.Sandbox
	add := func(name string, mode dsv1alpha1.NetworkMode, services []string) {
		sbx := session("", name)
		sbx.Spec.Network.Mode, sbx.Spec.Services = mode, services
		out = append(out, sbx)
	}
	for i := range densitySoloPerMode {
		add(fmt.Sprintf("solo-none-%03d", i), dsv1alpha1.NetworkNone, nil)
		add(fmt.Sprintf("solo-iso-%03d", i), dsv1alpha1.NetworkIsolated, nil)
	}
	for i := range densityPairPerMode {
		add(fmt.Sprintf("pair-none-%02d", i), dsv1alpha1.NetworkNone, []string{"web"})
		add(fmt.Sprintf("pair-iso-%02d", i), dsv1alpha1.NetworkIsolated, []string{"web"})
	}
	return out
}

// densityService is the service web of the end-to-end density spec: httpd, ready once it answers. Its
// checks are unhurried, since every check is a docker exec and 40 services checked every second would load
// the daemon on two cores more than the Sandboxes themselves do.
func densityService(ns string) *dsv1alpha1.SandboxService {
	return &dsv1alpha1.SandboxService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: dsv1alpha1.SandboxServiceSpec{
			Image:   busybox,
			Command: []string{"sh", "-c", "echo ok > /tmp/index.html && exec httpd -f -p 8080 -h /tmp"},
			Readiness: &dsv1alpha1.Readiness{
				Command:       []string{"wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8080/"},
				PeriodSeconds: 10, TimeoutSeconds: 10, FailureThreshold: 12,
			},
		},
	}
}
