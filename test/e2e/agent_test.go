//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/test/internal/agentproc"
)

// agentProcess is the real dockside-agent binary, run as a child of the test.
type agentProcess struct {
	*agentproc.Process
	checkpoints string // the node's checkpoint store, next to the log
}

// startAgent starts the agent for node, sending its spans to the suite's collector; extra flags come last, so
// they override the suite's defaults (an agent on a daemon of the test's own passes --docker-host and the like).
func startAgent(node, kubeconfig, logPath string, extra ...string) (*agentProcess, error) {
	checkpoints := filepath.Join(filepath.Dir(logPath), "checkpoints")
	cmd := exec.Command(filepath.Join(agentproc.BinDir(), "dockside-agent"),
		"--node-name="+node,
		"--capacity=100", // the density spec runs 60 Sandboxes at once
		// ... holding 60 GiB of memory limits and workspaces, more than this host has: the suite tests other
		// things than admission by memory (the integration tier does), and its Sandboxes use little of it.
		"--allocatable-memory=1Ti",
		// Likewise their CPU limits: the density spec's 60 primaries and 12 services ask more than the 64 CPUs
		// the default overcommit makes of 2 (room by pids and CPU is tested in the integration tier).
		"--cpu-overcommit=1000",
		// This machine's images are built here and never pulled back: image garbage collection must not take
		// them, nor other suites' (it is tested on images of a test's own, test/integration/dockerdriver).
		"--image-gc-high-threshold=100",
		"--checkpoint-dir="+checkpoints,
		"--kubeconfig="+kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		// The suite's "internet" is a server of the test's own on the host's loopback (egress_test.go): no
		// packet leaves the machine. The proxy refuses loopback by default; this range makes that one server
		// reachable, and 127.0.0.2 stays a forbidden address.
		"--egress-permit=127.0.0.1/32",
	)
	cmd.Args = append(cmd.Args, extra...)
	cmd.Env = append(os.Environ(), traces.env()...)
	p, err := agentproc.Start(cmd, logPath)
	if err != nil {
		return nil, err
	}
	a := &agentProcess{Process: p, checkpoints: filepath.Join(checkpoints, node)}
	noteAgentLog(logPath)
	DeferCleanup(a.printLogOnFailure)
	return a, nil
}

// stop asks the agent to exit as a person would (SIGTERM), failing the spec if it has to be killed.
func (a *agentProcess) stop() {
	GinkgoHelper()
	Expect(a.Stop()).To(Succeed())
}

func (a *agentProcess) printLogOnFailure() {
	if CurrentSpecReport().Failed() {
		if data, err := os.ReadFile(a.Log); err == nil {
			GinkgoWriter.Printf("---- agent log ----\n%s\n", data)
		}
	}
}
