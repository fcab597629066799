//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/testutil/memregistry"
)

// A Checkpoint through a registry (docs/design/checkpoints.md, "Checkpoints in a registry") on real Docker: taken on
// node A, restored on node B while A's agent and daemon are down, so that the bytes can only have come from
// the registry, then deleted by A once it is back, which takes its artifact out of the registry.
var _ = Describe("Checkpoints in a registry across a fleet", Label("fleet"), func() {
	It("restores a workspace captured on node A into a Sandbox on node B while A is down, and deleting the Checkpoint removes its artifact", func() {
		reg, err := memregistry.Start()
		Expect(err).NotTo(HaveOccurred())
		// Registered first, so it runs last: the agents stop before their registry does.
		DeferCleanup(reg.Close)
		a, agentA := startRegistryNode("rga", "10.216.0.0/24", reg.Repo())
		b, _ := startRegistryNode("rgb", "10.217.0.0/24", reg.Repo())
		ns := newNamespace("ckreg")
		DeferCleanup(releaseSandboxes, ns)

		By("filling the workspace of a Sandbox on node A with random bytes")
		apply(ns, fleetSandbox("source", a.name))
		waitFor(ns, "sandbox/source", "condition=Ready", 3*time.Minute)
		source := field(ns, "sandbox/source", "{.status.containerID}")
		_, err = a.daemon.docker("exec", source, "dd", "if=/dev/urandom", "of=/workspace/data", "bs=1048576", "count=8")
		Expect(err).NotTo(HaveOccurred())
		want, err := a.daemon.docker("exec", source, "sha256sum", "/workspace/data")
		Expect(err).NotTo(HaveOccurred())

		By("capturing it, which pushes the archive to the registry")
		apply(ns, snapshotManifest("source"))
		waitFor(ns, "checkpoint/snap", "condition=Ready", 3*time.Minute)
		Expect(field(ns, "checkpoint/snap", "{.status.nodeName}")).To(Equal(a.name))
		digest := field(ns, "checkpoint/snap", "{.status.digest}")
		manifest := "manifests/ckpt-" + field(ns, "checkpoint/snap", "{.metadata.uid}")
		Expect(registryStatus(reg, manifest)).To(Equal(http.StatusOK))
		Expect(registryLayers(reg, manifest)).To(Equal([]string{digest}), "the artifact holds the Checkpoint's archive")
		Expect(registryStatus(reg, "blobs/"+digest)).To(Equal(http.StatusOK))

		By("stopping node A's agent and its Docker daemon")
		agentA.stop()
		a.daemon.stop()

		By("restoring the Checkpoint into a Sandbox on node B")
		apply(ns, fleetSandbox("moved", b.name)+"  restoreFrom: snap\n")
		waitFor(ns, "sandbox/moved", "condition=Ready", 3*time.Minute)
		Expect(field(ns, "sandbox/moved", "{.spec.nodeName}")).To(Equal(b.name))
		moved := field(ns, "sandbox/moved", "{.status.containerID}")
		Expect(b.daemon.docker("exec", moved, "sha256sum", "/workspace/data")).To(Equal(want), "the workspace restored on B")

		By("bringing node A back, which deletes the Checkpoint and its artifact")
		a.daemon.restart()
		Expect(agentA.Restart()).To(Succeed())
		_, err = kubectl("delete", "-n", ns, "sandbox", "moved", "source", "--timeout=150s")
		Expect(err).NotTo(HaveOccurred())
		deleteCheckpoint(ns, "snap")
		Expect(registryStatus(reg, manifest)).To(Equal(http.StatusNotFound), "the Checkpoint's manifest left in the registry")
		Expect(registryStatus(reg, "blobs/"+digest)).To(Equal(http.StatusNotFound), "the archive's blob left in the registry")

		By("nothing labelled left on either daemon")
		for _, n := range []fleetNode{a, b} {
			Expect(n.daemon.leftovers(n.name)).To(BeEmpty(), "on %s", n.name)
			Expect(n.daemon.docker("container", "ls", "-aq")).To(BeEmpty(), "containers on %s", n.name)
		}
	})
})

// startRegistryNode starts a Docker daemon of the spec's own and an agent for it keeping Checkpoints in repo
// over plain HTTP (the registry is on loopback), on a node named after the daemon; the agent is returned for the
// spec to stop and restart. Cleanups stop the agent, then the daemon, and remove its dirs.
func startRegistryNode(daemon, topologyPool, repo string) (fleetNode, *agentProcess) {
	GinkgoHelper()
	n := fleetNode{name: node + "-" + daemon, daemon: startDockerd(daemon)}
	proc := startOwnAgent(n.daemon, n.name, topologyPool, fmt.Sprintf("--capacity=%d", fleetCapacity),
		"--checkpoint-registry="+repo, "--checkpoint-registry-plain-http")
	return n, proc
}

// registryGet GETs path (manifests/<reference> or blobs/<digest>) of the registry's repository, through its
// HTTP API on 127.0.0.1.
func registryGet(reg *memregistry.Server, path string) *http.Response {
	GinkgoHelper()
	resp, err := http.Get(reg.URL(path))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(resp.Body.Close)
	return resp
}

// registryStatus is the HTTP status the registry answers a GET of path with.
func registryStatus(reg *memregistry.Server, path string) int {
	GinkgoHelper()
	return registryGet(reg, path).StatusCode
}

// registryLayers lists the layer digests of the manifest at path.
func registryLayers(reg *memregistry.Server, path string) []string {
	GinkgoHelper()
	var m struct {
		Layers []struct{ Digest string } `json:"layers"`
	}
	Expect(json.NewDecoder(registryGet(reg, path).Body).Decode(&m)).To(Succeed())
	var digests []string
	for _, l := range m.Layers {
		digests = append(digests, l.Digest)
	}
	return digests
}
