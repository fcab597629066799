package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// A lost forward says what became of its Sandbox.
func TestForwardEndSaysWhy(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "ns", Name: "pf"}
	at := func(uid types.UID, generation int64) *dsv1alpha1.Sandbox {
		return &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pf", UID: uid},
			Status: dsv1alpha1.SandboxStatus{TopologyGeneration: generation}}
	}
	now := metav1.Now()
	deleting := at("u1", 1)
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"dockside.dev/test"}
	for name, tc := range map[string]struct {
		objects []client.Object
		was     *dsv1alpha1.Sandbox
		want    string
	}{
		"gone":             {want: `sandbox "pf" was deleted`, was: at("u1", 1)},
		"gone, never read": {want: `sandbox "pf" was deleted`},
		"being deleted":    {objects: []client.Object{deleting}, was: at("u1", 1), want: `sandbox "pf" was deleted`},
		"made again":       {objects: []client.Object{at("u2", 1)}, was: at("u1", 1), want: `sandbox "pf" was deleted`},
		"rolled":           {objects: []client.Object{at("u1", 3)}, was: at("u1", 2), want: `sandbox "pf" was rebuilt (topology generation 3 replaced 2)`},
		"unchanged":        {objects: []client.Object{at("u1", 2)}, was: at("u1", 2), want: `lost the connection to sandbox "pf"`},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).Build()
			if got := forwardEnd(t.Context(), c, key, tc.was); got == nil || got.Error() != tc.want {
				t.Fatalf("forwardEnd = %v, want %q", got, tc.want)
			}
		})
	}
	if got := forwardEnd(t.Context(), nil, key, nil); got == nil || got.Error() != `lost the connection to sandbox "pf"` {
		t.Fatalf("without a client: %v", got)
	}
}
