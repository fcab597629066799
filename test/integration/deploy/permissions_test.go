//go:build integration

package deploy_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// userNamespace stands for any namespace where people create Sandboxes: the agent serves all of them.
const userNamespace = "team-a"

// canI asks the API server, through kubectl auth can-i, whether the agent's ServiceAccount may do something.
// kubectl answers "yes" or "no" (exiting 1 for "no"); anything else is an error of the test itself.
func canI(args ...string) bool {
	as := "--as=system:serviceaccount:" + namespace + ":" + agentName
	out, err := kubectl(append([]string{"auth", "can-i", as}, args...)...)
	answer := strings.TrimSpace(out)
	Expect(answer).To(BeElementOf("yes", "no"), "kubectl auth can-i %v: %v", args, err)
	return answer == "yes"
}

// permissionSpecs check the agent's effective permissions after config/default bound its ClusterRole: enough to
// run Sandboxes in every namespace, not enough to touch the cluster's workloads, nodes or RBAC.
func permissionSpecs() {
	DescribeTable("it may do what the agent needs",
		func(args ...string) { Expect(canI(args...)).To(BeTrue(), "the agent cannot %v", args) },
		Entry("list Sandboxes everywhere", "list", "sandboxes.dockside.dev", "--all-namespaces"),
		Entry("watch Sandboxes everywhere", "watch", "sandboxes.dockside.dev", "--all-namespaces"),
		Entry("patch a Sandbox (bind it, finalizer)", "patch", "sandboxes.dockside.dev", "-n", userNamespace),
		Entry("update a Sandbox's status", "update", "sandboxes.dockside.dev", "--subresource=status", "-n", userNamespace),
		Entry("watch SandboxServices everywhere", "watch", "sandboxservices.dockside.dev", "--all-namespaces"),
		Entry("create Events", "create", "events.events.k8s.io", "-n", userNamespace),
		Entry("get its Lease", "get", "leases.coordination.k8s.io", "-n", namespace),
		Entry("create its Lease", "create", "leases.coordination.k8s.io", "-n", namespace),
		Entry("update its Lease", "update", "leases.coordination.k8s.io", "-n", namespace),
		Entry("create the Events of leader election", "create", "events", "-n", namespace),
		Entry("get a Secret that a Sandbox's env names", "get", "secrets", "-n", userNamespace),
		Entry("review a metrics scraper's token", "create", "tokenreviews.authentication.k8s.io"),
		Entry("ask whether a metrics scraper may GET /metrics", "create", "subjectaccessreviews.authorization.k8s.io"),
		Entry("read the front proxy's settings (the data plane)", "get", "configmaps/extension-apiserver-authentication", "-n", "kube-system"),
		Entry("publish its data plane's address on its Lease", "patch", "leases.coordination.k8s.io", "-n", namespace),
	)

	DescribeTable("it may not do more",
		func(args ...string) { Expect(canI(args...)).To(BeFalse(), "the agent can %v", args) },
		Entry("delete Nodes", "delete", "nodes"),
		Entry("create Pods", "create", "pods", "-n", userNamespace),
		Entry("exec into Pods", "create", "pods", "--subresource=exec", "-n", userNamespace),
		Entry("list Secrets (it reads only those named)", "list", "secrets", "-n", userNamespace),
		Entry("watch Secrets", "watch", "secrets", "--all-namespaces"),
		Entry("create ClusterRoleBindings", "create", "clusterrolebindings.rbac.authorization.k8s.io"),
		Entry("impersonate ServiceAccounts", "impersonate", "serviceaccounts", "-n", namespace),
		Entry("delete CRDs", "delete", "customresourcedefinitions.apiextensions.k8s.io"),
		Entry("create ServiceAccount tokens", "create", "serviceaccounts", "--subresource=token", "-n", namespace),
		Entry("update Leases in kube-system (the control plane's own)", "update", "leases.coordination.k8s.io", "-n", "kube-system"),
		Entry("update node heartbeats", "update", "leases.coordination.k8s.io", "-n", "kube-node-lease"),
		Entry("read other agents' metrics (a scraper's role, not the agent's)", "get", "/metrics"),
	)
}
