// Package namespaces gives a test a namespace of its own on a control plane of the tests' (envtest, or
// internal/localcluster) and empties it afterwards. Such a control plane runs no namespace controller and no
// garbage collector, so what a test left in its namespace is deleted here, kind by kind.
package namespaces

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Create creates a namespace named prefix-<random suffix> and returns its name.
func Create(ctx context.Context, c client.Client, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("creating a namespace %s-...: %w", prefix, err)
	}
	return ns.Name, nil
}

// Delete deletes every Dockside object and Secret in ns, then ns itself. The finalizers of Dockside's objects
// are taken off first: the agents that would release them may be gone already.
func Delete(ctx context.Context, c client.Client, ns string) error {
	for _, list := range []client.ObjectList{&dsv1alpha1.SandboxList{}, &dsv1alpha1.SandboxServiceList{}, &dsv1alpha1.CheckpointList{}, &dsv1alpha1.ExecutionList{}} {
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("listing %T in %s: %w", list, ns, err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error { return dropFinalizers(ctx, c, o.(client.Object)) }); err != nil {
			return fmt.Errorf("emptying namespace %s: %w", ns, err)
		}
	}
	for _, obj := range []client.Object{&dsv1alpha1.Sandbox{}, &dsv1alpha1.SandboxService{}, &dsv1alpha1.Checkpoint{}, &dsv1alpha1.Execution{}, &corev1.Secret{}} {
		if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("deleting every %T in %s: %w", obj, ns, err)
		}
	}
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	return nil
}

func dropFinalizers(ctx context.Context, c client.Client, obj client.Object) error {
	if len(obj.GetFinalizers()) == 0 {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	obj.SetFinalizers(nil)
	if err := c.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("taking the finalizers off %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
