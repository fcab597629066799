package fake_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// The fake daemon offers runc until told otherwise, creates a container under a runtime it offers, refuses
// one it does not, and fails the list like any call with a fault injected.
func TestRuntimes(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	f := newFake()
	g.Expect(f.Runtimes(ctx)).To(Equal([]string{"runc"}))

	s := spec(dsv1alpha1.RolePrimary, "")
	s.Runtime = "runsc"
	_, err := f.EnsureContainer(ctx, s)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindInvalidSpec), "%v", err)

	f.SetRuntimes("runsc", "runc")
	g.Expect(f.Runtimes(ctx)).To(Equal([]string{"runc", "runsc"}))
	info, err := f.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Runtime).To(Equal("runsc"))

	f.FailNext(fake.OpRuntimes, dd.KindUnavailable)
	_, err = f.Runtimes(ctx)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindUnavailable), "%v", err)
	g.Expect(f.Runtimes(ctx)).To(HaveLen(2), "the fault was for one call")
}
