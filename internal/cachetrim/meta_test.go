package cachetrim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// bulkyMeta is metadata filled where a client can make it large: labels, annotations, managed fields and
// ownerReferences, each far past what the API server stores in one object.
func bulkyMeta() metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Namespace: "ns", Name: "o", UID: "u1", ResourceVersion: "7", Generation: 2,
		Labels:        map[string]string{dsv1alpha1.LabelPool: "warm", dsv1alpha1.LabelTemplateHash: "h", "dockside.dev/other": "x"},
		Annotations:   map[string]string{"note": strings.Repeat("a", 200<<10)},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}},
		Finalizers:    []string{"example.com/keep"},
	}
	for i := range 3000 {
		m.Labels[fmt.Sprintf("example.com/l%d", i)] = strings.Repeat("l", 63)
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: strings.Repeat("t", 200), UID: "x"})
		if i == 500 {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: dsv1alpha1.GroupVersion.String(), Kind: "SandboxWarmPool", Name: "warm", UID: "p1", Controller: ptr.To(true)})
		}
	}
	return m
}

func TestTransformKeepsOnlyWhatAgentsRead(t *testing.T) {
	g := NewWithT(t)
	size := func(v any) int { b, _ := json.Marshal(v); return len(b) }
	for _, obj := range []interface{ GetObjectMeta() metav1.Object }{
		&dsv1alpha1.Sandbox{ObjectMeta: bulkyMeta(), Spec: dsv1alpha1.SandboxSpec{Image: "busybox", NodeName: "n1"}},
		&dsv1alpha1.SandboxService{ObjectMeta: bulkyMeta()},
		&dsv1alpha1.SandboxTemplate{ObjectMeta: bulkyMeta()},
		&dsv1alpha1.SandboxWarmPool{ObjectMeta: bulkyMeta()},
		&dsv1alpha1.SandboxClaim{ObjectMeta: bulkyMeta()},
		&dsv1alpha1.Checkpoint{ObjectMeta: bulkyMeta()},
	} {
		g.Expect(size(obj)).To(BeNumerically(">", 1<<20))
		out, err := Transform(obj)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeIdenticalTo(obj), "trimmed in place")
		m := out.(interface{ GetObjectMeta() metav1.Object }).GetObjectMeta()
		g.Expect(size(out)).To(BeNumerically("<", 1<<10), "%T", out)
		g.Expect(m.GetLabels()).To(Equal(map[string]string{dsv1alpha1.LabelPool: "warm", dsv1alpha1.LabelTemplateHash: "h"}))
		g.Expect(m.GetAnnotations()).To(BeNil())
		g.Expect(m.GetManagedFields()).To(BeNil())
		g.Expect(m.GetOwnerReferences()).To(HaveLen(1))
		g.Expect(m.GetOwnerReferences()[0].UID).To(BeEquivalentTo("p1"), "the controller's")
		g.Expect(m.GetFinalizers()).To(Equal([]string{"example.com/keep"}))
		g.Expect(m.GetNamespace() + "/" + m.GetName() + "/" + string(m.GetUID()) + "/" + m.GetResourceVersion()).To(Equal("ns/o/u1/7"))
		g.Expect(m.GetGeneration()).To(BeEquivalentTo(2))
	}
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: bulkyMeta(), Spec: dsv1alpha1.SandboxSpec{Image: "busybox"}}
	_, _ = Transform(sbx)
	g.Expect(sbx.Spec.Image).To(Equal("busybox"), "the spec stays whole")
}

func TestMetaKeepsTheOwnerAsked(t *testing.T) {
	g := NewWithT(t)
	m := bulkyMeta()
	m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{Kind: "Sandbox", Name: "s", UID: "s1"})
	kept := Meta(&m, func(ref metav1.OwnerReference) bool { return ref.Kind == "Sandbox" })
	g.Expect(kept.OwnerReferences).To(Equal([]metav1.OwnerReference{{Kind: "Sandbox", Name: "s", UID: "s1"}}))
	none := Meta(&metav1.ObjectMeta{Name: "x"}, nil)
	g.Expect(none.Labels).To(BeNil())
	g.Expect(none.OwnerReferences).To(BeNil())
}
