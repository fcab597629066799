//go:build integration

package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
)

var _ = Describe("A lost node", func() {
	It("has its Sandboxes marked NodeLost by another agent, which does nothing else; they recover truthfully when its agent is back", func() {
		ns, nodeA, nodeB := newNamespace(), newNode(), newNode()
		// The Leases of this spec's agents only: other specs' stopped agents leave theirs in kube-system.
		leases := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "leases-"}}
		Expect(k8s.Create(ctx(), leases)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx(), leases)).To(Succeed()) })
		short := func(o *agent.Options) {
			o.LeaderElection, o.LeaseNamespace = true, leases.Name
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 2*time.Second, time.Second, 100*time.Millisecond
			o.NodeLostAfter = 3 * time.Second
		}
		dockerA, dockerB := newDocker(nodeA), newDocker(nodeB)
		startAgent(nodeA, dockerA, short)
		b := startAgent(nodeB, dockerB, short)
		onA, onB, deleted := sandbox(ns, "on-a", nodeA), sandbox(ns, "on-b", nodeB), sandbox(ns, "deleted", nodeB)
		for _, sbx := range []*dsv1alpha1.Sandbox{onA, onB, deleted} {
			create(sbx)
		}
		for _, sbx := range []*dsv1alpha1.Sandbox{onA, onB, deleted} {
			Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"), sbx.Name)
		}
		specB, finalizersB := get(onB).Spec, get(onB).Finalizers
		primaryB := container(dockerB, onB, dsv1alpha1.RolePrimary, "").Name

		b.stop()
		start := time.Now()
		Eventually(condition(onB, dsv1alpha1.ConditionNodeLost), 30*time.Second).Should(Equal("True/LeaseExpired"))
		GinkgoWriter.Printf("NodeLost %s after the agent stopped (bound: node-lost-after 3s and two looks 0.75s apart)\n", time.Since(start))
		Expect(condition(onB, dsv1alpha1.ConditionReady)()).To(Equal("Unknown/NodeLost"))
		Expect(condition(onB, dsv1alpha1.ConditionReconciling)()).To(Equal("True/NodeLost"), "kstatus: InProgress, not Current")
		Expect(condition(onB, dsv1alpha1.ConditionStalled)()).To(Equal("False/NodeLost"))
		Expect(message(onB, dsv1alpha1.ConditionNodeLost)).To(ContainSubstring("the agent of node " + nodeB + " stopped renewing its Lease (last renewed "))
		Eventually(condition(deleted, dsv1alpha1.ConditionNodeLost)).Should(Equal("True/LeaseExpired"))
		Expect(get(onB).Spec).To(Equal(specB), "no spec change")
		Expect(get(onB).Finalizers).To(Equal(finalizersB), "no finalizer change")
		Expect(get(onB).Status.Phase).To(Equal(dsv1alpha1.SandboxRunning), "nothing but the conditions")
		Expect(holdings(dockerA, string(get(onB).UID))).To(BeZero(), "the other agent made nothing for it")
		Consistently(condition(onA, dsv1alpha1.ConditionReady), 2*time.Second).Should(Equal("True/Running"))
		Expect(condition(onA, dsv1alpha1.ConditionNodeLost)()).To(Equal("absent"), "the live node's Sandboxes are untouched")

		// Deleted while the node is lost: like a pod on a lost node, it waits for its node's agent to remove
		// its Docker objects.
		Expect(k8s.Delete(ctx(), deleted)).To(Succeed())
		Consistently(func() []string { return get(deleted).Finalizers }, 2*time.Second).Should(ContainElement(dsv1alpha1.FinalizerCleanup))
		Expect(holdings(dockerB, string(get(deleted).UID))).To(BeNumerically(">", 0))
		deletedUID := string(get(deleted).UID)

		// The primary dies while nobody watches; the agent comes back and says so.
		Expect(dockerB.Exit(primaryB, 137)).To(Succeed())
		startAgent(nodeB, dockerB, short)
		Eventually(condition(onB, dsv1alpha1.ConditionNodeLost), 20*time.Second).Should(Equal("False/LeaseRenewed"))
		Eventually(condition(onB, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/PrimaryExited"))
		Expect(condition(onB, dsv1alpha1.ConditionReady)()).To(HavePrefix("False/"), "Ready from Docker, not from before the loss")
		Eventually(gone(deleted), 20*time.Second).Should(BeTrue(), "the deletion finished once the agent was back")
		Expect(holdings(dockerB, deletedUID)).To(BeZero())
		Consistently(condition(onB, dsv1alpha1.ConditionNodeLost), 2*time.Second).Should(Equal("False/LeaseRenewed"),
			"agent A sees the renewed Lease and marks nothing again")
		Expect(condition(onA, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"))
	})
})
