//go:build integration

package dockerdriver_test

import (
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
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
		Expect(img.User).To(BeEmpty(), "the test image runs as root by default")

		img, err = driver.InspectImage(ctx, "dockside.dev/never-built:nope")
		Expect(err).NotTo(HaveOccurred())
		Expect(img.Exists).To(BeFalse())
	})

	It("reports an image's VOLUMEs and user, and refuses to create a container that leaves a VOLUME uncovered", func(ctx SpecContext) {
		ref := volumeImage(ctx)
		img, err := driver.InspectImage(ctx, ref)
		Expect(err).NotTo(HaveOccurred())
		Expect(img.Volumes).To(Equal([]string{"/data"}))
		Expect(img.User).To(Equal("nobody"))

		o := newOwner("image-volume")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.Image = ref
		_, err = driver.EnsureContainer(ctx, s)
		Expect(dd.IsInvalidSpec(err)).To(BeTrue(), "%v", err)
		Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseImage))

		s.Tmpfs = []dd.TmpfsMount{{Target: "/data", SizeBytes: 1 << 20}}
		run(ctx, s)
		c, err := docker.ContainerInspect(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		for _, m := range c.Mounts {
			Expect(string(m.Type)).To(Equal("tmpfs"), "no anonymous volume was made for /data")
		}
	})
})

// volumeImage commits the test image with a declared VOLUME and a default user, as a local image of this
// run that the spec removes again.
func volumeImage(ctx SpecContext) string {
	return localImage(ctx, "itest-volume", nil, "VOLUME /data", "USER nobody")
}

// localImage commits the test image, with the tar archive files extracted at / when it is not nil and
// the Dockerfile instructions changes, as dockside.dev/<name>:<node>, a local image of this run that the spec
// removes again.
func localImage(ctx SpecContext, name string, files io.Reader, changes ...string) string {
	GinkgoHelper()
	ref := "dockside.dev/" + name + ":" + node
	base, err := docker.ContainerCreate(ctx, &container.Config{Image: testImage, Labels: map[string]string{dsv1alpha1.LabelManaged: "true", dsv1alpha1.LabelNode: node}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	Expect(err).NotTo(HaveOccurred())
	defer func() { Expect(docker.ContainerRemove(ctx, base.ID, container.RemoveOptions{})).To(Succeed()) }()
	if files != nil {
		Expect(docker.CopyToContainer(ctx, base.ID, "/", files, container.CopyToContainerOptions{})).To(Succeed())
	}
	_, err = docker.ContainerCommit(ctx, base.ID, container.CommitOptions{Reference: ref, Changes: changes})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		_, err := docker.ImageRemove(ctx, ref, image.RemoveOptions{})
		if !cerrdefs.IsNotFound(err) { // a spec may have removed it itself
			Expect(err).NotTo(HaveOccurred())
		}
	})
	return ref
}
