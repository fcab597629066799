package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/owndockerd"
)

// The fleet benchmark applies fleetSandboxes session Sandboxes at once to a fleet of Docker daemons of its own
// on this machine (test/internal/owndockerd), one agent each, first with one node holding them all and then with
// three holding a third each, in the same run. Both rounds run on own daemons, so that the storage driver and
// the daemons' settings are the same on either side of the ratio.
const (
	fleetSandboxes = 60
	// fleetLimit bounds the wait for a round's Sandboxes to be Ready; one that is not by then fails the run.
	fleetLimit = 10 * time.Minute
)

// fleetDaemons are the own daemons' names (unique on the machine: the end-to-end specs use others) and each
// one's agent's topology pool, apart from every other agent's on this machine (the bridges of all the daemons
// share the host's routing table).
var fleetDaemons = []struct{ name, pool string }{
	{"bfa", "10.124.0.0/16"}, {"bfb", "10.125.0.0/16"}, {"bfc", "10.126.0.0/16"},
}

// fleetNode names the agent of an own daemon.
func fleetNode(d *owndockerd.Daemon) string { return runNode + "-" + d.Name }

// fleetRound is what one round measured.
type fleetRound struct {
	latencies []time.Duration // apply → Ready of each Sandbox
	allReady  time.Duration   // first apply → last Ready
	perNode   map[string]int  // where the Sandboxes were bound
}

// BenchmarkFleet times apply → Ready of 60 session Sandboxes applied at once by scaleCreators clients to three
// nodes (an own daemon and an agent each, room for 20 each) against the same 60 on one such node (room for
// 60). The machine's cores stay the same: three daemons on one machine measure how the agents spread the
// Sandboxes and work in parallel, not what more hardware would give.
func BenchmarkFleet(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(runDir, "fleet")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	e, err := startControlPlane(dir, runNode+"-fleet", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.stop(); err != nil {
			b.Error(err)
		}
	}()
	daemons := startFleetDaemons(b)

	one, err := e.fleetRound(ctx, dir, daemons[:1], fleetSandboxes)
	if err != nil {
		b.Fatal(err)
	}
	three, err := e.fleetRound(ctx, dir, daemons, fleetSandboxes/len(daemons))
	if err != nil {
		b.Fatal(err)
	}
	spread := ""
	for _, d := range daemons {
		spread += fmt.Sprintf(" %d", three.perNode[fleetNode(d)])
	}
	record(b, group{
		Key: "fleet",
		Title: fmt.Sprintf("Fleet: %d session Sandboxes applied at once by %d clients, unbound, to %d nodes (an own Docker daemon and an agent each, room for %d each) "+
			"on this one %d-core machine: this measures how the agents spread the Sandboxes and work in parallel, not more hardware",
			fleetSandboxes, scaleCreators, len(daemons), fleetSandboxes/len(daemons), runtime.NumCPU()),
		Baseline: fmt.Sprintf("the same %d on one node of the same kind (room for %d), in the same run; the ratio is 3 nodes over 1", fleetSandboxes, fleetSandboxes),
		Figures: []figure{
			{Name: "apply → Ready p50", Unit: "s", Dockside: seconds(percentile(three.latencies, 50)), Baseline: seconds(percentile(one.latencies, 50))},
			{Name: "apply → Ready p95", Unit: "s", Dockside: seconds(percentile(three.latencies, 95)), Baseline: seconds(percentile(one.latencies, 95))},
			{Name: "all Ready", Unit: "s", Dockside: seconds(three.allReady), Baseline: seconds(one.allReady), Note: "Sandboxes per node:" + spread},
		},
	})
}

// startFleetDaemons starts the fleet's own daemons with the benchmark's images and registers their removal,
// which removes whatever is left on them with them.
func startFleetDaemons(b *testing.B) []*owndockerd.Daemon {
	b.Helper()
	if err := owndockerd.ReapLeftovers(b.Logf); err != nil {
		b.Fatal(err)
	}
	var daemons []*owndockerd.Daemon
	for _, fd := range fleetDaemons {
		d, err := owndockerd.Start(fd.name, busybox, holder)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := d.Remove(); err != nil {
				b.Error(err)
			}
		})
		b.Logf("own Docker daemon %s up with %s", d.Name, d.Driver)
		daemons = append(daemons, d)
	}
	return daemons
}

// fleetAgent is the real agent binary driving the own daemon d with the topology pool given in fleetDaemons.
func fleetAgent(d *owndockerd.Daemon) agentCommand {
	pool := ""
	for _, fd := range fleetDaemons {
		if fd.name == d.Name {
			pool = fd.pool
		}
	}
	return func(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd {
		cmd := realAgent(node, kubeconfig, metricsAddr, capacity)
		cmd.Args = append(cmd.Args, d.AgentFlags(pool)...)
		return cmd
	}
}

// fleetRound starts an agent with room for capacity on each of daemons, warms each node up with one Sandbox
// pinned there (not counted), then applies fleetSandboxes unbound Sandboxes at once and times each to Ready.
// It deletes them all, checks that nothing of the nodes is left on their daemons, and stops the agents.
func (e *env) fleetRound(ctx context.Context, dir string, daemons []*owndockerd.Daemon, capacity int) (_ fleetRound, err error) {
	var agents []*agentProcess
	defer func() {
		for _, a := range agents {
			err = errors.Join(err, a.Stop())
		}
		e.agent = nil // stopped: the env's stop must not stop it again
	}()
	for _, d := range daemons {
		a, err := e.startAgent(ctx, dir, fleetNode(d), capacity, fleetAgent(d))
		if err != nil {
			return fleetRound{}, err
		}
		agents = append(agents, a)
	}
	e.agent = agents[0] // whose log a failure shows
	if err := e.warmUpNodes(ctx, daemons); err != nil {
		return fleetRound{}, err
	}

	ns, err := e.namespace(ctx, fmt.Sprintf("fleet%d", len(daemons)))
	if err != nil {
		return fleetRound{}, err
	}
	start := time.Now()
	applied, err := e.createAll(ctx, fleetSandboxes, func(i int) client.Object { return session(ns, fmt.Sprintf("f-%02d", i)) })
	if err != nil {
		return fleetRound{}, err
	}
	waiting, cancel := context.WithDeadline(ctx, start.Add(fleetLimit))
	defer cancel()
	r := fleetRound{latencies: make([]time.Duration, fleetSandboxes), perNode: map[string]int{}}
	var last time.Time
	for i := range fleetSandboxes {
		at, err := e.sandboxes.waitReady(waiting, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("f-%02d", i)})
		if err != nil {
			return fleetRound{}, err
		}
		r.latencies[i] = at.Sub(applied[i])
		if at.After(last) {
			last = at
		}
	}
	r.allReady = last.Sub(start)
	var list dsv1alpha1.SandboxList
	if err := e.k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return fleetRound{}, err
	}
	for _, sbx := range list.Items {
		r.perNode[sbx.Spec.NodeName]++
	}
	if err := e.deleteAll(ctx, ns, 5*time.Minute); err != nil {
		return fleetRound{}, err
	}
	return r, nothingLeftOn(daemons)
}

// warmUpNodes starts and deletes one Sandbox pinned to each node, not counted, so that the figures do not
// include a daemon's first container or an agent's caches filling.
func (e *env) warmUpNodes(ctx context.Context, daemons []*owndockerd.Daemon) error {
	ns, err := e.namespace(ctx, "fleet-warmup")
	if err != nil {
		return err
	}
	_, _, err = timeAll(len(daemons), func(i int) (time.Duration, error) {
		sbx := session(ns, "warmup-"+daemons[i].Name)
		sbx.Spec.NodeName = fleetNode(daemons[i])
		return e.applyAndWait(ctx, sbx)
	})
	return errors.Join(err, e.deleteAll(ctx, ns, 3*time.Minute))
}

// nothingLeftOn fails when anything labelled with a fleet node is still on its daemon once its Sandboxes are
// gone.
func nothingLeftOn(daemons []*owndockerd.Daemon) error {
	var errs []error
	for _, d := range daemons {
		left, err := d.Leftovers(fleetNode(d))
		if err == nil && len(left) > 0 {
			err = fmt.Errorf("labelled Docker objects left on own daemon %s by node %s: %v", d.Name, fleetNode(d), left)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
