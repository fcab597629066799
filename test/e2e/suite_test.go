//go:build e2e

// Package e2e runs the real agent binary against a real kube-apiserver and the real Docker daemon, and drives it
// the way users do: with kubectl. Each suite run uses a node name of its own, so that what it leaves behind (it
// must leave nothing) is found by label.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/localcluster"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
	"github.com/dockside-dev/dockside/test/internal/loopback"
)

var (
	cp    *localcluster.ControlPlane
	agent *agentProcess
	node  string
	// dataplane is where the suite's agent serves exec, which kube-apiserver proxies to (dataplane_test.go).
	dataplane localcluster.Dataplane
	// agentMetrics is the URL of the suite agent's metrics, plain HTTP on loopback as make run serves them.
	agentMetrics string
	// traces receives the spans of every agent the suite starts (collector_test.go, tracing_test.go).
	traces *collector
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "end to end: agent, kube-apiserver, Docker, kubectl")
}

// controlPlaneStartTimeout replaces envtest's 20 s for etcd and kube-apiserver to come up: on a busy 2-core
// machine kube-apiserver has taken longer (seen at a load average of 30). The variable is envtest's own, and
// the dockside-dev a spec starts inherits it.
const controlPlaneStartTimeout = "2m"

var _ = BeforeSuite(func() {
	Expect(dockerReachable()).To(Succeed())
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		Expect(os.Setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", controlPlaneStartTimeout)).To(Succeed())
	}
	dir := GinkgoT().TempDir()
	traces = startCollector()
	ports, err := loopback.FreePorts(2)
	Expect(err).NotTo(HaveOccurred())
	dataplane = localcluster.Dataplane{Port: int32(ports[0]), CertDir: filepath.Join(dir, "pki")}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", ports[1])
	agentMetrics = "http://" + metricsAddr + "/metrics"
	cp, err = localcluster.Start(localcluster.Options{
		CRDDir:         filepath.Join("..", "..", "config", "crd", "bases"),
		DataDir:        filepath.Join(dir, "etcd"),
		KubeconfigPath: filepath.Join(dir, "kubeconfig"),
		Dataplane:      &dataplane,
	})
	Expect(err).NotTo(HaveOccurred())
	// A shard (hack/test-shards.sh) runs beside another on the same Docker daemon: its letter keeps their nodes apart.
	node = fmt.Sprintf("e2e-%s%d", os.Getenv("TEST_SHARD"), time.Now().UnixNano()%1_000_000)
	peerDir, err := dataplane.PeerCertDir(node)
	Expect(err).NotTo(HaveOccurred())
	agent, err = startAgent(node, cp.Kubeconfig, filepath.Join(dir, "agent.log"),
		fmt.Sprintf("--dataplane-bind-address=127.0.0.1:%d", dataplane.Port), "--dataplane-cert-dir="+dataplane.AgentCertDir(),
		"--dataplane-peer-cert-dir="+peerDir,
		"--metrics-bind-address="+metricsAddr, "--metrics-secure=false")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if cp == nil {
		return
	}
	if agent != nil {
		// Deleting every object lets the agent clean Docker up in order (pools first, so that none refills);
		// then nothing labelled may remain.
		_, _ = kubectl("delete", "sandboxwarmpools,sandboxclaims", "--all", "--all-namespaces")
		_, _ = kubectl("delete", "sandboxes,checkpoints,sandboxservices", "--all", "--all-namespaces", "--wait", "--timeout=120s")
		agent.stop()
	}
	traces.stop() // after the agent, which sends the spans it still holds as it stops
	stopRestartedControlPlane()
	Expect(cp.Stop()).To(Succeed())
	Expect(dockercli.Leftovers(node)).To(BeEmpty(), "labelled Docker resources left behind by node %s", node)
})
