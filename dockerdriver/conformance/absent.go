package conformance

import (
	. "github.com/onsi/gomega"
)

func removeMissing(t T, h Harness, kind Object) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	name := nameOf(kind, o)
	g.Expect(ops[kind].remove(ctx, h.Driver, name)).To(Succeed(), "never made")
	_, err := ensureOwn(ctx, h, kind, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops[kind].remove(ctx, h.Driver, name)).To(Succeed())
	g.Expect(ops[kind].remove(ctx, h.Driver, name)).To(Succeed(), "removed already")
}

func observeAbsent(t T, h Harness, kind Object) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	name := nameOf(kind, o)
	g.Expect(ops[kind].observe(ctx, h.Driver, name)).To(BeFalse(), "never made")
	_, err := ensureOwn(ctx, h, kind, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops[kind].observe(ctx, h.Driver, name)).To(BeTrue())
	g.Expect(ops[kind].remove(ctx, h.Driver, name)).To(Succeed())
	g.Expect(ops[kind].observe(ctx, h.Driver, name)).To(BeFalse(), "removed")
}
