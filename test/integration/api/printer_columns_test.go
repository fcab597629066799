//go:build integration

package api_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// column is one printer column as the CRD declares it: priority 1 shows only with kubectl get -o wide.
type column struct {
	Name, JSONPath string
	Priority       int64
}

// printerColumns reads the printer columns the API server holds in the CRD named crd.
func printerColumns(ctx context.Context, crd string) []column {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	Expect(k8s.Get(ctx, client.ObjectKey{Name: crd}, u)).To(Succeed())
	versions, _, err := unstructured.NestedSlice(u.Object, "spec", "versions")
	Expect(err).NotTo(HaveOccurred())
	Expect(versions).To(HaveLen(1))
	raw, _, err := unstructured.NestedSlice(versions[0].(map[string]any), "additionalPrinterColumns")
	Expect(err).NotTo(HaveOccurred())
	var out []column
	for _, c := range raw {
		m := c.(map[string]any)
		p, _, _ := unstructured.NestedInt64(m, "priority")
		out = append(out, column{Name: m["name"].(string), JSONPath: m["jsonPath"].(string), Priority: p})
	}
	return out
}

var _ = Describe("kubectl get shows where things are", func() {
	It("declares the node of Sandboxes and the node, size, reason and age of Checkpoints", func(ctx context.Context) {
		Expect(printerColumns(ctx, "sandboxes.dockside.dev")).To(ContainElements(
			column{Name: "Node", JSONPath: ".spec.nodeName"},
			column{Name: "Reason", JSONPath: `.status.conditions[?(@.type=="Ready")].reason`},
		))
		Expect(printerColumns(ctx, "checkpoints.dockside.dev")).To(Equal([]column{
			{Name: "Phase", JSONPath: ".status.phase"},
			{Name: "Sandbox", JSONPath: ".spec.sandboxName"},
			{Name: "Node", JSONPath: ".status.nodeName"},
			{Name: "Size", JSONPath: ".status.size"},
			{Name: "Reason", JSONPath: `.status.conditions[?(@.type=="Ready")].reason`},
			{Name: "Age", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Bytes", JSONPath: ".status.sizeBytes", Priority: 1},
		}))
	})

	It("prints a Checkpoint's phase, Sandbox, node, size for people and reason, and its exact bytes with -o wide", func(ctx context.Context) {
		ns := newNamespace(ctx)
		ckpt := &dsv1alpha1.Checkpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
			Spec:       dsv1alpha1.CheckpointSpec{SandboxName: "box"},
		}
		Expect(k8s.Create(ctx, ckpt)).To(Succeed())
		ckpt.Status.Phase = dsv1alpha1.CheckpointReady
		ckpt.Status.NodeName = "node-b"
		ckpt.Status.SizeBytes, ckpt.Status.Size = 268435456, "256Mi"
		meta.SetStatusCondition(&ckpt.Status.Conditions, cond(dsv1alpha1.ConditionReady, metav1.ConditionTrue, dsv1alpha1.ReasonSucceeded))
		Expect(k8s.Status().Update(ctx, ckpt)).To(Succeed())

		t := table(ctx, "/apis/dockside.dev/v1alpha1/namespaces/"+ns+"/checkpoints")
		var columns []string
		for _, c := range t.ColumnDefinitions {
			columns = append(columns, c.Name)
		}
		Expect(columns).To(Equal([]string{"Name", "Phase", "Sandbox", "Node", "Size", "Reason", "Age", "Bytes"}))
		Expect(t.Rows).To(HaveLen(1))
		cells := t.Rows[0].Cells
		Expect(cells[:6]).To(Equal([]any{"snap", "Ready", "box", "node-b", "256Mi", "Succeeded"}))
		Expect(cells[7]).To(BeNumerically("==", 268435456))
	})
})
