//go:build integration

package dockerdriver_test

import (
	"bytes"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

var _ = Describe("Containers", func() {
	It("makes one container when several goroutines ensure it at once", func(ctx SpecContext) {
		o := newOwner("race")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		ids := make([]string, 4)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				info, err := driver.EnsureContainer(ctx, s)
				Expect(err).NotTo(HaveOccurred())
				ids[i] = info.ID
			}()
		}
		wg.Wait()
		Expect(ids[1:]).To(HaveEach(ids[0]))
		list, err := driver.ListContainers(ctx, map[string]string{dsv1alpha1.LabelUID: o.UID})
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(HaveLen(1))
	})

	It("adopts a container whose create answer was lost", func(ctx SpecContext) {
		o := newOwner("lost-answer")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		// The daemon made it (as our create would have), but the driver never heard back.
		made, err := docker.ContainerCreate(ctx, &container.Config{Image: testImage, Labels: dd.Labels(node, o, s.Role, "")},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, s.Name)
		Expect(err).NotTo(HaveOccurred())
		info, err := driver.EnsureContainer(ctx, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.ID).To(Equal(made.ID))
	})

	It("never adopts a name held by a container of another owner", func(ctx SpecContext) {
		o := newOwner("squatted")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		other := o
		other.UID = "another-" + o.UID
		squatter, err := docker.ContainerCreate(ctx, &container.Config{Image: testImage, Labels: dd.Labels(node, other, s.Role, "")},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, s.Name)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(docker.ContainerRemove(ctx, squatter.ID, container.RemoveOptions{Force: true})).To(Succeed())
		})
		_, err = driver.EnsureContainer(ctx, s)
		Expect(dd.IsConflict(err)).To(BeTrue(), "%v", err)
		Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseCreate))
	})

	It("starts, observes, stops with a grace period and removes; missing things are not errors", func(ctx SpecContext) {
		o := newOwner("lifecycle")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		created, err := driver.EnsureContainer(ctx, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(created.State).To(Equal(dd.StateCreated))
		Expect(created.StartedAt.IsZero()).To(BeTrue())

		Expect(driver.StartContainer(ctx, s.Name)).To(Succeed())
		Expect(driver.StartContainer(ctx, s.Name)).To(Succeed(), "starting a running container is not an error")
		running, err := driver.ObserveContainer(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(running.State).To(Equal(dd.StateRunning))
		Expect(running.StartedAt).To(BeTemporally("~", time.Now(), 10*time.Second))

		// busybox sleep as PID 1 ignores SIGTERM, so the grace period runs out and it is killed.
		start := time.Now()
		Expect(driver.StopContainer(ctx, s.Name, time.Second)).To(Succeed())
		Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		stopped, err := driver.ObserveContainer(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(stopped.State).To(Equal(dd.StateExited))
		Expect(stopped.ExitCode).To(Equal(137))
		Expect(stopped.FinishedAt).To(BeTemporally(">=", stopped.StartedAt))
		Expect(driver.StopContainer(ctx, s.Name, time.Second)).To(Succeed(), "stopping a stopped container is not an error")

		Expect(driver.RemoveContainer(ctx, s.Name)).To(Succeed())
		Expect(driver.RemoveContainer(ctx, s.Name)).To(Succeed(), "removing a missing container is not an error")
		gone, err := driver.ObserveContainer(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(gone.Exists).To(BeFalse())
		Expect(dd.IsNotFound(driver.StartContainer(ctx, s.Name))).To(BeTrue())
	})

	It("stops a paused container", func(ctx SpecContext) {
		s := spec(newOwner("paused-stop"), dsv1alpha1.RolePrimary, "")
		run(ctx, s)
		Expect(driver.PauseContainer(ctx, s.Name)).To(Succeed())
		Expect(driver.StopContainer(ctx, s.Name, time.Second)).To(Succeed())
		info, err := driver.ObserveContainer(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State).To(Equal(dd.StateExited))
	})

	It("returns the last bytes of a finished container's output and counts the cut", func(ctx SpecContext) {
		s := spec(newOwner("logs"), dsv1alpha1.RolePrimary, "", "sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a; echo END")
		run(ctx, s)
		Eventually(func() dd.ContainerState {
			info, _ := driver.ObserveContainer(ctx, s.Name)
			return info.State
		}).WithTimeout(10 * time.Second).Should(Equal(dd.StateExited))
		tail, err := driver.LogTail(ctx, s.Name, 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(tail.Data).To(HaveLen(100))
		Expect(tail.Data).To(HaveSuffix("aaaaEND\n"))
		Expect(bytes.Count(tail.Data, []byte("a"))).To(Equal(96))
		Expect(tail.Cut).To(Equal(int64(5004 - 100)))
	})

	It("lists by labels, this node only", func(ctx SpecContext) {
		o := newOwner("list")
		for _, svc := range []string{"a", "b"} {
			_, err := driver.EnsureContainer(ctx, spec(o, dsv1alpha1.RoleService, svc))
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := driver.EnsureContainer(ctx, spec(o, dsv1alpha1.RolePrimary, ""))
		Expect(err).NotTo(HaveOccurred())
		services, err := driver.ListContainers(ctx, map[string]string{dsv1alpha1.LabelUID: o.UID, dsv1alpha1.LabelRole: dsv1alpha1.RoleService})
		Expect(err).NotTo(HaveOccurred())
		Expect(services).To(HaveLen(2))

		elsewhere, err := dd.New(ctx, dd.Options{Node: node + "-other"})
		Expect(err).NotTo(HaveOccurred())
		none, err := elsewhere.ListContainers(ctx, map[string]string{dsv1alpha1.LabelUID: o.UID})
		Expect(err).NotTo(HaveOccurred())
		Expect(none).To(BeEmpty())
		_, err = elsewhere.ObserveContainer(ctx, services[0].Name)
		Expect(dd.IsConflict(err)).To(BeTrue(), "another node's agent must not touch it")
		Expect(dd.IsConflict(elsewhere.RemoveContainer(ctx, services[0].Name))).To(BeTrue())
	})
})
