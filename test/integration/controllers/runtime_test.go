//go:build integration

package controllers_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
	"github.com/dockside-dev/dockside/internal/runtimes"
)

var _ = Describe("Runtimes", func() {
	gvisor := func(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
		sbx.Spec.Runtime = dsv1alpha1.RuntimeGVisor
		return sbx
	}
	// leased runs agents under leader election in a Lease namespace of the spec's own, where they publish
	// their runtimes: other specs' stopped agents leave their Leases in kube-system.
	leased := func() (func(*agent.Options), string) {
		GinkgoHelper()
		leases := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "leases-"}}
		Expect(k8s.Create(ctx(), leases)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx(), leases)).To(Succeed()) })
		return func(o *agent.Options) {
			o.LeaderElection, o.LeaseNamespace = true, leases.Name
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 2*time.Second, time.Second, 100*time.Millisecond
		}, leases.Name
	}
	annotation := func(namespace, node string) func() string {
		return func() string {
			var lease coordinationv1.Lease
			if err := k8s.Get(ctx(), objectKey(namespace, agent.LeaseName(node)), &lease); err != nil {
				return err.Error()
			}
			return lease.Annotations[runtimes.Annotation]
		}
	}

	It("binds a Sandbox asking for gVisor only where Docker offers it, and creates it under runsc", func() {
		ns := newNamespace()
		lease, leaseNamespace := leased()
		nodeA, nodeB := newNode(), newNode()
		dockerB := newDocker(nodeB)
		dockerB.SetRuntimes("runc", "runsc")
		a := startAgent(nodeA, newDocker(nodeA), lease)
		b := startAgent(nodeB, dockerB, lease, func(o *agent.Options) { o.Capacity = 1 })
		Eventually(annotation(leaseNamespace, nodeA)).Should(Equal("runc"))
		Eventually(annotation(leaseNamespace, nodeB)).Should(Equal("gVisor,runc"))

		first, second := gvisor(sandbox(ns, "first", "")), gvisor(sandbox(ns, "second", ""))
		create(first)
		Eventually(condition(first, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(get(first).Spec.NodeName).To(Equal(b.node))
		Expect(container(b.docker, first, dsv1alpha1.RolePrimary, "").Runtime).To(Equal("runsc"))

		// b is full: the second waits for it, and a, which has room but no gVisor, never takes it nor writes
		// its status.
		create(second)
		Eventually(condition(second, dsv1alpha1.ConditionScheduled)).Should(Equal("False/NoCapacity"))
		Expect(readyMessage(second)).To(HavePrefix("waiting for an agent offering runtime gVisor and with room for one more Sandbox"))
		Consistently(func() string {
			return get(second).Spec.NodeName + "/" + condition(second, dsv1alpha1.ConditionScheduled)()
		}, 2*time.Second).
			Should(Equal("/False/NoCapacity"))

		plain := sandbox(ns, "plain", "")
		create(plain)
		Eventually(condition(plain, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(get(plain).Spec.NodeName).To(Equal(a.node), "a Sandbox naming no runtime runs anywhere; b is full")
		Expect(container(a.docker, plain, dsv1alpha1.RolePrimary, "").Runtime).To(BeEmpty(), "runc, the daemon's default")

		Expect(k8s.Delete(ctx(), first)).To(Succeed())
		Eventually(nodeOf(second)).Should(Equal(b.node))
		Eventually(condition(second, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("keeps a Sandbox whose runtime no agent offers waiting, naming it, until an agent that offers it starts", func() {
		ns := newNamespace()
		lease, _ := leased()
		newAgent(lease)
		newAgent(lease)
		sbx := gvisor(sandbox(ns, "nowhere", ""))
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionScheduled)).Should(Equal("False/RuntimeUnavailable"))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("False/RuntimeUnavailable"), "kubectl get's Reason column says why it waits")
		Expect(readyMessage(sbx)).To(Equal("this Sandbox asks for runtime gVisor, which no agent's Docker offers; " +
			"waiting for an agent that does (docs/deploy.md, \"Running Sandboxes under gVisor\")"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxPending))
		Consistently(nodeOf(sbx), 2*time.Second).Should(BeEmpty())

		node := newNode()
		docker := newDocker(node)
		docker.SetRuntimes("runc", "runsc")
		startAgent(node, docker, lease)
		Eventually(nodeOf(sbx)).Should(Equal(node))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("binds a waiting gVisor Sandbox once the same agent's Docker gains runsc, and binds no new one after it loses it", func() {
		ns := newNamespace()
		lease, leaseNamespace := leased()
		node := newNode()
		docker := newDocker(node) // runc alone, as a daemon before runsc is registered in daemon.json
		startAgent(node, docker, lease, func(o *agent.Options) { o.RuntimesPeriod = 200 * time.Millisecond })
		Eventually(annotation(leaseNamespace, node)).Should(Equal("runc"))
		first := gvisor(sandbox(ns, "first", ""))
		create(first)
		Eventually(condition(first, dsv1alpha1.ConditionScheduled)).Should(Equal("False/RuntimeUnavailable"))
		Expect(readyMessage(first)).To(ContainSubstring("asks for runtime gVisor, which no agent's Docker offers"))

		docker.SetRuntimes("runc", "runsc") // the operator registers runsc and reloads Docker
		Eventually(annotation(leaseNamespace, node)).Should(Equal("gVisor,runc"))
		Eventually(nodeOf(first)).Should(Equal(node))
		Eventually(condition(first, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(container(docker, first, dsv1alpha1.RolePrimary, "").Runtime).To(Equal("runsc"))

		docker.SetRuntimes("runc") // and takes it away again
		Eventually(annotation(leaseNamespace, node)).Should(Equal("runc"))
		second := gvisor(sandbox(ns, "second", ""))
		create(second)
		Eventually(condition(second, dsv1alpha1.ConditionScheduled)).Should(Equal("False/RuntimeUnavailable"))
		Consistently(func() string {
			return get(second).Spec.NodeName + "/" + condition(first, dsv1alpha1.ConditionReady)()
		}, time.Second).Should(Equal("/True/Running"), "what runs under runsc keeps running; nothing new is bound")
	})

	It("reads the daemon's runtimes again when its event stream reconnects", func() {
		ns := newNamespace()
		lease, leaseNamespace := leased()
		node := newNode()
		docker := newDocker(node)
		startAgent(node, docker, lease, func(o *agent.Options) { o.RuntimesPeriod = time.Hour })
		Eventually(annotation(leaseNamespace, node)).Should(Equal("runc"))
		sbx := gvisor(sandbox(ns, "restarted", ""))
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionScheduled)).Should(Equal("False/RuntimeUnavailable"))

		// Docker restarted with runsc registered: the stream breaks and resumes.
		docker.DropEvents()
		docker.SetRuntimes("runc", "runsc")
		Consistently(nodeOf(sbx), time.Second).Should(BeEmpty(), "not read again before the reconnect")
		docker.ResumeEvents()
		Eventually(annotation(leaseNamespace, node)).Should(Equal("gVisor,runc"))
		Eventually(nodeOf(sbx)).Should(Equal(node))
	})

	It("holds a Sandbox bound by its author to a node without its runtime, unadmitted and saying so", func() {
		ns, a := newNamespace(), newAgent()
		sbx := gvisor(sandbox(ns, "pinned", a.node))
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionScheduled)).Should(Equal("False/RuntimeUnavailable"))
		Expect(readyMessage(sbx)).To(Equal(fmt.Sprintf(
			"this Sandbox asks for runtime gVisor, which the Docker of node %s does not offer (it offers runc); waiting for it", a.node)))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(get(sbx).Finalizers).To(BeEmpty())
		Expect(containers(a.docker, sbx, "")).To(BeEmpty())
	})

	It("fails a running Sandbox changed to a runtime its node lacks, before anything of the new topology is built", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "changed", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Runtime = dsv1alpha1.RuntimeGVisor })
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/RuntimeUnavailable"))
		Expect(readyMessage(sbx)).To(ContainSubstring(fmt.Sprintf("asks for runtime gVisor, which the Docker of node %s does not offer", a.node)))
		Expect(condition(sbx, dsv1alpha1.ConditionStalled)()).To(Equal("True/RuntimeUnavailable"))
		for _, c := range containers(a.docker, sbx, dsv1alpha1.RolePrimary) {
			Expect(c.Runtime).To(BeEmpty(), "no container was made under a runtime the daemon lacks")
		}
	})

	It("runs Sandboxes and services that name no runtime under the node's default, gVisor", func() {
		ns, node := newNamespace(), newNode()
		docker := newDocker(node)
		docker.SetRuntimes("runc", "my-runsc")
		startAgent(node, docker, func(o *agent.Options) {
			o.DefaultRuntime, o.GVisorRuntimeName = dsv1alpha1.RuntimeGVisor, "my-runsc"
		})
		svc := service(ns, "db")
		create(svc)
		sbx := sandbox(ns, "defaulted", node)
		sbx.Spec.Services = []string{"db"}
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(container(docker, sbx, dsv1alpha1.RolePrimary, "").Runtime).To(Equal("my-runsc"))
		Expect(container(docker, sbx, dsv1alpha1.RoleService, "db").Runtime).To(Equal("my-runsc"))

		runc := sandbox(ns, "runc", node)
		runc.Spec.Runtime = dsv1alpha1.RuntimeRunc
		create(runc)
		Eventually(condition(runc, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(container(docker, runc, dsv1alpha1.RolePrimary, "").Runtime).To(BeEmpty(), "runc, the daemon's default")
	})

	It("refuses to start an agent whose default runtime its Docker does not offer", func() {
		node := newNode()
		_, err := agent.New(ctx(), rest.CopyConfig(cfg), agent.Options{Node: node, Driver: newDocker(node), DefaultRuntime: dsv1alpha1.RuntimeGVisor})
		Expect(err).To(MatchError(ContainSubstring(`the default runtime is gVisor, but the Docker daemon offers no runtime "runsc" (docker info lists runc)`)))
	})
})
