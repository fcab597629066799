//go:build integration

// Package api_test checks the CRDs of api/v1alpha1 against a real kube-apiserver (envtest): samples accepted,
// bad manifests refused with a message a person understands, defaults on read-back, immutable fields, and
// server-side apply. Run with KUBEBUILDER_ASSETS=$(bash hack/build-controlplane.sh).
package api_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/localcluster"
	"github.com/dockside-dev/dockside/test/internal/envtestenv"
	"github.com/dockside-dev/dockside/test/internal/namespaces"
)

var (
	env     *envtestenv.Env
	cfg     *rest.Config
	k8s     client.Client
	watcher client.WithWatch
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "API (CRDs against a real API server)")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = envtestenv.Start(localcluster.Options{})
	Expect(err).NotTo(HaveOccurred())
	cfg = env.Config
	// Strict field validation, as kubectl does by default: unknown fields are refused rather than dropped.
	k8s = client.WithFieldValidation(env.Client, metav1.FieldValidationStrict)
	watcher, err = client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// newNamespace creates a namespace of its own for one spec and removes what the spec left in it afterwards.
func newNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns, err := namespaces.Create(ctx, k8s, "api")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(namespaces.Delete, k8s, ns)
	return ns
}

// fromYAML turns one manifest into an object placed in namespace ns.
func fromYAML(manifest, ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(manifest), &u.Object)).To(Succeed())
	u.SetNamespace(ns)
	return u
}

// countObjects is how many Dockside objects of any kind namespace ns holds.
func countObjects(ctx context.Context, ns string) int {
	var sandboxes dsv1alpha1.SandboxList
	var services dsv1alpha1.SandboxServiceList
	var checkpoints dsv1alpha1.CheckpointList
	Expect(k8s.List(ctx, &sandboxes, client.InNamespace(ns))).To(Succeed())
	Expect(k8s.List(ctx, &services, client.InNamespace(ns))).To(Succeed())
	Expect(k8s.List(ctx, &checkpoints, client.InNamespace(ns))).To(Succeed())
	return len(sandboxes.Items) + len(services.Items) + len(checkpoints.Items)
}
