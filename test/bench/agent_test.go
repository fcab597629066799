package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
	"github.com/dockside-dev/dockside/test/internal/agentproc"
)

// agentProcess is an agent run as a child of the benchmark, so that its memory is its own and reads like
// the production agent's: either the real dockside-agent binary on real Docker, or this test binary run
// again as an agent on the fake driver (see runFakeAgent).
type agentProcess struct {
	*agentproc.Process
	metrics string // URL of its Prometheus endpoint
}

// Environment of this test binary run again as a fake-driver agent.
const (
	fakeAgentNodeEnv     = "DOCKSIDE_BENCH_FAKE_AGENT_NODE"
	fakeAgentMetricsEnv  = "DOCKSIDE_BENCH_FAKE_AGENT_METRICS"
	fakeAgentCapacityEnv = "DOCKSIDE_BENCH_FAKE_AGENT_CAPACITY"
)

// realAgent is the dockside-agent binary as an operator runs it (leader election on, default sweep period
// and workers), with room for capacity Sandboxes and its metrics in plain HTTP on metricsAddr (a loopback
// address, as make run has them). Its allocatable memory, pids and CPU are
// far more than the host's: the density workload's limits and workspaces add up to more than this host has
// (its Sandboxes use little of them), and the benchmarks measure speed, not admission by room.
func realAgent(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd {
	return exec.Command(filepath.Join(agentproc.BinDir(), "dockside-agent"),
		"--node-name="+node, "--kubeconfig="+kubeconfig, "--capacity="+strconv.Itoa(capacity), "--allocatable-memory=1Ti",
		"--image-gc-high-threshold=100", // the images are built here and never pulled back (docs/images.md)
		"--pids-overcommit=1000", "--cpu-overcommit=1000",
		"--metrics-bind-address="+metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=0")
}

// fakeAgent is this test binary run again as an agent with the same defaults as the binary, on the fake
// driver, which is Docker without Docker's own cost: what remains is the agent's and the API server's.
func fakeAgent(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, fakeAgentNodeEnv+"="+node,
		fakeAgentMetricsEnv+"="+metricsAddr, fakeAgentCapacityEnv+"="+strconv.Itoa(capacity))
	return cmd
}

// runFakeAgent is the child side of fakeAgent; it returns when the benchmark stops it with SIGTERM.
func runFakeAgent(node string) error {
	ctrl.SetLogger(zap.New())
	ctx := ctrl.SetupSignalHandler()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	capacity, err := strconv.Atoi(os.Getenv(fakeAgentCapacityEnv))
	if err != nil {
		return err
	}
	driver := fake.New(node)
	driver.AddImage(holder, dd.ImageInfo{})
	driver.AddImage(busybox, dd.ImageInfo{})
	mgr, err := agent.New(ctx, cfg, agent.Options{
		Node: node, Driver: driver, Capacity: capacity, AllocatableMemory: 1 << 40, LeaderElection: true, // as realAgent's
		PidsOvercommit: 1000, CPUOvercommit: 1000,
		MetricsBindAddress: os.Getenv(fakeAgentMetricsEnv), MetricsPlainHTTP: true,
	})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// startAgent starts cmd with its output appended to logPath and waits until its metrics endpoint answers.
func startAgent(ctx context.Context, cmd *exec.Cmd, metricsAddr, logPath string) (*agentProcess, error) {
	p, err := agentproc.Start(cmd, logPath)
	if err != nil {
		return nil, err
	}
	a := &agentProcess{Process: p, metrics: "http://" + metricsAddr + "/metrics"}
	if err := a.waitForMetrics(ctx); err != nil {
		return nil, errors.Join(err, a.Stop())
	}
	return a, nil
}

// waitForMetrics waits up to a minute until the agent's metrics endpoint answers.
func (a *agentProcess) waitForMetrics(ctx context.Context) error {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := a.scrape(ctx); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the agent's metrics never answered: %w\n%s", err, a.LogTail())
		}
		if exited, err := a.Exited(); exited {
			return fmt.Errorf("the agent exited at start: %w\n%s", err, a.LogTail())
		}
	}
}

func (a *agentProcess) scrape(ctx context.Context) (metrics, error) {
	return scrape(ctx, http.DefaultClient, a.metrics)
}

// memory is the agent process's resident set now and at its peak (VmRSS and VmHWM), in bytes.
func (a *agentProcess) memory() (rss, peak float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", a.Pid()))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	scan := bufio.NewScanner(f)
	for scan.Scan() {
		fields := strings.Fields(scan.Text()) // e.g. "VmRSS:", "51234", "kB"
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			peak = kb * 1024
		}
	}
	return rss, peak, scan.Err()
}

// restart starts a killed agent again with the same command line and environment, its output appended to
// the same log, and waits until its metrics endpoint answers. Only one goroutine may kill and restart it.
func (a *agentProcess) restart(ctx context.Context) error {
	if err := a.Restart(); err != nil {
		return err
	}
	return a.waitForMetrics(ctx)
}
