//go:build integration

package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

// leaveOrphan makes, on docker, what an agent would have made for a Sandbox that no longer exists.
func leaveOrphan(docker *fake.Driver, ns, name, uid string) {
	GinkgoHelper()
	base := dd.Owner{Namespace: ns, Name: name, UID: uid}
	topo := base
	topo.Generation = 1
	_, err := docker.EnsureVolume(ctx(), dd.VolumeSpec{Name: dd.Name(base, dsv1alpha1.RoleWorkspace, ""), Owner: base, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1 << 20})
	Expect(err).NotTo(HaveOccurred())
	_, err = docker.EnsureNetwork(ctx(), dd.NetworkSpec{Name: dd.Name(topo, dsv1alpha1.RoleNetwork, ""), Owner: topo, ICC: true})
	Expect(err).NotTo(HaveOccurred())
	limits := dd.Resources{MemoryBytes: 8 << 20, NanoCPUs: 1e7, PIDs: 16}
	for _, spec := range []dd.ContainerSpec{
		{Name: dd.Name(base, dsv1alpha1.RoleHolder, ""), Owner: base, Role: dsv1alpha1.RoleHolder, Image: holder, Resources: limits,
			Mounts: []dd.VolumeMount{{Volume: dd.Name(base, dsv1alpha1.RoleWorkspace, ""), Target: "/workspace"}}},
		{Name: dd.Name(topo, dsv1alpha1.RolePrimary, ""), Owner: topo, Role: dsv1alpha1.RolePrimary, Image: busybox, Resources: limits,
			Network: dd.NetworkAttachment{Name: dd.Name(topo, dsv1alpha1.RoleNetwork, "")}},
	} {
		_, err := docker.EnsureContainer(ctx(), spec)
		Expect(err).NotTo(HaveOccurred())
		Expect(docker.StartContainer(ctx(), spec.Name)).To(Succeed())
	}
	Expect(holdings(docker, uid)).To(Equal(4))
}

var _ = Describe("Orphans", func() {
	It("are removed when the agent starts", func() {
		node := newNode()
		docker := newDocker(node)
		leaveOrphan(docker, "gone-ns", "gone", "uid-of-a-deleted-sandbox")
		startAgent(node, docker)

		Eventually(func() int { return holdings(docker, "uid-of-a-deleted-sandbox") }).Should(BeZero())
	})

	It("are removed periodically, while the resources of live Sandboxes are left alone", func() {
		ns, a := newNamespace(), newAgent(func(o *agent.Options) { o.SweepPeriod = 200 * time.Millisecond })
		sbx := sandbox(ns, "alive", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		primary := container(a.docker, sbx, dsv1alpha1.RolePrimary, "")

		leaveOrphan(a.docker, ns, "alive", "uid-of-an-older-alive") // same name, other UID: a deleted predecessor
		Eventually(func() int { return holdings(a.docker, "uid-of-an-older-alive") }).Should(BeZero())
		Consistently(func() string { return container(a.docker, sbx, dsv1alpha1.RolePrimary, "").ID }).Should(Equal(primary.ID))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"))
	})
})
