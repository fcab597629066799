//go:build integration

package dockerdriver_test

import (
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// memoryUsage prints the container's memory cgroup usage in bytes, under cgroup v2 or v1.
const memoryUsage = `f=/sys/fs/cgroup/memory.current; [ -e $f ] || f=/sys/fs/cgroup/memory/memory.usage_in_bytes; cat $f`

var _ = Describe("Root file system and user", func() {
	It("mounts the root read-only and runs an image without USER as an unprivileged user that can write its mounts", func(ctx SpecContext) {
		o := newOwner("read-only-root")
		vol, err := driver.EnsureVolume(ctx, dd.VolumeSpec{Name: dd.Name(o, dsv1alpha1.RoleWorkspace, ""), Owner: o, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 8 << 20})
		Expect(err).NotTo(HaveOccurred())
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.Mounts = []dd.VolumeMount{{Volume: vol.Name, Target: "/workspace"}}
		s.Tmpfs = []dd.TmpfsMount{{Target: "/tmp", SizeBytes: 4 << 20}}
		run(ctx, s)

		c, err := docker.ContainerInspect(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.HostConfig.ReadonlyRootfs).To(BeTrue())
		Expect(c.Config.User).To(Equal(dd.NonRootUser))

		Expect(string(sh(ctx, s.Name, "id -u; id -g", 10*time.Second).Stdout)).To(Equal("65532\n65532\n"))
		for _, dir := range []string{"", "/bin", "/etc", "/usr"} {
			res := sh(ctx, s.Name, "touch "+dir+"/written 2>&1", 10*time.Second)
			Expect(res.ExitCode).NotTo(Equal(0), "a write to %s", dir)
			Expect(string(res.Stdout)).To(ContainSubstring("Read-only file system"), "a write to %s", dir)
		}
		res := sh(ctx, s.Name, "echo kept > /workspace/a && echo kept > /tmp/a && cat /workspace/a /tmp/a", 10*time.Second)
		Expect(res.ExitCode).To(Equal(0), "stderr: %s", res.Stderr)
		Expect(string(res.Stdout)).To(Equal("kept\nkept\n"))
	})

	It("keeps an image's own non-root numeric USER", func(ctx SpecContext) {
		o := newOwner("image-user")
		s := spec(o, dsv1alpha1.RoleHolder, "")
		s.Image, s.Cmd = "dockside.dev/holder:local", nil // USER 65534:65534
		run(ctx, s)
		c, err := docker.ContainerInspect(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Config.User).To(Equal("65534:65534"))
		Expect(c.HostConfig.ReadonlyRootfs).To(BeTrue(), "the holder writes nothing either")
		Expect(c.State.Running).To(BeTrue())
	})

	It("runs as root only when asked, and root still has no capabilities", func(ctx SpecContext) {
		o := newOwner("root")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.RunAsRoot = true
		run(ctx, s)
		res := sh(ctx, s.Name, "id -u; grep -E '^CapEff' /proc/self/status; touch /written 2>&1", 10*time.Second)
		Expect(string(res.Stdout)).To(HavePrefix("0\n"))
		Expect(string(res.Stdout)).To(MatchRegexp(`CapEff:\s+0000000000000000`))
		Expect(string(res.Stdout)).To(ContainSubstring("Read-only file system"), "root too writes only to mounts")
	})

	It("counts a tmpfs mount against the container's memory limit", func(ctx SpecContext) {
		o := newOwner("tmpfs-memory")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.Resources.MemoryBytes = 32 << 20
		s.Tmpfs = []dd.TmpfsMount{{Target: "/tmp", SizeBytes: 64 << 20}} // larger than the memory, on purpose
		run(ctx, s)

		usage := func() int64 {
			GinkgoHelper()
			n, err := strconv.ParseInt(strings.TrimSpace(string(sh(ctx, s.Name, memoryUsage, 10*time.Second).Stdout)), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			return n
		}
		before := usage()
		Expect(sh(ctx, s.Name, "dd if=/dev/zero of=/tmp/eight bs=1M count=8", 30*time.Second).ExitCode).To(Equal(0))
		Expect(usage()-before).To(BeNumerically(">=", 7<<20), "the 8 MiB in /tmp are charged to the container")

		By("writing more to /tmp than the memory limit allows")
		res, err := driver.Exec(ctx, s.Name, dd.ExecRequest{
			Command: []string{"sh", "-c", "dd if=/dev/zero of=/tmp/big bs=1M count=48 && echo wrote all"}, Timeout: time.Minute, OutputLimit: 4096,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).NotTo(Equal(0), "the writer is OOM-killed, or the container with it")
		Expect(string(res.Stdout)).NotTo(ContainSubstring("wrote all"))
	})

	It("gives a writable root only where the storage driver caps its layer", func(ctx SpecContext) {
		storage, err := driver.Storage(ctx)
		Expect(err).NotTo(HaveOccurred())
		o := newOwner("writable-root")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.WritableRootBytes = 16 << 20
		if can, why := storage.CapsWritableLayer(); !can {
			_, err := driver.EnsureContainer(ctx, s)
			Expect(dd.IsInvalidSpec(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring(why))
			Expect(err.Error()).To(ContainSubstring("storage driver " + storage.Driver))
			info, err := driver.ObserveContainer(ctx, s.Name)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Exists).To(BeFalse(), "nothing was made")
			return
		}
		run(ctx, s)
		res := sh(ctx, s.Name, "echo kept > /written && dd if=/dev/zero of=/big bs=1M count=64 2>&1", 30*time.Second)
		Expect(res.ExitCode).NotTo(Equal(0), "the layer is capped at 16 MiB")
	})
})
