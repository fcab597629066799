//go:build integration

package dockerdriver_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/testutil/tarball"
)

var _ = Describe("Workspace volumes", func() {
	var o dd.Owner
	var ws dd.VolumeInfo
	var holder, primary dd.ContainerSpec

	// Each spec gets a 1 MiB tmpfs workspace, held by a holder container (network none, tiny limits) as the
	// agent makes it (docs/design/docker-mapping.md, "Why the holder exists"), and a primary that mounts it.
	BeforeEach(func(ctx SpecContext) {
		o = newOwner("workspace")
		perSandbox := o
		perSandbox.Generation = 0
		var err error
		ws, err = driver.EnsureVolume(ctx, dd.VolumeSpec{Name: dd.Name(perSandbox, dsv1alpha1.RoleWorkspace, ""), Owner: perSandbox, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1 << 20})
		Expect(err).NotTo(HaveOccurred())
		Expect(ws.SizeBytes).To(Equal(int64(1 << 20)))
		holder = spec(perSandbox, dsv1alpha1.RoleHolder, "", "sleep", "2147483647")
		holder.Resources = dd.Resources{MemoryBytes: 8 << 20, NanoCPUs: 50_000_000, PIDs: 4}
		holder.Mounts = []dd.VolumeMount{{Volume: ws.Name, Target: "/workspace"}}
		run(ctx, holder)
		primary = spec(o, dsv1alpha1.RolePrimary, "")
		primary.Mounts = []dd.VolumeMount{{Volume: ws.Name, Target: "/workspace"}}
	})

	It("is a size-limited tmpfs: writing past the size fails with no space left", func(ctx SpecContext) {
		raw, err := docker.VolumeInspect(ctx, ws.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(raw.Driver).To(Equal("local"))
		Expect(raw.Options).To(Equal(map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=1048576,mode=1777,nosuid,nodev"}), "every user may write; no set-user-ID file or device node works")

		run(ctx, primary)
		res := sh(ctx, primary.Name, "dd if=/dev/zero of=/workspace/big bs=64k count=32 2>&1", 10*time.Second)
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(strings.ToLower(string(res.Stdout))).To(ContainSubstring("no space left"))
	})

	It("copies out of and into a paused container, and the files survive the thaw", func(ctx SpecContext) {
		run(ctx, primary)
		Expect(sh(ctx, primary.Name, "mkdir -p /workspace/src && echo kept > /workspace/src/a.txt", 10*time.Second).ExitCode).To(Equal(0))

		Expect(driver.PauseContainer(ctx, primary.Name)).To(Succeed())
		Expect(driver.PauseContainer(ctx, primary.Name)).To(Succeed(), "pausing a paused container is not an error")
		info, err := driver.ObserveContainer(ctx, primary.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State).To(Equal(dd.StatePaused))

		rc, err := driver.CopyFrom(ctx, primary.Name, "/workspace/.")
		Expect(err).NotTo(HaveOccurred())
		defer rc.Close()
		files := tarball.Files(GinkgoT(), rc)
		Expect(files).To(HaveKeyWithValue("./src/a.txt", "kept\n"))

		Expect(driver.CopyTo(ctx, primary.Name, "/workspace", tarball.Of(GinkgoT(), map[string]string{"restored.txt": "back\n"}))).To(Succeed())
		Expect(driver.UnpauseContainer(ctx, primary.Name)).To(Succeed())
		Expect(driver.UnpauseContainer(ctx, primary.Name)).To(Succeed(), "unpausing a running container is not an error")

		res := sh(ctx, primary.Name, "cat /workspace/restored.txt /workspace/src/a.txt", 10*time.Second)
		Expect(string(res.Stdout)).To(Equal("back\nkept\n"))
	})

	It("restores into a created primary before it starts, because the holder keeps the volume alive", func(ctx SpecContext) {
		_, err := driver.EnsureContainer(ctx, primary)
		Expect(err).NotTo(HaveOccurred())
		Expect(driver.CopyTo(ctx, primary.Name, "/workspace", tarball.Of(GinkgoT(), map[string]string{"early.txt": "before start\n"}))).To(Succeed())
		Expect(driver.StartContainer(ctx, primary.Name)).To(Succeed())
		Expect(string(sh(ctx, primary.Name, "cat /workspace/early.txt", 10*time.Second).Stdout)).To(Equal("before start\n"))
	})

	It("refuses to remove a volume still in use, and removes it once its containers are gone", func(ctx SpecContext) {
		err := driver.RemoveVolume(ctx, ws.Name)
		Expect(dd.IsConflict(err)).To(BeTrue(), "%v", err)
		Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseRemove))
		Expect(driver.RemoveContainer(ctx, holder.Name)).To(Succeed())
		Expect(driver.RemoveVolume(ctx, ws.Name)).To(Succeed())
		Expect(driver.RemoveVolume(ctx, ws.Name)).To(Succeed(), "removing a missing volume is not an error")
	})
})
