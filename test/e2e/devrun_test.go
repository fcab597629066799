//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dockside-dev/dockside/test/internal/agentproc"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// processesMentioning lists the pids whose command line contains s.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

var _ = Describe("make run's process (dockside-dev)", func() {
	It("starts the control plane and the agent, and Ctrl-C leaves no process behind", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		kubeconfig := filepath.Join(dir, "kubeconfig")
		run := exec.Command(filepath.Join(agentproc.BinDir(), "dockside-dev"),
			"-data-dir", filepath.Join(dir, "etcd"), "-kubeconfig", kubeconfig,
			"-pid-file", filepath.Join(dir, "run.pids"), "-crds", filepath.Join("..", "..", "config", "crd", "bases"),
			"--", filepath.Join(agentproc.BinDir(), "dockside-agent"), "--node-name="+node+"-dev", "--kubeconfig="+kubeconfig,
			"--checkpoint-dir="+filepath.Join(dir, "checkpoints"), "--image-gc-high-threshold=100") // as make run
		var out strings.Builder
		run.Stdout, run.Stderr = &out, &out
		Expect(run.Start()).To(Succeed())
		exited := make(chan error, 1)
		go func() { exited <- run.Wait() }()

		// Its control plane has controlPlaneStartTimeout to come up, then the CRDs are installed.
		Eventually(func() string { return out.String() }, 3*time.Minute, 200*time.Millisecond).
			Should(ContainSubstring("export KUBECONFIG=" + kubeconfig))
		Eventually(func() error {
			return exec.CommandContext(ctx, cp.KubectlPath, "--kubeconfig="+kubeconfig, "get", "crd", "sandboxes.dockside.dev").Run()
		}, 30*time.Second, 500*time.Millisecond).Should(Succeed())
		recorded, err := os.ReadFile(filepath.Join(dir, "run.pids"))
		Expect(err).NotTo(HaveOccurred())
		var pids []string
		for _, line := range strings.Split(strings.TrimSpace(string(recorded)), "\n") {
			pids = append(pids, strings.Fields(line)[0])
		}
		// dockside-dev, etcd and kube-apiserver, then the agent once it started (the file is written again then).
		Expect(len(pids)).To(BeNumerically(">=", 3), "dockside-dev, etcd and kube-apiserver: %v", pids)
		Eventually(func() []string { return processesMentioning("--node-name=" + node + "-dev") }, 30*time.Second).
			ShouldNot(BeEmpty(), "the agent runs")

		Expect(run.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(exited, 60*time.Second).Should(Receive(BeNil()), out.String())
		for _, pid := range pids {
			Expect(filepath.Join("/proc", pid)).NotTo(BeADirectory(), "process %s was left behind:\n%s", pid, out.String())
		}
		Expect(processesMentioning(dir)).To(BeEmpty(), "processes left behind:\n%s", out.String())
		Expect(processesMentioning("--node-name="+node+"-dev")).To(BeEmpty(), "the agent was left behind")

		// The suite's agent still runs and guards the host: the second agent's exit must not take its table away.
		table, err := exec.Command("nft", "list", "table", "inet", "dockside").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "the suite agent's host firewall table is gone after another agent stopped: %s", table)
	})
})
