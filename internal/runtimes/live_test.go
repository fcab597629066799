package runtimes_test

import (
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/runtimes"
)

// A daemon read again may gain or lose runsc; Reread never refuses, even the default gone.
func TestReread(t *testing.T) {
	g := NewWithT(t)
	gained := runtimes.Reread([]string{"runc", "runsc"}, "runsc", "")
	g.Expect(gained.AnnotationValue()).To(Equal("gVisor,runc"))
	lost := runtimes.Reread([]string{"runc"}, "runsc", dsv1alpha1.RuntimeGVisor)
	g.Expect(lost.Default).To(Equal(dsv1alpha1.RuntimeGVisor), "the flag's default stays")
	g.Expect(lost.Offers(lost.Default)).To(BeFalse())
	g.Expect(lost.AnnotationValue()).To(Equal("runc"))
	g.Expect(lost.DockerName("")).To(Equal("runsc"), "Docker refuses it: never runc in gVisor's place")
}

// Set tells a change, and wakes whoever waits on the channel Current gave, once; the same read again is no
// change.
func TestLive(t *testing.T) {
	g := NewWithT(t)
	plain, err := runtimes.Discover([]string{"runc"}, "runsc", "")
	g.Expect(err).NotTo(HaveOccurred())
	live := runtimes.NewLive(plain)
	node, changed := live.Current()
	g.Expect(node.AnnotationValue()).To(Equal("runc"))

	g.Expect(live.Set(runtimes.Reread([]string{"runc"}, "runsc", ""))).To(BeFalse())
	g.Expect(changed).NotTo(BeClosed())

	g.Expect(live.Set(runtimes.Reread([]string{"runc", "runsc"}, "runsc", ""))).To(BeTrue())
	g.Expect(changed).To(BeClosed())
	g.Expect(live.Node().Offers(dsv1alpha1.RuntimeGVisor)).To(BeTrue())
	g.Expect(live.Node().DockerName(dsv1alpha1.RuntimeGVisor)).To(Equal("runsc"))

	node, changed = live.Current()
	g.Expect(live.Set(runtimes.Reread([]string{"runc"}, "runsc", ""))).To(BeTrue(), "runsc removed")
	g.Expect(changed).To(BeClosed())
	g.Expect(node.Offers(dsv1alpha1.RuntimeGVisor)).To(BeTrue(), "a Node read before stays as it was")
	g.Expect(live.Node().Offers(dsv1alpha1.RuntimeGVisor)).To(BeFalse())
}

// A nil Live, as reconcilers built without a driver's list hold, offers runc alone.
func TestNilLive(t *testing.T) {
	g := NewWithT(t)
	var live *runtimes.Live
	g.Expect(live.Node().Offered()).To(Equal([]dsv1alpha1.Runtime{dsv1alpha1.RuntimeRunc}))
}
