package fake_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

func TestSecurityReportsSeccompUntilTurnedOff(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := fake.New("node-a")
	seccomp := func() (string, bool) {
		info, err := f.Security(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return info.Seccomp()
	}
	profile, on := seccomp()
	g.Expect(on).To(BeTrue(), "on from New")
	g.Expect(profile).To(Equal("builtin"))

	f.SetSeccomp(false)
	profile, on = seccomp()
	g.Expect(on).To(BeFalse())
	g.Expect(profile).To(Equal("unconfined"))

	f.SetSeccomp(true)
	_, on = seccomp()
	g.Expect(on).To(BeTrue())

	f.SetUnavailable(true)
	_, err := f.Security(ctx)
	g.Expect(dd.IsUnavailable(err)).To(BeTrue())
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseConnect))
}
