package conformance

import (
	"time"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// eventTimeout only bounds a failing wait; a passing run gets its event as soon as the daemon sends it.
const eventTimeout = 30 * time.Second

func dieEvent(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	events := h.Driver.Events(ctx)
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	made := started(t, h, s)
	g.Expect(h.Driver.StopContainer(ctx, s.Name, 0)).To(Succeed())
	die := awaitEvent(t, events, dd.EventDie, s.Name)
	g.Expect(die.ID).To(Equal(made.ID))
	g.Expect(die.Owner).To(Equal(o))
	g.Expect(die.Role).To(Equal(dsv1alpha1.RolePrimary))
	g.Expect(die.ExitCode).To(Equal(killedExitCode))
}

// awaitEvent returns the next event of typ about container, skipping any other.
func awaitEvent(t T, events <-chan dd.Event, typ dd.EventType, container string) dd.Event {
	t.Helper()
	timeout := time.After(eventTimeout)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the event stream closed before a %s event of %s", typ, container)
			}
			if ev.Type == typ && ev.Container == container {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event of %s within %s", typ, container, eventTimeout)
		}
	}
}
