//go:build integration

package dockerdriver_test

import (
	"archive/tar"
	"bytes"

	"github.com/docker/docker/api/types/container"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/imagegc"
)

// bulk is a tar archive of one file of size bytes that do not compress away.
func bulk(name string, size int) *bytes.Reader {
	GinkgoHelper()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	Expect(w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(size), Mode: 0o644})).To(Succeed())
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7919 + i>>8)
	}
	_, err := w.Write(data)
	Expect(err).NotTo(HaveOccurred())
	Expect(w.Close()).To(Succeed())
	return bytes.NewReader(buf.Bytes())
}

var _ = Describe("Images", func() {
	It("reports an image's size on disk, and removes it only once no container was made from it", func(ctx SpecContext) {
		base, err := driver.InspectImage(ctx, testImage)
		Expect(err).NotTo(HaveOccurred())
		Expect(base.Size).To(BeNumerically(">", 0))
		ref := localImage(ctx, "itest-sized", bulk("bulk", 3<<20))
		img, err := driver.InspectImage(ctx, ref)
		Expect(err).NotTo(HaveOccurred())
		Expect(img.Size).To(BeNumerically(">=", base.Size+3<<20), "the layer it adds counts")

		By("refusing while a container, even one never started, was made from it")
		made, err := docker.ContainerCreate(ctx, &container.Config{Image: ref, Labels: map[string]string{dsv1alpha1.LabelManaged: "true", dsv1alpha1.LabelNode: node}},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = docker.ContainerRemove(ctx, made.ID, container.RemoveOptions{Force: true}) })
		err = driver.RemoveImage(ctx, ref)
		Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "got %v", err)
		Expect(driver.InspectImage(ctx, ref)).To(HaveField("Exists", BeTrue()))

		By("removing it once that container is gone, and taking a missing one calmly")
		Expect(docker.ContainerRemove(ctx, made.ID, container.RemoveOptions{})).To(Succeed())
		Expect(driver.RemoveImage(ctx, ref)).To(Succeed())
		Expect(driver.InspectImage(ctx, ref)).To(HaveField("Exists", BeFalse()))
		Expect(driver.RemoveImage(ctx, ref)).To(Succeed())
		Expect(driver.InspectImage(ctx, testImage)).To(HaveField("Exists", BeTrue()), "the image it was made from stays")
	})

	It("are collected when the disk is full: never one a container was made from, nor one kept", func(ctx SpecContext) {
		// Images of this spec's own, found by their label: collection never looks at the daemon's others.
		label := "LABEL dev.dockside.test.gc=" + node
		unused := localImage(ctx, "itest-gc-unused", bulk("bulk", 1<<20), label)
		used := localImage(ctx, "itest-gc-used", bulk("bulk", 1<<20), label)
		kept := localImage(ctx, "itest-gc-kept", bulk("kept", 1<<20), label)
		made, err := docker.ContainerCreate(ctx, &container.Config{Image: used, Labels: map[string]string{dsv1alpha1.LabelManaged: "true", dsv1alpha1.LabelNode: node}},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = docker.ContainerRemove(ctx, made.ID, container.RemoveOptions{Force: true}) })

		match := map[string]string{"dev.dockside.test.gc": node}
		listed, err := driver.ListImages(ctx, match)
		Expect(err).NotTo(HaveOccurred())
		inUse := map[string]bool{}
		for _, img := range listed {
			Expect(img.Refs).To(HaveLen(1))
			Expect(img.Size).To(BeNumerically(">", 1<<20))
			inUse[img.Refs[0]] = img.InUse
		}
		Expect(inUse).To(Equal(map[string]bool{unused: false, used: true, kept: false}))

		full := func() (uint64, uint64, error) { return 100 << 30, 5 << 30, nil } // 95% in use, whatever is removed
		gc := &imagegc.Collector{Driver: driver, Disk: full, Log: GinkgoLogr,
			Options: imagegc.Options{HighPercent: 85, LowPercent: 80, Keep: []string{kept}, Match: match}}
		removed, err := gc.Collect(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(removed).To(Equal([]string{unused}))
		Expect(driver.InspectImage(ctx, unused)).To(HaveField("Exists", BeFalse()))
		Expect(driver.InspectImage(ctx, used)).To(HaveField("Exists", BeTrue()))
		Expect(driver.InspectImage(ctx, kept)).To(HaveField("Exists", BeTrue()))
		Expect(driver.InspectImage(ctx, testImage)).To(HaveField("Exists", BeTrue()), "outside the label: never looked at")
	})
})
