package handoff

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Requeue asks for a pass over the Sandbox namespace/name through out, the Sandbox reconciler's channel of
// requeues (Docker events, the sweeper, wakeups); it gives up when ctx ends.
func Requeue(ctx context.Context, out chan<- event.TypedGenericEvent[*dsv1alpha1.Sandbox], namespace, name string) {
	obj := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	select {
	case out <- event.TypedGenericEvent[*dsv1alpha1.Sandbox]{Object: obj}:
	case <-ctx.Done():
	}
}
