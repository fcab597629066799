package execution

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// bulky is an Execution filled where a client can make it large, each field to its validation maximum (more
// than the API server stores in one object, about 1.5 MiB).
func bulky() *dsv1alpha1.Execution {
	ex := &dsv1alpha1.Execution{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "e", UID: "u1", ResourceVersion: "7", Generation: 1,
			Labels:        map[string]string{"team": strings.Repeat("l", 63)},
			Annotations:   map[string]string{"note": strings.Repeat("a", 200<<10)},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}},
			Finalizers:    []string{"example.com/keep"},
		},
		Spec: dsv1alpha1.ExecutionSpec{
			SandboxName: "shell", Stdin: strings.Repeat("s", 64<<10), WorkingDir: "/" + strings.Repeat("w", 1000),
			TimeoutSeconds: 5, MaxOutputBytes: 100, TTLSecondsAfterFinished: ptr.To[int32](9),
		},
		Status: dsv1alpha1.ExecutionStatus{
			Phase: dsv1alpha1.ExecutionSucceeded, NodeName: "n1", Reason: dsv1alpha1.ReasonCompleted,
			Stdout: strings.Repeat("o", 256<<10), Stderr: strings.Repeat("e", 256<<10), ExitCode: ptr.To[int32](0),
		},
	}
	for i := range 64 {
		ex.Spec.Command = append(ex.Spec.Command, strings.Repeat("c", 16<<10))
		ex.Spec.Env = append(ex.Spec.Env, dsv1alpha1.ExecutionEnvVar{Name: strings.Repeat("N", 200) + string(rune('A'+i%26)), Value: strings.Repeat("v", 32<<10)})
	}
	// Other ownerReferences around the Sandbox's (their bulk is cachetrim's test).
	other := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "x"}
	ex.OwnerReferences = []metav1.OwnerReference{other,
		{APIVersion: dsv1alpha1.GroupVersion.String(), Kind: "Sandbox", Name: "shell", UID: "s1", Controller: ptr.To(true)}, other}
	return ex
}

func TestCacheTransformKeepsOnlyBoundedFields(t *testing.T) {
	g := NewWithT(t)
	ex := bulky()
	full, _ := json.Marshal(ex)
	out, err := CacheTransform(ex.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	cached := out.(*dsv1alpha1.Execution)
	kept, _ := json.Marshal(cached)
	g.Expect(len(full)).To(BeNumerically(">", 3<<20))
	g.Expect(len(kept)).To(BeNumerically("<", 2<<10), "what every agent keeps of every Execution")

	g.Expect(cached.Spec.Command).To(BeEmpty())
	g.Expect(cached.Spec.Stdin).To(BeEmpty())
	g.Expect(cached.Spec.Env).To(BeEmpty())
	g.Expect(cached.Spec.WorkingDir).To(BeEmpty())
	g.Expect(cached.Status.Stdout + cached.Status.Stderr).To(BeEmpty())
	g.Expect(cached.Labels).To(BeEmpty())
	g.Expect(cached.Annotations).To(BeEmpty())
	g.Expect(cached.ManagedFields).To(BeEmpty())

	// What places it in its queue and says where it stands stays.
	g.Expect(cached.Name + "/" + cached.Namespace + "/" + string(cached.UID) + "/" + cached.ResourceVersion).To(Equal("e/ns/u1/7"))
	g.Expect(cached.Spec.SandboxName).To(Equal("shell"))
	g.Expect(cached.Spec.TimeoutSeconds).To(BeEquivalentTo(5))
	g.Expect(cached.Spec.MaxOutputBytes).To(BeEquivalentTo(100))
	g.Expect(*cached.Spec.TTLSecondsAfterFinished).To(BeEquivalentTo(9))
	g.Expect(cached.Status.Phase).To(Equal(dsv1alpha1.ExecutionSucceeded))
	g.Expect(cached.Status.NodeName).To(Equal("n1"))
	g.Expect(*cached.Status.ExitCode).To(BeEquivalentTo(0))
	g.Expect(sandboxOwner(cached)).To(BeEquivalentTo("s1"), "the Sandbox ownerReference, and only it")
	g.Expect(cached.OwnerReferences).To(HaveLen(1))

	again, _ := CacheTransform(cached.DeepCopy())
	g.Expect(again).To(Equal(cached), "a trimmed Execution trims to itself")

	other := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	same, _ := CacheTransform(other)
	g.Expect(same).To(BeIdenticalTo(other), "other kinds pass through")
}
