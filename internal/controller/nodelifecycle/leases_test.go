package nodelifecycle

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// lease is node's Lease held by holder, renewed at renewed by the holder's clock.
func lease(node, holder string, renewed time.Time) coordinationv1.Lease {
	return coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeasePrefix + node},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), RenewTime: ptr.To(metav1.NewMicroTime(renewed))},
	}
}

func TestNodeIsLostWhenItsLeaseStopsChanging(t *testing.T) {
	g := NewWithT(t)
	b := newBook("self", 40*time.Second)
	t0 := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	// The holders' clocks are an hour off this agent's: only changes count, never the times themselves.
	skew := -time.Hour
	b.observe([]coordinationv1.Lease{lease("a", "h_a", t0.Add(skew)), lease("b", "h_b", t0.Add(skew))}, t0)
	fresh, lost := b.split(t0.Add(40 * time.Second))
	g.Expect(fresh).To(Equal([]string{"a", "b"}), "first seen now, so watched for 40s before judged")
	g.Expect(lost).To(BeEmpty())

	// a renews, b does not.
	b.observe([]coordinationv1.Lease{lease("a", "h_a", t0.Add(skew+30*time.Second)), lease("b", "h_b", t0.Add(skew))}, t0.Add(30*time.Second))
	fresh, lost = b.split(t0.Add(41 * time.Second))
	g.Expect(fresh).To(Equal([]string{"a"}))
	g.Expect(lost).To(Equal([]string{"b"}))
	g.Expect(b.nodes["b"].renewed).To(Equal(t0.Add(skew)), "the message names the last renewal")

	// b's agent comes back (or another agent of b takes the Lease): fresh again at once.
	back := lease("b", "h2_b", t0.Add(skew+50*time.Second))
	g.Expect(b.unchanged("b", &back)).To(BeFalse())
	b.observe([]coordinationv1.Lease{lease("a", "h_a", t0.Add(skew+30*time.Second)), back}, t0.Add(50*time.Second))
	_, lost = b.split(t0.Add(60 * time.Second))
	g.Expect(lost).To(BeEmpty())
}

func TestReleasedLeaseAgesAndDeletedLeaseIsForgotten(t *testing.T) {
	g := NewWithT(t)
	b := newBook("self", 10*time.Second)
	t0 := time.Now()
	released := lease("c", "", t0)
	b.observe([]coordinationv1.Lease{released, lease("x", "h", t0), {ObjectMeta: metav1.ObjectMeta{Name: "other-lease"}}}, t0)
	g.Expect(b.unchanged("c", &released)).To(BeTrue())
	_, lost := b.split(t0.Add(11 * time.Second))
	g.Expect(lost).To(Equal([]string{"c", "x"}), "a Lease nobody takes after a clean stop ages like any other; Leases of others are not agents'")

	b.observe([]coordinationv1.Lease{lease("x", "h", t0)}, t0.Add(12*time.Second))
	_, lost = b.split(t0.Add(12 * time.Second))
	g.Expect(lost).To(Equal([]string{"x"}), "a node whose Lease was deleted is no longer judged")
}

func TestOnlyTheFirstLiveNodeWrites(t *testing.T) {
	g := NewWithT(t)
	g.Expect(writes("a", []string{"a", "b", "c"})).To(BeTrue())
	g.Expect(writes("b", []string{"a", "b", "c"})).To(BeFalse())
	g.Expect(writes("b", []string{"b", "c"})).To(BeTrue(), "a's Lease went stale: the next in order takes over")
	g.Expect(writes("c", []string{"b"})).To(BeFalse())
	g.Expect(writes("b", nil)).To(BeTrue(), "before its own Lease is seen, an agent counts itself live")
}

func TestAnOutageThisAgentRodeOutLosesNoNode(t *testing.T) {
	g := NewWithT(t)
	b := newBook("self", 40*time.Second)
	t0 := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	b.observe([]coordinationv1.Lease{lease("self", "h_self", t0), lease("a", "h_a", t0)}, t0)

	// The API server is out for 60 s: nothing changes in this agent's sight, its own Lease included.
	out := t0.Add(60 * time.Second)
	b.observe([]coordinationv1.Lease{lease("self", "h_self", t0), lease("a", "h_a", t0)}, out)
	g.Expect(b.blind(out)).To(BeTrue(), "its own Lease looks unrenewed: it judges nobody")

	// It comes back: this agent's renewal shows first, a's a moment later.
	back := t0.Add(61 * time.Second)
	b.observe([]coordinationv1.Lease{lease("self", "h_self", back), lease("a", "h_a", t0)}, back)
	g.Expect(b.blind(back)).To(BeFalse())
	_, lost := b.split(back.Add(time.Second))
	g.Expect(lost).To(BeEmpty(), "a's clock starts again when this agent sees again")
	later := back.Add(30 * time.Second)
	b.observe([]coordinationv1.Lease{lease("self", "h_self", later), lease("a", "h_a", t0)}, later)
	_, lost = b.split(back.Add(41 * time.Second))
	g.Expect(lost).To(Equal([]string{"a"}), "a node that does not renew after the outage is lost as usual")
}
