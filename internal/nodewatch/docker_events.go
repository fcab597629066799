package nodewatch

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/handoff"
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
			handoff.Requeue(ctx, p.Out, ev.Owner.Namespace, ev.Owner.Name)
		}
	}
	return nil
}
