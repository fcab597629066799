package dockerdriver

import (
	"testing"

	"github.com/docker/docker/api/types/events"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestToEvent(t *testing.T) {
	g := NewWithT(t)
	o := Owner{Namespace: "ns", Name: "sbx", UID: "u", Generation: 2}
	attrs := Labels("n", o, dsv1alpha1.RoleService, "db")
	attrs["name"] = "c1"
	attrs["exitCode"] = "3"

	die := toEvent(events.Message{Action: events.ActionDie, Actor: events.Actor{ID: "id1", Attributes: attrs}, TimeNano: 5e9})
	g.Expect(die).To(Equal(Event{Type: EventDie, Container: "c1", ID: "id1", Owner: o, Role: dsv1alpha1.RoleService,
		Service: "db", ExitCode: 3, Time: die.Time}))
	g.Expect(die.Time.Unix()).To(Equal(int64(5)))

	health := toEvent(events.Message{Action: "health_status: unhealthy", Actor: events.Actor{Attributes: attrs}})
	g.Expect(health.Type).To(Equal(EventHealth))
	g.Expect(health.Health).To(Equal("unhealthy"))
	g.Expect(health.ExitCode).To(BeZero(), "only die carries an exit code")
}
