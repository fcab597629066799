// Package cachetrim is the one shape of what the agent's caches keep of an object's metadata. Every agent
// caches every unbound Sandbox, SandboxService, SandboxTemplate, pool, claim, Checkpoint and Execution of the
// cluster and its node's own Sandboxes, and labels, annotations, managed fields and ownerReferences are
// bounded only by an object's size (about 1.5 MiB), beyond the reach of CRD validation: what a cache keeps of
// them is paid for by every agent, as many times as users make objects (docs/security.md, "What bounds the
// agent's memory").
package cachetrim

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// keptLabels are the labels the agents set and select on (api/v1alpha1/pool_conditions.go), each value at
// most 63 characters; a cache keeps no other label.
var keptLabels = []string{dsv1alpha1.LabelPool, dsv1alpha1.LabelTemplateHash, dsv1alpha1.LabelClaim}

// Meta is what a cache keeps of an object's metadata: namespace, name, UID, resourceVersion, generation,
// creation and deletion times, finalizers (whole: a merge patch that adds one sends the list in full), the
// labels in keptLabels, and the first ownerReference that owner accepts (nil: the controller's). It drops
// annotations, managed fields, every other label and ownerReference. No agent writes metadata but by merge
// patches against its cached copy, so what a cache lacks is never written back.
func Meta(m *metav1.ObjectMeta, owner func(metav1.OwnerReference) bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp, Finalizers: m.Finalizers,
	}
	for _, k := range keptLabels {
		if v, ok := m.Labels[k]; ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	if owner == nil {
		owner = isController
	}
	for _, ref := range m.OwnerReferences {
		if owner(ref) {
			out.OwnerReferences = []metav1.OwnerReference{ref}
			break
		}
	}
	return out
}

func isController(ref metav1.OwnerReference) bool { return ref.Controller != nil && *ref.Controller }

// Transform trims the metadata of any typed object to Meta's, in place: the agent cache's default
// transform, for the kinds whose spec and status validation bounds or agents write.
func Transform(obj any) (any, error) {
	if o, ok := obj.(interface{ GetObjectMeta() metav1.Object }); ok {
		if m, ok := o.GetObjectMeta().(*metav1.ObjectMeta); ok {
			*m = Meta(m, nil)
		}
	}
	return obj, nil
}
