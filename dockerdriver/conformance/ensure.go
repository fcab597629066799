package conformance

import (
	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func ensureAdopts(t T, h Harness, kind Object) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	first, err := ensureOwn(ctx, h, kind, o)
	g.Expect(err).NotTo(HaveOccurred())
	second, err := ensureOwn(ctx, h, kind, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).To(Equal(first), "the second ensure returns the object the first made")
	made, err := ops[kind].list(ctx, h.Driver, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(made).To(Equal([]listed{{first, nameOf(kind, o)}}), "one object, not two")
}

func ensureAdoptsLostCreate(t T, h Harness, kind Object) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	if h.LoseNextEnsure != nil {
		h.LoseNextEnsure(kind)
		_, err := ensureOwn(ctx, h, kind, o)
		g.Expect(dd.IsUncertain(err)).To(BeTrue(), "a lost answer is Uncertain: %v", err)
	} else {
		_, err := ensureOwn(ctx, h, kind, o)
		g.Expect(err).NotTo(HaveOccurred())
	}
	made, err := ops[kind].list(ctx, h.Driver, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(made).To(HaveLen(1), "the create took effect")
	adopted, err := ensureOwn(ctx, h, kind, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(adopted).To(Equal(made[0].key), "the next ensure adopts what the create made")
}

func foreignIsConflict(t T, h Harness, kind Object) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	name := nameOf(kind, o)
	h.Squat(t, kind, name)
	_, err := ensureOwn(ctx, h, kind, o)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "ensure: %v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(ops[kind].ensurePhase))
	_, err = ops[kind].observe(ctx, h.Driver, name)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "observe: %v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseObserve))
	err = ops[kind].remove(ctx, h.Driver, name)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "remove: %v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseRemove))
}

func otherOwnerIsConflict(t T, h Harness, kind Object) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	_, err := ensureOwn(ctx, h, kind, o)
	g.Expect(err).NotTo(HaveOccurred())
	// Same name, other identity: what a second Sandbox whose name hashed alike would ask for.
	other := o
	other.UID += "-other"
	_, err = ops[kind].ensure(ctx, h, other, nameOf(kind, o))
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "%v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(ops[kind].ensurePhase))
}
