//go:build e2e

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

var _ = Describe("A warm pool with scope Node on a fleet", Label("fleet", "pools"), func() {
	It("keeps its replicas on each node, each started on its own node's daemon, and leaves nothing when it goes", func() {
		a, b, ns := startFleetOfTwo([2]string{"pna", "pnb"}, [2]string{"10.220.0.0/24", "10.221.0.0/24"}, "pernode")

		apply(ns, perNodePoolManifests)
		Eventually(boundPerNode).WithArguments(ns).WithTimeout(3*time.Minute).WithPolling(time.Second).
			Should(Equal(map[string]int{a.name: 1, b.name: 1}), "one warm Sandbox bound to each node")
		waitFor(ns, "sandboxwarmpool/each", "condition=Ready", 3*time.Minute)
		Expect(field(ns, "sandboxwarmpool/each", "{.status.availableReplicas}")).To(Equal("2"))
		for _, n := range []fleetNode{a, b} {
			for _, name := range admittedOn(ns, n.name) {
				Expect(rolesOn(n.daemon, n.name, ns, name)).To(HaveKeyWithValue(dsv1alpha1.RolePrimary, HaveLen(1)), "%s on %s", name, n.name)
			}
		}

		By("a claim takes a warm one, and its node makes another")
		apply(ns, claimManifest("task", "each"))
		waitFor(ns, "sandboxclaim/task", "condition=Ready", time.Minute)
		Expect(field(ns, "sandboxclaim/task", "{.status.start}")).To(Equal("Warm"))
		held := field(ns, "sandboxclaim/task", "{.status.sandboxName}")
		Eventually(boundPerNode).WithArguments(ns).WithTimeout(3 * time.Minute).WithPolling(time.Second).
			Should(Equal(map[string]int{a.name: 1 + onNode(ns, held, a.name), b.name: 1 + onNode(ns, held, b.name)}))

		By("deleting the pool and the claim leaves nothing on either daemon")
		_, err := kubectl("delete", "-n", ns, "sandboxwarmpool/each", "sandboxclaim/task")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return field(ns, "sandboxes", "{.items[*].metadata.name}") }, 2*time.Minute, time.Second).Should(BeEmpty())
		for _, n := range []fleetNode{a, b} {
			Expect(n.daemon.leftovers(n.name)).To(BeEmpty(), "on %s", n.name)
		}
	})
})

// onNode is 1 when Sandbox name of ns is bound to nodeName, else 0.
func onNode(ns, name, nodeName string) int {
	GinkgoHelper()
	if field(ns, "sandbox/"+name, "{.spec.nodeName}") == nodeName {
		return 1
	}
	return 0
}

// perNodePoolManifests is the shell template and a pool of one of it on each node.
const perNodePoolManifests = shellTemplateManifest + `---
apiVersion: dockside.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: each
spec:
  templateRef: {name: shell}
  replicas: 1
  scope: Node
`
