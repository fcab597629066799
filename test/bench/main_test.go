// Package bench measures Dockside against plain Docker on the machine it runs on: how fast a Sandbox comes
// up (alone and behind a service), what idle Sandboxes cost (Docker calls, API writes, memory and CPU), what 240
// Sandboxes at once cost the host on real Docker, how the agent copes with a thousand Sandboxes on the fake
// driver, how fast a deleted Execution's container is killed, how fast a workspace is checkpointed and
// restored, how fast a Checkpoint moves between two nodes through an OCI registry, how 60 Sandboxes come up on
// three nodes against one, and whether a thousand create/delete cycles under an agent killed at random leak or
// duplicate anything in Docker. Each figure sits next to a baseline measured in the same run where there is one.
//
// Run it with `make bench`: it prints one Markdown table and writes the same figures, with the machine and the
// commit, to docs/bench-results.json, from which `make perfdoc` makes docs/performance.md. These are benchmarks, not timed tests: they never fail on a
// number, only when the thing under test breaks (a Sandbox that never comes Ready, a restore that loses
// bytes, anything left behind in Docker).
package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockside-dev/dockside/test/bench/report"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

var (
	// runNode names this run's agent; everything the run creates in Docker carries it as a label.
	runNode string
	runDir  string
	// shared is the control plane and real agent that the Docker benchmarks share (started by dockerEnv).
	shared struct {
		once sync.Once
		env  *env
		err  error
	}
)

func TestMain(m *testing.M) {
	if node := os.Getenv(fakeAgentNodeEnv); node != "" {
		if err := runFakeAgent(node); err != nil {
			fmt.Fprintln(os.Stderr, "fake agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	flag.Parse()
	// The benchmark's own watch needs no log; the agents log to their own files.
	ctrl.SetLogger(logr.Discard())
	if flag.Lookup("test.bench").Value.String() == "" {
		os.Exit(m.Run()) // no benchmark asked for: nothing to start
	}
	os.Exit(benchmark(m))
}

// benchmark runs the benchmarks, tears down what they share, checks that nothing labelled is left in
// Docker, and reports.
func benchmark(m *testing.M) int {
	started := time.Now()
	runNode = fmt.Sprintf("bench-%d", started.UnixNano()%1_000_000_000)
	var err error
	if runDir, err = os.MkdirTemp("", "dockside-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(runDir)
	host := describeMachine()

	code := m.Run()
	var failures []string
	if code != 0 {
		failures = append(failures, "a benchmark failed: see its output")
	}
	if shared.env != nil {
		if err := shared.env.stopClean(); err != nil {
			failures = append(failures, err.Error())
		}
	}
	for _, node := range []string{runNode, plainNode(runNode), tracedNode(), densityNode(), soakNode(), registryNode("a"), registryNode("b"), plainNode(registryNode("a")), idleCostNode(), plainNode(idleCostNode())} {
		if err := checkNothingLeft(node); err != nil {
			failures = append(failures, err.Error())
		}
	}

	host.LoadAvgEnd = loadAverage()
	fmt.Printf("\nDockside benchmarks, node %s: %d CPUs, %.0f MiB, Docker %s, load average %s at the start and %s at the end\n\n",
		runNode, host.CPUs, host.MemoryMiB, host.Docker, host.LoadAvgStart, host.LoadAvgEnd)
	report.WriteTable(os.Stdout, results.groups)
	path := resultsPath()
	if err := report.Write(path, report.Report{
		Command: "make bench", Commit: gitCommit(), Started: started, Seconds: time.Since(started).Seconds(),
		Machine: host, Failures: failures, Groups: results.groups,
	}); err != nil {
		failures = append(failures, err.Error())
	}
	fmt.Printf("\nwritten to %s in %s\n", path, time.Since(started).Round(time.Second))
	if len(failures) > 0 {
		fmt.Fprintln(os.Stderr, "FAILED:\n"+strings.Join(failures, "\n"))
		return 1
	}
	return 0
}

// dockerEnv is the control plane and the real agent binary on this machine's Docker, started once and
// shared by the Docker benchmarks, with room for the idle benchmark's Sandboxes.
func dockerEnv(b *testing.B) *env {
	b.Helper()
	shared.once.Do(func() {
		dir := filepath.Join(runDir, "docker")
		if shared.err = os.MkdirAll(dir, 0o700); shared.err != nil {
			return
		}
		if shared.env, shared.err = startServingEnv(context.Background(), dir, runNode, 64); shared.err == nil {
			shared.err = shared.env.warmUp()
		}
	})
	if shared.err != nil {
		b.Fatal(shared.err)
	}
	return shared.env
}

// warmUp starts and deletes one Sandbox and one plain container, not counted, so that the first figures
// do not include the agent's caches filling or Docker loading the image for the first time.
func (e *env) warmUp() error {
	ctx := context.Background()
	ns, err := e.namespace(ctx, "warmup")
	if err != nil {
		return err
	}
	if _, err := e.applyAndWait(ctx, session(ns, "warmup")); err != nil {
		return err
	}
	if _, err := dockerRun(runArgs(e.node, "none", busybox)); err != nil {
		return err
	}
	return errors.Join(e.deleteAll(ctx, ns, 3*time.Minute), dockercli.RemoveLabelled(plainNode(e.node)))
}

// stopClean deletes whatever the benchmarks left in the API server (the agent cleans Docker up behind it),
// then stops the agent and the control plane.
func (e *env) stopClean() error {
	var errs []error
	for _, ns := range e.namespaces {
		errs = append(errs, e.deleteAll(context.Background(), ns, 3*time.Minute))
	}
	return errors.Join(append(errs, e.stop())...)
}

// checkNothingLeft fails when anything labelled with node is still in Docker, and removes it so that a
// failed run leaves nothing behind either.
func checkNothingLeft(node string) error {
	left, err := dockercli.Leftovers(node)
	if err != nil || len(left) == 0 {
		return err
	}
	return errors.Join(fmt.Errorf("labelled Docker objects left behind by node %s: %v", node, left), dockercli.RemoveLabelled(node))
}

// resultsPath is $BENCH_RESULTS (make bench: docs/bench-results.json), else bench-results.json at the
// repository root, which git ignores, so that a run of a few benchmarks never stands in for a full run.
func resultsPath() string {
	if p := os.Getenv("BENCH_RESULTS"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "bench-results.json")
}

// machine is what the figures were measured on.
type machine = report.Machine

// gitCommit names the tree the run measured: a commit, "-dirty" when the tree had changes.
func gitCommit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=7").Output()
	if err != nil {
		return "unknown: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	m.Docker, _ = docker("version", "--format", "{{.Server.Version}} (API {{.Server.APIVersion}})")
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	m.LoadAvgStart = loadAverage()
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	var kb float64
	if _, err := fmt.Sscan(procField("/proc/meminfo", "MemTotal"), &kb); err == nil {
		m.MemoryMiB = kb / 1024
	}
	return m
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// procField is the value of the first "key: value" line of a /proc file with that key.
func procField(path, key string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
