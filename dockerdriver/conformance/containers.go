package conformance

import (
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// absentImage names no image on any node; the driver must never pull it.
const absentImage = "dockside.dev/conformance-absent:local"

// started ensures and starts the container s.
func started(t T, h Harness, s dd.ContainerSpec) dd.ContainerInfo {
	t.Helper()
	g, ctx := NewWithT(t), t.Context()
	info, err := h.Driver.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Driver.StartContainer(ctx, s.Name)).To(Succeed())
	return info
}

func containerByID(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	made, err := h.Driver.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Driver.StartContainer(ctx, made.ID)).To(Succeed())
	byID, err := h.Driver.ObserveContainer(ctx, made.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byID.Exists).To(BeTrue())
	g.Expect(byID.Name).To(Equal(s.Name))
	g.Expect(byID.State).To(Equal(dd.StateRunning))
	g.Expect(h.Driver.RemoveContainer(ctx, made.ID)).To(Succeed())
	byName, err := h.Driver.ObserveContainer(ctx, s.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byName.Exists).To(BeFalse())
}

func networkByID(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	id, err := ensureOwn(ctx, h, Network, o)
	g.Expect(err).NotTo(HaveOccurred())
	byID, err := h.Driver.ObserveNetwork(ctx, id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byID.Exists).To(BeTrue())
	g.Expect(byID.Name).To(Equal(nameOf(Network, o)))
	g.Expect(h.Driver.RemoveNetwork(ctx, id)).To(Succeed())
	g.Expect(ops[Network].observe(ctx, h.Driver, nameOf(Network, o))).To(BeFalse())
}

func missingImage(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	s.Image = absentImage
	_, err := h.Driver.EnsureContainer(ctx, s)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindNotFound), "%v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseImage))
	g.Expect(ops[Container].observe(ctx, h.Driver, s.Name)).To(BeFalse())
}

// absentRuntime names an OCI runtime no daemon registers.
const absentRuntime = "dockside-conformance-absent"

func unknownRuntime(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	listed, err := h.Driver.Runtimes(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(listed).To(ContainElement("runc"), "every Docker offers runc")
	g.Expect(listed).NotTo(ContainElement(absentRuntime))
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	s.Runtime = absentRuntime
	_, err = h.Driver.EnsureContainer(ctx, s)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindInvalidSpec), "%v", err)
	g.Expect(ops[Container].observe(ctx, h.Driver, s.Name)).To(BeFalse())

	s.Runtime = "runc"
	_, err = h.Driver.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	seen, err := h.Driver.ObserveContainer(ctx, s.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(seen.Runtime).To(Equal("runc"), "the runtime named is the container's")
	g.Expect(h.Driver.RemoveContainer(ctx, s.Name)).To(Succeed())
}
