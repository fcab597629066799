//go:build integration

package deploy_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// userRolesTest is the label of the RoleBindings these specs make, so that cleanup finds them.
var userRolesTest = map[string]string{"dockside.dev/test": "user-roles"}

// userCan asks the API server, through kubectl auth can-i as the admin impersonating user, whether user may do
// something in userNamespace.
func userCan(user string, args ...string) bool {
	GinkgoHelper()
	out, err := kubectl(append([]string{"auth", "can-i", "--as=" + user, "-n", userNamespace}, args...)...)
	answer := strings.TrimSpace(out)
	Expect(answer).To(BeElementOf("yes", "no"), "kubectl auth can-i %v: %v", args, err)
	return answer == "yes"
}

// aggregate does what kube-controller-manager's ClusterRole aggregation controller does, which envtest does not
// run: it sets the rules of the built-in role name to those of every ClusterRole its aggregationRule selects,
// and returns the names of those roles.
func aggregate(name string) []string {
	GinkgoHelper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, role)).To(Succeed())
	Expect(role.AggregationRule).NotTo(BeNil(), "the API server made %s an aggregated role", name)
	all := &rbacv1.ClusterRoleList{}
	Expect(k8s.List(ctx, all)).To(Succeed())
	var rules []rbacv1.PolicyRule
	var sources []string
	for _, candidate := range all.Items {
		for _, term := range role.AggregationRule.ClusterRoleSelectors {
			selector, err := metav1.LabelSelectorAsSelector(&term)
			Expect(err).NotTo(HaveOccurred())
			if candidate.Name != name && selector.Matches(labels.Set(candidate.Labels)) {
				rules = append(rules, candidate.Rules...)
				sources = append(sources, candidate.Name)
				break
			}
		}
	}
	role.Rules = rules
	Expect(k8s.Update(ctx, role)).To(Succeed())
	return sources
}

// userRoleSpecs check the roles of config/rbac/user_roles.yaml, as config/default applied them, for people
// given Kubernetes' own view, edit or admin in a namespace, and for one given dockside-edit alone.
func userRoleSpecs() {
	BeforeAll(func() {
		ctx := context.Background()
		Expect(aggregate("view")).To(ContainElement("dockside-view"))
		Expect(aggregate("edit")).To(ContainElement("dockside-edit"))
		Expect(aggregate("admin")).To(ContainElement("dockside-admin"))
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: userNamespace}}
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, ns))).To(Succeed())
		for user, role := range map[string]string{"viewer": "view", "editor": "edit", "owner": "admin", "sandboxer": "dockside-edit"} {
			binding := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: userNamespace, Labels: userRolesTest},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
			}
			Expect(k8s.Create(ctx, binding)).To(Succeed())
		}
		DeferCleanup(func() {
			Expect(k8s.DeleteAllOf(ctx, &rbacv1.RoleBinding{}, client.InNamespace(userNamespace), client.MatchingLabels(userRolesTest))).To(Succeed())
		})
	})

	DescribeTable("each may do what the role gives",
		func(user string, args ...string) {
			Expect(userCan(user, args...)).To(BeTrue(), "%s cannot %v", user, args)
		},
		Entry("view lists Sandboxes", "viewer", "list", "sandboxes.dockside.dev"),
		Entry("view watches Executions", "viewer", "watch", "executions.dockside.dev"),
		Entry("view reads a Checkpoint's status", "viewer", "get", "checkpoints.dockside.dev", "--subresource=status"),
		Entry("view reads SandboxServices", "viewer", "get", "sandboxservices.dockside.dev"),
		Entry("edit creates Sandboxes", "editor", "create", "sandboxes.dockside.dev"),
		Entry("edit changes Sandboxes", "editor", "patch", "sandboxes.dockside.dev"),
		Entry("edit runs commands: creates Executions", "editor", "create", "executions.dockside.dev"),
		Entry("edit creates Checkpoints", "editor", "create", "checkpoints.dockside.dev"),
		Entry("edit deletes Sandboxes", "editor", "delete", "sandboxes.dockside.dev"),
		Entry("edit reads SandboxServices", "editor", "list", "sandboxservices.dockside.dev"),
		Entry("admin creates SandboxServices", "owner", "create", "sandboxservices.dockside.dev"),
		Entry("admin deletes SandboxServices", "owner", "delete", "sandboxservices.dockside.dev"),
		Entry("admin creates Sandboxes", "owner", "create", "sandboxes.dockside.dev"),
		Entry("admin keeps Kubernetes' own admin rights", "owner", "create", "rolebindings.rbac.authorization.k8s.io"),
		Entry("dockside-edit alone creates Executions", "sandboxer", "create", "executions.dockside.dev"),
		Entry("dockside-edit alone reads SandboxServices", "sandboxer", "get", "sandboxservices.dockside.dev"),
		Entry("view reads warm pools", "viewer", "list", "sandboxwarmpools.dockside.dev"),
		Entry("edit claims a warm Sandbox", "editor", "create", "sandboxclaims.dockside.dev"),
		Entry("edit reads templates", "editor", "get", "sandboxtemplates.dockside.dev"),
		Entry("admin creates templates", "owner", "create", "sandboxtemplates.dockside.dev"),
		Entry("admin resizes warm pools", "owner", "patch", "sandboxwarmpools.dockside.dev"),
	)

	DescribeTable("and nothing more",
		func(user string, args ...string) {
			Expect(userCan(user, args...)).To(BeFalse(), "%s can %v", user, args)
		},
		Entry("view creates no Sandbox", "viewer", "create", "sandboxes.dockside.dev"),
		Entry("view runs no command", "viewer", "create", "executions.dockside.dev"),
		Entry("view deletes no Checkpoint", "viewer", "delete", "checkpoints.dockside.dev"),
		Entry("edit changes no SandboxService", "editor", "patch", "sandboxservices.dockside.dev"),
		Entry("edit writes no status", "editor", "update", "sandboxes.dockside.dev", "--subresource=status"),
		Entry("edit changes no RBAC", "editor", "create", "rolebindings.rbac.authorization.k8s.io"),
		Entry("edit reaches no other namespace", "editor", "create", "sandboxes.dockside.dev", "-n", "team-b"),
		Entry("admin writes no status", "owner", "update", "executions.dockside.dev", "--subresource=status"),
		Entry("dockside-edit alone creates no Pod", "sandboxer", "create", "pods"),
		Entry("dockside-edit alone changes no SandboxService", "sandboxer", "update", "sandboxservices.dockside.dev"),
		Entry("view claims nothing", "viewer", "create", "sandboxclaims.dockside.dev"),
		Entry("edit changes no template", "editor", "update", "sandboxtemplates.dockside.dev"),
		Entry("edit makes no warm pool", "editor", "create", "sandboxwarmpools.dockside.dev"),
	)

	// The data plane's subresources are asked about with SubjectAccessReviews, as the agent and kube-apiserver
	// ask: kubectl auth can-i would resolve the group through discovery, which needs a running agent.
	DescribeTable("the data plane's subresources (subresources.dockside.dev)",
		func(user, verb, sub, ns string, allowed bool) {
			Expect(userMay(user, verb, sub, ns)).To(Equal(allowed), "%s %s sandboxes/%s in %s", user, verb, sub, ns)
		},
		Entry("edit execs (SPDY POSTs: create)", "editor", "create", "exec", userNamespace, true),
		Entry("edit execs (WebSocket GETs: get)", "editor", "get", "exec", userNamespace, true),
		Entry("dockside-edit alone execs", "sandboxer", "create", "exec", userNamespace, true),
		Entry("dockside-edit alone writes files", "sandboxer", "create", "files", userNamespace, true),
		Entry("dockside-edit alone replaces files (PUTs: update)", "sandboxer", "update", "files", userNamespace, true),
		Entry("dockside-edit alone removes files (DELETEs: delete)", "sandboxer", "delete", "files", userNamespace, true),
		Entry("view replaces no file", "viewer", "update", "files", userNamespace, false),
		Entry("admin forwards ports", "owner", "create", "portforward", userNamespace, true),
		Entry("dockside-edit alone starts and signals processes", "sandboxer", "create", "processes", userNamespace, true),
		Entry("edit lists processes and reads their output", "editor", "get", "processes", userNamespace, true),
		Entry("view execs into no Sandbox", "viewer", "create", "exec", userNamespace, false),
		Entry("view opens no WebSocket exec", "viewer", "get", "exec", userNamespace, false),
		Entry("view writes no file", "viewer", "create", "files", userNamespace, false),
		Entry("view reads no process's output", "viewer", "get", "processes", userNamespace, false),
		Entry("view signals no process", "viewer", "create", "processes", userNamespace, false),
		Entry("edit execs in no other namespace", "editor", "create", "exec", "team-b", false),
	)
}

// userMay asks the API server whether user may verb the Sandbox subresource sub in ns.
func userMay(user, verb, sub, ns string) bool {
	GinkgoHelper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Group: "subresources.dockside.dev", Resource: "sandboxes", Subresource: sub, Name: "shell",
		},
	}}
	Expect(k8s.Create(context.Background(), sar)).To(Succeed())
	return sar.Status.Allowed
}
