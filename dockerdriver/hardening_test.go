package dockerdriver

import (
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestCreateRequestHardensEveryContainer(t *testing.T) {
	g := NewWithT(t)
	s := validSpec()
	s.Owner = Owner{Namespace: "ns", Name: "sbx", UID: "u", Generation: 1}
	s.Env = []EnvVar{{Name: "A", Value: "1"}}
	s.Network = NetworkAttachment{Name: "dockside-net", Aliases: []string{"db"}}
	s.Mounts = []VolumeMount{{Volume: "dockside-ws", Target: "/workspace"}}
	s.Tmpfs = []TmpfsMount{{Target: "/tmp", SizeBytes: 1 << 20}}

	cfg, host, netCfg := createRequest("node-a", s, "")
	g.Expect(cfg.Healthcheck.Test).To(Equal([]string{"NONE"}))
	g.Expect(cfg.Env).To(Equal([]string{"A=1"}))
	g.Expect(cfg.ExposedPorts).To(BeEmpty())
	g.Expect(cfg.Labels).To(Equal(Labels("node-a", s.Owner, dsv1alpha1.RolePrimary, "")))

	g.Expect(host.CapDrop).To(ConsistOf("ALL"))
	g.Expect(host.CapAdd).To(BeEmpty())
	g.Expect(host.SecurityOpt).To(Equal([]string{"no-new-privileges:true"}))
	g.Expect(host.Privileged).To(BeFalse())
	g.Expect(host.Sysctls).To(HaveKeyWithValue("net.ipv6.conf.all.disable_ipv6", "1"))
	g.Expect(host.ReadonlyRootfs).To(BeTrue())
	g.Expect(host.StorageOpt).To(BeEmpty())
	g.Expect(cfg.User).To(Equal(NonRootUser), "an image without USER does not run as root")
	g.Expect(host.Binds).To(BeEmpty())
	g.Expect(host.PortBindings).To(BeEmpty())
	g.Expect(host.PublishAllPorts).To(BeFalse())
	g.Expect(string(host.NetworkMode)).To(Equal("dockside-net"))
	g.Expect(host.Memory).To(Equal(s.Resources.MemoryBytes))
	g.Expect(host.MemorySwap).To(Equal(s.Resources.MemoryBytes))
	g.Expect(host.NanoCPUs).To(Equal(s.Resources.NanoCPUs))
	g.Expect(*host.PidsLimit).To(Equal(s.Resources.PIDs))
	g.Expect(host.Ulimits).To(ConsistOf(
		HaveValue(Equal(container.Ulimit{Name: "core", Soft: 0, Hard: 0})),
		HaveValue(Equal(container.Ulimit{Name: "nofile", Soft: maxOpenFiles, Hard: maxOpenFiles})),
	))
	g.Expect(host.LogConfig.Config).To(HaveKey("max-size"))
	g.Expect(host.Mounts).To(HaveLen(2))
	for _, m := range host.Mounts {
		g.Expect(m.Type).To(BeElementOf(mount.TypeVolume, mount.TypeTmpfs))
	}
	g.Expect(netCfg.EndpointsConfig).To(HaveKey("dockside-net"))
	g.Expect(netCfg.EndpointsConfig["dockside-net"].Aliases).To(Equal([]string{"db"}))
}

func TestCreateRequestWithoutNetworkIsNone(t *testing.T) {
	g := NewWithT(t)
	_, host, netCfg := createRequest("node-a", validSpec(), "")
	g.Expect(host.NetworkMode.IsNone()).To(BeTrue())
	g.Expect(netCfg).To(BeNil())
}

func TestCreateRequestHoldsStdinOpenOnlyWhenAsked(t *testing.T) {
	g := NewWithT(t)
	s := validSpec()
	cfg, _, _ := createRequest("node-a", s, "")
	g.Expect(cfg.OpenStdin).To(BeFalse())

	s.KeepStdinOpen = true
	cfg, _, _ = createRequest("node-a", s, "")
	g.Expect(cfg.OpenStdin).To(BeTrue())
	g.Expect(cfg.StdinOnce).To(BeFalse(), "stdin must stay open after a first attach ends")
	g.Expect(cfg.AttachStdin).To(BeFalse(), "nothing is attached: the input stays empty")
}

func TestCreateRequestCapsAWritableRoot(t *testing.T) {
	g := NewWithT(t)
	s := validSpec()
	s.WritableRootBytes = 256 << 20
	_, host, _ := createRequest("node-a", s, "")
	g.Expect(host.ReadonlyRootfs).To(BeFalse())
	g.Expect(host.StorageOpt).To(Equal(map[string]string{"size": "268435456"}))
}

func TestCreateRequestRunsAsRootOnlyWhenAsked(t *testing.T) {
	g := NewWithT(t)
	s := validSpec()
	cfg, _, _ := createRequest("node-a", s, "root")
	g.Expect(cfg.User).To(Equal(NonRootUser))
	cfg, _, _ = createRequest("node-a", s, "1000:1000")
	g.Expect(cfg.User).To(Equal("1000:1000"))
	s.RunAsRoot = true
	cfg, _, _ = createRequest("node-a", s, "1000:1000")
	g.Expect(cfg.User).To(Equal(RootUser))
}
