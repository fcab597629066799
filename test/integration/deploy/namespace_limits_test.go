//go:build integration

package deploy_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// namespaceLimitsTest labels what these specs create, so that cleanup finds it.
var namespaceLimitsTest = map[string]string{"dockside.dev/test": "namespace-limits"}

// namespaceLimitSpecs check config/namespaces/namespace-limits.yaml as config/default applied it: labels on a
// Namespace decide the network modes, root and writable root its Sandboxes may ask for.
func namespaceLimitSpecs() {
	var admin client.Client
	ctx := context.Background()

	// namespace makes a namespace of the given labels, removed with everything in it after the spec.
	namespace := func(name string, labels map[string]string) string {
		GinkgoHelper()
		all := map[string]string{}
		for k, v := range namespaceLimitsTest {
			all[k] = v
		}
		for k, v := range labels {
			all[k] = v
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func() {
			Expect(admin.DeleteAllOf(ctx, &dsv1alpha1.Sandbox{}, client.InNamespace(name))).To(Succeed())
			Expect(admin.DeleteAllOf(ctx, &dsv1alpha1.SandboxService{}, client.InNamespace(name))).To(Succeed())
			Expect(k8s.Delete(ctx, ns)).To(Succeed())
		})
		return name
	}
	sandbox := func(ns, name string, mode dsv1alpha1.NetworkMode, tweak ...func(*dsv1alpha1.Sandbox)) *dsv1alpha1.Sandbox {
		sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: dsv1alpha1.SandboxSpec{Image: "dockside.dev/busybox:local", Network: dsv1alpha1.Network{Mode: mode}}}
		for _, t := range tweak {
			t(sbx)
		}
		return sbx
	}
	asRoot := func(s *dsv1alpha1.Sandbox) { s.Spec.RunAsRoot = true }
	writable := func(s *dsv1alpha1.Sandbox) {
		s.Spec.RootFilesystem = dsv1alpha1.RootFilesystem{Mode: dsv1alpha1.RootFilesystemWritable, Size: ptr.To(resource.MustParse("256Mi"))}
	}
	rootService := func(ns string) *dsv1alpha1.SandboxService {
		return &dsv1alpha1.SandboxService{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
			Spec: dsv1alpha1.SandboxServiceSpec{Image: "dockside.dev/redis:local", RunAsRoot: true}}
	}
	// refused expects obj's creation refused with a message holding each of want, and nothing stored.
	refused := func(obj client.Object, want ...string) {
		GinkgoHelper()
		err := admin.Create(ctx, obj)
		for _, w := range want {
			Expect(err).To(MatchError(ContainSubstring(w)))
		}
		Expect(apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(obj), obj))).To(BeTrue(), "a refused object is not stored")
	}

	BeforeAll(func() { admin = clientAs(rest.ImpersonationConfig{}) })

	It("gives an unlabelled namespace None and Isolated, no root and no writable root", func() {
		ns := namespace("limits-default", nil)
		// The first refusal also waits for the API server to have loaded the policy.
		Eventually(func() error { return admin.Create(ctx, sandbox(ns, "wide", dsv1alpha1.NetworkUnrestricted)) }).Should(MatchError(ContainSubstring(
			"Sandbox limits-default/wide asks for network mode Unrestricted, which namespace limits-default does not allow: " +
				"its label dockside.dev/max-network-mode is Isolated (the default when the label is absent)")))
		refused(sandbox(ns, "wide", dsv1alpha1.NetworkUnrestricted), "kubectl label namespace limits-default dockside.dev/max-network-mode=Unrestricted", "policy dockside-namespace-limits")
		refused(sandbox(ns, "root", dsv1alpha1.NetworkNone, asRoot), "asks to run as root", "lacks the label dockside.dev/allow-root=true")
		refused(sandbox(ns, "writable", dsv1alpha1.NetworkNone, writable), "asks for rootFilesystem Writable", "dockside.dev/allow-writable-root=true")
		refused(rootService(ns), "SandboxService limits-default/db asks to run as root")

		Expect(admin.Create(ctx, sandbox(ns, "none", dsv1alpha1.NetworkNone))).To(Succeed())
		Expect(admin.Create(ctx, sandbox(ns, "isolated", dsv1alpha1.NetworkIsolated))).To(Succeed())
	})

	It("lets a namespace opt in to Unrestricted, root and writable root, or narrow itself to None", func() {
		open := namespace("limits-open", map[string]string{"dockside.dev/max-network-mode": "Unrestricted",
			"dockside.dev/allow-root": "true", "dockside.dev/allow-writable-root": "true"})
		Eventually(func() error {
			return admin.Create(ctx, sandbox(open, "wide", dsv1alpha1.NetworkUnrestricted, asRoot, writable))
		}).Should(Succeed())
		Expect(admin.Create(ctx, rootService(open))).To(Succeed())

		closed := namespace("limits-none", map[string]string{"dockside.dev/max-network-mode": "None"})
		Eventually(func() error { return admin.Create(ctx, sandbox(closed, "isolated", dsv1alpha1.NetworkIsolated)) }).Should(MatchError(ContainSubstring(
			"asks for network mode Isolated, which namespace limits-none does not allow: its label dockside.dev/max-network-mode is None;")))
		Expect(admin.Create(ctx, sandbox(closed, "none", dsv1alpha1.NetworkNone))).To(Succeed())

		bad := namespace("limits-typo", map[string]string{"dockside.dev/max-network-mode": "wide"})
		Eventually(func() error { return admin.Create(ctx, sandbox(bad, "none", dsv1alpha1.NetworkNone)) }).Should(MatchError(ContainSubstring(
			"namespace limits-typo has label dockside.dev/max-network-mode=wide, which is none of None, Isolated and Unrestricted")))
	})

	It("requires gVisor where the namespace says so, refusing runc and an unset runtime by name", func() {
		gvisor := func(s *dsv1alpha1.Sandbox) { s.Spec.Runtime = dsv1alpha1.RuntimeGVisor }
		runc := func(s *dsv1alpha1.Sandbox) { s.Spec.Runtime = dsv1alpha1.RuntimeRunc }
		ns := namespace("limits-gvisor", map[string]string{"dockside.dev/require-runtime": "gVisor"})
		Eventually(func() error { return admin.Create(ctx, sandbox(ns, "unset", dsv1alpha1.NetworkNone)) }).Should(MatchError(ContainSubstring(
			"Sandbox limits-gvisor/unset sets no runtime (the node's default, which may be runc), which namespace limits-gvisor " +
				"does not allow: its label dockside.dev/require-runtime is gVisor, so every Sandbox and SandboxService there must " +
				"set runtime: gVisor (policy dockside-namespace-limits)")))
		refused(sandbox(ns, "runc", dsv1alpha1.NetworkNone, runc), "Sandbox limits-gvisor/runc asks for runtime runc", "dockside.dev/require-runtime is gVisor")
		svc := &dsv1alpha1.SandboxService{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
			Spec: dsv1alpha1.SandboxServiceSpec{Image: "dockside.dev/redis:local"}}
		refused(svc.DeepCopy(), "SandboxService limits-gvisor/db sets no runtime")
		svc.Spec.Runtime = dsv1alpha1.RuntimeGVisor
		Expect(admin.Create(ctx, svc)).To(Succeed())
		kept := sandbox(ns, "kept", dsv1alpha1.NetworkNone, gvisor)
		Expect(admin.Create(ctx, kept)).To(Succeed())
		kept.Spec.Runtime = dsv1alpha1.RuntimeRunc
		Expect(admin.Update(ctx, kept)).To(MatchError(ContainSubstring("asks for runtime runc")), "a change to runc is asked anew")

		open := namespace("limits-runc", map[string]string{"dockside.dev/require-runtime": "runc"})
		Eventually(func() error { return admin.Create(ctx, sandbox(open, "runc", dsv1alpha1.NetworkNone, runc)) }).Should(Succeed())
		Expect(admin.Create(ctx, sandbox(open, "unset", dsv1alpha1.NetworkNone))).To(Succeed())
		Expect(admin.Create(ctx, sandbox(open, "gvisor", dsv1alpha1.NetworkNone, gvisor))).To(Succeed())

		bad := namespace("limits-runtime-typo", map[string]string{"dockside.dev/require-runtime": "gvisor"})
		Eventually(func() error { return admin.Create(ctx, sandbox(bad, "x", dsv1alpha1.NetworkNone, gvisor)) }).Should(MatchError(ContainSubstring(
			"namespace limits-runtime-typo has label dockside.dev/require-runtime=gvisor, which is neither gVisor nor runc")))
	})

	It("keeps a runtime an object already had when the namespace comes to require gVisor", func() {
		ns := namespace("limits-gvisor-later", nil)
		old := sandbox(ns, "old", dsv1alpha1.NetworkNone)
		Eventually(func() error { return admin.Create(ctx, old) }).Should(Succeed())
		nsObj := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		nsObj.Labels["dockside.dev/require-runtime"] = "gVisor"
		Expect(k8s.Update(ctx, nsObj)).To(Succeed())
		Eventually(func() error { return admin.Create(ctx, sandbox(ns, "new", dsv1alpha1.NetworkNone)) }).Should(
			MatchError(ContainSubstring("sets no runtime")))
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(old), old)).To(Succeed())
		old.Finalizers = append(old.Finalizers, "dockside.dev/test-finalizer")
		Expect(admin.Update(ctx, old)).To(Succeed(), "an unset runtime it had is kept, not asked anew")
		old.Finalizers = nil
		Expect(admin.Update(ctx, old)).To(Succeed())
	})

	It("judges only what an update asks anew, so that a label taken away strands nothing", func() {
		ns := namespace("limits-later", map[string]string{"dockside.dev/max-network-mode": "Unrestricted"})
		wide := sandbox(ns, "wide", dsv1alpha1.NetworkUnrestricted)
		Eventually(func() error { return admin.Create(ctx, wide) }).Should(Succeed())
		nsObj := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		delete(nsObj.Labels, "dockside.dev/max-network-mode")
		Expect(k8s.Update(ctx, nsObj)).To(Succeed())

		// The API server's namespace cache catches up with the label in a moment: a new Sandbox shows when.
		Eventually(func() error { return admin.Create(ctx, sandbox(ns, "wide-too", dsv1alpha1.NetworkUnrestricted)) }).Should(
			MatchError(ContainSubstring("does not allow")))
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(wide), wide)).To(Succeed())
		wide.Spec.Command = []string{"true"}
		Expect(admin.Update(ctx, wide)).To(Succeed(), "the mode it had is kept, not asked anew")
		wide.Spec.Network.Mode = dsv1alpha1.NetworkIsolated
		Expect(admin.Update(ctx, wide)).To(Succeed())
		wide.Spec.Network.Mode = dsv1alpha1.NetworkUnrestricted
		Expect(admin.Update(ctx, wide)).To(MatchError(ContainSubstring("asks for network mode Unrestricted")))
	})
}
