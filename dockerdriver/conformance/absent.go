package conformance

import (
	. "github.com/onsi/gomega"
)

// A missing object is no error to observe or to remove, whether it never was or was removed already.
func missingIsNoError(t T, h Harness, kind Object) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	name := nameOf(kind, o)
	absent := func(when string) {
		t.Helper()
		g.Expect(ops[kind].observe(ctx, h.Driver, name)).To(BeFalse(), "observed %s", when)
		g.Expect(ops[kind].remove(ctx, h.Driver, name)).To(Succeed(), "removed %s", when)
	}
	absent("before it was made")
	_, err := ensureOwn(ctx, h, kind, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops[kind].observe(ctx, h.Driver, name)).To(BeTrue())
	g.Expect(ops[kind].remove(ctx, h.Driver, name)).To(Succeed())
	absent("after it was removed")
}
