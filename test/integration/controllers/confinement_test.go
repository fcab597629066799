//go:build integration

package controllers_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
)

const agentNamespace = "dockside-system"

// applyRBAC creates the objects of one file of config/rbac (documents split by ---), each decoded strictly into
// the type that types gives for its kind, and deletes them when the spec ends. Cluster-scoped, they hold only for the
// agent identities that the specs impersonate.
func applyRBAC(file string, types map[string]func() client.Object) {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "rbac", file))
	Expect(err).NotTo(HaveOccurred())
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var head metav1.TypeMeta
		Expect(yaml.Unmarshal([]byte(doc), &head)).To(Succeed())
		newObj, ok := types[head.Kind]
		Expect(ok).To(BeTrue(), "%s holds a %s", file, head.Kind)
		obj := newObj()
		Expect(yaml.UnmarshalStrict([]byte(doc), obj)).To(Succeed())
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx(), obj))).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx(), obj))).To(Succeed()) })
	}
}

// bindHostAccount gives the ServiceAccount of a host run by systemd the agent's roles, as
// config/systemd/agent-kubeconfig.sh does.
func bindHostAccount(account string) {
	GinkgoHelper()
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: agentNamespace, Name: account}}
	cluster := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "dockside-agent"}}
	lease := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: agentNamespace}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "dockside-agent-leader-election"}}
	for _, obj := range []client.Object{cluster, lease} {
		create(obj)
		DeferCleanup(func() { Expect(k8s.Delete(ctx(), obj)).To(Succeed()) })
	}
}

// as is the suite's API server seen with the given identity, impersonated by the admin.
func as(id rest.ImpersonationConfig) *rest.Config {
	conf := rest.CopyConfig(cfg)
	conf.Impersonate = id
	return conf
}

var _ = Describe("Agents confined to their node (config/rbac/agent_confinement.yaml)", func() {
	It("run Sandboxes, Executions and Checkpoints as before under their own identities", func() {
		ns := newNamespace()
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNamespace}}))).To(Succeed())
		applyRBAC("role.yaml", map[string]func() client.Object{"ClusterRole": func() client.Object { return &rbacv1.ClusterRole{} }})
		applyRBAC("role_binding.yaml", map[string]func() client.Object{"ClusterRoleBinding": func() client.Object { return &rbacv1.ClusterRoleBinding{} }})
		applyRBAC("leader_election_role.yaml", map[string]func() client.Object{"Role": func() client.Object { return &rbacv1.Role{} }})
		applyRBAC("leader_election_role_binding.yaml", map[string]func() client.Object{"RoleBinding": func() client.Object { return &rbacv1.RoleBinding{} }})
		applyRBAC("agent_confinement.yaml", map[string]func() client.Object{
			"ValidatingAdmissionPolicy":        func() client.Object { return &admissionv1.ValidatingAdmissionPolicy{} },
			"ValidatingAdmissionPolicyBinding": func() client.Object { return &admissionv1.ValidatingAdmissionPolicyBinding{} },
		})

		// Agent A as the DaemonSet runs it (its pod's token names the node), agent B as systemd does.
		nodeA, nodeB := newNode(), newNode()
		idA := rest.ImpersonationConfig{UserName: "system:serviceaccount:" + agentNamespace + ":dockside-agent",
			Extra: map[string][]string{"authentication.kubernetes.io/node-name": {nodeA}}}
		idB := rest.ImpersonationConfig{UserName: "system:serviceaccount:" + agentNamespace + ":dockside-agent-" + nodeB}
		bindHostAccount("dockside-agent-" + nodeB)

		// The policies are in force once agent A may no longer write a Sandbox of another node, nor take a
		// Checkpoint of it.
		elsewhere, stolen := sandbox(ns, "elsewhere", newNode()), checkpoint(ns, "stolen", "elsewhere")
		create(elsewhere)
		create(stolen)
		asA, err := client.New(as(idA), client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			cur := get(elsewhere)
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Status.ObservedGeneration++
			return asA.Status().Patch(ctx(), cur, patch)
		}).Should(MatchError(ContainSubstring("the agent of node " + nodeA + " may not change Sandbox " + ns + "/elsewhere")))
		Eventually(func() error {
			cur := getCheckpoint(stolen)
			if cur.Status.NodeName != "" {
				// A try before the claims policy was in force went through: undo it, or every later try would
				// be a patch that changes nothing, which no policy refuses.
				undo := client.MergeFrom(cur.DeepCopy())
				cur.Status.NodeName = ""
				if err := k8s.Status().Patch(ctx(), cur, undo); err != nil {
					return err
				}
			}
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Status.NodeName = nodeA
			return asA.Status().Patch(ctx(), cur, patch)
		}).Should(MatchError(ContainSubstring("the agent of node " + nodeA + " may not take Checkpoint " + ns + "/stolen")))
		Expect(k8s.Delete(ctx(), stolen)).To(Succeed())

		confined := func(o *agent.Options) {
			o.LeaderElection, o.LeaseNamespace, o.CheckpointDir = true, agentNamespace, GinkgoT().TempDir()
		}
		a := startAgentOn(as(idA), nodeA, newDocker(nodeA), confined)
		b := startAgentOn(as(idB), nodeB, newDocker(nodeB), confined)
		jobs := newJobLog()
		b.docker.SetExecHandler(jobs.handle)
		DeferCleanup(func() {
			for _, node := range []string{nodeA, nodeB} {
				lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: agent.LeaseName(node)}}
				Expect(client.IgnoreNotFound(k8s.Delete(ctx(), lease))).To(Succeed())
			}
			Expect(k8s.DeleteAllOf(ctx(), &dsv1alpha1.Execution{}, client.InNamespace(ns))).To(Succeed())
		})

		onA, onB, free := sandbox(ns, "on-a", a.node), sandbox(ns, "on-b", b.node), sandbox(ns, "free", "")
		for _, sbx := range []*dsv1alpha1.Sandbox{onA, onB, free} {
			create(sbx)
		}
		for _, sbx := range []*dsv1alpha1.Sandbox{onA, onB, free} {
			Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"), sbx.Name)
		}
		Expect(get(free).Spec.NodeName).To(BeElementOf(nodeA, nodeB), "one of them bound it")

		ex := execution(ns, "hello", "on-b", "brief")
		create(ex)
		Eventually(execState(ex)).Should(Equal("Succeeded/Completed"))
		Expect(getExec(ex).Status.NodeName).To(Equal(nodeB))
		Expect(getExec(ex).OwnerReferences).To(ContainElement(HaveField("Name", "on-b")))

		ckpt := checkpoint(ns, "snap", "on-a")
		create(ckpt)
		Eventually(ckptState(ckpt)).Should(Equal("Ready/Succeeded"))
		Expect(getCheckpoint(ckpt).Status.NodeName).To(Equal(nodeA))

		Expect(k8s.Delete(ctx(), onB)).To(Succeed())
		Eventually(gone(onB)).Should(BeTrue(), "agent B removed its finalizer")
	})
})
