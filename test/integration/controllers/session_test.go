//go:build integration

package controllers_test

import (
	"context"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

var _ = Describe("A session", func() {
	It("comes up Ready with its workspace held, no network, and says so the kstatus way", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "shell", a.node)
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		cur := get(sbx)
		Expect(cur.Status.Phase).To(Equal(dsv1alpha1.SandboxRunning))
		Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		Expect(cur.Finalizers).To(ContainElement(dsv1alpha1.FinalizerCleanup))
		Expect(cur.Status.NodeName).To(Equal(a.node))
		Expect(cur.Status.TopologyGeneration).To(BeEquivalentTo(1))
		Expect(cur.Status.StartTime).NotTo(BeNil())
		for typ, want := range map[string]string{
			dsv1alpha1.ConditionReconciling: "False", dsv1alpha1.ConditionStalled: "False", dsv1alpha1.ConditionScheduled: "True",
			dsv1alpha1.ConditionServicesReady: "True", dsv1alpha1.ConditionTopologyPoisoned: "False", dsv1alpha1.ConditionPaused: "False",
		} {
			c := meta.FindStatusCondition(cur.Status.Conditions, typ)
			Expect(c).NotTo(BeNil(), typ)
			Expect(string(c.Status)).To(Equal(want), typ)
			Expect(c.ObservedGeneration).To(Equal(cur.Generation), typ)
		}

		primary := container(a.docker, sbx, dsv1alpha1.RolePrimary, "")
		Expect(primary.State).To(Equal(dd.StateRunning))
		Expect(primary.Network).To(BeEmpty(), "mode None without services: network mode none")
		Expect(cur.Status.ContainerID).To(Equal(primary.ID))
		Eventually(state(a.docker, sbx, dsv1alpha1.RoleHolder, "")).Should(Equal(dd.StateRunning))
		vols, err := a.docker.ListVolumes(context.Background(), map[string]string{dsv1alpha1.LabelUID: string(cur.UID)})
		Expect(err).NotTo(HaveOccurred())
		sizes := map[string]int64{}
		for _, v := range vols {
			sizes[v.Labels[dsv1alpha1.LabelRole]] = v.SizeBytes
		}
		Expect(sizes).To(Equal(map[string]int64{dsv1alpha1.RoleWorkspace: 512 << 20, dsv1alpha1.RoleRun: 4 << 20, dsv1alpha1.RoleSupervise: 0}), "the supervisor volume is on disk")

		Eventually(eventReasons(sbx)).Should(ContainElements("WorkspaceCreated", "Started"))
	})

	It("joins the node's shared Isolated bridge, internal, when it is Isolated without services", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "isolated", a.node)
		sbx.Spec.Network.Mode = dsv1alpha1.NetworkIsolated
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		shared := dd.NodeIsolatedNetworkName(a.node)
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Network).To(Equal(shared))
		n, err := a.docker.ObserveNetwork(context.Background(), shared)
		Expect(err).NotTo(HaveOccurred())
		Expect(n.ICC).To(BeFalse(), "sandboxes on the shared bridge cannot reach each other")
		Expect(n.Internal).To(BeTrue(), "no route out: the egress proxy on its gateway is the way out")
		Expect(n.Bridge).To(HavePrefix(dd.BridgeProxied))
		Expect(get(sbx).Status.NetworkID).To(BeEmpty(), "no network of its own")

		Expect(k8s.Delete(ctx(), sbx)).To(Succeed())
		Eventually(gone(sbx)).Should(BeTrue())
		// The pass releases the shared bridge after it let the Sandbox go (delete.go), so the bridge may
		// outlive the Sandbox by a moment.
		Eventually(func() (bool, error) {
			n, err := a.docker.ObserveNetwork(ctx(), shared)
			return n.Exists, err
		}).Should(BeFalse(), "the last Sandbox on the shared bridge takes it along")
	})

	It("starts its services in order, each ready before the next, on an internal bridge of its own", func() {
		ns := newNamespace()
		node := newNode()
		docker := newDocker(node)
		var dbReady atomic.Bool
		docker.SetExecHandler(func(_ context.Context, name string, _ dd.ExecRequest) fake.ExecOutput {
			if isService(name, "db") && !dbReady.Load() {
				return fake.ExecOutput{ExitCode: 1}
			}
			return fake.ExecOutput{}
		})
		a := startAgent(node, docker)
		db, cache := service(ns, "db"), service(ns, "cache")
		db.Spec.Readiness = &dsv1alpha1.Readiness{Command: []string{"true"}, PeriodSeconds: 1, FailureThreshold: 30}
		cache.Spec.Aliases = []string{"kv"}
		create(db)
		create(cache)
		sbx := sandbox(ns, "with-services", a.node)
		sbx.Spec.Services = []string{"db", "cache"}
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionServicesReady)).Should(Equal("False/WaitingForServices"))
		Eventually(state(a.docker, sbx, dsv1alpha1.RoleService, "db")).Should(Equal(dd.StateRunning))
		Consistently(func() int { return len(containers(a.docker, sbx, dsv1alpha1.RoleService)) }).Should(Equal(1),
			"cache waits until db passes readiness")
		Expect(containers(a.docker, sbx, dsv1alpha1.RolePrimary)).To(BeEmpty())
		Expect(get(sbx).Status.Phase).To(Equal(dsv1alpha1.SandboxStarting))

		dbReady.Store(true)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		cur := get(sbx)
		Expect(cur.Status.Services).To(HaveLen(2))
		for _, st := range cur.Status.Services {
			Expect(st.State).To(Equal(dsv1alpha1.ServiceReady), st.Name)
			Expect(st.ContainerID).NotTo(BeEmpty())
			Expect(st.ServiceGeneration).To(BeEquivalentTo(1))
		}
		Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, dsv1alpha1.ConditionServicesUpToDate)).To(BeTrue())
		net, err := a.docker.ObserveNetwork(context.Background(), container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Network)
		Expect(err).NotTo(HaveOccurred())
		Expect(net.ID).To(Equal(cur.Status.NetworkID))
		Expect(net.Internal).To(BeTrue(), "mode None: no egress, topology traffic only")
		Expect(net.ICC).To(BeTrue(), "the topology's own containers talk to each other")
		Expect(container(a.docker, sbx, dsv1alpha1.RoleService, "cache").Network).To(Equal(net.Name))

		// Start order as the events tell it.
		Eventually(eventReasons(sbx)).Should(ContainElements("NetworkCreated", "ServiceStarted", "ServiceReady", "Started"))
	})

	It("waits for a SandboxService that does not exist yet", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "early", a.node)
		sbx.Spec.Services = []string{"later"}
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/ServiceNotFound"))
		Expect(get(sbx).Status.Phase).To(Equal(dsv1alpha1.SandboxPending))
		Expect(condition(sbx, dsv1alpha1.ConditionReconciling)()).To(Equal("True/ServiceNotFound"))

		create(service(ns, "later"))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("waits for a restore this agent cannot do yet, starting nothing", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "restored", a.node)
		sbx.Spec.RestoreFrom = "snap"
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/RestoreNotSupported"))
		Expect(get(sbx).Status.Phase).To(Equal(dsv1alpha1.SandboxPending))
		Expect(containers(a.docker, sbx, dsv1alpha1.RolePrimary)).To(BeEmpty())
	})
})

// isService tells whether a Docker container name is an instance of the named service.
func isService(container, svc string) bool { return strings.Contains(container, "-service-"+svc+"-") }

// eventReasons polls the reasons of the Kubernetes Events recorded about the Sandbox.
func eventReasons(sbx *dsv1alpha1.Sandbox) func() []string {
	return func() []string {
		var list eventsv1.EventList
		if err := k8s.List(context.Background(), &list, client.InNamespace(sbx.Namespace)); err != nil {
			return nil
		}
		var out []string
		for _, ev := range list.Items {
			if ev.Regarding.Name == sbx.Name {
				out = append(out, ev.Reason)
			}
		}
		return out
	}
}

// failingChecks is an exec handler whose every command exits 1.
func failingChecks(context.Context, string, dd.ExecRequest) fake.ExecOutput {
	return fake.ExecOutput{ExitCode: 1}
}
