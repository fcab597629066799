//go:build integration

package deploy_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/templates"
)

const (
	confinedNamespace = "confinement"
	nodeA             = "node-a" // its agent runs in the DaemonSet: the pod's token names the node
	nodeB             = "node-b" // its agent runs under systemd, as the ServiceAccount dockside-agent-node-b
	podNodeExtra      = "authentication.kubernetes.io/node-name"
)

// confinementTest is the label of what these specs create, so that cleanup finds it.
var confinementTest = map[string]string{confinementTestKey: "confinement"}

const confinementTestKey = "dockside.dev/test"

// clientAs is a client of the cluster as the given identity, through impersonation by the admin.
func clientAs(id rest.ImpersonationConfig) client.Client {
	GinkgoHelper()
	scheme := runtime.NewScheme()
	Expect(dsv1alpha1.AddToScheme(scheme)).To(Succeed())
	conf := rest.CopyConfig(adminConfig)
	conf.Impersonate = id
	c, err := client.New(conf, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// confinementSpecs check config/rbac/agent_confinement.yaml as config/default applied it, with two agents that
// hold the agent's roles: agent A as the DaemonSet runs it, agent B as systemd does. Each may write the objects
// of its own node and bind unbound Sandboxes to itself, and nothing else; the admin stays unconfined.
func confinementSpecs() {
	var admin, agentA, agentB, nodeless client.Client
	ctx := context.Background()

	BeforeAll(func() {
		admin = clientAs(rest.ImpersonationConfig{})
		agentA = clientAs(rest.ImpersonationConfig{
			UserName: "system:serviceaccount:" + namespace + ":" + agentName,
			Extra:    map[string][]string{podNodeExtra: {nodeA}},
		})
		agentB = clientAs(rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + agentName + "-" + nodeB})
		nodeless = clientAs(rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + agentName})

		// Agent B's binding, as config/systemd/agent-kubeconfig.sh makes it for its host.
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: agentName + "-" + nodeB, Labels: confinementTest},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: agentName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: agentName + "-" + nodeB}},
		}
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, binding)).To(Succeed()) })
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: confinedNamespace, Labels: confinementTest}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func() { cleanUpConfinement(admin) })
	})

	// made creates obj as the admin, and then its status when it has one to set.
	made := func(obj client.Object, status func()) {
		GinkgoHelper()
		obj.SetNamespace(confinedNamespace)
		obj.SetLabels(confinementTest)
		Expect(admin.Create(ctx, obj)).To(Succeed())
		if status != nil {
			status()
			Expect(admin.Status().Update(ctx, obj)).To(Succeed())
		}
	}
	sandbox := func(name, node string) *dsv1alpha1.Sandbox {
		sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: dsv1alpha1.SandboxSpec{Image: "dockside.dev/busybox:local", NodeName: node}}
		made(sbx, nil)
		return sbx
	}
	// checkpoint and execution are of Sandbox on-<of>, taken by node (none when node is empty).
	checkpoint := func(name, of, node string) *dsv1alpha1.Checkpoint {
		ckpt := &dsv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: dsv1alpha1.CheckpointSpec{SandboxName: "on-" + of}}
		made(ckpt, func() { ckpt.Status.NodeName = node })
		return ckpt
	}
	execution := func(name, of, node string) *dsv1alpha1.Execution {
		ex := &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: dsv1alpha1.ExecutionSpec{SandboxName: "on-" + of, Command: []string{"true"}}}
		made(ex, func() { ex.Status.NodeName = node })
		return ex
	}
	// write applies change to a fresh copy of obj as c, through the status subresource when onStatus.
	write := func(c client.Client, obj client.Object, onStatus bool, change func(client.Object)) error {
		GinkgoHelper()
		fresh := obj.DeepCopyObject().(client.Object)
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(obj), fresh)).To(Succeed())
		patch := client.MergeFromWithOptions(fresh.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		change(fresh)
		if onStatus {
			return c.Status().Patch(ctx, fresh, patch)
		}
		return c.Patch(ctx, fresh, patch)
	}
	bindTo := func(node string) func(client.Object) {
		return func(o client.Object) { o.(*dsv1alpha1.Sandbox).Spec.NodeName = node }
	}
	sandboxStatus := func(o client.Object) { o.(*dsv1alpha1.Sandbox).Status.ObservedGeneration++ }
	addFinalizer := func(o client.Object) { controllerutil.AddFinalizer(o, dsv1alpha1.FinalizerCleanup) }

	It("binds an unbound Sandbox only to the agent's own node, changing nothing else", func() {
		unbound, other := sandbox("unbound", ""), sandbox("unbound-too", "")
		// The first refusal also waits for the API server to have loaded the policy.
		Eventually(func() error { return write(agentA, unbound, false, bindTo(nodeB)) }).Should(MatchError(ContainSubstring(
			"the agent of node node-a may take Sandbox confinement/unbound only for its own node, not for node-b")))
		Expect(write(agentA, other, false, func(o client.Object) {
			bindTo(nodeA)(o)
			o.(*dsv1alpha1.Sandbox).Spec.Image = "dockside.dev/python:local"
		})).To(MatchError(ContainSubstring("may not change the spec of Sandbox confinement/unbound-too")))
		Expect(write(agentA, other, false, addFinalizer)).To(MatchError(ContainSubstring(
			"may not change the finalizers of Sandbox confinement/unbound-too before it is bound")))
		Expect(admin.Delete(ctx, other)).To(Succeed())

		// The agent binds and admits in one write, as it does.
		Expect(write(agentA, unbound, false, func(o client.Object) { bindTo(nodeA)(o); addFinalizer(o) })).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(unbound), unbound)).To(Succeed())
		Expect(unbound.Spec.NodeName).To(Equal(nodeA))
		Expect(unbound.Finalizers).To(ContainElement(dsv1alpha1.FinalizerCleanup))
	})

	It("lets each agent write status and finalizers of its own node's Sandboxes, and not of the other's", func() {
		onA, onB := sandbox("on-"+nodeA, nodeA), sandbox("on-"+nodeB, nodeB)
		Expect(write(agentA, onB, true, sandboxStatus)).To(MatchError(ContainSubstring(
			"the agent of node node-a may not change Sandbox confinement/on-node-b: it belongs to node node-b")))
		Expect(write(agentA, onB, false, addFinalizer)).To(MatchError(ContainSubstring("it belongs to node node-b")))
		Expect(agentA.Delete(ctx, onB)).To(MatchError(ContainSubstring("it belongs to node node-b")))
		Expect(write(agentB, onA, true, sandboxStatus)).To(MatchError(ContainSubstring(
			"the agent of node node-b may not change Sandbox confinement/on-node-a: it belongs to node node-a")))

		Expect(write(agentA, onA, true, sandboxStatus)).To(Succeed())
		Expect(write(agentA, onA, false, addFinalizer)).To(Succeed())
		Expect(write(agentB, onB, true, sandboxStatus)).To(Succeed())
		Expect(write(agentB, onB, false, addFinalizer)).To(Succeed())
	})

	It("refuses an agent every change of spec, labels or owners, even on its own node", func() {
		onA := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "on-" + nodeA, Namespace: confinedNamespace}}
		Expect(write(agentA, onA, false, func(o client.Object) {
			o.(*dsv1alpha1.Sandbox).Spec.Command = []string{"sh", "-c", "echo attacker"}
		})).To(MatchError(ContainSubstring("the agent of node node-a may not change the spec of Sandbox confinement/on-node-a")))
		Expect(write(agentA, onA, false, func(o client.Object) { o.SetLabels(map[string]string{"team": "b"}) })).To(
			MatchError(ContainSubstring("may not change the labels or annotations of Sandbox confinement/on-node-a")))
		Expect(write(agentA, onA, false, func(o client.Object) {
			o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "1"}})
		})).To(MatchError(ContainSubstring("may not change the owners of Sandbox confinement/on-node-a")))

		svc := &dsv1alpha1.SandboxService{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: dsv1alpha1.SandboxServiceSpec{Image: "dockside.dev/redis:local"}}
		made(svc, nil)
		Expect(write(agentA, svc, false, func(o client.Object) {
			o.(*dsv1alpha1.SandboxService).Spec.Image = "dockside.dev/python:local"
		})).To(MatchError(ContainSubstring("may not change the spec of SandboxService confinement/db")))
		Expect(write(agentA, svc, false, addFinalizer)).To(Succeed(), "every agent keeps in-use protection")

		// The admin is not an agent: the policy does not judge it.
		Expect(write(admin, onA, false, func(o client.Object) { o.(*dsv1alpha1.Sandbox).Spec.Command = []string{"true"} })).To(Succeed())
	})

	It("confines Checkpoints and Executions by the node that took them, and lets them be taken only by their Sandbox's", func() {
		ckptB, ckptFree, ckptOfB := checkpoint("ckpt-b", nodeB, nodeB), checkpoint("ckpt-free", nodeA, ""), checkpoint("ckpt-of-b", nodeB, "")
		Expect(write(agentA, ckptB, true, func(o client.Object) { o.(*dsv1alpha1.Checkpoint).Status.SizeBytes = 1 })).To(
			MatchError(ContainSubstring("the agent of node node-a may not change Checkpoint confinement/ckpt-b: it belongs to node node-b")))
		Expect(write(agentA, ckptFree, true, func(o client.Object) { o.(*dsv1alpha1.Checkpoint).Status.NodeName = nodeB })).To(
			MatchError(ContainSubstring("may take Checkpoint confinement/ckpt-free only for its own node, not for node-b")))
		// The first refusal of a claim also waits for the API server to have loaded the second policy.
		Eventually(func() error {
			return write(agentA, ckptOfB, true, func(o client.Object) { o.(*dsv1alpha1.Checkpoint).Status.NodeName = nodeA })
		}).Should(MatchError(ContainSubstring("the agent of node node-a may not take Checkpoint confinement/ckpt-of-b: its Sandbox on-node-b is bound to node node-b")))
		Expect(write(agentA, ckptFree, true, func(o client.Object) { o.(*dsv1alpha1.Checkpoint).Status.NodeName = nodeA })).To(Succeed())
		Expect(write(agentB, ckptB, true, func(o client.Object) { o.(*dsv1alpha1.Checkpoint).Status.SizeBytes = 2 })).To(Succeed())

		exB, exFree, exOfB := execution("ex-b", nodeB, nodeB), execution("ex-free", nodeA, ""), execution("ex-of-b", nodeB, "")
		Expect(write(agentA, exB, true, func(o client.Object) { o.(*dsv1alpha1.Execution).Status.Stdout = "forged" })).To(
			MatchError(ContainSubstring("the agent of node node-a may not change Execution confinement/ex-b: it belongs to node node-b")))
		Expect(agentA.Delete(ctx, exB)).To(MatchError(ContainSubstring("it belongs to node node-b")))
		Expect(write(agentA, exOfB, true, func(o client.Object) {
			o.(*dsv1alpha1.Execution).Status.NodeName = nodeA
			o.(*dsv1alpha1.Execution).Status.Stdout = "forged"
		})).To(MatchError(ContainSubstring("may not take Execution confinement/ex-of-b: its Sandbox on-node-b is bound to node node-b")))
		Expect(write(agentA, exFree, true, func(o client.Object) { o.(*dsv1alpha1.Execution).Status.NodeName = nodeA })).To(Succeed())
		owner := &dsv1alpha1.Sandbox{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: confinedNamespace, Name: "on-" + nodeA}, owner)).To(Succeed())
		Expect(write(agentA, exFree, false, func(o client.Object) {
			o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: dsv1alpha1.GroupVersion.String(), Kind: "Sandbox", Name: owner.Name, UID: owner.UID}})
		})).To(Succeed(), "an agent makes an Execution owned by its Sandbox")
		Expect(agentA.Delete(ctx, exFree)).To(Succeed())
		Expect(agentB.Delete(ctx, exB)).To(Succeed())
	})

	It("lets another agent mark a Sandbox of a lost node NodeLost, and nothing more", func() {
		lost := sandbox("lost-"+nodeB, nodeB)
		Expect(write(agentB, lost, true, func(o client.Object) {
			sbx := o.(*dsv1alpha1.Sandbox)
			sbx.Status.Phase, sbx.Status.NodeName = dsv1alpha1.SandboxRunning, nodeB
			status.Set(sbx, dsv1alpha1.ConditionScheduled, true, dsv1alpha1.ReasonBound, "bound to node "+nodeB)
			status.Summarize(sbx, status.Summary{Ready: true, Reason: dsv1alpha1.ReasonRunning, Message: "up"})
		})).To(Succeed(), "its own agent wrote its status while it was alive")
		markLost := func(o client.Object) { status.MarkNodeLost(o.(*dsv1alpha1.Sandbox), nodeB, time.Now()) }
		refused := ContainSubstring("the agent of node node-a may not change Sandbox confinement/lost-node-b: it belongs to node node-b, " +
			"and another agent may only mark it lost")
		for what, change := range map[string]func(client.Object){
			"another status field": func(o client.Object) { markLost(o); o.(*dsv1alpha1.Sandbox).Status.Phase = dsv1alpha1.SandboxFailed },
			"another condition": func(o client.Object) {
				markLost(o)
				status.Set(o.(*dsv1alpha1.Sandbox), dsv1alpha1.ConditionScheduled, false, dsv1alpha1.ReasonNoCapacity, "forged")
			},
			"Ready True": func(o client.Object) {
				markLost(o)
				status.Set(o.(*dsv1alpha1.Sandbox), dsv1alpha1.ConditionReady, true, dsv1alpha1.ReasonRunning, "forged")
			},
			"NodeLost for another reason": func(o client.Object) {
				markLost(o)
				status.Set(o.(*dsv1alpha1.Sandbox), dsv1alpha1.ConditionNodeLost, true, "Forged", "forged")
			},
			"Ready Unknown without NodeLost": func(o client.Object) {
				markLost(o)
				meta.RemoveStatusCondition(&o.(*dsv1alpha1.Sandbox).Status.Conditions, dsv1alpha1.ConditionNodeLost)
			},
		} {
			Expect(write(agentA, lost, true, change)).To(MatchError(refused), what)
		}
		Expect(write(agentA, lost, false, addFinalizer)).To(MatchError(ContainSubstring("it belongs to node node-b")),
			"the exception is of the status only")
		Expect(agentA.Delete(ctx, lost)).To(MatchError(ContainSubstring("it belongs to node node-b")))

		Expect(write(agentA, lost, true, markLost)).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(lost), lost)).To(Succeed())
		Expect(meta.IsStatusConditionTrue(lost.Status.Conditions, dsv1alpha1.ConditionNodeLost)).To(BeTrue())
		Expect(meta.FindStatusCondition(lost.Status.Conditions, dsv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionUnknown))
		Expect(lost.Status.Phase).To(Equal(dsv1alpha1.SandboxRunning))

		Expect(write(agentB, lost, true, func(o client.Object) {
			sbx := o.(*dsv1alpha1.Sandbox)
			status.ClearNodeLost(sbx, nodeB)
			status.Summarize(sbx, status.Summary{Ready: true, Reason: dsv1alpha1.ReasonRunning, Message: "up"})
		})).To(Succeed(), "its own agent, back, says so")
	})

	It("lets an agent bind a claim to a warm Sandbox of a pool on its node, and nothing broader", func() {
		tpl := &dsv1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tpl"},
			Spec: dsv1alpha1.SandboxTemplateSpec{Sandbox: dsv1alpha1.SandboxSpec{Image: "dockside.dev/busybox:local", ActiveDeadlineSeconds: ptr.To[int64](600)}}}
		made(tpl, nil)
		pool := &dsv1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Name: "pool"},
			Spec: dsv1alpha1.SandboxWarmPoolSpec{TemplateRef: dsv1alpha1.LocalObjectReference{Name: tpl.Name}, Replicas: 1}}
		made(pool, nil)
		claim := &dsv1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "task"}, Spec: dsv1alpha1.SandboxClaimSpec{
			PoolRef: dsv1alpha1.LocalObjectReference{Name: pool.Name}, Env: []dsv1alpha1.ExecutionEnvVar{{Name: "TASK_ID", Value: "42"}},
			Labels: map[string]string{"team": "data"}, Lifecycle: dsv1alpha1.LifecyclePaused}}
		made(claim, nil)
		// warm is a Sandbox of the pool bound to node, as the pool reconciler makes it (and the admin binds it).
		warm := func(name, node string) *dsv1alpha1.Sandbox {
			sbx := templates.Warm(pool, tpl, name, templates.Hash(tpl))
			sbx.Spec.NodeName = node
			sbx.Labels[confinementTestKey] = confinementTest[confinementTestKey]
			Expect(admin.Create(ctx, sbx)).To(Succeed())
			return sbx
		}
		// binding is the claim reconciler's write, then more.
		binding := func(more func(*dsv1alpha1.Sandbox)) func(client.Object) {
			return func(o client.Object) {
				sbx := o.(*dsv1alpha1.Sandbox)
				templates.Claim(sbx, claim, tpl, &metav1.Time{Time: time.Now()})
				more(sbx)
			}
		}
		asIs := func(*dsv1alpha1.Sandbox) {}
		onA, onB, unbound := warm("pool-0", nodeA), warm("pool-1", nodeB), warm("pool-2", "")
		plain := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "on-" + nodeA, Namespace: confinedNamespace}}

		notWarm := ContainSubstring("may bind to a SandboxClaim only a warm Sandbox of a pool bound to its node")
		Expect(write(agentA, onB, false, binding(asIs))).To(MatchError(ContainSubstring(
			"the agent of node node-a may not change Sandbox confinement/pool-1: it belongs to node node-b")))
		Expect(write(agentA, unbound, false, binding(asIs))).To(MatchError(notWarm), "an unbound member")
		Expect(write(agentA, plain, false, binding(asIs))).To(MatchError(notWarm), "a Sandbox of no pool")
		Expect(write(agentA, onA, false, binding(func(s *dsv1alpha1.Sandbox) {
			s.OwnerReferences = append(s.OwnerReferences, *metav1.NewControllerRef(pool, dsv1alpha1.GroupVersion.WithKind("SandboxWarmPool")))
			s.OwnerReferences[1].Controller = ptr.To(false)
		}))).To(MatchError(notWarm), "the pool kept as a second owner")
		Expect(write(agentA, onA, false, binding(func(s *dsv1alpha1.Sandbox) { s.OwnerReferences[0].Name = "another" }))).To(
			MatchError(notWarm), "a claim other than the label's as owner")
		Expect(write(agentA, onA, false, binding(func(s *dsv1alpha1.Sandbox) { s.Spec.Image = "dockside.dev/python:local" }))).To(
			MatchError(ContainSubstring("may not change the spec of Sandbox confinement/pool-0")))
		Expect(write(agentA, onA, false, binding(func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"db"} }))).To(
			MatchError(ContainSubstring("may not change the spec of Sandbox confinement/pool-0")))
		for what, change := range map[string]func(*dsv1alpha1.Sandbox){
			"a label of Dockside's": func(s *dsv1alpha1.Sandbox) { s.Labels["dockside.dev/node"] = nodeB },
			"the pool's label":      func(s *dsv1alpha1.Sandbox) { s.Labels[dsv1alpha1.LabelTemplateHash] = "forged" },
			"a label removed":       func(s *dsv1alpha1.Sandbox) { delete(s.Labels, confinementTestKey) },
			"an annotation":         func(s *dsv1alpha1.Sandbox) { s.Annotations = map[string]string{"x": "y"} },
		} {
			Expect(write(agentA, onA, false, binding(change))).To(MatchError(ContainSubstring(
				"may not change the labels or annotations of Sandbox confinement/pool-0")), what)
		}

		Expect(write(agentA, onA, false, binding(asIs))).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(onA), onA)).To(Succeed())
		Expect(onA.Labels).To(HaveKeyWithValue(dsv1alpha1.LabelClaim, claim.Name))
		Expect(onA.Labels).To(HaveKeyWithValue("team", "data"))
		Expect(metav1.GetControllerOf(onA).UID).To(Equal(claim.UID))
		Expect(onA.Spec.CommandEnv).To(Equal(claim.Spec.Env))
		Expect(onA.Spec.Lifecycle).To(Equal(dsv1alpha1.LifecyclePaused))

		// Bound, it is the claim's: no second binding, no change of what the first one set.
		Expect(write(agentA, onA, false, func(o client.Object) {
			o.(*dsv1alpha1.Sandbox).Spec.CommandEnv = []dsv1alpha1.ExecutionEnvVar{{Name: "LD_PRELOAD", Value: "/tmp/x.so"}}
		})).To(MatchError(ContainSubstring("may not change the spec of Sandbox confinement/pool-0")))
		Expect(write(agentA, onA, false, func(o client.Object) { o.SetLabels(map[string]string{dsv1alpha1.LabelClaim: "other"}) })).To(
			MatchError(ContainSubstring("may not change the labels or annotations of Sandbox confinement/pool-0")))
	})

	It("refuses the agent's ServiceAccount with a token that names no node", func() {
		onA := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "on-" + nodeA, Namespace: confinedNamespace}}
		Expect(write(nodeless, onA, true, sandboxStatus)).To(MatchError(ContainSubstring(
			"the agent identity system:serviceaccount:dockside-system:dockside-agent names no node")))
	})
}

// cleanUpConfinement removes what the confinement specs made, finalizers first: envtest runs no namespace
// controller and no agent to let them go.
func cleanUpConfinement(admin client.Client) {
	ctx := context.Background()
	for _, list := range []client.ObjectList{&dsv1alpha1.SandboxList{}, &dsv1alpha1.SandboxServiceList{}, &dsv1alpha1.CheckpointList{},
		&dsv1alpha1.ExecutionList{}, &dsv1alpha1.SandboxClaimList{}, &dsv1alpha1.SandboxWarmPoolList{}, &dsv1alpha1.SandboxTemplateList{}} {
		Expect(admin.List(ctx, list, client.InNamespace(confinedNamespace), client.MatchingLabels(confinementTest))).To(Succeed())
		Expect(meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
			obj.SetFinalizers(nil)
			if err := client.IgnoreNotFound(admin.Patch(ctx, obj, patch)); err != nil {
				return err
			}
			return client.IgnoreNotFound(admin.Delete(ctx, obj))
		})).To(Succeed())
	}
	Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: confinedNamespace}})).To(Succeed())
}
