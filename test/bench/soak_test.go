package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

// The soak: create → Ready → delete → gone cycles, several at once, while the agent is SIGKILLed at random
// moments and restarted at once (issue 17), and kube-apiserver is frozen or SIGKILLed and restarted (issue 30;
// the faults are in faults_test.go).
const (
	// soakCycles is how many cycles make bench runs; soakCyclesEnv asks for fewer (or more), for a quick run.
	soakCycles    = 1000
	soakCyclesEnv = "DOCKSIDE_SOAK_CYCLES"
	// soakInFlight is how many cycles run at once: enough to keep the agent busy at every kill, few enough
	// for two loaded cores. Measured on 2 vCPUs at load 7 to 21: 50 cycles in 37 s (12 at once) to 61 s (16);
	// the whole soak in 14 minutes.
	soakInFlight = 16
	// Every soakServiceEvery-th Sandbox has the service web (a topology network of its own); the others
	// have none. Both kinds alternate between network None and Isolated.
	soakServiceEvery = 10
	// A Sandbox not Ready within soakReadyLimit of its create, or not gone within soakGoneLimit of its delete,
	// fails the soak.
	soakReadyLimit = 3 * time.Minute
	soakGoneLimit  = 3 * time.Minute
	// soakDescribeLimit bounds the look at a stuck Sandbox that a failure message holds.
	soakDescribeLimit = time.Minute
	// soakPollEvery is how often Docker is listed for duplicates.
	soakPollEvery = 3 * time.Second
	// soakMaxFailures failed cycles stop the soak from starting more: the agent is broken, and waiting out
	// the limits of a thousand more would say nothing new. It is high enough for the leak and duplicate
	// counts to cover most of the cycles even so.
	soakMaxFailures = 50
	// soakPool is the soak agent's topology pool, apart from the other agents' (see densityPool).
	soakPool = "10.122.0.0/16"
	// soakSweepWait is a little over the agent's sweep period: what is left after the last deletion is
	// counted again once a sweep had its chance to remove it.
	soakSweepWait = 70 * time.Second
)

// soakNode names the soak's agent, which runs on a control plane of its own.
func soakNode() string { return runNode + "-soak" }

// soakAgent is the real agent binary with a topology pool of its own and a checkpoint folder of its own,
// where it keeps the host lock that lets a restarted agent take its Lease over at once.
func soakAgent(dir string) agentCommand {
	return func(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd {
		cmd := realAgent(node, kubeconfig, metricsAddr, capacity)
		cmd.Args = append(cmd.Args, "--topology-pool="+soakPool, "--checkpoint-dir="+filepath.Join(dir, "checkpoints"))
		return cmd
	}
}

// soakCycleCount is $DOCKSIDE_SOAK_CYCLES, else soakCycles.
func soakCycleCount() (int, error) {
	v := os.Getenv(soakCyclesEnv)
	if v == "" {
		return soakCycles, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a number of cycles, at least 1", soakCyclesEnv, v)
	}
	return n, nil
}

// BenchmarkSoak runs soakCycles create → Ready → delete → gone cycles of session Sandboxes, soakInFlight at
// once, under faults at random moments (faults_test.go): the agent SIGKILLed and restarted at once,
// kube-apiserver frozen, kube-apiserver SIGKILLed and started again. Meanwhile Docker is listed every few
// seconds for duplicates (more than one container of one role, topology network or workspace of one Sandbox
// at once); at the end, with every Sandbox deleted and the agent running, what the node still holds in
// Docker is a leak. It reports both, the sessions seen poisoned (none of them runs anything that could
// poison it: a poisoning is the agent's doing), the API writes per Sandbox, and the cycle times. A Sandbox
// stuck (not Ready, or not gone after its delete, within 3 minutes), a poisoning, a leak, a duplicate, or an
// agent that exited by itself fails it, after the figures are recorded.
func BenchmarkSoak(b *testing.B) {
	ctx := context.Background()
	cycles, err := soakCycleCount()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(runDir, "soak")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	e, err := startEnv(ctx, dir, soakNode(), 4*soakInFlight, soakAgent(dir))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.stopClean(); err != nil {
			b.Error(err)
		}
	}()
	ns, err := e.namespace(ctx, "soak")
	if err != nil {
		b.Fatal(err)
	}
	if err := e.k8s.Create(ctx, densityService(ns)); err != nil {
		b.Fatal(err)
	}
	before, err := apiServerMetrics(ctx, e.cfg)
	if err != nil {
		b.Fatal(err)
	}

	seed := time.Now().UnixNano()
	fmt.Printf("soak: %d cycles, node %s, fault seed %d, agent log %s\n", cycles, e.node, seed, e.agent.Log)
	start := time.Now()
	api := newAPIGate()
	watch := watchDuplicates(e.node, soakPollEvery)
	injector := startFaults(e, api, dir, seed)
	run := e.soakCycles(ctx, ns, cycles, api)
	faults, faultErr := injector.stop()
	dups := watch.stop()
	elapsed := time.Since(start)
	after, err := apiServerMetrics(ctx, e.cfg)
	if err != nil {
		b.Fatal(err)
	}
	left, err := listOwned(e.node)
	if err != nil {
		b.Fatal(err)
	}
	leftAfterSweep := left
	if len(left) > 0 {
		time.Sleep(soakSweepWait)
		if leftAfterSweep, err = listOwned(e.node); err != nil {
			b.Fatal(err)
		}
	}

	perSandbox := func(v float64) *float64 { return num(v / float64(max(run.done, 1))) }
	apiWritesPerSandbox := func(group string) *float64 {
		return perSandbox(apiWrites(before, after, injector.countersAtRestarts, group))
	}
	kills, _, killOut := count(faults, agentKill)
	freezes, frozen, longestFreeze := count(faults, apiFreeze)
	restarts, _, restartOut := count(faults, apiRestart)
	record(b, group{
		Key: "soak",
		Title: fmt.Sprintf("Soak, %d create → Ready → delete → gone cycles of session Sandboxes, %d at once (every %dth with the service web, "+
			"half network None, half Isolated), under a fault every %s to %s at random: %d in 10 the agent SIGKILLed and restarted at once, "+
			"%d in 10 kube-apiserver frozen (SIGSTOP) for %s to %s, %d in 10 kube-apiserver SIGKILLed and started again",
			cycles, soakInFlight, soakServiceEvery, soakFaultMin, soakFaultMax, soakAgentKillsIn10, soakFreezesIn10, soakFreezeMin, soakFreezeMax,
			10-soakAgentKillsIn10-soakFreezesIn10),
		Baseline: "none",
		Figures: []figure{
			{Name: "cycles done", Unit: "cycles", Dockside: num(float64(run.done)), Note: fmt.Sprintf("in %s; %d failed", elapsed.Round(time.Second), len(run.failures))},
			{Name: "agent kills (SIGKILL, restarted at once)", Unit: "kills", Dockside: num(float64(kills)),
				Note: fmt.Sprintf("%d faults in all, seed %d; the agent's metrics answered again within %s", len(faults), seed, killOut.Round(time.Millisecond))},
			{Name: "kube-apiserver freezes (SIGSTOP, then SIGCONT)", Unit: "freezes", Dockside: num(float64(freezes)),
				Note: fmt.Sprintf("frozen %s in all, %s at most", frozen.Round(time.Second), longestFreeze.Round(time.Second))},
			{Name: "kube-apiserver restarts (SIGKILL, started again with the same arguments)", Unit: "restarts", Dockside: num(float64(restarts)),
				Note: fmt.Sprintf("/readyz answered again within %s", restartOut.Round(time.Millisecond))},
			{Name: "sessions poisoned (TopologyPoisoned=True seen during their cycle)", Unit: "sessions", Dockside: num(float64(len(run.poisoned))), Goal: "0",
				Note: byReason(run.poisoned)},
			leakFigure("leaked containers", "containers", "container", left, leftAfterSweep),
			leakFigure("leaked networks", "networks", "network", left, leftAfterSweep),
			leakFigure("leaked volumes", "volumes", "volume", left, leftAfterSweep),
			{Name: "duplicates seen (a role of one Sandbox with more than one object at once)", Unit: "duplicates", Dockside: num(float64(len(dups.found))), Goal: "0",
				Note: fmt.Sprintf("most at once of one role: %d; Docker listed %d times, every %s", dups.most, dups.samples, soakPollEvery)},
			{Name: "API writes (dockside.dev) per Sandbox, its create and delete included", Unit: "writes",
				Dockside: apiWritesPerSandbox(dsv1alpha1.GroupVersion.Group)},
			{Name: "API writes (all groups) per Sandbox", Unit: "writes", Dockside: apiWritesPerSandbox(""),
				Note: "Events and the agent's Lease renewals and takeovers included; each kube-apiserver restart's counters added up"},
			{Name: "apply → Ready p50", Unit: "s", Dockside: seconds(percentile(run.ready, 50))},
			{Name: "apply → Ready p95", Unit: "s", Dockside: seconds(percentile(run.ready, 95))},
			{Name: "cycle (create → gone) p50", Unit: "s", Dockside: seconds(percentile(run.cycle, 50))},
			{Name: "cycle (create → gone) p95", Unit: "s", Dockside: seconds(percentile(run.cycle, 95))},
		},
	})

	if faultErr != nil {
		b.Error(faultErr)
	}
	if faultErr != nil || len(run.failures)+len(run.poisoned)+len(dups.found)+len(left) > 0 {
		b.Logf("soak: the faults were %v", faults)
		keepLog(b, e.agent.Log, filepath.Join(os.TempDir(), "dockside-soak-"+e.node+".log"))
	}
	for _, f := range run.failures {
		b.Errorf("soak: %s at %s (%s): %v\n%s", f.sandbox, f.at.Format(time.TimeOnly), sinceFault(faults, f.at), f.err, agentLogLines(e.agent.Log, f.sandbox))
	}
	for _, p := range run.poisoned {
		b.Errorf("soak: %s seen poisoned at %s (%s): %v\n%s", p.sandbox, p.at.Format(time.TimeOnly), sinceFault(faults, p.at), p.err, agentLogLines(e.agent.Log, p.sandbox))
	}
	for _, d := range dups.found {
		b.Errorf("soak: duplicate %s at %s (%s): %v\n%s", d.key, d.at.Format(time.TimeOnly), sinceFault(faults, d.at), d.names, agentLogLines(e.agent.Log, d.sandbox))
	}
	for _, o := range left {
		b.Errorf("soak: %s %s (role %s of Sandbox %q) left in Docker after every Sandbox was deleted; still there after a sweep: %v\n%s",
			o.kind, o.name, o.role, o.sandbox, slices.Contains(leftAfterSweep, o), agentLogLines(e.agent.Log, o.sandbox))
	}
}

// soakRun is what the cycles did.
type soakRun struct {
	done     int
	ready    []time.Duration // create → Ready
	cycle    []time.Duration // create → gone
	failures []soakFailure
	poisoned []soakFailure // when each was first seen poisoned, and why
}

// soakFailure is a cycle whose Sandbox was stuck or poisoned.
type soakFailure struct {
	sandbox string
	at      time.Time
	err     error
}

// byReason counts poisonings by their reason (the start of their message), for a figure's note.
func byReason(poisoned []soakFailure) string {
	counts := map[string]int{}
	for _, p := range poisoned {
		reason, _, _ := strings.Cut(p.err.Error(), ":")
		counts[reason]++
	}
	var parts []string
	for _, reason := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", reason, counts[reason]))
	}
	return strings.Join(parts, ", ")
}

// soakCycles runs n cycles, soakInFlight at once, and stops starting new ones after soakMaxFailures.
func (e *env) soakCycles(ctx context.Context, ns string, n int, api *apiGate) soakRun {
	var (
		mu  sync.Mutex
		run soakRun
		wg  sync.WaitGroup
	)
	next := make(chan int)
	for range soakInFlight {
		wg.Go(func() {
			for i := range next {
				c := e.soakCycle(ctx, ns, i, api)
				mu.Lock()
				run.done++
				if c.err != nil {
					run.failures = append(run.failures, soakFailure{sandbox: soakSandbox(ns, i).Name, at: time.Now(), err: c.err})
				} else {
					run.ready, run.cycle = append(run.ready, c.ready), append(run.cycle, c.cycle)
				}
				if c.poisoned != "" {
					run.poisoned = append(run.poisoned, soakFailure{sandbox: soakSandbox(ns, i).Name, at: c.poisonedAt, err: errors.New(c.poisoned)})
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		mu.Lock()
		failed := len(run.failures)
		mu.Unlock()
		if failed >= soakMaxFailures {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return run
}

// soakCycleResult is what one cycle saw: its times, or why it failed, and a poisoning of its Sandbox.
type soakCycleResult struct {
	ready, cycle time.Duration
	err          error
	poisoned     string // reason and message; "" when none was seen
	poisonedAt   time.Time
}

// soakCycle creates one Sandbox, waits until it is Ready, deletes it and waits until the agent let it go,
// riding out the API server's outages. A Sandbox that did not come Ready is deleted all the same, so that it
// is counted if it leaks.
func (e *env) soakCycle(ctx context.Context, ns string, i int, api *apiGate) (res soakCycleResult) {
	sbx := soakSandbox(ns, i)
	key := client.ObjectKeyFromObject(sbx)
	start := time.Now()
	readyCtx, cancel := context.WithTimeout(ctx, soakReadyLimit)
	defer cancel()
	if err := e.create(readyCtx, api, sbx); err != nil {
		return soakCycleResult{err: err}
	}
	defer func() { res.poisoned, res.poisonedAt = e.sandboxes.poisoning(key) }()
	at, readyErr := e.sandboxes.waitReady(readyCtx, key)
	if readyErr != nil {
		readyErr = fmt.Errorf("%w; as the API server has it: %s", readyErr, e.describeSandbox(ctx, api, sbx))
	}
	goneCtx, cancelGone := context.WithTimeout(ctx, soakGoneLimit)
	defer cancelGone()
	if err := rideOut(goneCtx, api, func() error { return client.IgnoreNotFound(e.k8s.Delete(goneCtx, sbx)) }); err != nil {
		return soakCycleResult{err: errors.Join(readyErr, err)}
	}
	if err := errors.Join(readyErr, e.sandboxes.waitGone(goneCtx, key)); err != nil {
		return soakCycleResult{err: fmt.Errorf("%w (uid %s)", err, sbx.UID)}
	}
	return soakCycleResult{ready: at.Sub(start), cycle: time.Since(start)}
}

// create creates sbx, riding out the API server's outages. An AlreadyExists on a later try is an earlier
// try's create whose answer the outage lost: sbx is then read back.
func (e *env) create(ctx context.Context, api *apiGate, sbx *dsv1alpha1.Sandbox) error {
	tried := false
	return rideOut(ctx, api, func() error {
		err := e.k8s.Create(ctx, sbx)
		if tried && apierrors.IsAlreadyExists(err) {
			return e.k8s.Get(ctx, client.ObjectKeyFromObject(sbx), sbx)
		}
		tried = true
		return err
	})
}

// describeSandbox is what the API server holds of a stuck Sandbox: whether an agent bound and admitted it,
// and its conditions.
func (e *env) describeSandbox(ctx context.Context, api *apiGate, sbx *dsv1alpha1.Sandbox) string {
	ctx, cancel := context.WithTimeout(ctx, soakDescribeLimit)
	defer cancel()
	got := &dsv1alpha1.Sandbox{}
	if err := rideOut(ctx, api, func() error { return e.k8s.Get(ctx, client.ObjectKeyFromObject(sbx), got) }); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("spec.nodeName %q, finalizers %v, phase %q, conditions %s", got.Spec.NodeName, got.Finalizers,
		got.Status.Phase, conditions(got.Status.Conditions))
}

// soakSandbox is the soak's i-th Sandbox: a session, every soakServiceEvery-th with the service web.
func soakSandbox(ns string, i int) *dsv1alpha1.Sandbox {
	sbx := session(ns, fmt.Sprintf("soak-%04d", i))
	alternate := i
	if i%soakServiceEvery == soakServiceEvery-1 {
		sbx.Spec.Services = []string{"web"}
		alternate = i / soakServiceEvery
	}
	sbx.Spec.Network.Mode = dsv1alpha1.NetworkNone
	if alternate%2 == 1 {
		sbx.Spec.Network.Mode = dsv1alpha1.NetworkIsolated
	}
	return sbx
}

// duplicateWatch lists the node's containers, networks and volumes in Docker every few seconds and keeps,
// for each role of each Sandbox, the most objects seen at once.
type duplicateWatch struct {
	quit    chan struct{}
	ended   chan struct{}
	samples int
	most    int
	found   map[string]duplicate // by kind, Sandbox UID and role
}

// duplicate is a role of one Sandbox seen with more than one object at once.
type duplicate struct {
	key, sandbox string
	at           time.Time
	names        []string
}

func watchDuplicates(node string, every time.Duration) *duplicateWatch {
	w := &duplicateWatch{quit: make(chan struct{}), ended: make(chan struct{}), found: map[string]duplicate{}}
	go func() {
		defer close(w.ended)
		for {
			if err := w.sample(node); err == nil {
				w.samples++
			}
			select {
			case <-w.quit:
				return
			case <-time.After(every):
			}
		}
	}()
	return w
}

// owned is one labelled Docker object of the node.
type owned struct {
	kind, uid, role, service, sandbox, name string
}

// ownerFormat prints an object's owner UID, role, service and Sandbox name labels, then its own name.
const ownerFormat = `{{.Label "` + dsv1alpha1.LabelUID + `"}}|{{.Label "` + dsv1alpha1.LabelRole + `"}}|{{.Label "` +
	dsv1alpha1.LabelService + `"}}|{{.Label "` + dsv1alpha1.LabelName + `"}}|`

// listOwned lists the node's containers (running or not), networks and volumes in Docker.
func listOwned(node string) ([]owned, error) {
	filter := "label=" + dsv1alpha1.LabelNode + "=" + node
	var all []owned
	for _, list := range [][]string{
		{"container", "ls", "-a", "--filter", filter, "--format", ownerFormat + "{{.Names}}"},
		{"network", "ls", "--filter", filter, "--format", ownerFormat + "{{.Name}}"},
		{"volume", "ls", "--filter", filter, "--format", ownerFormat + "{{.Name}}"},
	} {
		out, err := dockercli.Run(list...)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Split(line, "|"); len(f) == 5 {
				all = append(all, owned{kind: list[0], uid: f[0], role: f[1], service: f[2], sandbox: f[3], name: f[4]})
			}
		}
	}
	return all, nil
}

// sample lists the node's objects once and notes every role of a Sandbox with more than one.
func (w *duplicateWatch) sample(node string) error {
	at := time.Now()
	all, err := listOwned(node)
	if err != nil {
		return err
	}
	byKey := map[string][]owned{}
	for _, o := range all {
		key := o.kind + " " + o.role + " " + o.service + " of Sandbox " + o.sandbox + " (uid " + o.uid + ")"
		if o.uid == "" {
			key = o.kind + " " + o.name + " of the node" // a shared bridge: one of each name
		}
		byKey[key] = append(byKey[key], o)
	}
	for key, objs := range byKey {
		w.most = max(w.most, len(objs))
		if _, seen := w.found[key]; len(objs) > 1 && !seen {
			d := duplicate{key: key, sandbox: objs[0].sandbox, at: at}
			for _, o := range objs {
				d.names = append(d.names, o.name)
			}
			w.found[key] = d
		}
	}
	return nil
}

func (w *duplicateWatch) stop() *duplicateWatch {
	close(w.quit)
	<-w.ended
	return w
}

// leakFigure counts the objects of kind left after the last deletion, and again after a sweep.
func leakFigure(name, unit, kind string, left, afterSweep []owned) figure {
	count := func(l []owned) int {
		n := 0
		for _, o := range l {
			if o.kind == kind {
				n++
			}
		}
		return n
	}
	f := figure{Name: name + " after every Sandbox was deleted", Unit: unit, Dockside: num(float64(count(left))), Goal: "0"}
	if len(left) > 0 {
		f.Note = fmt.Sprintf("%d still there after a sweep", count(afterSweep))
	}
	return f
}

// keepLog copies the agent's log out of the run's folder, which is removed at the end, for the failures to
// be looked into.
func keepLog(b *testing.B, from, to string) {
	data, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, data, 0o644)
	}
	if err != nil {
		b.Errorf("keeping the agent's log: %v", err)
		return
	}
	b.Logf("soak: the agent's log is kept in %s", to)
}

// agentLogLines are the agent's log lines that mention a Sandbox (by its quoted name), for a failure message.
func agentLogLines(log, sandbox string) string {
	data, err := os.ReadFile(log)
	if err != nil || sandbox == "" {
		return ""
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"`+sandbox+`"`) {
			lines = append(lines, line)
		}
	}
	return "---- agent log lines of " + sandbox + " ----\n" + strings.Join(lines, "\n")
}
