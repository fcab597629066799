//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// restartSessions are the spec's Sandboxes: two plain sessions and one with the web service, all pinned to the
// node of the agent on the spec's own daemon.
var restartSessions = []string{"plain-a", "plain-b", "with-web"}

// restartTopologyPool is the own agent's subnet range: its bridges share the host's routing table with the
// machine daemon's, whose agents use the default 10.120.0.0/16.
const restartTopologyPool = "10.213.0.0/24"

var _ = Describe("Docker restarting under running sandboxes", func() {
	It("after a clean stop (SIGTERM): reconnects, reports every session as it is, creates no duplicate, and deletion leaves nothing", func() {
		restartUnderSessions("rst", "restarting the daemon: SIGTERM stops every container, and none has a restart policy", (*ownDaemon).restart)
	})
	It("after a crash (SIGKILL): reconnects, reports every session as it is, creates no duplicate, and deletion leaves nothing", func() {
		restartUnderSessions("crs", "killing the daemon and starting it again, which stops the containers it finds running", (*ownDaemon).crashRestart)
	})
})

// restartUnderSessions brings the sessions up on an own daemon named daemon, restarts the daemon the given way
// under them, and checks what the agent makes of it: every topology stopped is reported poisoned, never Ready;
// nothing is started again or made twice; a spec change and a new Sandbox are served by the restarted daemon;
// deletion leaves nothing. It is no GinkgoHelper: a failure's summary line names the step that failed.
func restartUnderSessions(daemon, how string, restart func(*ownDaemon)) {
	d := startDockerd(daemon)
	ownNode := node + "-" + daemon
	own := startOwnAgent(d, ownNode, restartTopologyPool)
	ns := newNamespace("dockerd")
	DeferCleanup(releaseSandboxes, ns)

	apply(ns, webService)
	var manifest strings.Builder
	for _, name := range restartSessions {
		fmt.Fprintf(&manifest, "---\napiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: %s\nspec:\n  nodeName: %s\n  image: dockside.dev/busybox:local\n", name, ownNode)
		if name == "with-web" {
			manifest.WriteString("  services: [\"web\"]\n")
		}
	}
	apply(ns, manifest.String())
	for _, name := range restartSessions {
		waitFor(ns, "sandbox/"+name, "condition=Ready", 3*time.Minute)
	}
	before := map[string]map[string][]string{}
	for _, name := range restartSessions {
		// A session's workspace holder comes on the pass right after the one that made it Ready: the daemon is
		// killed once it runs, so that no start is in flight (agent_restart_test.go kills the agent mid-start).
		Eventually(func() map[string][]string { return rolesOn(d, ownNode, ns, name) }).WithTimeout(time.Minute).WithPolling(time.Second).
			Should(HaveKeyWithValue(dsv1alpha1.RoleHolder, HaveLen(1)), name)
		before[name] = rolesOn(d, ownNode, ns, name)
		Expect(before[name]).To(HaveKeyWithValue(dsv1alpha1.RolePrimary, HaveLen(1)), name)
		Eventually(d.docker).WithArguments("inspect", "-f", "{{.State.Running}}", before[name][dsv1alpha1.RoleHolder][0]).
			WithTimeout(time.Minute).Should(Equal("true"), name)
	}
	Expect(before["with-web"]).To(HaveKeyWithValue(dsv1alpha1.RoleService, HaveLen(1)))

	By(how)
	restart(d)
	for _, name := range restartSessions {
		// A daemon restarted after a crash stops what it finds running as it restores it; on a loaded machine
		// that takes far longer than on a quiet one.
		Eventually(d.docker).WithArguments("inspect", "-f", "{{.State.Running}}", before[name][dsv1alpha1.RolePrimary][0]).
			WithTimeout(2*time.Minute).Should(Equal("false"), name)
	}

	By("the agent reconnecting to the daemon")
	Eventually(func() (string, error) {
		data, err := os.ReadFile(own.Log)
		return string(data), err
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(And(
		ContainSubstring("Docker event stream broke; resubscribing"),
		ContainSubstring("Docker event stream resubscribed")))

	By("every session reporting its stopped topology, never Ready")
	for _, name := range restartSessions {
		Eventually(func() string {
			return field(ns, "sandbox/"+name, `{.status.conditions[?(@.type=="TopologyPoisoned")].status}`)
		}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Equal("True"), name)
		Expect(field(ns, "sandbox/"+name, `{.status.conditions[?(@.type=="TopologyPoisoned")].reason}: {.status.conditions[?(@.type=="TopologyPoisoned")].message}`)).
			To(Or(HavePrefix(dsv1alpha1.ReasonPrimaryExited+":"), HavePrefix(dsv1alpha1.ReasonServiceExited+":")), name)
	}
	// Passes go on over these Sandboxes (the sweeper counts a stopped holder as drift); none of them starts
	// anything again or makes anything twice.
	Consistently(func(g Gomega) {
		for _, name := range restartSessions {
			g.Expect(field(ns, "sandbox/"+name, `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("False"), name)
			g.Expect(field(ns, "sandbox/"+name, "{.status.phase}")).To(Equal(string(dsv1alpha1.SandboxFailed)), name)
			g.Expect(rolesOn(d, ownNode, ns, name)).To(Equal(before[name]), "containers of %s", name)
			for _, role := range []string{dsv1alpha1.RolePrimary, dsv1alpha1.RoleService} {
				for _, id := range before[name][role] {
					g.Expect(d.docker("inspect", "-f", "{{.State.Running}}", id)).To(Equal("false"), "%s %s", name, role)
				}
			}
		}
	}).WithTimeout(20 * time.Second).WithPolling(2 * time.Second).Should(Succeed())

	By("acting again on the restarted daemon: a poisoned session rolled by a spec change, and a new one")
	_, err := kubectl("patch", "-n", ns, "sandbox/with-web", "--type=merge", "-p", `{"spec":{"env":[{"name":"ROLLED","value":"1"}]}}`)
	Expect(err).NotTo(HaveOccurred())
	apply(ns, fmt.Sprintf("apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: after\nspec:\n  nodeName: %s\n  image: dockside.dev/busybox:local\n", ownNode))
	waitFor(ns, "sandbox/with-web", "jsonpath={.status.topologyGeneration}=2", 3*time.Minute)
	waitFor(ns, "sandbox/with-web", "condition=Ready", 3*time.Minute)
	waitFor(ns, "sandbox/after", "condition=Ready", 3*time.Minute)
	rolled := rolesOn(d, ownNode, ns, "with-web")
	for _, role := range []string{dsv1alpha1.RolePrimary, dsv1alpha1.RoleService, dsv1alpha1.RoleHolder} {
		Expect(rolled).To(HaveKeyWithValue(role, HaveLen(1)), "with-web %s after the roll", role)
	}
	Expect(rolled[dsv1alpha1.RoleHolder]).To(Equal(before["with-web"][dsv1alpha1.RoleHolder]), "the holder outlives the roll")
	Expect(rolled[dsv1alpha1.RolePrimary]).NotTo(Equal(before["with-web"][dsv1alpha1.RolePrimary]))
	Expect(d.docker("inspect", "-f", "{{.State.Running}}", rolled[dsv1alpha1.RolePrimary][0])).To(Equal("true"))

	By("deleting every Sandbox, which leaves nothing on the daemon")
	_, err = kubectl("delete", "-n", ns, "sandboxes", "--all", "--timeout=120s")
	Expect(err).NotTo(HaveOccurred())
	_, err = kubectl("delete", "-n", ns, "sandboxservice", "web", "--timeout=60s")
	Expect(err).NotTo(HaveOccurred())
	Expect(d.leftovers(ownNode)).To(BeEmpty())
}

// rolesOn maps each role to the IDs of a Sandbox's containers of that role on the own daemon d.
func rolesOn(d *ownDaemon, ownNode, ns, name string) map[string][]string {
	GinkgoHelper()
	out, err := d.docker("container", "ls", "-a", "--no-trunc", "--format", `{{.ID}} {{.Label "`+dsv1alpha1.LabelRole+`"}}`,
		"--filter", "label="+dsv1alpha1.LabelNode+"="+ownNode,
		"--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns,
		"--filter", "label="+dsv1alpha1.LabelName+"="+name)
	Expect(err).NotTo(HaveOccurred())
	roles := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if id, role, ok := strings.Cut(line, " "); ok {
			roles[role] = append(roles[role], id)
		}
	}
	return roles
}

// releaseSandboxes deletes what a failed spec left in ns while its agent still runs; what the agent could not
// clean up by then loses its finalizer, so that the suite's teardown does not wait on a node that is gone.
func releaseSandboxes(ns string) {
	if !CurrentSpecReport().Failed() {
		return
	}
	_, _ = kubectl("delete", "-n", ns, "sandboxes,sandboxservices,checkpoints", "--all", "--timeout=90s")
	out, _ := kubectl("get", "-n", ns, "sandboxes,sandboxservices,checkpoints", "-o", "name")
	for _, obj := range strings.Fields(out) {
		_, _ = kubectl("patch", "-n", ns, obj, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	}
}
