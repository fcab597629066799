//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// fleetCapacity is each fleet agent's --capacity: small, so that a handful of Sandboxes fills the fleet.
const fleetCapacity = 3

// fleetNode is one host of the fleet: a Docker daemon of the test's own and the agent driving it.
type fleetNode struct {
	name   string // the agent's --node-name
	daemon *ownDaemon
}

var _ = Describe("A fleet of Docker hosts", Label("fleet"), func() {
	It("spreads unbound Sandboxes by room, keeps pinned ones where pinned, and no agent touches another node's objects", func() {
		a, b, ns := startFleetOfTwo([2]string{"fla", "flb"}, [2]string{"10.214.0.0/24", "10.215.0.0/24"}, "fleet")

		By("pinning one Sandbox to each node")
		apply(ns, fleetSandbox("pin-a", a.name)+fleetSandbox("pin-b", b.name))

		By("applying five unbound Sandboxes for the four places left")
		var unbound strings.Builder
		for i := 1; i <= 5; i++ {
			unbound.WriteString(fleetSandbox(fmt.Sprintf("free-%d", i), ""))
		}
		apply(ns, unbound.String())
		Eventually(boundPerNode).WithArguments(ns).WithTimeout(2 * time.Minute).WithPolling(time.Second).
			Should(Equal(map[string]int{a.name: fleetCapacity, b.name: fleetCapacity, "": 1}))
		Expect(field(ns, "sandbox/pin-a", "{.spec.nodeName}")).To(Equal(a.name))
		Expect(field(ns, "sandbox/pin-b", "{.spec.nodeName}")).To(Equal(b.name))

		By("the one left over waiting, unbound, with the reason every agent gives")
		waiting := onlyUnbound(ns)
		waitFor(ns, "sandbox/"+waiting, `jsonpath={.status.conditions[?(@.type=="Scheduled")].reason}=`+dsv1alpha1.ReasonNoCapacity, time.Minute)
		Expect(field(ns, "sandbox/"+waiting, `{.status.conditions[?(@.type=="Scheduled")].message}`)).
			To(ContainSubstring("waiting for an agent with room for one more Sandbox"))
		Expect(field(ns, "sandbox/"+waiting, "{.status.phase}")).To(Equal(string(dsv1alpha1.SandboxPending)))

		By("a Sandbox pinned to a full node waiting there for room")
		apply(ns, fleetSandbox("pin-late", a.name))
		waitFor(ns, "sandbox/pin-late", `jsonpath={.status.conditions[?(@.type=="Scheduled")].reason}=`+dsv1alpha1.ReasonNodeFull, time.Minute)
		Expect(field(ns, "sandbox/pin-late", "{.status.phase}")).To(Equal(string(dsv1alpha1.SandboxPending)))

		By("every bound Sandbox coming up on its own node's daemon, and the fleet staying as it is")
		for _, name := range boundNames(ns) {
			waitFor(ns, "sandbox/"+name, "condition=Ready", 3*time.Minute)
		}
		Consistently(boundPerNode).WithArguments(ns).WithTimeout(10*time.Second).WithPolling(2*time.Second).
			Should(Equal(map[string]int{a.name: fleetCapacity + 1, b.name: fleetCapacity, "": 1}), "pin-late counts on its node, unadmitted")
		Expect(field(ns, "sandbox/pin-late", "{.metadata.finalizers}")).To(BeEmpty(), "pin-late admitted on a full node")
		for _, n := range []fleetNode{a, b} {
			for _, name := range admittedOn(ns, n.name) {
				Expect(rolesOn(n.daemon, n.name, ns, name)).To(HaveKeyWithValue(dsv1alpha1.RolePrimary, HaveLen(1)), "%s on %s", name, n.name)
			}
			Expect(n.daemon.objectsNotOf(n.name)).To(BeEmpty(), "objects on %s's daemon labelled with another node", n.name)
		}
		Expect(docker("container", "ls", "-aq", "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns)).
			To(BeEmpty(), "containers of the fleet's namespace on the machine's daemon")

		By("room made on a node going first to the Sandbox pinned there, not to the unbound one")
		_, err := kubectl("delete", "-n", ns, "sandbox", "pin-a", "--timeout=90s")
		Expect(err).NotTo(HaveOccurred())
		waitFor(ns, "sandbox/pin-late", "condition=Ready", 3*time.Minute)
		Expect(rolesOn(a.daemon, a.name, ns, "pin-late")).To(HaveKeyWithValue(dsv1alpha1.RolePrimary, HaveLen(1)))
		// Longer than an agent's look again at waiting Sandboxes (10 s).
		Consistently(field).WithArguments(ns, "sandbox/"+waiting, "{.spec.nodeName}").WithTimeout(15*time.Second).
			WithPolling(time.Second).Should(BeEmpty(), "%s bound to a full node", waiting)

		By("room made on the other node taken by the unbound one")
		_, err = kubectl("delete", "-n", ns, "sandbox", "pin-b", "--timeout=90s")
		Expect(err).NotTo(HaveOccurred())
		waitFor(ns, "sandbox/"+waiting, "condition=Ready", 3*time.Minute)
		Expect(field(ns, "sandbox/"+waiting, "{.spec.nodeName}")).To(Equal(b.name))
		Expect(rolesOn(b.daemon, b.name, ns, waiting)).To(HaveKeyWithValue(dsv1alpha1.RolePrimary, HaveLen(1)))

		deleteAllLeavesNothing(ns, a, b)
	})
})

// deleteAllLeavesNothing deletes every Sandbox of ns and checks that nothing is left on the nodes' daemons.
func deleteAllLeavesNothing(ns string, nodes ...fleetNode) {
	GinkgoHelper()
	By("deleting every Sandbox, which leaves nothing on the nodes' daemons")
	_, err := kubectl("delete", "-n", ns, "sandboxes", "--all", "--timeout=150s")
	Expect(err).NotTo(HaveOccurred())
	for _, n := range nodes {
		Expect(n.daemon.leftovers(n.name)).To(BeEmpty(), "on %s", n.name)
		Expect(n.daemon.docker("container", "ls", "-aq")).To(BeEmpty(), "containers on %s", n.name)
	}
}

// pauseSuiteAgent stops the suite's agent for the spec, and starts it again after: it binds unbound Sandboxes
// too, with room for far more, so the fleet is exactly the spec's own agents only while it is stopped. Its
// Sandboxes (none, between specs) are left alone meanwhile; its restart runs after every other cleanup.
func pauseSuiteAgent() {
	GinkgoHelper()
	agent.stop()
	DeferCleanup(func() { Expect(agent.Restart()).To(Succeed()) })
}

// startFleetOfTwo pauses the suite's agent and starts two fleet nodes, on the daemons and topology pools
// named, and a namespace whose Sandboxes the cleanup releases.
func startFleetOfTwo(daemons, topologyPools [2]string, nsPrefix string) (a, b fleetNode, ns string) {
	GinkgoHelper()
	pauseSuiteAgent()
	a = startFleetNode(daemons[0], topologyPools[0])
	b = startFleetNode(daemons[1], topologyPools[1])
	ns = newNamespace(nsPrefix)
	DeferCleanup(releaseSandboxes, ns)
	return a, b, ns
}

// startFleetNode starts a Docker daemon of the spec's own and an agent of capacity fleetCapacity for it, on a
// node named after the daemon. Cleanups stop the agent, then the daemon, and remove its dirs.
func startFleetNode(daemon, topologyPool string) fleetNode {
	GinkgoHelper()
	n := fleetNode{name: node + "-" + daemon, daemon: startDockerd(daemon)}
	startOwnAgent(n.daemon, n.name, topologyPool, fmt.Sprintf("--capacity=%d", fleetCapacity))
	return n
}

// fleetSandbox is the manifest of a busybox Sandbox, pinned to nodeName unless it is empty.
func fleetSandbox(name, nodeName string) string {
	manifest := fmt.Sprintf("---\napiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: %s\nspec:\n  image: dockside.dev/busybox:local\n", name)
	if nodeName != "" {
		manifest += "  nodeName: " + nodeName + "\n"
	}
	return manifest
}

// sandboxNodes maps each Sandbox of ns to its spec.nodeName ("" while unbound) and whether it is admitted (holds
// the cleanup finalizer).
func sandboxNodes(ns string) (nodes map[string]string, admitted map[string]bool) {
	GinkgoHelper()
	out, err := kubectl("get", "-n", ns, "sandboxes", "-o",
		`jsonpath={range .items[*]}{.metadata.name} node={.spec.nodeName} finalizers={.metadata.finalizers}{"\n"}{end}`)
	Expect(err).NotTo(HaveOccurred())
	nodes, admitted = map[string]string{}, map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		nodes[fields[0]] = strings.TrimPrefix(fields[1], "node=")
		admitted[fields[0]] = strings.Contains(line, dsv1alpha1.FinalizerCleanup)
	}
	return nodes, admitted
}

// boundPerNode counts the Sandboxes of ns per spec.nodeName, "" counting the unbound ones.
func boundPerNode(ns string) map[string]int {
	GinkgoHelper()
	nodes, _ := sandboxNodes(ns)
	count := map[string]int{}
	for _, n := range nodes {
		count[n]++
	}
	return count
}

// onlyUnbound is the name of the one unbound Sandbox of ns.
func onlyUnbound(ns string) string {
	GinkgoHelper()
	nodes, _ := sandboxNodes(ns)
	var unbound []string
	for name, n := range nodes {
		if n == "" {
			unbound = append(unbound, name)
		}
	}
	Expect(unbound).To(HaveLen(1))
	return unbound[0]
}

// boundNames lists the admitted Sandboxes of ns, on any node.
func boundNames(ns string) []string {
	GinkgoHelper()
	_, admitted := sandboxNodes(ns)
	var names []string
	for name, ok := range admitted {
		if ok {
			names = append(names, name)
		}
	}
	return names
}

// admittedOn lists the Sandboxes of ns admitted on node.
func admittedOn(ns, nodeName string) []string {
	GinkgoHelper()
	nodes, admitted := sandboxNodes(ns)
	var names []string
	for name, n := range nodes {
		if n == nodeName && admitted[name] {
			names = append(names, name)
		}
	}
	return names
}

// objectsNotOf lists every container, network and volume on this daemon that does not carry node's label, as
// "kind name": the daemon's own networks (bridge-less: host and none) carry no label and are left out.
func (d *ownDaemon) objectsNotOf(nodeName string) []string {
	GinkgoHelper()
	var found []string
	for _, ls := range [][]string{
		{"container", "ls", "-a", "--format", `{{.Names}} {{.Label "` + dsv1alpha1.LabelNode + `"}}`},
		{"network", "ls", "--format", `{{.Name}} {{.Label "` + dsv1alpha1.LabelNode + `"}}`},
		{"volume", "ls", "--format", `{{.Name}} {{.Label "` + dsv1alpha1.LabelNode + `"}}`},
	} {
		out, err := d.docker(ls...)
		Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			name, label, _ := strings.Cut(line, " ")
			if name == "" || label == nodeName || ls[0] == "network" && (name == "host" || name == "none") {
				continue
			}
			found = append(found, ls[0]+" "+name+" (node "+label+")")
		}
	}
	return found
}
