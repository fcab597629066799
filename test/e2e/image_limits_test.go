//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The image size cap and image garbage collection, through a running agent on a Docker daemon of the spec's
// own: collection there can reach only that daemon's images (its copies of busybox and holder, and the
// spec's), never the machine's, which every session shares. The spec's images are made on that daemon from
// its busybox by docker commit: nothing is pulled or built from a registry.
const (
	imageLimitsDaemon = "igc"
	imageLimitsPool   = "10.212.0.0/24"
)

var _ = Describe("The image size cap and image garbage collection on real Docker", Label("images"), func() {
	It("refuses an image over the cap naming its size, and collects an unused image while one in use stays", func() {
		d := startDockerd(imageLimitsDaemon)
		ownNode := node + "-" + imageLimitsDaemon
		ns := newNamespace("imglimits")
		DeferCleanup(releaseSandboxes, ns)

		base := imageSize(d, "dockside.dev/busybox:local")
		used := commitImage(d, "dockside.dev/igc-used:local", 64<<10)
		big := commitImage(d, "dockside.dev/igc-big:local", 4<<20)
		// The cap lies between the two: 2 MiB over busybox.
		limit := (base>>20 + 2) << 20
		Expect(imageSize(d, used)).To(BeNumerically("<", limit))
		Expect(imageSize(d, big)).To(BeNumerically(">", limit))

		By("refusing the larger image with its size and the cap in the message, while the smaller one runs")
		capped := startOwnAgent(d, ownNode, imageLimitsPool, "--max-image-size="+strconv.FormatInt(limit, 10), "--image-gc-high-threshold=100")
		apply(ns, sandboxOn("big", ownNode, big)+"---\n"+sandboxOn("used", ownNode, used))
		waitFor(ns, "sandbox/big", `jsonpath={.status.conditions[?(@.type=="Stalled")].reason}=ImageTooLarge`, 2*time.Minute)
		Expect(field(ns, "sandbox/big", "{.status.phase}")).To(Equal("Failed"))
		Expect(field(ns, "sandbox/big", `{.status.conditions[?(@.type=="Stalled")].message}`)).To(ContainSubstring(
			fmt.Sprintf("image %s of the primary container takes %d MiB unpacked, more than the %d MiB node %s allows for one image",
				big, imageSize(d, big)>>20, limit>>20, ownNode)))
		Expect(rolesOn(d, ownNode, ns, "big")).To(BeEmpty(), "nothing was made for the refused image")
		waitFor(ns, "sandbox/used", "condition=Ready", 3*time.Minute)
		_, err := kubectl("delete", "-n", ns, "sandbox", "big", "--timeout=90s")
		Expect(err).NotTo(HaveOccurred())
		capped.stop()

		By("collecting, once the disk is past the threshold, the unused images and none in use")
		unused := commitImage(d, "dockside.dev/igc-unused:local", 64<<10)
		// Any disk is fuller than 2%: the first round, at the agent's start, removes every image no container
		// uses, whatever its age.
		startOwnAgent(d, ownNode, imageLimitsPool, "--image-gc-high-threshold=2", "--image-gc-low-threshold=1",
			"--image-minimum-gc-age=0s", "--image-gc-filesystem="+d.Dir)
		Eventually(imagePresent).WithArguments(d, unused).WithTimeout(2*time.Minute).Should(BeFalse(), "the unused image is removed")
		Eventually(imagePresent).WithArguments(d, big).WithTimeout(time.Minute).Should(BeFalse(), "the refused image is removed")
		Expect(imagePresent(d, used)).To(BeTrue(), "the image a Sandbox runs stays")
		Expect(imagePresent(d, "dockside.dev/holder:local")).To(BeTrue(), "the holder image stays")
		Expect(field(ns, "sandbox/used", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))

		_, err = kubectl("delete", "-n", ns, "sandbox", "used", "--timeout=90s")
		Expect(err).NotTo(HaveOccurred())
		Expect(rolesOn(d, ownNode, ns, "used")).To(BeEmpty())
	})
})

// sandboxOn is the manifest of a session Sandbox named name on node, of a local image never pulled.
func sandboxOn(name, node, image string) string {
	return fmt.Sprintf("apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec:\n  nodeName: %s\n  image: %s\n  imagePullPolicy: Never\n",
		name, node, image)
}

// commitImage makes image on d from its busybox with a file of size random bytes on top (random: no layer of
// it is shared or compressed away), and returns its name.
func commitImage(d *ownDaemon, image string, size int) string {
	GinkgoHelper()
	maker := "make-" + strings.NewReplacer("/", "-", ":", "-", ".", "-").Replace(image)
	out, err := d.docker("run", "--name", maker, "dockside.dev/busybox:local", "sh", "-c",
		fmt.Sprintf("head -c %d /dev/urandom > /blob", size))
	Expect(err).NotTo(HaveOccurred(), out)
	out, err = d.docker("commit", "--change", `CMD ["sh"]`, maker, image)
	Expect(err).NotTo(HaveOccurred(), out)
	out, err = d.docker("rm", maker)
	Expect(err).NotTo(HaveOccurred(), out)
	return image
}

// imageSize is the size Docker reports of image on d, the one the cap compares.
func imageSize(d *ownDaemon, image string) int64 {
	GinkgoHelper()
	out, err := d.docker("image", "inspect", "--format", "{{.Size}}", image)
	Expect(err).NotTo(HaveOccurred(), out)
	n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// imagePresent says whether d holds image.
func imagePresent(d *ownDaemon, image string) bool {
	out, err := d.docker("image", "ls", "-q", image)
	Expect(err).NotTo(HaveOccurred(), out)
	return strings.TrimSpace(out) != ""
}
