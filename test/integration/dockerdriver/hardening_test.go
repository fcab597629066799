//go:build integration

package dockerdriver_test

import (
	"time"

	"github.com/docker/docker/api/types/container"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

var _ = Describe("Hardening", func() {
	It("is what Docker records for every container", func(ctx SpecContext) {
		o := newOwner("hardening")
		net, err := driver.EnsureNetwork(ctx, dd.NetworkSpec{Name: dd.Name(o, dsv1alpha1.RoleNetwork, ""), Owner: o, ICC: true})
		Expect(err).NotTo(HaveOccurred())
		vol, err := driver.EnsureVolume(ctx, dd.VolumeSpec{Name: dd.Name(o, dsv1alpha1.RoleWorkspace, ""), Owner: o, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 8 << 20})
		Expect(err).NotTo(HaveOccurred())
		s := spec(o, dsv1alpha1.RoleService, "db")
		s.Network = dd.NetworkAttachment{Name: net.Name, Aliases: []string{"db", "database"}}
		s.Mounts = []dd.VolumeMount{{Volume: vol.Name, Target: "/workspace"}}
		s.Tmpfs = []dd.TmpfsMount{{Target: "/scratch", SizeBytes: 4 << 20}}
		run(ctx, s)

		c, err := docker.ContainerInspect(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		h := c.HostConfig
		Expect(h.CapDrop).To(ConsistOf("ALL"))
		Expect(h.CapAdd).To(BeEmpty())
		Expect(h.SecurityOpt).To(ContainElement("no-new-privileges:true"))
		Expect(h.Privileged).To(BeFalse())
		Expect(h.Binds).To(BeEmpty())
		Expect(h.PortBindings).To(BeEmpty())
		Expect(h.PublishAllPorts).To(BeFalse())
		Expect(h.Devices).To(BeEmpty())
		Expect(string(h.NetworkMode)).To(Equal(net.Name))
		Expect(h.Memory).To(Equal(int64(64 << 20)))
		Expect(h.MemorySwap).To(Equal(int64(64 << 20)))
		Expect(h.NanoCPUs).To(Equal(int64(500_000_000)))
		Expect(h.PidsLimit).To(HaveValue(Equal(int64(64))))
		Expect(c.Config.Healthcheck.Test).To(Equal([]string{"NONE"}))
		Expect(c.Config.ExposedPorts).To(BeEmpty())
		Expect(c.NetworkSettings.Ports).To(BeEmpty())

		// Only the workspace volume and the tmpfs: no bind mount, no Docker socket.
		Expect(c.Mounts).To(HaveLen(2))
		for _, m := range c.Mounts {
			Expect(string(m.Type)).To(BeElementOf("volume", "tmpfs"))
			Expect(m.Source).NotTo(ContainSubstring("docker.sock"))
		}

		Expect(c.Config.Labels).To(Equal(map[string]string{
			dsv1alpha1.LabelManaged: "true", dsv1alpha1.LabelNode: node, dsv1alpha1.LabelNamespace: "itest", dsv1alpha1.LabelName: "hardening",
			dsv1alpha1.LabelUID: o.UID, dsv1alpha1.LabelRole: dsv1alpha1.RoleService, dsv1alpha1.LabelService: "db", dsv1alpha1.LabelGeneration: "1",
		}))
		Expect(c.NetworkSettings.Networks[net.Name].Aliases).To(ContainElements("db", "database"))

		// And inside: no capabilities at all, and no_new_privs set on the process.
		status := sh(ctx, s.Name, "grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status", 10*time.Second)
		Expect(string(status.Stdout)).To(MatchRegexp(`CapPrm:\s+0000000000000000`))
		Expect(string(status.Stdout)).To(MatchRegexp(`CapEff:\s+0000000000000000`))
		Expect(string(status.Stdout)).To(MatchRegexp(`NoNewPrivs:\s+1`))
	})

	It("sets core and open-file limits that no process can raise, on every role, under Docker's seccomp filter", func(ctx SpecContext) {
		info, err := driver.Security(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, on := info.Seccomp()
		Expect(on).To(BeTrue(), "the daemon the tests run on applies a seccomp profile: %v", info.Options)

		o := newOwner("ulimits")
		for _, s := range []dd.ContainerSpec{spec(o, dsv1alpha1.RolePrimary, ""), spec(o, dsv1alpha1.RoleService, "db"), spec(o, dsv1alpha1.RoleHolder, "")} {
			run(ctx, s)
			c, err := docker.ContainerInspect(ctx, s.Name)
			Expect(err).NotTo(HaveOccurred())
			Expect(c.HostConfig.Ulimits).To(ConsistOf(
				HaveValue(Equal(container.Ulimit{Name: "core", Soft: 0, Hard: 0})),
				HaveValue(Equal(container.Ulimit{Name: "nofile", Soft: 1024, Hard: 1024})),
			), s.Role)

			// What the processes get: the container's first process and an exec alike.
			limits := sh(ctx, s.Name, `grep -E '^Max (core file size|open files)' /proc/1/limits; ulimit -c; ulimit -Hc; ulimit -n; ulimit -Hn; grep '^Seccomp:' /proc/self/status`, 10*time.Second)
			Expect(string(limits.Stdout)).To(MatchRegexp(`Max core file size\s+0\s+0\s+bytes`), s.Role)
			Expect(string(limits.Stdout)).To(MatchRegexp(`Max open files\s+1024\s+1024\s+files`), s.Role)
			Expect(string(limits.Stdout)).To(HaveSuffix("0\n0\n1024\n1024\nSeccomp:\t2\n"), "%s: seccomp mode 2 is a filter", s.Role)

			// Raising a hard limit needs CAP_SYS_RESOURCE, which no container has.
			raise := sh(ctx, s.Name, "ulimit -c unlimited || echo core refused; ulimit -Hn 4096 || echo nofile refused", 10*time.Second)
			Expect(string(raise.Stdout)).To(Equal("core refused\nnofile refused\n"), s.Role)
		}
	})

	It("runs without any network when none is asked for", func(ctx SpecContext) {
		o := newOwner("no-network")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		info := run(ctx, s)
		Expect(info.Network).To(BeEmpty())
		c, err := docker.ContainerInspect(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.HostConfig.NetworkMode.IsNone()).To(BeTrue())
		Expect(string(sh(ctx, s.Name, "ls /sys/class/net", 10*time.Second).Stdout)).To(Equal("lo\n"))
	})

	It("refuses to join a network that is not Dockside's", func(ctx SpecContext) {
		o := newOwner("host-network")
		for _, name := range []string{"host", "bridge", "none"} {
			s := spec(o, dsv1alpha1.RolePrimary, "")
			s.Network.Name = name
			_, err := driver.EnsureContainer(ctx, s)
			Expect(dd.IsInvalidSpec(err)).To(BeTrue(), "network %s: %v", name, err)
			Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseNetwork))
		}
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.Network.Name = "container:" + s.Name
		_, err := driver.EnsureContainer(ctx, s)
		Expect(err).To(HaveOccurred())
	})

	It("refuses containers without limits", func(ctx SpecContext) {
		o := newOwner("no-limits")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.Resources.PIDs = 0
		_, err := driver.EnsureContainer(ctx, s)
		Expect(dd.IsInvalidSpec(err)).To(BeTrue())
		Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseCreate))
	})

	It("keeps secret environment values out of errors", func(ctx SpecContext) {
		o := newOwner("secrets")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.Image = "dockside.dev/never-built:nope"
		s.Env = []dd.EnvVar{{Name: "TOKEN", Value: "s3cr3t-value"}}
		_, err := driver.EnsureContainer(ctx, s)
		Expect(dd.IsNotFound(err)).To(BeTrue())
		Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseImage))
		Expect(err.Error()).NotTo(ContainSubstring("s3cr3t-value"))

		// A command that does not exist: Docker's start error quotes the container's config; ours does not.
		s = spec(o, dsv1alpha1.RolePrimary, "", "/no/such/binary")
		s.Env = []dd.EnvVar{{Name: "TOKEN", Value: "s3cr3t-value"}}
		_, err = driver.EnsureContainer(ctx, s)
		Expect(err).NotTo(HaveOccurred())
		err = driver.StartContainer(ctx, s.Name)
		Expect(err).To(HaveOccurred())
		Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseStart))
		Expect(dd.IsInvalidSpec(err)).To(BeTrue(), "a missing binary can never start: %v", err)
		Expect(err.Error()).NotTo(ContainSubstring("s3cr3t-value"))
		Expect(err.Error()).NotTo(ContainSubstring("/no/such/binary"))
	})
})
