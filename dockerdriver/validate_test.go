package dockerdriver

import (
	"path"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func validSpec() ContainerSpec {
	return ContainerSpec{
		Name: "dockside-ns-sbx-primary-0123456789ab", Role: dsv1alpha1.RolePrimary, Image: "img",
		Resources: Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64},
	}
}

func TestContainerSpecValidate(t *testing.T) {
	cases := map[string]func(*ContainerSpec){
		"bad name":            func(s *ContainerSpec) { s.Name = "/etc" },
		"no role":             func(s *ContainerSpec) { s.Role = "" },
		"no image":            func(s *ContainerSpec) { s.Image = "" },
		"no memory limit":     func(s *ContainerSpec) { s.Resources.MemoryBytes = 0 },
		"memory under 6 MiB":  func(s *ContainerSpec) { s.Resources.MemoryBytes = 4 << 20 },
		"no cpu limit":        func(s *ContainerSpec) { s.Resources.NanoCPUs = 0 },
		"no pids limit":       func(s *ContainerSpec) { s.Resources.PIDs = 0 },
		"env without name":    func(s *ContainerSpec) { s.Env = []EnvVar{{Value: "v"}} },
		"env name with =":     func(s *ContainerSpec) { s.Env = []EnvVar{{Name: "A=B", Value: "v"}} },
		"aliases, no network": func(s *ContainerSpec) { s.Network.Aliases = []string{"db"} },
		"relative target":     func(s *ContainerSpec) { s.Tmpfs = []TmpfsMount{{Target: "tmp", SizeBytes: 1}} },
		"root target":         func(s *ContainerSpec) { s.Tmpfs = []TmpfsMount{{Target: "/", SizeBytes: 1}} },
		"unclean target":      func(s *ContainerSpec) { s.Tmpfs = []TmpfsMount{{Target: "/a/../etc", SizeBytes: 1}} },
		"volume over /dev":    func(s *ContainerSpec) { s.Mounts = []VolumeMount{{Volume: "ws", Target: "/dev"}} },
		"tmpfs in /proc":      func(s *ContainerSpec) { s.Tmpfs = []TmpfsMount{{Target: "/proc/sys", SizeBytes: 1}} },
		"target twice": func(s *ContainerSpec) {
			s.Mounts = []VolumeMount{{Volume: "ws", Target: "/w"}}
			s.Tmpfs = []TmpfsMount{{Target: "/w", SizeBytes: 1}}
		},
		"host path as volume": func(s *ContainerSpec) { s.Mounts = []VolumeMount{{Volume: "/var/run/docker.sock", Target: "/s"}} },
		"tmpfs without size":  func(s *ContainerSpec) { s.Tmpfs = []TmpfsMount{{Target: "/t"}} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := validSpec()
			mutate(&s)
			err := s.Validate()
			g.Expect(IsInvalidSpec(err)).To(BeTrue(), "%v", err)
			g.Expect(PhaseOf(err)).To(Equal(PhaseCreate))
		})
	}
	NewWithT(t).Expect(validSpec().Validate()).To(Succeed())
}

// Every spelling of a place under /proc, /sys or /dev is refused as such, not only for being unclean: the
// controllers clean a workspace path before it reaches the driver, so '/./dev' arrives as '/dev'.
func TestMountTargetsUnderKernelFileSystems(t *testing.T) {
	cases := map[string]bool{
		"/dev": true, "/dev/": true, "/./dev": true, "//dev": true, "/dev/shm": true, "/a/../dev": true,
		"/proc": true, "/./proc": true, "//proc": true, "/proc/": true, "/a/../proc": true, "/proc/1/root": true,
		"/sys": true, "/sys/.": true, "///sys//fs": true, "/x/y/../../sys": true, "dev": true,
		"/workspace": false, "/devices": false, "/proc2": false, "/system": false, "/home/dev": false,
		"/srv/proc": false, "/a/sys/..": false,
	}
	for target, refused := range cases {
		t.Run(target, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(underKernelFS(target)).To(Equal(refused))
			volume, tmpfs := validSpec(), validSpec()
			volume.Mounts = []VolumeMount{{Volume: "ws", Target: target}}
			tmpfs.Tmpfs = []TmpfsMount{{Target: target, SizeBytes: 1}}
			for _, s := range []ContainerSpec{volume, tmpfs} {
				err := s.Validate()
				switch {
				case refused:
					g.Expect(IsInvalidSpec(err)).To(BeTrue(), "%v", err)
					g.Expect(err.Error()).To(ContainSubstring("under /proc, /sys or /dev"))
				case path.Clean(target) == target:
					g.Expect(err).NotTo(HaveOccurred())
				default:
					g.Expect(err).To(MatchError(ContainSubstring("must be a clean absolute path")))
				}
			}
		})
	}
}

func TestValidateNeverQuotesSecretValues(t *testing.T) {
	g := NewWithT(t)
	s := validSpec()
	s.Env = []EnvVar{{Name: "OK", Value: "fine"}, {Name: "BAD=NAME", Value: "hunter2"}}
	err := s.Validate()
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
	g.Expect(err.Error()).NotTo(ContainSubstring("BAD=NAME"))
}

func TestUncoveredVolumes(t *testing.T) {
	g := NewWithT(t)
	s := validSpec()
	s.Mounts = []VolumeMount{{Volume: "ws", Target: "/data"}}
	s.Tmpfs = []TmpfsMount{{Target: "/cache", SizeBytes: 1}}
	g.Expect(s.UncoveredVolumes([]string{"/data", "/cache/", "/var/lib/db"})).To(Equal([]string{"/var/lib/db"}))
	g.Expect(s.UncoveredVolumes(nil)).To(BeEmpty())
}

func TestNetworkSpecValidate(t *testing.T) {
	ok := NetworkSpec{Name: "dockside-net", Subnet: "10.1.2.0/28", Gateway: "10.1.2.1"}
	cases := map[string]NetworkSpec{
		"bad name":            {Name: "a b"},
		"gateway, no subnet":  {Name: "n", Gateway: "10.0.0.1"},
		"not a CIDR":          {Name: "n", Subnet: "10.1.2.0"},
		"host bits set":       {Name: "n", Subnet: "10.1.2.3/28"},
		"gateway outside":     {Name: "n", Subnet: "10.1.2.0/28", Gateway: "10.1.3.1"},
		"gateway not address": {Name: "n", Subnet: "10.1.2.0/28", Gateway: "gw"},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			err := spec.Validate()
			NewWithT(t).Expect(IsInvalidSpec(err)).To(BeTrue(), "%v", err)
		})
	}
	NewWithT(t).Expect(ok.Validate()).To(Succeed())
	NewWithT(t).Expect(NetworkSpec{Name: "no-subnet"}.Validate()).To(Succeed())
}

func TestVolumeSpecAndExecRequestValidate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(VolumeSpec{Name: "ws", Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1}.Validate()).To(Succeed())
	g.Expect(IsInvalidSpec(VolumeSpec{Name: "ws", Role: dsv1alpha1.RoleWorkspace}.Validate())).To(BeTrue())
	g.Expect(IsInvalidSpec(VolumeSpec{Name: "ws", SizeBytes: 1}.Validate())).To(BeTrue())
	// A supervisor volume is on disk: it takes no size, and a size makes it a mistake.
	g.Expect(VolumeSpec{Name: "sv", Role: dsv1alpha1.RoleSupervise, Supervisor: "holder"}.Validate()).To(Succeed())
	g.Expect(IsInvalidSpec(VolumeSpec{Name: "sv", Role: dsv1alpha1.RoleSupervise, Supervisor: "holder", SizeBytes: 1}.Validate())).To(BeTrue())

	ok := ExecRequest{Command: []string{"true"}, Timeout: time.Second, OutputLimit: 1}
	g.Expect(ok.Validate("c")).To(Succeed())
	supervised := ok
	supervised.Supervised = &Supervision{Key: "run-1", Created: func(ExecRef) error { return nil }}
	supervised.Stdin = make([]byte, MaxSupervisedStdin)
	g.Expect(supervised.Validate("c")).To(Succeed(), "an Execution's largest stdin")
	tooMuch := supervised
	tooMuch.Stdin = make([]byte, MaxSupervisedStdin+1)
	for _, bad := range []ExecRequest{
		tooMuch,
		{Timeout: time.Second, OutputLimit: 1},
		{Command: []string{"true"}, OutputLimit: 1},
		{Command: []string{"true"}, Timeout: time.Second},
		{Command: []string{"true"}, Timeout: time.Second, OutputLimit: 1, Env: []EnvVar{{Value: "x"}}},
		{Command: []string{"true"}, Timeout: time.Second, OutputLimit: 1, KeepOnTimeout: true, KillSurvivors: true},
	} {
		err := bad.Validate("c")
		g.Expect(IsInvalidSpec(err)).To(BeTrue())
		g.Expect(PhaseOf(err)).To(Equal(PhaseExec))
	}
}
