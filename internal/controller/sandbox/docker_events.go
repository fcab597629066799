package sandbox

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// DockerEvents turns the driver's event stream of this node's containers into passes over their Sandboxes,
// so that a container that dies, is OOM-killed, paused or removed behind the agent's back is seen within
// moments, without polling. When the stream was broken and resumed (events may be lost), Resync is called,
// which makes the sweeper look over everything at once.
type DockerEvents struct {
	Driver dd.Driver
	Out    chan<- event.TypedGenericEvent[*dsv1alpha1.Sandbox]
	Resync func()
}

// Start follows the stream until ctx ends (a manager runnable, run only by the Lease holder).
func (p *DockerEvents) Start(ctx context.Context) error {
	for ev := range p.Driver.Events(ctx) {
		switch {
		case ev.Type == dd.EventResync:
			p.Resync()
		case ev.Owner.Name != "":
			requeue(ctx, p.Out, ev.Owner.Namespace, ev.Owner.Name)
		}
	}
	return nil
}

// requeue asks for a pass over the Sandbox namespace/name.
func requeue(ctx context.Context, out chan<- event.TypedGenericEvent[*dsv1alpha1.Sandbox], namespace, name string) {
	obj := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	select {
	case out <- event.TypedGenericEvent[*dsv1alpha1.Sandbox]{Object: obj}:
	case <-ctx.Done():
	}
}
