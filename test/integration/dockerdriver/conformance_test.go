//go:build integration

package dockerdriver_test

import (
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/dockerdriver/conformance"
)

// The conformance table against the real driver on the real daemon: what passes here is what the fake is
// held to in the unit tier (dockerdriver/fake). Everything the rows make carries this suite's node label,
// so the suite's final check catches what a row leaves behind.
var _ = Describe("Conformance", func() {
	for _, b := range conformance.Behaviours() {
		It(b.Name, func() {
			b.Check(GinkgoT(), conformance.Harness{Driver: driver, Image: testImage, Squat: squat})
		})
	}
})

// squat makes an object under name straight through Docker, with no Dockside labels, and removes it when
// the spec ends. Having no labels it escapes the suite's check by node label, so its removal must succeed.
func squat(t conformance.T, kind conformance.Object, name string) {
	GinkgoHelper()
	ctx := t.Context()
	switch kind {
	case conformance.Container:
		made, err := docker.ContainerCreate(ctx, &container.Config{Image: testImage, Cmd: conformance.SleepCommand},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, name)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(docker.ContainerRemove(ctx, made.ID, container.RemoveOptions{Force: true})).To(Succeed())
		})
	case conformance.Network:
		made, err := docker.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Internal: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(docker.NetworkRemove(ctx, made.ID)).To(Succeed()) })
	case conformance.Volume:
		_, err := docker.VolumeCreate(ctx, volume.CreateOptions{Name: name})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(docker.VolumeRemove(ctx, name, true)).To(Succeed()) })
	default:
		Fail("no squat for " + string(kind))
	}
}
