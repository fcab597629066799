package sandbox

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// bulkyUnbound is an unbound Sandbox filled where a client can make it large: the program, its environment,
// annotations, labels and ownerReferences.
func bulkyUnbound() *dsv1alpha1.Sandbox {
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "s", UID: "u1", ResourceVersion: "7", Generation: 1,
			Labels:        map[string]string{"team": strings.Repeat("l", 63), dsv1alpha1.LabelPool: "warm", dsv1alpha1.LabelClaim: "c"},
			Annotations:   map[string]string{"note": strings.Repeat("a", 200<<10)},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}},
			Finalizers:    []string{"example.com/keep"},
		},
		Spec: dsv1alpha1.SandboxSpec{
			Image: "busybox", Command: []string{"sh", "-c", strings.Repeat("c", 16<<10)}, Args: []string{strings.Repeat("a", 16<<10)},
			WorkingDir: "/" + strings.Repeat("w", 1000), RestoreFrom: "gone", Services: []string{"db"},
			Resources:   dsv1alpha1.Resources{Memory: resource.MustParse("1Gi"), CPU: resource.MustParse("2"), Pids: 512},
			Workspace:   dsv1alpha1.Workspace{Size: resource.MustParse("1Gi"), MountPath: "/work"},
			Network:     dsv1alpha1.Network{Mode: dsv1alpha1.NetworkIsolated, Allow: []string{strings.Repeat("h", 250)}},
			SecretFiles: []dsv1alpha1.SecretFile{{Path: "token", SecretName: "s", Key: "k"}},
		},
		Status: dsv1alpha1.SandboxStatus{Phase: dsv1alpha1.SandboxPending, Conditions: []metav1.Condition{
			{Type: dsv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: dsv1alpha1.ReasonNoCapacity, Message: "waiting"},
		}},
	}
	for i := range 4 {
		sbx.Spec.Env = append(sbx.Spec.Env, dsv1alpha1.EnvVar{Name: "V" + string(rune('A'+i)), Value: strings.Repeat("v", 32<<10)})
		sbx.Spec.CommandEnv = append(sbx.Spec.CommandEnv, dsv1alpha1.ExecutionEnvVar{Name: "C" + string(rune('A'+i)), Value: strings.Repeat("v", 32<<10)})
	}
	// Other ownerReferences around the controller's (their bulk is cachetrim's test).
	other := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "x"}
	sbx.OwnerReferences = []metav1.OwnerReference{other,
		{APIVersion: dsv1alpha1.GroupVersion.String(), Kind: "SandboxWarmPool", Name: "warm", UID: "p1", Controller: ptr.To(true)}, other}
	return sbx
}

func TestUnboundCacheTransformKeepsWhatBindingReads(t *testing.T) {
	g := NewWithT(t)
	sbx := bulkyUnbound()
	out, err := UnboundCacheTransform(sbx.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	cached := out.(*dsv1alpha1.Sandbox)

	size := func(v any) int { b, _ := json.Marshal(v); return len(b) }
	g.Expect(size(sbx)).To(BeNumerically(">", 450<<10))
	g.Expect(size(cached)).To(BeNumerically("<", 2<<10), "what every agent pays for one unbound Sandbox")

	g.Expect(cached.Spec.Command).To(Equal([]string{runMarker}), "a run stays a run")
	g.Expect(cached.Spec.Args).To(BeNil())
	g.Expect(cached.Spec.Env).To(BeNil())
	g.Expect(cached.Spec.CommandEnv).To(BeNil())
	g.Expect(cached.Spec.WorkingDir).To(BeEmpty())
	g.Expect(cached.Spec.Network.Allow).To(BeNil())
	g.Expect(cached.Annotations).To(BeNil())
	g.Expect(cached.ManagedFields).To(BeNil())
	g.Expect(cached.Labels).To(Equal(map[string]string{dsv1alpha1.LabelPool: "warm", dsv1alpha1.LabelClaim: "c"}))
	g.Expect(cached.OwnerReferences).To(HaveLen(1))
	g.Expect(metav1.GetControllerOf(cached).UID).To(BeEquivalentTo("p1"))

	// What binding and room read is all there: the footprint comes out the same.
	svc := &dsv1alpha1.SandboxService{Spec: dsv1alpha1.SandboxServiceSpec{Resources: dsv1alpha1.Resources{Memory: resource.MustParse("256Mi"), Pids: 64}}}
	services := []*dsv1alpha1.SandboxService{svc}
	g.Expect(footprint(cached, services)).To(Equal(footprint(sbx, services)))
	g.Expect(tooLargeForNode("n1", Holding{Pids: 100, MilliCPU: 1000}, cached, services)).To(Equal(tooLargeForNode("n1", Holding{Pids: 100, MilliCPU: 1000}, sbx, services)))
	g.Expect(cached.Spec.RestoreFrom).To(Equal("gone"))
	g.Expect(cached.Spec.Network.Mode).To(Equal(dsv1alpha1.NetworkIsolated))
	g.Expect(cached.Finalizers).To(Equal(sbx.Finalizers))
	g.Expect(cached.Status).To(Equal(sbx.Status))

	// A bind, a merge patch against the cached copy, writes spec.nodeName and the finalizer and nothing else:
	// what the cache dropped is never written back.
	bound := cached.DeepCopy()
	bound.Spec.NodeName = "n1"
	bound.Finalizers = append(bound.Finalizers, dsv1alpha1.FinalizerCleanup)
	patch, err := client.MergeFromWithOptions(cached, client.MergeFromWithOptimisticLock{}).Data(bound)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(patch)).To(MatchJSON(`{"metadata":{"finalizers":["example.com/keep","` + dsv1alpha1.FinalizerCleanup + `"],"resourceVersion":"7"},"spec":{"nodeName":"n1"}}`))

	// A bound Sandbox passes untouched (the transform sees only unbound ones, but says so itself).
	sbx.Spec.NodeName = "n1"
	same, _ := UnboundCacheTransform(sbx)
	g.Expect(same).To(BeIdenticalTo(sbx))
}
