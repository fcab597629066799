//go:build integration

package deploy_test

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const (
	namespace      = "dockside-system"
	agentName      = "dockside-agent"
	socketPath     = "/var/run/docker.sock"
	checkpointPath = "/var/lib/dockside/checkpoints"
	volumesPath    = "/var/lib/docker/volumes"
	peerPath       = "/etc/dockside/dataplane-peer"
)

// The specs run in order: what is applied first is then read back and checked. A failed check does not hide
// the others (ContinueOnFailure).
var _ = Describe("config/default", Ordered, ContinueOnFailure, func() {
	defaultDir := filepath.Join(repoRoot, "config", "default")

	It("renders with kubectl's kustomize, every namespaced object in dockside-system", func() {
		out, err := kubectl("kustomize", defaultDir)
		Expect(err).NotTo(HaveOccurred())
		rendered := map[string]bool{}
		for _, obj := range splitManifests(out) {
			rendered[obj.GetKind()+" "+obj.GetName()] = true
			// One exception: the binding that lets the agent read the front proxy's settings lives where they do.
			if obj.GetNamespace() != "" && obj.GetName() != "dockside-agent-auth-reader" {
				Expect(obj.GetNamespace()).To(Equal(namespace), "%s %s", obj.GetKind(), obj.GetName())
			}
		}
		Expect(rendered).To(HaveKey("Namespace dockside-system"))
		Expect(rendered).To(HaveKey("CustomResourceDefinition sandboxes.dockside.dev"))
		Expect(rendered).To(HaveKey("CustomResourceDefinition sandboxservices.dockside.dev"))
		Expect(rendered).To(HaveKey("CustomResourceDefinition checkpoints.dockside.dev"))
		Expect(rendered).To(HaveKey("CustomResourceDefinition executions.dockside.dev"))
		Expect(rendered).To(HaveKey("ServiceAccount dockside-agent"))
		Expect(rendered).To(HaveKey("ClusterRole dockside-agent"))
		Expect(rendered).To(HaveKey("ClusterRoleBinding dockside-agent"))
		// The agent's metrics filter asks the API server about each scraper; scrapers are given the reader role.
		Expect(rendered).To(HaveKey("ClusterRole dockside-agent-metrics-auth"))
		Expect(rendered).To(HaveKey("ClusterRoleBinding dockside-agent-metrics-auth"))
		Expect(rendered).To(HaveKey("ClusterRole dockside-metrics-reader"))
		for _, policy := range []string{"dockside-agent-confinement", "dockside-agent-claims", "dockside-namespace-limits"} {
			Expect(rendered).To(HaveKey("ValidatingAdmissionPolicy " + policy))
			Expect(rendered).To(HaveKey("ValidatingAdmissionPolicyBinding " + policy))
		}
		for _, role := range []string{"dockside-view", "dockside-edit", "dockside-admin"} {
			Expect(rendered).To(HaveKey("ClusterRole " + role))
		}
		Expect(rendered).To(HaveKey("DaemonSet dockside-agent"))
		// The data plane: kube-apiserver proxies subresources.dockside.dev to the agents.
		Expect(rendered).To(HaveKey("APIService v1alpha1.subresources.dockside.dev"))
		Expect(rendered).To(HaveKey("Service dockside-dataplane"))
		Expect(rendered).To(HaveKey("RoleBinding dockside-agent-auth-reader"))
	})

	It("is accepted by the API server with kubectl apply --server-side -k, and the CRDs are served", func() {
		_, err := kubectl("apply", "--server-side", "-k", defaultDir)
		Expect(err).NotTo(HaveOccurred())
		_, err = kubectl("wait", "--for=condition=Established", "--timeout=30s",
			"crd/sandboxes.dockside.dev", "crd/sandboxservices.dockside.dev", "crd/checkpoints.dockside.dev",
			"crd/executions.dockside.dev")
		Expect(err).NotTo(HaveOccurred())
		_, err = kubectl("get", "sandboxes,sandboxservices,checkpoints,executions", "--all-namespaces")
		Expect(err).NotTo(HaveOccurred())
	})

	Context("the agent DaemonSet, as the API server stored it", daemonSetSpecs)
	Context("the agent's permissions", permissionSpecs)
	Context("an agent run by systemd, with the kubeconfig of config/systemd/agent-kubeconfig.sh", systemdSpecs)
	Context("agents confined to their node", confinementSpecs)
	Context("the roles of people who use Dockside", userRoleSpecs)
	Context("what each namespace may ask for, by its labels", namespaceLimitSpecs)
})

// splitManifests parses a multi-document YAML stream, skipping empty documents.
func splitManifests(stream string) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(stream, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		objs = append(objs, obj)
	}
	return objs
}
