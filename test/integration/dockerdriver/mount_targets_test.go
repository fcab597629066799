//go:build integration

package dockerdriver_test

import (
	"archive/tar"
	"bytes"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// links is a tar archive of symbolic links, name to target.
func links(pairs map[string]string) *bytes.Reader {
	GinkgoHelper()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for name, target := range pairs {
		Expect(w.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777})).To(Succeed())
	}
	Expect(w.Close()).To(Succeed())
	return bytes.NewReader(buf.Bytes())
}

var _ = Describe("Mount targets", func() {
	It("refuses a mount target that resolves through a symbolic link of the image, and leaves no container", func(ctx SpecContext) {
		// /work links to /dev, /lib/deep to /proc: Docker would mount the workspace over the kernel's.
		ref := localImage(ctx, "itest-linked", links(map[string]string{"work": "/dev", "opt/deep": "/proc"}))
		o := newOwner("linked")
		ws, err := driver.EnsureVolume(ctx, dd.VolumeSpec{Name: dd.Name(o, dsv1alpha1.RoleWorkspace, ""), Owner: o, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1 << 20})
		Expect(err).NotTo(HaveOccurred())

		for target, link := range map[string]string{"/work": "(/work -> /dev)", "/work/sub": "(/work -> /dev)", "/opt/deep/x": "(/opt/deep -> /proc)"} {
			s := spec(o, dsv1alpha1.RolePrimary, "")
			s.Image = ref
			s.Mounts = []dd.VolumeMount{{Volume: ws.Name, Target: target}}
			_, err = driver.EnsureContainer(ctx, s)
			Expect(dd.IsInvalidSpec(err)).To(BeTrue(), "%s: %v", target, err)
			Expect(err.Error()).To(ContainSubstring("mount target " + target + " resolves through a symbolic link of the image " + link))
			info, err := driver.ObserveContainer(ctx, s.Name)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Exists).To(BeFalse(), "the refused container of %s is removed", target)
		}

		By("a tmpfs over a link is refused too; a target the image lacks, or holds as a directory, is mounted")
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.Image = ref
		s.Tmpfs = []dd.TmpfsMount{{Target: "/work", SizeBytes: 1 << 20}}
		_, err = driver.EnsureContainer(ctx, s)
		Expect(dd.IsInvalidSpec(err)).To(BeTrue(), "%v", err)
		s.Tmpfs = []dd.TmpfsMount{{Target: "/tmp", SizeBytes: 1 << 20}}
		s.Mounts = []dd.VolumeMount{{Volume: ws.Name, Target: "/workspace/deeper"}}
		run(ctx, s)
		res := sh(ctx, s.Name, "grep -E ' /(tmp|workspace/deeper) ' /proc/mounts", 10*time.Second)
		Expect(res.ExitCode).To(Equal(0))
		mounts := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
		Expect(mounts).To(HaveLen(2))
		for _, m := range mounts {
			Expect(m).To(And(ContainSubstring("nosuid"), ContainSubstring("nodev")), "every tmpfs of a container: %s", m)
		}
	})
})
