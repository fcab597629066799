package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

// The idle cost benchmark's sizes: the populations it measures one after another, and how long it watches
// each at rest. The default is quick (a few minutes on two cores); docs/performance.md's figures are of
// DOCKSIDE_IDLE_COST_SANDBOXES=100,200 and DOCKSIDE_IDLE_COST_WINDOW=60s.
const (
	idleCostSandboxesEnv = "DOCKSIDE_IDLE_COST_SANDBOXES"
	idleCostWindowEnv    = "DOCKSIDE_IDLE_COST_WINDOW"
	idleCostDefault      = "20"
	idleCostWindowDef    = 30 * time.Second
	// idleCostLimit bounds the wait for a population to be Ready and its containers running.
	idleCostLimit = 15 * time.Minute
	// labelReplayOf marks a baseline container with the role of the Sandbox container it copies.
	labelReplayOf = dsv1alpha1.LabelPrefix + "bench-replay-of"
	// idleCostPool is the agent's topology pool, apart from every other agent's here, as the agent's
	// --topology-pool help asks of agents on one Docker daemon.
	idleCostPool = "10.128.0.0/16"
)

// idleCostAgent is the real agent binary with the idle cost benchmark's own topology pool.
func idleCostAgent(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd {
	cmd := realAgent(node, kubeconfig, metricsAddr, capacity)
	cmd.Args = append(cmd.Args, "--topology-pool="+idleCostPool)
	return cmd
}

// idleCostNode names the idle cost benchmark's agent, which runs on a control plane of its own with room for
// its largest population.
func idleCostNode() string { return runNode + "-idlecost" }

// BenchmarkIdleCost reports what an idle session Sandbox costs the node, in memory and CPU, per Sandbox at
// each population of DOCKSIDE_IDLE_COST_SANDBOXES: Docker's daemons, the containerd shims of its
// containers, the containers' own cgroups (holder and primary apart) and the agent's share. The baseline is
// the same containers made by Docker's API (replay: docker run's create and start, with the configurations
// and volumes the agent made) at the same population, after the Sandboxes are gone; nothing watches them.
func BenchmarkIdleCost(b *testing.B) {
	counts, window, err := idleCostSizes()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	dir := filepath.Join(runDir, "idlecost")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	e, err := startEnv(ctx, dir, idleCostNode(), counts[len(counts)-1], idleCostAgent)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.stopClean(); err != nil {
			b.Error(err)
		}
		if err := dockercli.RemoveLabelled(plainNode(e.node)); err != nil {
			b.Error(err)
		}
	}()
	cli, err := dockerAPI()
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	for _, n := range counts {
		ns, err := e.namespace(ctx, fmt.Sprintf("idle%d", n))
		if err != nil {
			b.Fatal(err)
		}
		sbx, api, err := e.idleSandboxes(ctx, cli, ns, n, window)
		if err != nil {
			b.Fatal(err, "\n", e.agent.LogTail())
		}
		if err := e.deleteAll(ctx, ns, idleCostLimit); err != nil {
			b.Fatal(err)
		}
		plain, err := idlePlain(ctx, api, n, window)
		if err != nil {
			b.Fatal(err)
		}
		if err := dockercli.RemoveLabelled(plainNode(e.node)); err != nil {
			b.Fatal(err)
		}
		record(b, group{
			Key:   fmt.Sprintf("idle-cost-%d", n),
			Title: fmt.Sprintf("Cost of an idle session Sandbox to its node, %d idle at once, over %s at rest", n, window),
			Baseline: fmt.Sprintf("the same %d holders and primaries with their volumes, made by Docker's API (docker run's create and start, with the configurations the agent sent) "+
				"after the Sandboxes are gone; nothing watches them. Network None: no Docker network. Memory is each figure's growth over just before the population, "+
				"CPU the mean over the window; the daemons serve whatever else uses them meanwhile", 2*n),
			Figures: idleCostFigures(sbx, plain),
		})
	}
}

// idleCostSizes reads the populations (ascending) and the window from the environment.
func idleCostSizes() ([]int, time.Duration, error) {
	var counts []int
	spec := os.Getenv(idleCostSandboxesEnv)
	if spec == "" {
		spec = idleCostDefault
	}
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(counts) > 0 && n <= counts[len(counts)-1]) {
			return nil, 0, fmt.Errorf("%s=%q: want ascending positive counts such as 100,200", idleCostSandboxesEnv, spec)
		}
		counts = append(counts, n)
	}
	window := idleCostWindowDef
	if w := os.Getenv(idleCostWindowEnv); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d <= 0 {
			return nil, 0, fmt.Errorf("%s=%q: want a duration such as 60s", idleCostWindowEnv, w)
		}
		window = d
	}
	return counts, window, nil
}

// idleCost is what one population cost at rest, per Sandbox (or per copy of its containers).
type idleCost struct {
	n          int
	memory     hostUse            // growth over just before the population, bytes
	byRole     map[string]float64 // mean cgroup memory of one container, by role (holder, primary), bytes
	cpu        hostUse            // CPU seconds over the window
	window     time.Duration
	containers int
}

// idleSandboxes brings n session Sandboxes up at once in ns, waits until all are Ready and their holders
// run, lets them settle, and measures them at rest; it returns the cost and a replay of one Sandbox's holder
// and primary for the baseline.
func (e *env) idleSandboxes(ctx context.Context, cli *client.Client, ns string, n int, window time.Duration) (idleCost, *replay, error) {
	before := e.hostUseIn(ns)
	ctx, cancel := context.WithTimeout(ctx, idleCostLimit)
	defer cancel()
	if _, err := e.createAll(ctx, n, func(i int) ctrlclient.Object { return session(ns, fmt.Sprintf("idle-%03d", i)) }); err != nil {
		return idleCost{}, nil, err
	}
	for i := range n {
		if _, err := e.sandboxes.waitReady(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: fmt.Sprintf("idle-%03d", i)}); err != nil {
			return idleCost{}, nil, err
		}
	}
	if err := waitAllRunning(ctx, cli, e.node, ns, 2*n); err != nil {
		return idleCost{}, nil, err
	}
	api, err := newReplay(ctx, cli, e.node, ns, "idle-000", dsv1alpha1.RoleHolder, dsv1alpha1.RolePrimary)
	if err != nil {
		return idleCost{}, nil, err
	}
	time.Sleep(settle)
	ids, err := containerIDs(dsv1alpha1.LabelNode+"="+e.node, dsv1alpha1.LabelNamespace+"="+ns)
	if err != nil {
		return idleCost{}, nil, err
	}
	cost, err := atRest(ids, e.agent.Pid(), before, window, func(role string) ([]string, error) {
		return containerIDs(dsv1alpha1.LabelNode+"="+e.node, dsv1alpha1.LabelNamespace+"="+ns, dsv1alpha1.LabelRole+"="+role)
	})
	cost.n = n
	return cost, api, err
}

// hostUseIn is hostUse(ns) before anything of ns exists: only the daemons and the agent count.
func (e *env) hostUseIn(ns string) hostUse {
	u, err := e.hostUse(ns)
	if err != nil {
		return hostUseOf(nil, e.agent.Pid(), memoryMeter)
	}
	return u
}

// idlePlain makes n copies of the replay's containers from scaleCreators workers, lets them settle, and
// measures them at rest as idleSandboxes does.
func idlePlain(ctx context.Context, api *replay, n int, window time.Duration) (idleCost, error) {
	before := hostUseOf(nil, 0, memoryMeter)
	next := make(chan int)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for range scaleCreators {
		wg.Go(func() {
			for i := range next {
				errs[i] = api.run(ctx, i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return idleCost{}, err
		}
	}
	time.Sleep(settle)
	ids, err := containerIDs(dsv1alpha1.LabelNode + "=" + api.node)
	if err != nil {
		return idleCost{}, err
	}
	cost, err := atRest(ids, 0, before, window, func(role string) ([]string, error) {
		return containerIDs(dsv1alpha1.LabelNode+"="+api.node, labelReplayOf+"="+role)
	})
	cost.n = n
	return cost, err
}

// atRest measures the containers ids and the agent (none when 0) over window: their memory's growth over
// before, the mean memory of one container by role (roleIDs lists a role's), and the CPU time spent.
func atRest(ids []string, agent int, before hostUse, window time.Duration, roleIDs func(role string) ([]string, error)) (idleCost, error) {
	c := idleCost{window: window, containers: len(ids), byRole: map[string]float64{}}
	start := hostUseOf(ids, agent, cpuMeter)
	time.Sleep(window)
	c.cpu = hostUseOf(ids, agent, cpuMeter).since(start)
	c.memory = hostUseOf(ids, agent, memoryMeter).since(before)
	for _, role := range []string{dsv1alpha1.RoleHolder, dsv1alpha1.RolePrimary} {
		ids, err := roleIDs(role)
		if err != nil {
			return c, err
		}
		var sum float64
		for _, id := range ids {
			if used := cgroupMemory(id); used >= 0 {
				sum += used
			}
		}
		c.byRole[role] = sum / float64(max(len(ids), 1))
	}
	return c, nil
}

// idleCostFigures are a population's figures per Sandbox, Dockside against its baseline.
func idleCostFigures(d, p idleCost) []figure {
	mem := func(name string, dv, pv float64, n int) figure {
		if dv < 0 || pv < 0 {
			return notMeasured(name, "MiB", "not readable on this host")
		}
		return figure{Name: name, Unit: "MiB", Dockside: num(dv / float64(n) / mib), Baseline: num(pv / float64(n) / mib)}
	}
	cpu := func(name string, dv, pv float64) figure {
		if dv < 0 || pv < 0 {
			return notMeasured(name, "millicores", "not readable on this host")
		}
		return figure{Name: name, Unit: "millicores", Dockside: num(dv / d.window.Seconds() / float64(d.n) * 1000),
			Baseline: num(pv / p.window.Seconds() / float64(p.n) * 1000)}
	}
	return []figure{
		mem("memory per Sandbox, all counted below", d.memory.total(), p.memory.total(), d.n),
		mem("dockerd and containerd (proportional set size)", d.memory.daemon, p.memory.daemon, d.n),
		mem("containerd shims, two per Sandbox (proportional set size)", d.memory.shims, p.memory.shims, d.n),
		mem("charged to its containers' cgroups", d.memory.containers, p.memory.containers, d.n),
		mem("holder container's cgroup, mean", d.byRole[dsv1alpha1.RoleHolder], p.byRole[dsv1alpha1.RoleHolder], 1),
		mem("primary container's cgroup, mean", d.byRole[dsv1alpha1.RolePrimary], p.byRole[dsv1alpha1.RolePrimary], 1),
		{Name: "the agent's share (proportional set size growth)", Unit: "MiB", Dockside: num(d.memory.agent / float64(d.n) / mib), Baseline: num(0)},
		cpu("CPU per Sandbox, all counted below", d.cpu.total(), p.cpu.total()),
		cpu("dockerd and containerd", d.cpu.daemon, p.cpu.daemon),
		cpu("containerd shims", d.cpu.shims, p.cpu.shims),
		cpu("its containers' cgroups", d.cpu.containers, p.cpu.containers),
		{Name: "the agent's share", Unit: "millicores", Dockside: num(d.cpu.agent / d.window.Seconds() / float64(d.n) * 1000), Baseline: num(0)},
		{Name: "containers at rest", Unit: "containers", Dockside: num(float64(d.containers)), Baseline: num(float64(p.containers))},
	}
}
