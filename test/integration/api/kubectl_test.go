//go:build integration

package api_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// table fetches path as kubectl get does: a server-side table built from the CRD's printer columns.
func table(ctx context.Context, path string) metav1.Table {
	body, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred(), string(body))
	var t metav1.Table
	Expect(json.Unmarshal(body, &t)).To(Succeed())
	return t
}

var _ = Describe("kubectl experience", func() {
	It("serves short names and the dockside category", func() {
		// Aggregated discovery can lag a moment behind a CRD that was just established.
		Eventually(func(g Gomega) {
			resources, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerResourcesForGroupVersion(dsv1alpha1.GroupVersion.String())
			g.Expect(err).NotTo(HaveOccurred())
			shortNames := map[string][]string{}
			for _, r := range resources.APIResources {
				if r.Namespaced && len(r.Categories) > 0 {
					g.Expect(r.Categories).To(ConsistOf("dockside"), r.Name)
					shortNames[r.Name] = r.ShortNames
				}
			}
			g.Expect(shortNames).To(Equal(map[string][]string{
				"sandboxes": {"sbx"}, "sandboxservices": {"sbxsvc"}, "checkpoints": {"ckpt"}, "executions": {"exec"},
				"sandboxtemplates": {"sbxtpl"}, "sandboxwarmpools": {"sbxpool"}, "sandboxclaims": {"sbxclaim"},
			}))
		}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("prints phase, readiness, node and image of Sandboxes", func(ctx context.Context) {
		ns := newNamespace(ctx)
		sbx := &dsv1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shown"},
			Spec:       dsv1alpha1.SandboxSpec{Image: "dockside.dev/busybox:local", NodeName: "node-a"},
		}
		Expect(k8s.Create(ctx, sbx)).To(Succeed())
		sbx.Status.Phase = dsv1alpha1.SandboxRunning
		meta.SetStatusCondition(&sbx.Status.Conditions, cond(dsv1alpha1.ConditionReady, metav1.ConditionTrue, dsv1alpha1.ReasonRunning))
		Expect(k8s.Status().Update(ctx, sbx)).To(Succeed())

		t := table(ctx, "/apis/dockside.dev/v1alpha1/namespaces/"+ns+"/sandboxes")
		var columns []string
		for _, c := range t.ColumnDefinitions {
			columns = append(columns, c.Name)
		}
		Expect(columns).To(Equal([]string{"Name", "Phase", "Ready", "Node", "Image", "Exit", "Reason", "Age"}))
		Expect(t.Rows).To(HaveLen(1))
		Expect(t.Rows[0].Cells[:7]).To(Equal([]any{"shown", "Running", "True", "node-a", "dockside.dev/busybox:local", nil, "Running"}))
	})

	It("filters Sandboxes by spec.nodeName and Checkpoints by spec.sandboxName on the server", func(ctx context.Context) {
		ns := newNamespace(ctx)
		for name, node := range map[string]string{"on-a": "node-a", "on-b": "node-b", "unbound": ""} {
			Expect(k8s.Create(ctx, &dsv1alpha1.Sandbox{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec:       dsv1alpha1.SandboxSpec{Image: "busybox", NodeName: node},
			})).To(Succeed())
			Expect(k8s.Create(ctx, &dsv1alpha1.Checkpoint{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1"},
				Spec:       dsv1alpha1.CheckpointSpec{SandboxName: name},
			})).To(Succeed())
		}
		names := func(list client.ObjectList, field, value string) []string {
			Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingFields{field: value})).To(Succeed())
			var out []string
			Expect(meta.EachListItem(list, func(o runtime.Object) error {
				out = append(out, o.(client.Object).GetName())
				return nil
			})).To(Succeed())
			return out
		}
		Expect(names(&dsv1alpha1.SandboxList{}, dsv1alpha1.FieldSandboxNodeName, "node-a")).To(ConsistOf("on-a"))
		Expect(names(&dsv1alpha1.SandboxList{}, dsv1alpha1.FieldSandboxNodeName, "")).To(ConsistOf("unbound"))
		Expect(names(&dsv1alpha1.CheckpointList{}, dsv1alpha1.FieldCheckpointSandboxName, "on-b")).To(ConsistOf("on-b-1"))
		Expect(names(&dsv1alpha1.CheckpointList{}, dsv1alpha1.FieldCheckpointNodeName, "")).To(HaveLen(3))
	})
})
