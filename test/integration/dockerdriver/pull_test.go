//go:build integration

package dockerdriver_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/test/internal/loopback"
)

// closedRegistry is a registry address on loopback where nothing listens, so that a pull fails at once
// without the daemon ever reaching off this machine.
func closedRegistry() string {
	GinkgoHelper()
	addr, err := loopback.FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	return addr
}

var _ = Describe("PullImage", func() {
	It("reports a registry that cannot be reached in its own words, fast", func(ctx SpecContext) {
		ref := fmt.Sprintf("%s/nothing/here:1", closedRegistry())
		auth := &dd.RegistryAuth{ServerAddress: "127.0.0.1", Username: "me", Password: "hunter2"}
		start := time.Now()
		_, err := driver.PullImage(ctx, ref, auth, nil)
		Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
		Expect(dd.KindOf(err)).To(Equal(dd.KindUncertain))
		Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseImage))
		Expect(err.Error()).To(Equal("image " + ref + ": Uncertain: the registry could not be reached"))
		img, err := driver.InspectImage(ctx, ref)
		Expect(err).NotTo(HaveOccurred())
		Expect(img.Exists).To(BeFalse())
	})

	It("stops at its context's deadline", func(ctx SpecContext) {
		cut, cancel := context.WithCancel(ctx)
		cancel()
		_, err := driver.PullImage(cut, closedRegistry()+"/nothing/here@sha256:"+fmt.Sprintf("%064d", 0), nil, nil)
		Expect(dd.KindOf(err)).To(Equal(dd.KindUncertain))
		Expect(err.Error()).To(ContainSubstring("did not finish before its deadline"))
	})
})
