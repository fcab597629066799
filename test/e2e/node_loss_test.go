//go:build e2e

package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// nodeLostAfter is the agents' --node-lost-after in this spec: short, yet longer than the Lease's 15 s.
const nodeLostAfter = "20s"

var _ = Describe("A lost node", Label("fleet"), func() {
	It("has its Sandboxes marked NodeLost while its agent is killed, leaves the other node's alone, and recovers when the agent is back", func() {
		pauseSuiteAgent()
		a := fleetNode{name: node + "-nla", daemon: startDockerd("nla")}
		startOwnAgent(a.daemon, a.name, "10.216.0.0/24", "--node-lost-after="+nodeLostAfter)
		b := fleetNode{name: node + "-nlb", daemon: startDockerd("nlb")}
		agentB := startOwnAgent(b.daemon, b.name, "10.217.0.0/24", "--node-lost-after="+nodeLostAfter)
		ns := newNamespace("nodeloss")
		DeferCleanup(releaseSandboxes, ns)

		apply(ns, fleetSandbox("on-a", a.name)+fleetSandbox("on-b", b.name))
		waitFor(ns, "sandbox/on-a", "condition=Ready", 3*time.Minute)
		waitFor(ns, "sandbox/on-b", "condition=Ready", 3*time.Minute)
		running := func(d *ownDaemon) []string {
			out, err := d.docker("container", "ls", "-q", "--no-trunc", "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns)
			Expect(err).NotTo(HaveOccurred())
			return strings.Fields(out)
		}
		// A session's workspace holder comes on the pass after Ready: the containers are taken once both the
		// primary and the holder run.
		Eventually(running).WithArguments(a.daemon).WithTimeout(time.Minute).WithPolling(time.Second).Should(HaveLen(2))
		onA := running(a.daemon)

		By("killing node B's agent, which cannot release its Lease")
		agentB.Kill()
		restarted := false
		DeferCleanup(func() { // runs before the agent's stop, which needs a live agent
			if !restarted {
				Expect(agentB.Restart()).To(Succeed())
			}
		})
		killed := time.Now()
		waitFor(ns, "sandbox/on-b", `jsonpath={.status.conditions[?(@.type=="NodeLost")].reason}=`+dsv1alpha1.ReasonLeaseExpired, 2*time.Minute)
		GinkgoWriter.Printf("NodeLost %s after the kill (--node-lost-after %s)\n", time.Since(killed).Round(time.Second), nodeLostAfter)
		Expect(field(ns, "sandbox/on-b", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("Unknown"))
		Expect(field(ns, "sandbox/on-b", `{.status.conditions[?(@.type=="Reconciling")].status}`)).To(Equal("True"), "kstatus: InProgress")
		Expect(field(ns, "sandbox/on-b", `{.status.conditions[?(@.type=="NodeLost")].message}`)).To(ContainSubstring("node " + b.name))
		_, err := kubectl("wait", "-n", ns, "sandbox/on-b", "--for=condition=Ready", "--timeout=3s")
		Expect(err).To(HaveOccurred(), "kubectl wait does not read a lost node's Sandbox as Ready")
		out, err := kubectl("get", "-n", ns, "sandbox/on-b")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring(dsv1alpha1.ReasonNodeLost), "kubectl get shows it")

		By("the other node's Sandbox and containers untouched")
		Expect(field(ns, "sandbox/on-a", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))
		Expect(field(ns, "sandbox/on-a", `{.status.conditions[?(@.type=="NodeLost")]}`)).To(BeEmpty())
		Expect(running(a.daemon)).To(ConsistOf(onA), "the same containers, still running")

		By("starting node B's agent again")
		Expect(agentB.Restart()).To(Succeed())
		restarted = true
		waitFor(ns, "sandbox/on-b", `jsonpath={.status.conditions[?(@.type=="NodeLost")].reason}=`+dsv1alpha1.ReasonLeaseRenewed, 2*time.Minute)
		waitFor(ns, "sandbox/on-b", "condition=Ready", time.Minute)
		Expect(running(a.daemon)).To(ConsistOf(onA))

		deleteAllLeavesNothing(ns, a, b)
	})
})
