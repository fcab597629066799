//go:build integration

package controllers_test

import (
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
)

// nodeOf polls the node a Sandbox is bound to.
func nodeOf(sbx *dsv1alpha1.Sandbox) func() string {
	return func() string { return get(sbx).Spec.NodeName }
}

var _ = Describe("Binding", func() {
	capacity := func(n int) func(*agent.Options) { return func(o *agent.Options) { o.Capacity = n } }

	It("binds unbound Sandboxes to agents with room, and a waiting one as soon as room frees", func() {
		ns := newNamespace()
		a, b := newAgent(capacity(1)), newAgent(capacity(1))
		var sandboxes []*dsv1alpha1.Sandbox
		for i := range 3 {
			sbx := sandbox(ns, fmt.Sprintf("unbound-%d", i), "")
			create(sbx)
			sandboxes = append(sandboxes, sbx)
		}

		boundTo := func() map[string]int {
			count := map[string]int{}
			for _, sbx := range sandboxes {
				count[get(sbx).Spec.NodeName]++
			}
			return count
		}
		Eventually(boundTo).Should(Equal(map[string]int{a.node: 1, b.node: 1, "": 1}))
		Consistently(boundTo).Should(Equal(map[string]int{a.node: 1, b.node: 1, "": 1}))
		var waiting, running *dsv1alpha1.Sandbox
		for _, sbx := range sandboxes {
			switch get(sbx).Spec.NodeName {
			case "":
				waiting = sbx
			case a.node:
				running = sbx
			}
		}
		Eventually(condition(waiting, dsv1alpha1.ConditionScheduled)).Should(Equal("False/NoCapacity"))
		Expect(phase(waiting)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(condition(waiting, dsv1alpha1.ConditionReady)()).To(Equal("False/NoCapacity"), "kubectl get's Reason column says why it waits")
		Eventually(condition(running, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(condition(running, dsv1alpha1.ConditionScheduled)()).To(Equal("True/Bound"))

		Expect(k8s.Delete(ctx(), running)).To(Succeed())
		Eventually(nodeOf(waiting)).Should(Equal(a.node))
		Eventually(condition(waiting, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Eventually(eventReasons(waiting)).Should(ContainElement("Bound"))
	})

	It("binds each Sandbox exactly once when agents race for them", func() {
		ns := newNamespace()
		a, b := newAgent(), newAgent()
		var sandboxes []*dsv1alpha1.Sandbox
		for i := range 6 {
			sbx := sandbox(ns, fmt.Sprintf("raced-%d", i), "")
			create(sbx)
			sandboxes = append(sandboxes, sbx)
		}
		for _, sbx := range sandboxes {
			Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
			cur := get(sbx)
			own, other := a, b
			if cur.Spec.NodeName == b.node {
				own, other = b, a
			}
			Expect(cur.Spec.NodeName).To(Equal(own.node))
			Expect(holdings(own.docker, string(cur.UID))).To(BeNumerically(">", 0))
			Expect(holdings(other.docker, string(cur.UID))).To(BeZero(), "only the winner built it")
		}
	})

	It("leaves Sandboxes bound to other nodes alone", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "elsewhere", "some-other-node")
		create(sbx)
		mine := sandbox(ns, "mine", a.node)
		create(mine)

		Eventually(condition(mine, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Consistently(func() bool {
			cur := get(sbx)
			return len(cur.Finalizers) == 0 && cur.Status.Phase == "" && cur.Status.NodeName == ""
		}).Should(BeTrue())
	})

	It("admits Sandboxes bound to the node by their author only while it has room", func() {
		ns, a := newNamespace(), newAgent(capacity(1))
		first := sandbox(ns, "first", a.node)
		create(first)
		Eventually(condition(first, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		second := sandbox(ns, "second", a.node)
		create(second)

		Eventually(condition(second, dsv1alpha1.ConditionScheduled)).Should(Equal("False/NodeFull"))
		Expect(condition(second, dsv1alpha1.ConditionReady)()).To(Equal("False/NodeFull"))
		Expect(readyMessage(second)).To(Equal(fmt.Sprintf("node %s holds 1 Sandboxes, its capacity; waiting for room", a.node)))
		Expect(phase(second)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(get(second).Finalizers).To(BeEmpty())
		Expect(containers(a.docker, second, "")).To(BeEmpty())

		Expect(k8s.Delete(ctx(), first)).To(Succeed())
		Eventually(condition(second, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("admits Sandboxes while their memory fits, and counts a finished run only for the workspace it keeps", func() {
		ns, a := newNamespace(), newAgent(func(o *agent.Options) { o.AllocatableMemory = 1 << 30 })
		// sized is a Sandbox bound to a's node holding memory + workspace + the holder's 8Mi, and a session's
		// 4Mi run volume.
		sized := func(name, memory, workspace string) *dsv1alpha1.Sandbox {
			sbx := sandbox(ns, name, a.node)
			sbx.Spec.Resources.Memory = resource.MustParse(memory)
			sbx.Spec.Workspace.Size = resource.MustParse(workspace)
			return sbx
		}
		run := sized("run", "512Mi", "248Mi") // 768 MiB while it runs, 256 MiB once finished
		run.Spec.Command = []string{"true"}
		session := sized("session", "128Mi", "116Mi") // 256 MiB: the node's 1 GiB is full
		create(run)
		create(session)
		Eventually(phase(run)).Should(Equal(dsv1alpha1.SandboxRunning))
		Eventually(condition(session, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		waiting := sized("waiting", "128Mi", "116Mi")
		create(waiting)
		Eventually(condition(waiting, dsv1alpha1.ConditionReady)).Should(Equal("False/InsufficientMemory"))
		Expect(condition(waiting, dsv1alpha1.ConditionScheduled)()).To(Equal("False/InsufficientMemory"))
		Expect(readyMessage(waiting)).To(Equal(fmt.Sprintf(
			"node %s has room for 0 MiB of memory, this Sandbox needs 256 MiB (limits and workspace); waiting for room", a.node)))
		Expect(phase(waiting)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(get(waiting).Finalizers).To(BeEmpty())
		Expect(containers(a.docker, waiting, "")).To(BeEmpty())

		Expect(a.docker.Exit(container(a.docker, run, dsv1alpha1.RolePrimary, "").Name, 0)).To(Succeed())
		Eventually(phase(run)).Should(Equal(dsv1alpha1.SandboxSucceeded))
		Eventually(condition(waiting, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(get(run).Finalizers).NotTo(BeEmpty(), "the finished run is still there, keeping its workspace")
	})
})

var _ = Describe("Room for pids and CPU", func() {
	// The node has 4096 pids, of which 1024 are kept for the host: 3072 for one container and, without
	// overcommit, for all. Its 2 CPUs, without overcommit, hold 2 CPUs of limits.
	room := func(o *agent.Options) { o.NodePids, o.NodeCPUs, o.PidsOvercommit, o.CPUOvercommit = 4096, 2, 1, 1 }
	// sized is a Sandbox bound to a's node with these limits (its holder adds 16 pids).
	sized := func(ns, node, name, cpu string, pids int64) *dsv1alpha1.Sandbox {
		sbx := sandbox(ns, name, node)
		sbx.Spec.Resources.CPU, sbx.Spec.Resources.Pids = resource.MustParse(cpu), pids
		return sbx
	}

	It("admits Sandboxes while their pids and CPU limits fit, and says which room they wait for", func() {
		ns, a := newNamespace(), newAgent(room)
		first := sized(ns, a.node, "first", "1500m", 2000) // 2016 pids of 3072, 1.5 CPUs of 2
		create(first)
		Eventually(condition(first, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		pids := sized(ns, a.node, "pids", "100m", 2000)
		cpu := sized(ns, a.node, "cpu", "1", 16)
		create(pids)
		create(cpu)
		Eventually(condition(pids, dsv1alpha1.ConditionReady)).Should(Equal("False/InsufficientPids"))
		Expect(readyMessage(pids)).To(Equal(fmt.Sprintf(
			"node %s has room for 1056 pids, this Sandbox needs 2016 pids (its containers' pids limits); waiting for room", a.node)))
		Eventually(condition(cpu, dsv1alpha1.ConditionReady)).Should(Equal("False/InsufficientCPU"))
		Expect(readyMessage(cpu)).To(Equal(fmt.Sprintf(
			"node %s has room for 500m CPU, this Sandbox needs 1 CPU (its containers' CPU limits); waiting for room", a.node)))
		for _, waiting := range []*dsv1alpha1.Sandbox{pids, cpu} {
			Expect(phase(waiting)()).To(Equal(dsv1alpha1.SandboxPending))
			Expect(get(waiting).Finalizers).To(BeEmpty())
			Expect(containers(a.docker, waiting, "")).To(BeEmpty())
		}

		Expect(k8s.Delete(ctx(), first)).To(Succeed())
		Eventually(condition(pids, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Eventually(condition(cpu, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("refuses a container asking for more pids or CPUs than the host has, whatever the node holds", func() {
		ns, a := newNamespace(), newAgent(room)
		pids := sized(ns, a.node, "many-pids", "1", 4000)
		cpu := sized(ns, a.node, "many-cpus", "3", 64)
		create(pids)
		create(cpu)
		Eventually(condition(pids, dsv1alpha1.ConditionReady)).Should(Equal("False/InsufficientPids"))
		Expect(readyMessage(pids)).To(Equal(fmt.Sprintf(
			"a container of this Sandbox asks for 4000 pids, more than node %s allows one container (3072 pids, below the host's pid limit)", a.node)))
		Expect(condition(pids, dsv1alpha1.ConditionScheduled)()).To(Equal("False/InsufficientPids"))
		Eventually(condition(cpu, dsv1alpha1.ConditionReady)).Should(Equal("False/InsufficientCPU"))
		Expect(readyMessage(cpu)).To(Equal(fmt.Sprintf("a container of this Sandbox asks for 3 CPU, more than node %s has (2 CPU)", a.node)))
		for _, refused := range []*dsv1alpha1.Sandbox{pids, cpu} {
			Expect(get(refused).Finalizers).To(BeEmpty())
			Expect(containers(a.docker, refused, "")).To(BeEmpty())
		}
	})
})

// readyMessage is the message of a Sandbox's Ready condition.
func readyMessage(sbx *dsv1alpha1.Sandbox) string {
	if c := meta.FindStatusCondition(get(sbx).Status.Conditions, dsv1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}

var _ = Describe("The node Lease", func() {
	It("keeps a second agent for the same node waiting until the first stops", func() {
		ns, node := newNamespace(), newNode()
		lease := func(o *agent.Options) {
			o.LeaderElection = true
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 2*time.Second, time.Second, 100*time.Millisecond
		}
		first := startAgent(node, newDocker(node), lease)
		sbx := sandbox(ns, "leased", node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		second := startAgent(node, newDocker(node), lease)
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Env = []dsv1alpha1.EnvVar{{Name: "V", Value: "2"}} })
		Eventually(func() int64 { return get(sbx).Status.TopologyGeneration }).Should(BeEquivalentTo(2))
		Consistently(func() int { return holdings(second.docker, string(get(sbx).UID)) }).Should(BeZero(),
			"the second agent never acts while the first holds the Lease")

		first.stop()
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Env = []dsv1alpha1.EnvVar{{Name: "V", Value: "3"}} })
		Eventually(func() int { return holdings(second.docker, string(get(sbx).UID)) }, 15*time.Second).Should(BeNumerically(">", 0))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(k8s.Get(ctx(), client.ObjectKey{Namespace: agent.DefaultLeaseNamespace, Name: agent.LeaseName(node)}, &coordinationv1.Lease{})).To(Succeed())
	})
})

var _ = Describe("An agent restarted after a crash", func() {
	// crashedLease is the Lease a crashed agent leaves behind: held by holder, renewed just now, valid for a
	// minute.
	crashedLease := func(node, holder string) {
		GinkgoHelper()
		now := metav1.NewMicroTime(time.Now())
		Expect(k8s.Create(ctx(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: agent.DefaultLeaseNamespace, Name: agent.LeaseName(node)},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(60)), AcquireTime: &now, RenewTime: &now,
			},
		})).To(Succeed())
	}
	restarted := func(node, dir string) func(*agent.Options) {
		return func(o *agent.Options) { o.LeaderElection, o.CheckpointDir = true, dir }
	}

	It("takes its node's Lease over at once when the Lease is its own", func() {
		ns, node, dir := newNamespace(), newNode(), GinkgoT().TempDir()
		host, err := os.Hostname()
		Expect(err).NotTo(HaveOccurred())
		crashedLease(node, host+"_"+node)
		startAgent(node, newDocker(node), restarted(node, dir))
		sbx := sandbox(ns, "after-crash", node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady), 20*time.Second).Should(Equal("True/Running"),
			"well before the crashed agent's Lease (a minute) runs out")
	})

	It("waits out a Lease another agent holds, and a second agent of the node on this host never shares its identity", func() {
		ns, node, dir := newNamespace(), newNode(), GinkgoT().TempDir()
		crashedLease(node, "another-host_"+node)
		first := startAgent(node, newDocker(node), restarted(node, dir))
		second := startAgent(node, newDocker(node), restarted(node, dir))
		sbx := sandbox(ns, "waiting", node)
		create(sbx)
		Consistently(func() int {
			return holdings(first.docker, string(get(sbx).UID)) + holdings(second.docker, string(get(sbx).UID))
		}, 5*time.Second).
			Should(BeZero(), "neither acts while another host's agent holds the Lease")
		lease := &coordinationv1.Lease{}
		Expect(k8s.Get(ctx(), client.ObjectKey{Namespace: agent.DefaultLeaseNamespace, Name: agent.LeaseName(node)}, lease)).To(Succeed())
		Expect(*lease.Spec.HolderIdentity).To(Equal("another-host_" + node))
	})
})
