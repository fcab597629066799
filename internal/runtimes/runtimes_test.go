package runtimes_test

import (
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/runtimes"
)

func TestDiscover(t *testing.T) {
	g := NewWithT(t)

	plain, err := runtimes.Discover([]string{"io.containerd.runc.v2", "runc"}, "runsc", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plain.Offered()).To(Equal([]dsv1alpha1.Runtime{dsv1alpha1.RuntimeRunc}))
	g.Expect(plain.Of("")).To(Equal(dsv1alpha1.RuntimeRunc))
	g.Expect(plain.DockerName("")).To(BeEmpty(), "runc is the daemon's default: no name is asked")
	g.Expect(plain.AnnotationValue()).To(Equal("runc"))

	_, err = runtimes.Discover([]string{"runc"}, "runsc", dsv1alpha1.RuntimeGVisor)
	g.Expect(err).To(MatchError(ContainSubstring(`offers no runtime "runsc" (docker info lists runc)`)))
	_, err = runtimes.Discover([]string{"runc"}, "runsc", "kata")
	g.Expect(err).To(MatchError(ContainSubstring("must be runc or gVisor")))

	both, err := runtimes.Discover([]string{"runc", "gvisor-ptrace"}, "gvisor-ptrace", dsv1alpha1.RuntimeGVisor)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(both.Offers(dsv1alpha1.RuntimeGVisor)).To(BeTrue())
	g.Expect(both.Of("")).To(Equal(dsv1alpha1.RuntimeGVisor), "the node's default")
	g.Expect(both.DockerName("")).To(Equal("gvisor-ptrace"))
	g.Expect(both.DockerName(dsv1alpha1.RuntimeRunc)).To(BeEmpty(), "a Sandbox naming runc gets it on a gVisor node")
	g.Expect(both.AnnotationValue()).To(Equal("gVisor,runc"))
	g.Expect(runtimes.Listed(both.AnnotationValue(), dsv1alpha1.RuntimeGVisor)).To(BeTrue())
	g.Expect(runtimes.Listed(plain.AnnotationValue(), dsv1alpha1.RuntimeGVisor)).To(BeFalse())
}

// The zero Node, as reconcilers built without a driver's list see it, offers runc alone.
func TestZeroNode(t *testing.T) {
	g := NewWithT(t)
	var n runtimes.Node
	g.Expect(n.Offers(dsv1alpha1.RuntimeRunc)).To(BeTrue())
	g.Expect(n.Offers(dsv1alpha1.RuntimeGVisor)).To(BeFalse())
	g.Expect(n.Of("")).To(Equal(dsv1alpha1.RuntimeRunc))
	g.Expect(n.DockerName("")).To(BeEmpty())
}
