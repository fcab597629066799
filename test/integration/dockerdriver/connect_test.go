package dockerdriver_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

var _ = Describe("Connecting", func() {
	It("pings the daemon and reports its version and the negotiated API", func(ctx SpecContext) {
		v, err := driver.Ping(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(v.Server).NotTo(BeEmpty())
		Expect(v.APIVersion).To(Equal("1.41"))
	})

	It("says plainly when the daemon is not there", func(ctx SpecContext) {
		_, err := dd.New(ctx, dd.Options{Node: node, Host: "unix:///nonexistent/docker.sock"})
		Expect(dd.IsUnavailable(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring(
			"Docker is not reachable at unix:///nonexistent/docker.sock: start the daemon or set DOCKER_HOST"))
	})

	It("inspects images: present with ID and user, absent without error", func(ctx SpecContext) {
		img, err := driver.InspectImage(ctx, testImage)
		Expect(err).NotTo(HaveOccurred())
		Expect(img.Exists).To(BeTrue())
		Expect(img.ID).To(HavePrefix("sha256:"))
		Expect(img.Volumes).To(BeEmpty())

		img, err = driver.InspectImage(ctx, "dockside.dev/never-built:nope")
		Expect(err).NotTo(HaveOccurred())
		Expect(img.Exists).To(BeFalse())
	})
})
